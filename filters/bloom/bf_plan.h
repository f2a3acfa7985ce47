// BF plans: one BF.* command (or several coalesced BF.ADD/BF.MADD or BF.EXISTS/BF.MEXISTS on one
// filter) as a plan (filters/common/plan.h) over the filter's metadata (filters/bloom/bf_meta.h)
// and data keys.
//
// This header also brings the plan framework, the metadata, the key-level plans and the BF
// COMMAND entries, which the proxy uses together with the BF plans.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "filters/bloom/bf_args.h"
#include "filters/bloom/bf_meta.h"           // IWYU pragma: export
#include "filters/common/key_scripts.h"      // IWYU pragma: export
#include "filters/common/plan.h"             // IWYU pragma: export
#include "filters/common/sketch_commands.h"  // IWYU pragma: export

namespace bloomproxy::filters {

// One BF command of several coalesced into one plan (filters/common/plan.h).
using BfMember = PlanMember;

// The one member of a plan for a single command: all its items; an array reply for BF.MADD,
// BF.INSERT and BF.MEXISTS.
inline BfMember WholeCommand(const BfRequest& request) {
  const bool multi = request.command == BfCommand::kMAdd || request.command == BfCommand::kInsert ||
                     request.command == BfCommand::kMExists;
  return {0, request.items.size(), multi};
}

// A plan for a parsed BF command. `cache` and `config` outlive the plan. `deferred_error`,
// when not empty, is an argument error RedisBloom reports only once the key is known to be a
// filter (BF.INFO's field, BF.SCANDUMP's iterator): "not found" and WRONGTYPE come first.
std::unique_ptr<Plan> MakeBfPlan(const BfRequest& request, FilterCache* cache,
                                 const BfConfig* config, std::string deferred_error = {});

// One plan for several BF.ADD/BF.MADD (request.command kMAdd) or BF.EXISTS/BF.MEXISTS
// (kMExists) commands on the same filter, whose items are request.items split by `members`.
// The items are processed as the commands one after the other would be; each member gets the
// reply its own command would have had (MemberReplies()).
std::unique_ptr<Plan> MakeBatchPlan(const BfRequest& request, std::vector<BfMember> members,
                                    FilterCache* cache, const BfConfig* config);

}  // namespace bloomproxy::filters
