// BF.* inside MULTI on a key a bf-layout rule names: one script per command
// (filters/multi_command.h has the framework, filters/guava_plan.h the layout). Pure.
#pragma once

#include <memory>
#include <string>

#include "filters/bf_args.h"
#include "filters/bf_layout.h"
#include "filters/multi_command.h"

namespace bloomproxy::filters {

// The queued form of `request` (parsed without error, or with BF.INFO's deferred field error)
// on a key that `rule` names.
std::unique_ptr<QueuedSketch> QueueGuavaCommand(const BfRequest& request, const LayoutRule& rule,
                                                std::string deferred_error);

}  // namespace bloomproxy::filters
