// The script each TOPK command runs as (filters/topk/*.lua), with its arguments. Every TOPK
// command is ONE script call on the sketch's server: an ADD's bucket updates, decay steps and
// heap changes for all its items happen there atomically, whatever the number of proxies and
// clients, exactly as one RedisBloom command runs (docs/topk.md, "Many proxies, one sketch"). The
// same call serves a command inside MULTI (queued as EVAL in the client's transaction, with no
// hashes: the script hashes the items itself) and outside it (EVALSHA, then EVAL when the server
// does not have the script yet). Pure; no sockets.
//
//   client:   TOPK.ADD t hello
//   upstream: EVALSHA <sha of topk_add.lua> 1 t {t}:tk:m:t {t} <id> 8 <6 seeds> 1 1 hello 1
//                     <fp> <hash of row 0> ... <hash of row 6>
//   reply:    *2 [*1 [$-1]] [fields]  ->  *1 $-1
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "filters/common/lua_script.h"
#include "filters/topk/topk_args.h"
#include "filters/topk/topk_meta.h"
#include "protocol/sharding_proxy.h"

namespace bloomproxy::filters {

// The settings TOPK scripts take from the proxy's configuration.
struct TopkConfig {
  uint64_t max_shard_bytes = 64ULL * 1024 * 1024 - 16;  // bf-max-shard-bytes
  uint64_t max_bytes = uint64_t{1} << 47;               // sketch-max-bytes: buckets and heap
  protocol::UpstreamKind upstream = protocol::UpstreamKind::kRedis;
};

// One call of a TOPK script: the script, whether it only reads (EVALSHA_RO), and its arguments
// after the marker and the data-key prefix.
struct TopkCall {
  const LuaScript* script = nullptr;
  bool read_only = false;
  std::vector<std::string> argv;
};

// One item of an update: its bytes and increment (TOPK.ADD: 1).
struct TopkUpdate {
  std::string_view item;
  uint32_t n = 1;
};

// TOPK.RESERVE. `refused`: the arguments were refused with an error that RedisBloom replies only
// when the name is free (TopkErrorOrder::kAfterKey), or the sketch would be larger than
// sketch-max-bytes: the script then only checks the name.
TopkCall TopkReserveCall(const TopkParams& params, bool refused, const TopkConfig& config);

// Whether a sketch of `params` fits sketch-max-bytes (8 bytes per bucket and per heap slot).
bool TopkFits(const TopkParams& params, const TopkConfig& config);

// ADD / INCRBY commands on one sketch, in order: `members` split `updates` (one member per
// command). With `meta` (what the proxy knows of the sketch) each item carries its hashes; the
// script checks the id and hashes the items itself when it differs.
TopkCall TopkAddCall(const std::vector<TopkUpdate>& updates, const std::vector<size_t>& members,
                     const TopkMeta* meta);

// QUERY, COUNT (with the items), LIST and INFO.
TopkCall TopkReadCall(TopkCommand command, const std::vector<std::string_view>& items,
                      const TopkMeta* meta);

// Appends the request: EVALSHA (or, with `body`, EVAL: the server lacks the script, or inside
// MULTI) of `call` on sketch `name`; _RO for a read unless the upstream is a sharding proxy,
// which forwards neither EVAL_RO nor EVALSHA_RO.
void AppendTopkCall(std::string* out, std::string_view name, const TopkCall& call, bool body,
                    protocol::UpstreamKind upstream);

}  // namespace bloomproxy::filters
