// The script each CF command runs as (filters/cuckoo/*.lua), with its arguments. Every CF
// command is ONE script call on the filter's server: a kick chain, a delete and its compaction,
// a growth, run atomically there whatever the number of proxies and clients, exactly as one
// RedisBloom command runs (docs/cuckoo-filters.md, "Many proxies, one filter"). The same call
// serves a command inside MULTI (queued as EVAL in the client's transaction) and outside it
// (EVALSHA, then EVAL when the server does not have the script yet). Pure; no sockets.
//
//   client:   CF.ADD f hello
//   upstream: EVALSHA <sha of cf_insert.lua> 1 f {f}:cf:m:f {f} 0 <new id> 512 2 20 1 <shard>
//                     1 0 1 510190972 1165750551
//   reply:    *1 [*1 [:1]]  ->  :1
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "filters/common/lua_script.h"
#include "filters/common/plan.h"
#include "filters/cuckoo/cf_args.h"
#include "protocol/sharding_proxy.h"

namespace bloomproxy::filters {

// The settings CF scripts take from the proxy's configuration.
struct CfConfig {
  uint64_t max_shard_bytes = 64ULL * 1024 * 1024 - 16;  // bf-max-shard-bytes
  uint64_t max_bytes = kCfMaxBytes;                     // sketch-max-bytes: a filter's slots
  protocol::UpstreamKind upstream = protocol::UpstreamKind::kRedis;
};

// One call of a CF script: the script, whether it only reads (EVALSHA_RO), and its arguments
// after the marker and the data-key prefix.
struct CfCall {
  const LuaScript* script = nullptr;
  bool read_only = false;
  std::vector<std::string> argv;
};

// The call for a parsed request whose arguments passed ParseCfRequest. CF.SCANDUMP 0, CF.INFO
// and CF.DEBUG read the fields (cf_info.lua); CF.LOADCHUNK's call carries CheckCfLoad's verdict.
CfCall CfCallFor(const CfRequest& request, const CfConfig& config);

// Several commands of one kind on one filter, in order: CF.ADD / CF.ADDNX (member.nx) as one
// insert call, or CF.EXISTS / CF.MEXISTS / CF.COUNT (`count`) as one check call. `members`
// split `items`.
CfCall CfInsertCall(const std::vector<std::string_view>& items,
                    const std::vector<PlanMember>& members, const CfConfig& config);
CfCall CfCheckCall(const std::vector<std::string_view>& items, bool count);

// Appends the request: EVALSHA (or, with `body`, EVAL: the server lacks the script, or inside
// MULTI) of `call` on filter `name`; _RO for a read unless the upstream is a sharding proxy,
// which forwards neither EVAL_RO nor EVALSHA_RO.
void AppendCfCall(std::string* out, std::string_view name, const CfCall& call, bool body,
                  protocol::UpstreamKind upstream);

}  // namespace bloomproxy::filters
