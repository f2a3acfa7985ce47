// CMS plans: one CMS.* command as a plan (filters/plan.h) over a sketch's metadata and parts
// (filters/cms_meta.h), answered byte for byte as RedisBloom answers it (spec: filters/cms.h,
// filters/cms_args.h).
#pragma once

#include <memory>
#include <string>

#include "filters/cms_args.h"
#include "filters/cms_meta.h"
#include "filters/plan.h"

namespace bloomproxy::filters {

// A plan for a parsed CMS command. `parse_error`, when not empty, is ParseCmsRequest's error
// whose error_order is kAfterKey or kAfterSources: replied once the keys checked before it pass.
// The request's views are copied. `cache` and `config` outlive the plan.
std::unique_ptr<Plan> MakeCmsPlan(const CmsRequest& request, std::string parse_error,
                                  CmsCache* cache, const CmsConfig* config);

}  // namespace bloomproxy::filters
