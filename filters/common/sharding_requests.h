// The requests plans send in place of the commands a sharding proxy refuses
// (protocol/sharding_proxy.h): BITFIELD for BITFIELD_RO, and for RENAMENX and PEXPIRETIME small
// scripts whose only key is one of the filter's (every key of a filter shares its name's hash
// tag, so the script runs on the server holding the whole filter, and is atomic there as the
// command it stands for):
//
//   RENAMENX tmp name (publish metadata)  ─►  EVAL <publish> 1 name field value ...
//   SETRANGE tmp; RENAMENX tmp shard      ─►  EVAL <shard> 1 shard <size-1> "\0"
//   PEXPIRETIME name                      ─►  EVAL <expire time> 1 name
//
// Behind a plain Redis (or a Redis Cluster) plans keep the commands themselves. Pure.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "filters/common/plan_requests.h"
#include "protocol/sharding_proxy.h"

namespace bloomproxy::filters {

// The command that reads bits: BITFIELD_RO, or behind a sharding proxy BITFIELD (with GET
// operations only it writes nothing and creates no key).
std::string_view ReadBitsCommand(protocol::UpstreamKind upstream);

// Appends the request that writes `fields` (field value ...) to the hash `name` only if
// `name` does not exist, atomically: its reply is 1 (written) or 0, as RENAMENX's.
void AddPublishIfFree(Requests* req, std::string_view name, const std::vector<std::string>& fields);

// Appends the request that creates the string `key` of `size` zero bytes unless it exists
// (bits another proxy set stay set), atomically: its reply is the key's length.
void AddShardIfMissing(Requests* req, std::string_view key, uint64_t size);

// Appends the request that answers as PEXPIRETIME `key` does.
void AddExpireTime(Requests* req, std::string_view key);

// The scripts (filters/common/publish_if_free.lua, shard_if_missing.lua, expire_time.lua), for
// tests.
std::string_view PublishScript();
std::string_view ShardScript();
std::string_view ExpireTimeScript();

}  // namespace bloomproxy::filters
