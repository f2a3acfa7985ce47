// CMS plans: one CMS.* command as a plan (filters/common/plan.h) over a sketch's metadata and parts
// (filters/cms/cms_meta.h), answered byte for byte as RedisBloom answers it (spec:
// filters/cms/cms.h, filters/cms/cms_args.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "filters/cms/cms_args.h"
#include "filters/cms/cms_meta.h"
#include "filters/common/plan.h"

namespace bloomproxy::filters {

// A plan for a parsed CMS command. `parse_error`, when not empty, is ParseCmsRequest's error
// whose error_order is kAfterKey or kAfterSources: replied once the keys checked before it pass.
// The request's views are copied. `cache` and `config` outlive the plan.
std::unique_ptr<Plan> MakeCmsPlan(const CmsRequest& request, std::string parse_error,
                                  CmsCache* cache, const CmsConfig* config);

// One plan for several CMS.INCRBY (`command` kIncrBy: one increment per item) or CMS.QUERY
// (kQuery: no increments) commands on sketch `key`, whose items are split by `members`: one
// BITFIELD for all, in order, so each member's reply is the one its own command would have had
// run after the ones before it (MemberReplies()). The plan keeps the vectors (no copy).
std::unique_ptr<Plan> MakeCmsBatchPlan(CmsCommand command, std::string key,
                                       std::vector<std::string> items,
                                       std::vector<uint64_t> increments,
                                       std::vector<PlanMember> members, CmsCache* cache,
                                       const CmsConfig* config);

}  // namespace bloomproxy::filters
