// The leftover sweep's pure half (the loop half is proxy/sketch/sweep.h; docs/leftovers.md has the
// whole story): which keys are a filter's or a sketch's internal keys, who may own each one, and
// the one script that checks, and deletes, those no structure owns. No sockets.
//
// A key is checked against its possible owners, never against a list kept anywhere:
//
//   {users}:bf:<id>:2.0   owners: "users" and "{users}" (both have the data-key prefix
//                         "{users}", key_layout.h), each if it is a filter (a hash with
//                         bloomproxy "1") whose id is <id> and that has link l2
//   {users}:cms:<id>:0    owners: the same names, if a sketch (cms "1") with id <id>
//   {users}:cf:<id>:1.0   owners: the same names, if a cuckoo filter (cf "1") with id <id>
//   {users}:tk:<id>:b.0   owners: the same names, if a Top-K sketch (tk "1") with id <id> (also
//   {users}:tk:<id>:h     its heap :h and its heap's items :i)
//   {users}:td:<id>:d     owners: the same names, if a t-digest (td "1") with id <id>
//   {users}:bf:m:users    owner: "users", if it is a filter (a sketch for :cms:m:, a cuckoo
//                         filter for :cf:m:, a Top-K sketch for :tk:m:, a t-digest for :td:m:)
//   {users}:bf:<id>:w7    (a windowed filter's slot 7) owners: "users" and "{users}", each if it
//                         is a windowed filter (a filter with the field window) whose id is <id>
//   {users}:bf:<id>:w7:bf:<sid>:0.0   (a slot's data key: its prefix is the slot's name) owner:
//                         the slot, if it is a filter whose id is <sid> and that has link l0
//   {users}:bf:<id>:new   no owner: a creation's temporary key, moved or removed in the same
//   {users}:bf:<id>:0.0:<id2>     pipeline that wrote it (filters/bloom/bf_plan_create.cc)
//
// A key that can be read two ways (a name may itself hold ":bf:m:" or ":bf:<id>:0.0") gets the
// owners of every reading: it is kept when any of them owns it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/reply_decoder.h"

namespace bloomproxy::filters {

// SCAN's MATCH for the sweep: every internal key (":bf:", ":cms:", ":cf:", ":tk:" and ":td:" are
// the only infixes, protocol/internal_keys.h) in one iteration instead of several; the few other
// keys it lets through are told apart by ParseSweepKey. kSweepMatchBeforeTdigest and
// kSweepMatchBeforeTopk are what proxies without t-digests, and without Top-K sketches, send
// (RecogniseSweep knows all three, for a MONITOR during an upgrade).
inline constexpr std::string_view kSweepMatch = "*:[bct][dfkm]*:*";
inline constexpr std::string_view kSweepMatchBeforeTdigest = "*:[bct][fkm]*:*";
inline constexpr std::string_view kSweepMatchBeforeTopk = "*:[bc][fm]*:*";

// One possible owner of an internal key: `name` owns it when it is a hash whose field `mark`
// is "1" (bloomproxy: a filter; cms: a sketch), whose field id is `id` (any when empty) and
// that has the field `field` (when not empty: a filter's link).
struct SweepOwner {
  std::string name;
  std::string_view mark;
  std::string id;
  std::string field;
};

// What ParseSweepKey found: the key's possible owners (none for a temporary key, which nobody
// owns once its creation step is over).
struct SweepKey {
  std::vector<SweepOwner> owners;
};

// Whether `key` is an internal key (exactly protocol::IsInternalKey's rule; sweep_test checks
// that both agree), and if so its owners.
bool ParseSweepKey(std::string_view key, SweepKey* out);

// The names whose data-key prefix is `prefix` (DataKeyPrefix(name) == prefix): at most three,
// e.g. "{users}" and "users" for "{users}"; empty when `prefix` has no hash tag.
std::vector<std::string> PrefixOwners(std::string_view prefix);

// What the script found for one key.
enum class SweepVerdict : uint8_t {
  kLive = 0,     // an owner owns it
  kOrphan = 1,   // nobody owns it (kept: not asked to delete, or first sighting)
  kDeleted = 2,  // nobody owned it, and it was deleted (asked to)
  kGone = 3,     // the key no longer exists
};

// One key for the script, and whether to delete it if nobody owns it.
struct SweepEntry {
  std::string_view key;
  const SweepKey* parsed = nullptr;
  bool remove = false;
};

// The check-and-delete script, filters/common/sweep.lua (documented there), and its SHA1.
std::string_view SweepScript();
std::string_view SweepScriptSha1();

// Appends EVALSHA `sha` (of SweepScript(), as SCRIPT LOAD answered it) for `entries`: in
// Redis Cluster every key and owner of one call must be in one slot (an internal key is
// always in its owners' slot, so grouping entries by the key's slot is enough).
void AppendSweepRequest(std::string* out, std::string_view sha,
                        const std::vector<SweepEntry>& entries);
// SCRIPT LOAD of SweepScript().
void AppendSweepLoad(std::string* out);

// The verdicts in the script's reply (an array of `n` integers 0..3); false for anything else
// (an error: -MOVED after a slot moved, -NOSCRIPT after SCRIPT FLUSH, ...).
bool ParseSweepReply(const redisReply* r, size_t n, std::vector<SweepVerdict>* out);

// A SCAN reply: the next cursor and the keys; false for anything else.
bool ParseScanReply(const redisReply* r, std::string* cursor, std::vector<std::string_view>* keys);

// The databases INFO keyspace lists ("db3:keys=..."), in order; empty when none has keys.
std::vector<int> KeyspaceDatabases(std::string_view info);

// The lock that lets one proxy sweep an upstream per interval: SET NX PX, renewed by its holder
// (sweep_lock.lua: GET, then SET PX when free or already the caller's). Its reply is 1 when the
// caller holds the lock now, 0 when another proxy does.
inline constexpr std::string_view kSweepLockKey = "bloomproxy:sweep-lock";
void AppendSweepLock(std::string* out, std::string_view owner, uint64_t ttl_ms);

// What a sweep's command (any bloomproxy's, also another process's) is, from its arguments as
// a MONITOR line shows them (proxy/client/monitor_filter.h hides them from clients' MONITORs):
enum class SweepTrace : uint8_t {
  kNone,
  kLock,  // the lock's EVAL (or EVALSHA): its one key is kSweepLockKey. It goes on a connection
          // that carries clients' commands too
  kPass,  // a pass's SCRIPT LOAD or EVAL(SHA) of the check script, or SCAN ... MATCH kSweepMatch:
          // its connection carries nothing but the pass
};
SweepTrace RecogniseSweep(const std::vector<std::string>& args);

}  // namespace bloomproxy::filters
