// CMS plans: one CMS.* command as a plan (filters/plan.h) over a sketch's metadata and parts
// (filters/cms_meta.h), answered byte for byte as RedisBloom answers it (spec: filters/cms.h,
// filters/cms_args.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "filters/cms_args.h"
#include "filters/cms_meta.h"
#include "filters/plan.h"

namespace bloomproxy::filters {

// A plan for a parsed CMS command. `parse_error`, when not empty, is ParseCmsRequest's error
// whose error_order is kAfterKey or kAfterSources: replied once the keys checked before it pass.
// The request's views are copied. `cache` and `config` outlive the plan.
std::unique_ptr<Plan> MakeCmsPlan(const CmsRequest& request, std::string parse_error,
                                  CmsCache* cache, const CmsConfig* config);

// One plan for several CMS.INCRBY (request.command kIncrBy) or CMS.QUERY (kQuery) commands on the
// same sketch, whose pairs or items are request.increments / request.items split by `members`:
// one BITFIELD for all, in order, so each member's reply is the one its own command would have
// had run after the ones before it (MemberReplies()).
std::unique_ptr<Plan> MakeCmsBatchPlan(const CmsRequest& request, std::vector<PlanMember> members,
                                       CmsCache* cache, const CmsConfig* config);

}  // namespace bloomproxy::filters
