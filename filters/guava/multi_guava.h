// BF.* inside MULTI on a key a bf-layout rule names: one script per command
// (filters/common/multi_command.h has the framework, filters/guava/guava_plan.h the layout). Pure.
#pragma once

#include <memory>
#include <string>

#include "filters/bloom/bf_args.h"
#include "filters/common/multi_command.h"
#include "filters/guava/bf_layout.h"

namespace bloomproxy::filters {

// The queued form of `request` (parsed without error, or with BF.INFO's deferred field error)
// on a key that `rule` names.
std::unique_ptr<QueuedSketch> QueueGuavaCommand(const BfRequest& request, const LayoutRule& rule,
                                                std::string deferred_error);

}  // namespace bloomproxy::filters
