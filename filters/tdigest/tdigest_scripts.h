// The script each TDIGEST command runs as (filters/tdigest/*.lua), with its arguments. Every
// TDIGEST command is ONE script call on the digest's server: the read, the compression RedisBloom
// makes there and the write back happen atomically, whatever the number of proxies and clients,
// exactly as one RedisBloom command runs (docs/tdigest.md, "Many proxies, one digest"). The same
// call serves a command inside MULTI (queued as EVAL in the client's transaction) and outside it
// (EVALSHA, then EVAL when the server does not have the script yet). Numbers go as 8-byte
// little-endian doubles, so that the script sees the very bits the proxy parsed. Pure; no
// sockets.
//
//   client:   TDIGEST.ADD t 1.5
//   upstream: EVALSHA <sha of tdigest_add.lua> 1 t {t}:td:m:t {t} add <16 bytes> <8> <8> 1
//   answer:   *1 :1   ->   +OK
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "filters/common/lua_script.h"
#include "filters/tdigest/tdigest_args.h"
#include "protocol/sharding_proxy.h"

namespace bloomproxy::filters {

// The settings TDIGEST scripts take from the proxy's configuration.
struct TdigestConfig {
  uint64_t max_bytes = uint64_t{1} << 47;  // sketch-max-bytes: INFO's memory usage at most
  protocol::UpstreamKind upstream = protocol::UpstreamKind::kRedis;
};

// The largest compression a digest gets here: INFO's memory usage (80 + 16 * (6C + 10)) within
// sketch-max-bytes, and the data key (56 bytes + 16 per node, at most 6C + 9 nodes) within
// Redis's 512 MB strings. Larger ones are refused as RedisBloom refuses what it cannot allocate.
int64_t TdigestMaxCompression(const TdigestConfig& config);

// One call of a single-key TDIGEST script: the script and its arguments after the marker and the
// data-key prefix.
struct TdigestCall {
  const LuaScript* script = nullptr;
  std::vector<std::string> argv;
};

// CREATE. `check`: the arguments were refused with an error RedisBloom gives only when the name
// is free: the script only says what the name holds.
TdigestCall TdigestCreateCall(int64_t compression, bool check);
// ADD commands on one digest, in order: `counts` split `values` (one count per command).
TdigestCall TdigestAddCall(const std::vector<double>& values, const std::vector<size_t>& counts);
TdigestCall TdigestResetCall();
// The key check alone (a command whose arguments RedisBloom refuses after it).
TdigestCall TdigestCheckCall();
// MIN, MAX, INFO, QUANTILE, CDF, TRIMMED_MEAN, RANK, REVRANK, BYRANK, BYREVRANK of `request`.
TdigestCall TdigestReadCall(const TdigestRequest& request);

// Appends the request: EVALSHA (or, with `body`, EVAL: the server lacks the script, or inside
// MULTI) of `call` on digest `name`.
void AppendTdigestCall(std::string* out, std::string_view name, const TdigestCall& call, bool body,
                       protocol::UpstreamKind upstream);

// Appends TDIGEST.MERGE `request` (tdigest_merge.lua over the destination and every source).
void AppendTdigestMerge(std::string* out, const TdigestRequest& request,
                        const TdigestConfig& config, bool body);

}  // namespace bloomproxy::filters
