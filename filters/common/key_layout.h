// Where a filter lives in Redis: its name holds the metadata, the bits live in data keys that
// hash to the same Redis Cluster slot as the name. Pure; no sockets.
//
//   filter "users"          (no hash tag: the name itself becomes the tag)
//     users                          hash   metadata (parameters, links)
//     {users}:bf:<id>:<link>.<shard> string bits of one shard of one link
//     {users}:bf:<id>:<link>:n       string items counted in that link
//
//   filter "app{users}x"    (has a hash tag: kept as it is)
//     app{users}x:bf:<id>:0.0 ...
//
//   filter "a}b" or ""      (braces but no valid tag, or empty: a 4-character tag T with
//     {T}a}b:bf:<id>:0.0       slot(T) == slot(name) is put in front)
//
// <id> is a random identifier chosen when the filter is created, so keys of a deleted and
// recreated filter never mix with the new one's.
//
//     {users}:bf:m:users             string marker "1": a filter lives at users
//
// The marker lets TYPE (and every command Redis runs without touching the key) tell a filter
// from a plain hash without reading the hash, which would move its LRU/LFU clock: EXISTS and
// TYPE touch nothing. It names the filter (several names share a prefix: "users" and "{users}"),
// is set once a filter is published, and is deleted, expired and renamed with it by the key
// commands (filters/common/key_scripts.h).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace bloomproxy::filters {

// The prefix of every data key of filter `name` (see the diagram); protocol::KeySlot(prefix +
// anything) == protocol::KeySlot(name) for any suffix without braces.
std::string DataKeyPrefix(std::string_view name);

// Whether every key of filter `name` goes to the name's server behind a sharding proxy
// (protocol/sharding_proxy.h). twemproxy and Codis hash a key's tag, or the whole key, not Redis
// Cluster's slots, so only the first two rules of DataKeyPrefix keep a filter whole there: the
// name has a tag, or is non-empty without braces. Its longest key (the marker, about twice the
// name) must also stay below protocol::kShardingProxyMaxKey: the name has at most
// kShardingProxyMaxName bytes.
constexpr size_t kShardingProxyMaxName = 7900;
bool KeptWholeBehindShardingProxy(std::string_view name);

// A new random structure id (the <id> of the data keys): 16 lower-case hex digits.
std::string NewId();

// Data key names.
std::string BitsKey(std::string_view prefix, std::string_view id, size_t link, size_t shard);
std::string CountKey(std::string_view prefix, std::string_view id, size_t link);
// The marker of the filter named `name`, whose data-key prefix is `prefix`.
std::string MarkerKey(std::string_view prefix, std::string_view name);
// The marker of the count-min sketch named `name` ({users}:cms:m:users): a key of its own, so
// that TYPE tells the two apart with EXISTS, which touches nothing.
std::string CmsMarkerKey(std::string_view prefix, std::string_view name);
// The marker of the cuckoo filter named `name` ({users}:cf:m:users).
std::string CfMarkerKey(std::string_view prefix, std::string_view name);
// The marker of the Top-K sketch named `name` ({users}:tk:m:users).
std::string TopkMarkerKey(std::string_view prefix, std::string_view name);
// The marker of the t-digest named `name` ({users}:td:m:users).
std::string TdigestMarkerKey(std::string_view prefix, std::string_view name);

}  // namespace bloomproxy::filters
