// TDIGEST plans: one TDIGEST.* command (or several coalesced TDIGEST.ADD on one digest) as a plan
// (filters/common/plan.h) of ONE script call, answered byte for byte as RedisBloom answers it.
//
//   step 1   EVALSHA <sha> <keys> <markers, prefixes> <args>     -> answer -> reply
//   (step 2  EVAL <text> ... when step 1 met NOSCRIPT: the server did not have it yet)
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "filters/common/plan.h"
#include "filters/tdigest/tdigest_args.h"
#include "filters/tdigest/tdigest_scripts.h"

namespace bloomproxy::filters {

// A plan for `request`, which ParseTdigestRequest parsed: `error` is what it returned (empty, or
// an error whose order is kAfterKey). Its views are copied. `config` outlives the plan.
std::unique_ptr<Plan> MakeTdigestPlan(const TdigestRequest& request, const std::string& error,
                                      const TdigestConfig* config);

// One plan for TDIGEST.ADD commands without an argument error on digest `key` (each one member,
// its values in `values` as the client sent them, in order), run in order as one call;
// MemberReplies() has each command's reply.
std::unique_ptr<Plan> MakeTdigestAddBatchPlan(std::string key, std::vector<std::string> values,
                                              std::vector<PlanMember> members,
                                              const TdigestConfig* config);

// The value of a TDIGEST.ADD argument the parser accepted (strtod of the whole string).
double TdigestValueOf(const std::string& text);

}  // namespace bloomproxy::filters
