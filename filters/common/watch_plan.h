// WATCH of a filter's or a sketch's name. RedisBloom's commands that write open the name for
// writing, so Redis counts every BF.ADD or CMS.INCRBY as a change of the name and a WATCH on it
// fires. Here those commands write the structure's data keys, not its name: so WATCH of a name
// also watches the data keys every write touches (a filter's counts and shards, a sketch's parts).
//
//   client:   WATCH f k
//   upstream: EVAL <which data keys> 2 f k <prefixes>   ->   ["{f}:bf:<id>:0:n", "{f}:bf:<id>:0.0"]
//             WATCH f k {f}:bf:<id>:0:n {f}:bf:<id>:0.0
//   reply:    WATCH's own (+OK, or Redis's error)
//
// A link or part added later is added with a write to the name, which the WATCH sees. A windowed
// filter's writes go to its slots (docs/bloom-filters.md "Windowed filters' keys"): its WATCH
// watches every live slot's name, existing or not (a new slot, or a new link in one, is a write
// of the slot's name), and the data keys of those that exist. Pure; no sockets.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "filters/common/plan.h"

namespace bloomproxy::filters {

// The plan of WATCH `keys` (the command's arguments after its name).
std::unique_ptr<Plan> MakeWatchPlan(const std::vector<std::string_view>& keys);

// The script of the first step (filters/common/watch_keys.lua), for tests.
std::string_view WatchKeysScript();

}  // namespace bloomproxy::filters
