// TOPK plans: one TOPK.* command (or several coalesced TOPK.ADD / TOPK.INCRBY on one sketch) as a
// plan (filters/common/plan.h) of ONE script call, answered byte for byte as RedisBloom answers
// it. What the proxy keeps of a sketch (its id and depth, topk_meta.h) only saves the script the
// hashing; the script reads everything else where it runs, so no command ever starts over.
//
//   step 1   EVALSHA[_RO] <sha> 1 <name> <marker> <prefix> <args>     -> answer -> reply
//   (step 2  EVAL[_RO] <text> ... when step 1 met NOSCRIPT: the server did not have it yet)
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "filters/common/plan.h"
#include "filters/topk/topk_args.h"
#include "filters/topk/topk_meta.h"
#include "filters/topk/topk_replies.h"
#include "filters/topk/topk_scripts.h"

namespace bloomproxy::filters {

// A plan for `request`, which ParseTopkRequest parsed: `error` is what it returned (empty, or an
// error whose order is kAfterKey or kInPairs). Its views are copied. `cache` and `config`
// outlive the plan.
std::unique_ptr<Plan> MakeTopkPlan(const TopkRequest& request, const std::string& error,
                                   TopkCache* cache, const TopkConfig* config);

// One plan for TOPK.ADD and TOPK.INCRBY commands without a bad increment (each one member, its
// items in `items` and their increments in `increments`, in order) on sketch `key`, run in order
// as one update; MemberReplies() has each command's reply.
std::unique_ptr<Plan> MakeTopkAddBatchPlan(std::string key, std::vector<std::string> items,
                                           std::vector<uint64_t> increments,
                                           std::vector<PlanMember> members, TopkCache* cache,
                                           const TopkConfig* config);

}  // namespace bloomproxy::filters
