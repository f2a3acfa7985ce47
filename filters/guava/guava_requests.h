// What the Guava-layout plans (filters/guava/guava_plan.h) share: the items' bit indexes, the
// BITFIELD requests that set or read them, and the replies made of the bits. Internal to
// filters/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "filters/bloom/bf_args.h"
#include "filters/common/plan.h"
#include "filters/guava/bf_layout.h"
#include "protocol/sharding_proxy.h"

namespace bloomproxy::filters::guava_plan {

constexpr std::string_view kNotInteger = "-ERR value is not an integer or out of range\r\n";

// The bit indexes of the request's items, rule.k per item in item order, into *out; "" or the
// error reply (an int64le item that is not an integer).
std::string ItemIndexes(const BfRequest& request, const LayoutRule& rule,
                        std::vector<uint64_t>* out);

// Appends BITFIELD key SET u1 <i> 1 (set) or the read command's GET u1 <i> for each index.
void AppendBitfield(std::string* out, std::string_view key, const uint64_t* indexes, size_t n,
                    bool set, protocol::UpstreamKind upstream);

// The bits BITFIELD reply i holds (StepReplies::Ints): exactly n integers, each 0 or 1; null
// for any other reply.
const std::vector<int64_t>* BitsReply(StepReplies& r, size_t i, size_t n);

// Whether item j's k bits are all set in `bits` (one key's reply; null: a key with no bits).
inline bool AllSet(const std::vector<int64_t>* bits, size_t j, uint32_t k) {
  if (bits == nullptr) return false;
  for (size_t h = 0; h < k; ++h) {
    if ((*bits)[j * k + h] == 0) return false;
  }
  return true;
}

// The reply to ADD/EXISTS (one integer) or, when `multi`, MADD/MEXISTS/INSERT (an array) of
// per-item 0/1.
std::string ItemsReply(bool multi, const std::vector<uint8_t>& results);

// Whether the command answers one integer per item as an array (MADD, MEXISTS, INSERT).
bool MultiItem(BfCommand command);

// What the plans keep of a request (whose items and key are views into the client's
// arguments): the command and its options, and the items' bit indexes.
struct GuavaRequest {
  BfCommand command = BfCommand::kAdd;
  std::string key;
  bool nocreate = false;
  InfoField info_field = InfoField::kAll;
  double error_rate = 0;
  uint64_t capacity = 0;
  size_t items = 0;
  std::vector<uint64_t> indexes;  // rule.k per item
  std::string error;              // an error reply to give before anything is sent

  bool adds() const {
    return command == BfCommand::kAdd || command == BfCommand::kMAdd ||
           command == BfCommand::kInsert;
  }
  bool reads() const { return command == BfCommand::kExists || command == BfCommand::kMExists; }
};
GuavaRequest KeepRequest(const BfRequest& request, const LayoutRule& rule);

// The plan of an expanding rule's filter (guava_expanding.cc).
std::unique_ptr<Plan> MakeExpandingPlan(GuavaRequest request, const LayoutRule& rule,
                                        protocol::UpstreamKind upstream,
                                        std::string deferred_error);

// BF.CARD's, BF.INFO's or BF.DEBUG's reply (`req`) for a filter whose data keys have
// `bitcounts` bits set: Guava's approximateElementCount, summed over the keys (BF.DEBUG: one
// line per data key, with its own count).
std::string CountsReply(const GuavaRequest& req, const LayoutRule& rule,
                        const std::vector<int64_t>& bitcounts);

// Whether BF.RESERVE's error rate and capacity are the rule's.
inline bool SameParameters(const GuavaRequest& req, const LayoutRule& rule) {
  return req.error_rate == rule.error_rate && req.capacity == rule.n();
}

// The error reply for BF.RESERVE with parameters other than the rule's, and for BF.SCANDUMP /
// BF.LOADCHUNK, which a key in a Java layout does not have.
std::string ReserveMismatch(const LayoutRule& rule);
std::string NoDump(const LayoutRule& rule);

// The error reply for an upstream reply that makes no sense to `command`.
std::string Unexpected(std::string_view command, std::string_view frame);

// BF.DEBUG's hashwidth of a layout: 32 for the MURMUR128_MITZ_32 layouts (their indexes come from
// 32-bit halves of the hash), 64 for the others.
uint32_t HashWidth(GuavaLayout layout);

// Bytes of one data key's bits: ceil(bits / 8).
inline int64_t KeyBytes(const LayoutRule& rule) {
  return static_cast<int64_t>((rule.bits + 7) / 8);
}

}  // namespace bloomproxy::filters::guava_plan
