// The commands of every sketch the proxy answers (BF.*, CMS.*, CF.*), as COMMAND describes them (arity,
// flags, key positions, ACL categories): one row per command, added to the upstream's COMMAND
// output and read by the ACL compiler and the dispatcher. A new sketch adds its rows here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/encoder.h"

namespace bloomproxy::filters {

// The family a command belongs to: each is emulated or forwarded as configured (bf-mode,
// cms-mode, cf-mode).
enum class SketchFamily : uint8_t { kBloom, kCms, kCuckoo };

// Which families the proxy answers itself (a bit per family).
using SketchFamilies = uint32_t;
constexpr SketchFamilies FamilyBit(SketchFamily f) { return 1u << static_cast<uint32_t>(f); }

// The family of a sketch command named `name` (any case); false for any other name.
bool LookupSketchCommand(std::string_view name, SketchFamily* family);

// Whether `argc` arguments (the name included) pass the arity of sketch command `name` (any case)
// as the command table declares it, which is what Redis checks when it queues a command inside
// MULTI; the module checks the rest when the command runs. True for a name without a row.
bool SketchArityOk(std::string_view name, size_t argc);

// The positions of the keys in sketch command `args`: the name (args[1]) and CMS.MERGE's sources
// (as many as its numkeys says, when it parses and the arguments hold them). Empty when `args`
// is no sketch command or has no key.
std::vector<size_t> SketchCommandKeys(const std::vector<std::string_view>& args);

// COMMAND entries (RESP2 arrays, Redis 7 layout) of the commands of `families`, for the proxy to
// add to the upstream's COMMAND output.
std::vector<std::string> SketchCommandEntries(SketchFamilies families,
                                              protocol::Resp resp = protocol::Resp::k2);

// Every sketch command (lower case), whether it writes (its COMMAND entry's ACL category is
// @write, else @read) and its family's ACL category (RedisBloom's @bloom or @cms).
struct SketchCommandName {
  std::string_view name;
  bool writes;
  SketchFamily family;
  std::string_view category;  // "bloom", "cms" or "cuckoo"
};
std::vector<SketchCommandName> SketchCommandNames();

// The entry of one sketch command by name (any case) if its family is in `families`, or empty.
std::string SketchCommandEntry(std::string_view name, SketchFamilies families,
                               protocol::Resp resp = protocol::Resp::k2);

}  // namespace bloomproxy::filters
