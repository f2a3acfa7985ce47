// The replies that make the proxy look like a server with a module loaded, built from the
// upstream's own: INFO's "# Modules" line, MODULE LIST's and HELLO's entry (Redis 7's
// genModulesInfoString and addReplyLoadedModules), and the proxy's own COMMAND entries, names
// and docs joined to the upstream's COMMAND replies. Pure: bytes in, bytes out.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/encoder.h"

namespace bloomproxy::protocol {

// A module as INFO and MODULE LIST show it. `options` is INFO's list ("handle-io-errors").
struct ModuleFace {
  std::string_view name;
  int64_t version = 0;
  std::string_view options;
  std::string_view path;  // what MODULE LIST shows as the file it was loaded from
};

// INFO's text with the module's line ("module:name=bf,ver=...,api=1,filters=0,usedby=[],
// using=[],options=[...]") added at the end of its "# Modules" section, unless the text has no
// such section or already lists a module of that name.
std::string WithModuleLine(std::string_view info, const ModuleFace& module);

// MODULE LIST's entry (a map of name, ver, path and args), as HELLO's "modules" holds them too.
void AppendModuleEntry(std::string* out, const ModuleFace& module, Resp resp);

// MODULE LIST's reply (an array of module entries) with the module's entry added, unless it
// lists a module of that name already. Anything else (an error) is returned as it is.
std::string WithModuleEntry(std::string_view reply, const ModuleFace& module, Resp resp);

// An aggregate reply (array, RESP3 map or set) split into its elements: *header is its type byte
// ('*', '%', '~'), *elements the bytes of each element (a map's keys and values alike). False
// when `reply` is no complete aggregate.
bool SplitAggregate(std::string_view reply, char* type, std::vector<std::string_view>* elements);

// The aggregate `reply` with `extra` (complete elements; for a map, key and value in one string
// each pair) appended and its count raised by `added` (a map counts pairs).
std::string AppendToAggregate(std::string_view reply, const std::vector<std::string>& extra,
                              int64_t added);

// COMMAND DOCS name...: the upstream answered for the names it knows (a map of name -> docs, in
// the order asked, unknown names left out); `local(name)` gives the proxy's own "name + docs"
// for a name it answers (empty otherwise). The names asked in order, each answered by the
// proxy or by the upstream (entries for the proxy's names that the upstream also has are
// dropped), with the map's count to match. `reply` unchanged if it does not parse.
std::string MergeCommandDocs(std::string_view reply, const std::vector<std::string_view>& names,
                             const std::function<std::string(std::string_view)>& local);

}  // namespace bloomproxy::protocol
