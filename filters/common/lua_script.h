// A Lua script the proxy sends to Redis, as the build embeds it from its .lua file
// (cmake/lua.cmake): the generated header "filters/<folder>/<stem>.lua.h" defines
// bloomproxy::filters::lua::k<Stem>. The SHA1 is Redis's name for the script (EVALSHA), computed
// at build time, so sending a script costs its 40-byte name, not its text.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "protocol/sharding_proxy.h"

namespace bloomproxy::filters {

struct LuaScript {
  std::string_view name;  // the file's stem: cf_insert
  std::string_view body;  // the text, includes expanded
  std::string_view sha1;  // of body, 40 lower-case hex digits
};

// Whether `answer` is Redis's NOSCRIPT error: the server does not have the script (yet, or
// after SCRIPT FLUSH), and the call must be sent again with its text.
inline bool IsNoScript(std::string_view answer) { return answer.substr(0, 9) == "-NOSCRIPT"; }

// Appends the call of a structure's script (CF, TOPK): EVALSHA <sha1> 1 <name> <marker> <prefix>
// <argv...>, or with `body` EVAL <text> ... (the server lacks the script, or inside MULTI). A
// `read_only` script goes with EVALSHA_RO / EVAL_RO, except behind a sharding proxy, which
// forwards neither.
void AppendStructureScript(std::string* out, const LuaScript& script, bool read_only, bool body,
                           protocol::UpstreamKind upstream, std::string_view name,
                           std::string_view marker, std::string_view prefix,
                           const std::vector<std::string>& argv);

}  // namespace bloomproxy::filters
