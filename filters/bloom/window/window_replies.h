// A windowed filter's replies, folded from its slots' own BF replies (RESP2, as the BF plans
// make them; the proxy turns them into RESP3 as any BF reply). Pure.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "filters/bloom/bf_meta.h"
#include "filters/bloom/bf_plan.h"

namespace bloomproxy::filters {

// ORs into *found the items a slot's BF.MEXISTS reply finds; false and *error (the reply to
// give) when it is an error or no array of 0s and 1s of found->size().
bool FoundItems(std::string_view reply, std::vector<bool>* found, std::string* error);

// ORs into *found the items a slot's lookup plan found, from its members' replies (each a
// BF.EXISTS or BF.MEXISTS reply for `members`), or from its one reply when it has none (an
// error for all, given back in *error with false).
bool FoundInMembers(const std::string& reply, const std::vector<std::string>& member_replies,
                    const std::vector<BfMember>& members, std::vector<bool>* found,
                    std::string* error);

// A member's lookup reply from the items found in any live slot.
std::string LookupReply(const BfMember& member, const std::vector<bool>& found);

// BF.CARD: the sum of the slots' counts (the first error, if any).
std::string CardOfSlots(const std::vector<std::string>& replies);

// BF.INFO (whole, or one field): Capacity is the window's, Size, Number of filters and Number
// of items inserted are summed over the live slots, Expansion rate is the filter's; the whole
// reply then adds Window (ms) and Slots. A missing slot ("not found") adds nothing.
std::string InfoOfSlots(const std::vector<std::string>& replies, InfoField field,
                        const FilterMeta& meta);

// BF.DEBUG: "size:<total over the slots>" and every live slot's links.
std::string DebugOfSlots(const std::vector<std::string>& replies);

}  // namespace bloomproxy::filters
