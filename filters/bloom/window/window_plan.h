// A BF command on a windowed filter (docs/windowed-filters.md): the same command on its live
// slots, each an ordinary filter run by its own BF plan (SubPlans), the replies folded into
// RedisBloom's reply. The BF plan hands a command over once it knows the name is a windowed
// filter (from its cache, or from the name's hash).
//
//   adds:     the slot of now + lifetime on the upstream's clock (its own BF plan creates it
//             with PEXPIREAT at the slot's end), and a lookup of the items in the other live
//             slots in the same steps: an item is new (1) only if no live slot had it.
//   lookups:  every slot that may be live (LiveSlots), a missing one finds nothing.
//   CARD, INFO, DEBUG: the live slots' own replies, summed.
//
// Every step also carries HMGET name bloomproxy id window: a name that is no longer this
// filter sends the command back to an ordinary BF plan, which reads the name again.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "filters/bloom/bf_plan.h"

namespace bloomproxy::filters {

// `request` is the client's command (its items are copied); `meta` is the windowed filter
// (meta->windowed()), kept in `cache`, whose clock sample the plan updates.
std::unique_ptr<Plan> MakeWindowPlan(const BfRequest& request, std::vector<BfMember> members,
                                     std::shared_ptr<FilterMeta> meta, FilterCache* cache,
                                     const BfConfig* config);

// The error of BF.SCANDUMP and BF.LOADCHUNK on a windowed filter.
inline constexpr std::string_view kNoWindowDump = "-ERR windowed filters have no dump format\r\n";
// BF.INSERT's TTL over the filter's window, or on a filter without one.
inline constexpr std::string_view kBadTtl = "-ERR bad TTL\r\n";

}  // namespace bloomproxy::filters
