// CF plans: one CF.* command (or several coalesced CF.ADD / CF.ADDNX, or CF.EXISTS /
// CF.MEXISTS, on one filter) as a plan (filters/common/plan.h) of ONE script call, answered byte
// for byte as RedisBloom answers it. The proxy keeps nothing of a cuckoo filter: the script reads
// the filter's fields and buckets where it runs, so there is no metadata to cache, validate or
// refetch, and no command ever starts over.
//
//   step 1   EVALSHA[_RO] <sha> 1 <name> <marker> <prefix> <args>     -> answer -> reply
//   (step 2  EVAL[_RO] <text> ... when step 1 met NOSCRIPT: the server did not have it yet)
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "filters/common/plan.h"
#include "filters/cuckoo/cf_args.h"
#include "filters/cuckoo/cf_meta.h"
#include "filters/cuckoo/cf_scripts.h"

namespace bloomproxy::filters {

// A plan for `request`, which passed ParseCfRequest. Its views are copied. `config` outlives
// the plan.
std::unique_ptr<Plan> MakeCfPlan(const CfRequest& request, const CfConfig* config);

// One plan for CF.ADD / CF.ADDNX commands (member.nx: ADDNX; one item each) on filter `key`, run
// in order as one insert; MemberReplies() has each command's reply. With the filter's shape in
// `cache` it takes the fast path (cf_batch_plan.cc), and it caches what the scripts answer.
std::unique_ptr<Plan> MakeCfInsertBatchPlan(std::string key, std::vector<std::string> items,
                                            std::vector<PlanMember> members, CfCache* cache,
                                            const CfConfig* config);

// One plan for CF.EXISTS / CF.MEXISTS commands (member.multi: MEXISTS) on filter `key`: direct
// reads with no script when the filter's shape is cached.
std::unique_ptr<Plan> MakeCfCheckBatchPlan(std::string key, std::vector<std::string> items,
                                           std::vector<PlanMember> members, CfCache* cache,
                                           const CfConfig* config);

}  // namespace bloomproxy::filters
