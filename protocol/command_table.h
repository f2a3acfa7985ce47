// The command table: what the proxy knows of each Redis command (name, arity, keys, flags) and
// how it routes it. Generated from Redis 7.0's COMMAND output (scripts/gen_command_table.py
// writes protocol/command_table_data.inc); the routing class is ours.
//
// Lookup is case-insensitive and allocation-free (a flat robin-map keyed by the lower-case name).
// A command the table does not know is still forwarded: the upstream has the last word.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace bloomproxy::protocol {

// Flags as in Redis's COMMAND reply (only those the proxy uses are named).
enum CommandFlag : uint32_t {
  kFlagWrite = 1u << 0,
  kFlagReadonly = 1u << 1,
  kFlagDenyOom = 1u << 2,
  kFlagAdmin = 1u << 3,
  kFlagPubsub = 1u << 4,
  kFlagNoscript = 1u << 5,
  kFlagBlocking = 1u << 6,
  kFlagLoading = 1u << 7,
  kFlagStale = 1u << 8,
  kFlagFast = 1u << 9,
  kFlagNoAuth = 1u << 10,
  kFlagMovableKeys = 1u << 11,
  kFlagNoMulti = 1u << 12,
  kFlagMayReplicate = 1u << 13,
  kFlagAllowBusy = 1u << 14,
  kFlagContainer = 1u << 15,  // has subcommands (CLIENT, CONFIG, ...): see LookupSubcommand
};

// ACL categories, as Redis 7.0's ACL CAT lists them, plus RedisBloom's "bloom".
enum AclCategory : uint32_t {
  kCatKeyspace = 1u << 0,
  kCatRead = 1u << 1,
  kCatWrite = 1u << 2,
  kCatSet = 1u << 3,
  kCatSortedset = 1u << 4,
  kCatList = 1u << 5,
  kCatHash = 1u << 6,
  kCatString = 1u << 7,
  kCatBitmap = 1u << 8,
  kCatHyperloglog = 1u << 9,
  kCatGeo = 1u << 10,
  kCatStream = 1u << 11,
  kCatPubsub = 1u << 12,
  kCatAdmin = 1u << 13,
  kCatFast = 1u << 14,
  kCatSlow = 1u << 15,
  kCatBlocking = 1u << 16,
  kCatDangerous = 1u << 17,
  kCatConnection = 1u << 18,
  kCatTransaction = 1u << 19,
  kCatScripting = 1u << 20,
  kCatBloom = 1u << 21,
};

// The category named `name` (lower case, without '@'); false when there is none.
bool LookupAclCategory(std::string_view name, uint32_t* category);

// How the proxy treats a command.
enum class Route : uint8_t {
  kForward,      // sent on the client's shared upstream connection
  kLocal,        // answered by the proxy (PING, ECHO, HELLO, AUTH, CLIENT, QUIT, RESET, ...)
  kPin,          // starts connection state: needs a pinned upstream connection (MULTI, WATCH,
                 // SUBSCRIBE family, MONITOR, CLIENT TRACKING, SELECT n)
  kBlocking,     // may block the connection: pinned while it runs (BLPOP, WAIT, XREAD BLOCK..)
  kUnpin,        // ends connection state (EXEC, DISCARD, UNWATCH, UNSUBSCRIBE family)
  kCloseClient,  // Redis closes such a connection without a reply ("POST", "Host:")
};

struct CommandInfo {
  std::string_view name;  // lower case, as Redis lists it
  int arity;              // Redis arity: n = exactly n args (with the name), -n = at least n
  int first_key;          // 0 = no keys
  int last_key;           // -1 = last argument
  int key_step;
  uint32_t flags;       // CommandFlag bits
  uint32_t categories;  // AclCategory bits
  Route route;
};

// Finds a command by name, any case. nullptr if unknown.
const CommandInfo* LookupCommand(std::string_view name);

// Finds the subcommand `sub` (any case) of a container command, e.g. "client|getname".
// nullptr if `container` has no such subcommand.
const CommandInfo* LookupSubcommand(const CommandInfo& container, std::string_view sub);

// True when `argc` (including the name) satisfies `info`'s arity.
inline bool ArityOk(const CommandInfo& info, size_t argc) {
  return info.arity >= 0 ? argc == static_cast<size_t>(info.arity)
                         : argc >= static_cast<size_t>(-info.arity);
}

// Number of commands in the table (for tests).
size_t CommandCount();

// Every command and subcommand of the table, in no particular order.
std::vector<const CommandInfo*> AllCommands();

}  // namespace bloomproxy::protocol
