// The commands of every sketch the proxy answers (BF.*, CMS.*, CF.*, TOPK.*, TDIGEST.*), as a
// Redis server with RedisBloom describes them: one row per command with its arity, flags, ACL
// categories, key specs and documentation (COMMAND, COMMAND INFO, DOCS, LIST, GETKEYS), read too by
// the ACL compiler and the dispatcher. A new sketch adds its rows here. Pure code.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/encoder.h"

namespace bloomproxy::filters {

// The family a command belongs to: each is emulated or forwarded as configured (bf-mode,
// cms-mode, cf-mode, topk-mode, tdigest-mode).
enum class SketchFamily : uint8_t { kBloom, kCms, kCuckoo, kTopk, kTdigest };

// Which families the proxy answers itself (a bit per family).
using SketchFamilies = uint32_t;
constexpr SketchFamilies FamilyBit(SketchFamily f) { return 1u << static_cast<uint32_t>(f); }

// The module a client sees while any family is emulated: RedisBloom registers itself as "bf".
// Its version is the one of the RedisBloom build whose replies the proxy reproduces (master
// b28c2945, which reports 99.99.99 as every build from RedisBloom's main branch does):
// docs/compatibility.md, "The module's face".
inline constexpr std::string_view kModuleName = "bf";
inline constexpr int64_t kModuleVersion = 999999;

// The family of a sketch command named `name` (any case); false for any other name.
bool LookupSketchCommand(std::string_view name, SketchFamily* family);

// Whether `argc` arguments (the name included) pass the arity of sketch command `name` (any case)
// as the command table declares it, which is what Redis checks when it queues a command inside
// MULTI; the module checks the rest when the command runs. True for a name without a row.
bool SketchArityOk(std::string_view name, size_t argc);

// The positions of the keys in sketch command `args`: the name (args[1]) and CMS.MERGE's and
// TDIGEST.MERGE's sources (as many as numkeys says, when it parses and the arguments hold them).
// Empty when `args` is no sketch command or has no key. (Where the proxy routes a command; COMMAND
// GETKEYS answers from the key specs instead, as Redis does: SketchGetKeys.)
std::vector<size_t> SketchCommandKeys(const std::vector<std::string_view>& args);

// COMMAND entries (Redis 7 layout: name, arity, flags, first/last/step, ACL categories, tips,
// key specs, subcommands) of the commands of `families`, for the proxy to add to the upstream's
// COMMAND output.
std::vector<std::string> SketchCommandEntries(SketchFamilies families,
                                              protocol::Resp resp = protocol::Resp::k2);

// The entry of one sketch command by name (any case) if its family is in `families`, or empty.
std::string SketchCommandEntry(std::string_view name, SketchFamilies families,
                               protocol::Resp resp = protocol::Resp::k2);

// COMMAND DOCS: the name (a bulk) followed by its docs map (summary, since, group "module",
// complexity, module "bf", history when it has one, arguments), for one command by name (any
// case), or empty when it is no command of `families`.
std::string SketchCommandDocs(std::string_view name, SketchFamilies families,
                              protocol::Resp resp = protocol::Resp::k2);
// The same for every command of `families`, in table order.
std::vector<std::string> SketchCommandDocsAll(SketchFamilies families,
                                              protocol::Resp resp = protocol::Resp::k2);

// COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN glob]: the names (lower case)
// of the commands of `families` that pass the filter, as Redis filters its own table.
enum class ListFilter : uint8_t { kNone, kModule, kAclCat, kPattern };
std::vector<std::string_view> SketchCommandList(SketchFamilies families, ListFilter filter,
                                                std::string_view arg);

// COMMAND GETKEYS / GETKEYSANDFLAGS for a sketch command: `args` is the command with its
// arguments (what follows GETKEYS). The whole reply, Redis's errors included (wrong arity,
// arguments the key specs cannot place). Empty when args[0] is no command of `families`.
std::string SketchGetKeys(const std::vector<std::string_view>& args, bool with_flags,
                          SketchFamilies families, protocol::Resp resp = protocol::Resp::k2);

// Every sketch command (lower case), whether it writes, its family and its ACL categories (lower
// case, without '@': "write", "bloom"), as ACL rules see it.
struct SketchCommandName {
  std::string_view name;
  bool writes;
  SketchFamily family;
  std::vector<std::string_view> categories;
};
std::vector<SketchCommandName> SketchCommandNames();

// The ACL category of each family ("bloom", "cms", "cuckoo", "topk", "tdigest").
std::string_view FamilyCategory(SketchFamily family);

}  // namespace bloomproxy::filters
