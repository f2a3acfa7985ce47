// The plan of TOPK.ADD / TOPK.INCRBY commands on one sketch (one member each, in order):
//
//   fast path, a sketch the proxy knows and small enough (topk_snapshot.h):
//     step 1   EVALSHA_RO topk_read.lua ... snapshot          -> the whole sketch
//              (the proxy applies every item with the model)
//     step 2   EVALSHA topk_commit.lua ... id v <changes>     -> OK, or CONFLICT: again from
//              step 1, at most 4 snapshots in all
//   otherwise, and after the 4th CONFLICT or a snapshot that does not fit:
//     step     EVALSHA topk_add.lua ... <items>              -> each item's result
//
// (each step again as EVAL when the server did not have the script). Pure; no sockets.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "filters/common/plan.h"
#include "filters/topk/topk_meta.h"
#include "filters/topk/topk_replies.h"
#include "filters/topk/topk_scripts.h"

namespace bloomproxy::filters {

// What every TOPK answer teaches the cache about sketch `key`: its fields (id, k, width, depth,
// decay), or that no sketch is there any more.
void TopkRemember(TopkCache* cache, std::string_view key, const redisReply* decoded);

// `items[i]` with increment `increments[i]`; `members` split them (one TopkAddMember each, in
// order). `cache` and `config` outlive the plan.
std::unique_ptr<Plan> MakeTopkUpdatePlan(std::string key, std::vector<std::string> items,
                                         std::vector<uint32_t> increments,
                                         std::vector<TopkAddMember> members, TopkCache* cache,
                                         const TopkConfig* config);

}  // namespace bloomproxy::filters
