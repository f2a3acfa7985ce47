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

#include "protocol/reply_merge.h"

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

// ACL categories, as Redis 7.0's ACL CAT lists them, plus the ones RedisBloom adds on Redis 7.4
// and later ("bloom", "cuckoo", "cms", "topk", "tdigest").
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
  kCatCms = 1u << 22,
  kCatCuckoo = 1u << 23,
  kCatTopk = 1u << 24,
  kCatTdigest = 1u << 25,
};

// The category named `name` (lower case, without '@'); false when there is none.
bool LookupAclCategory(std::string_view name, uint32_t* category);

// Which upstream connection a command runs on, decided by what the command does to the
// connection it runs on. Every command of the table has one rule (protocol/command_routes.inc,
// one row per command); docs/connections.md explains them.
enum class Conn : uint8_t {
  kShared,       // changes no connection state: the client's shared, multiplexed connection (or
                 // its own connection while it holds state there)
  kLocal,        // answered by the proxy: it is about the client's connection to the proxy
  kPinned,       // starts or needs connection state (MULTI, WATCH, SELECT n, SUBSCRIBE, MONITOR,
                 // CLIENT TRACKING, CLIENT NO-EVICT, READONLY, ASKING): a connection of the
                 // client's own for as long as the state lasts
  kDedicated,    // holds its connection until it answers (blocks, runs a script, stops the
                 // server), or must not wait behind other clients' commands (SCRIPT KILL, CLIENT
                 // UNPAUSE): a connection of the client's own until it answers
  kTunnel,       // turns the connection into something else (a replication link, the Lua
                 // debugger): from then on the client's bytes and the upstream's flow unchanged on
                 // a connection of the client's own, until either side closes
  kCloseClient,  // Redis closes such a connection without a reply ("POST", "Host:")
};

// The connection state a command starts, ends or changes, as far as the proxy follows it.
enum class Effect : uint8_t {
  kNone,
  kMulti,
  kExec,
  kDiscard,
  kWatch,
  kUnwatch,
  kSelect,       // the database (SELECT 0 needs no connection of its own)
  kSubscribe,    // (P|S)SUBSCRIBE: pub/sub mode
  kUnsubscribe,  // (P|S)UNSUBSCRIBE
  kMonitor,
  kTracking,  // CLIENT TRACKING ON|OFF
  kNoEvict,   // CLIENT NO-EVICT ON|OFF
  kReadonly,  // READONLY (cluster replicas)
  kReadwrite,
  kAsking,  // ASKING: the next command only
  kPause,   // CLIENT PAUSE: every client's writes (or all commands) wait upstream
  kUnpause,
  kReplyMode,    // CLIENT REPLY ON|OFF|SKIP
  kBlockOption,  // XREAD, XREADGROUP: dedicated only with the BLOCK option
  kUnblock,      // CLIENT UNBLOCK names a proxy client: the upstream knows it by another id
  kUnknownSub,   // CLIENT with a subcommand Redis 7.0 does not have (CLIENT NO-TOUCH, ...):
                 // taken to change its connection, which the client keeps for good
  kWait,         // WAIT counts the replicas that acknowledged its connection's last write: a
                 // connection of its own must first run a command to be up to date
};

// What becomes of a command sent inside MULTI, on the transaction's connection.
enum class InMulti : uint8_t {
  kQueue,   // queued by the upstream like any command
  kTrack,   // queued; its effect is taken from its place in EXEC's reply
  kAtExec,  // answered by the proxy: a PING is queued in its place, and the proxy's answer,
            // made when EXEC runs, replaces the PONG in EXEC's reply
  kTunnel,  // its replies could not be followed (SUBSCRIBE answers once per channel inside
            // EXEC's array; REPLCONF ACK does not answer): the connection becomes a tunnel
};

// Further traits of a command (bits of Route::traits).
enum RouteTrait : uint8_t {
  kTraitMayReplicate = 1u << 0,  // paused by CLIENT PAUSE WRITE although not a write command
  kTraitStallsServer = 1u << 1,  // may keep the whole upstream busy (a script, DEBUG, SAVE):
                                 // while it runs, other connections' silence is not a stall
  kTraitFilterKey = 1u << 2,     // a key command that acts on a whole filter when a key is one
};

// Which upstream node(s) a command goes to when the upstream is a Redis Cluster. In standalone
// mode one node serves every slot, so every command goes to it as it is.
enum class Spread : uint8_t {
  kSlot,        // the node of its keys' slot (keys in two slots: -CROSSSLOT); no keys: any master
  kSplit,       // keys in several slots: one part per node, the replies merged (Route::merge)
  kAllMasters,  // every master, the replies merged (Route::merge)
  kScan,        // one master at a time: the cursor encodes which (protocol/reply_merge.h)
  kSlotArg,     // the node of the slot given as its argument (CLUSTER COUNTKEYSINSLOT)
};

struct Route {
  Conn conn = Conn::kShared;
  Effect effect = Effect::kNone;
  InMulti in_multi = InMulti::kQueue;
  uint8_t traits = 0;
  Spread spread = Spread::kSlot;
  Merge merge = Merge::kNone;
};

struct CommandInfo {
  std::string_view name;  // lower case, as Redis lists it
  int arity;              // Redis arity: n = exactly n args (with the name), -n = at least n
  int first_key;          // 0 = no keys
  int last_key;           // -1 = last argument
  int key_step;
  uint32_t flags;       // CommandFlag bits
  uint32_t categories;  // AclCategory bits
  Route route;          // the proxy's rule (see Conn)
};

// Finds a command by name, any case. nullptr if unknown.
const CommandInfo* LookupCommand(std::string_view name);

// Finds the subcommand `sub` (any case) of a container command, e.g. "client|getname".
// nullptr if `container` has no such subcommand.
const CommandInfo* LookupSubcommand(const CommandInfo& container, std::string_view sub);

// Finds a command or subcommand by its full name, any case: "get", "client|getname". nullptr
// if unknown.
const CommandInfo* LookupFullName(std::string_view name);

// True when `argc` (including the name) satisfies `info`'s arity.
inline bool ArityOk(const CommandInfo& info, size_t argc) {
  return info.arity >= 0 ? argc == static_cast<size_t>(info.arity)
                         : argc >= static_cast<size_t>(-info.arity);
}

// Number of commands in the table (for tests).
size_t CommandCount();

// Every command and subcommand of the table, in no particular order.
std::vector<const CommandInfo*> AllCommands();

// The names of the route rows (protocol/command_routes.inc), in file order, for the tests that
// check every command has exactly one.
std::vector<std::string_view> RouteRowNames();

}  // namespace bloomproxy::protocol
