// Reading, for the BF plan (bf_plan_state.h): BF.EXISTS and BF.MEXISTS (and coalesced ones),
// which read every link's bits of the items in one step; and BF.CARD, BF.INFO and the header
// BF.SCANDUMP answers to iterator 0, which are made of the metadata and the links' counts.
#include <cstdint>
#include <string>
#include <vector>

#include "filters/bf_plan_state.h"
#include "filters/bloom.h"
#include "filters/plan_requests.h"
#include "protocol/encoder.h"

namespace bloomproxy::filters::bf_plan_internal {

// EXISTS / MEXISTS: one BITFIELD_RO per link and shard for all the items (each shard's size
// checked in the same pipeline).
void BfPlan::ExistsRound(PlanStep* step) {
  Requests& req = BeginStep(step);
  AddValidation(&req);
  std::vector<size_t> all(items_.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  check_ops_.assign(meta_->links.size(), {});
  for (size_t l = 0; l < meta_->links.size(); ++l) AddBitReads(&req, l, all, &check_ops_[l]);
  EndStep(step);
}

// The replies were checked (CheckReplies).
void BfPlan::OnExistsRound(StepReplies& r, PlanStep* step) {
  results_.clear();
  for (size_t j = 0; j < items_.size(); ++j) {
    bool found = false;
    for (size_t l = 0; l < check_ops_.size() && !found; ++l) {
      found = AllOnes(check_ops_[l], j, r);
    }
    results_.push_back(found ? kRes1 : kRes0);
  }
  FinishMembers(step);
}

// CARD / INFO / SCANDUMP's header: the counts.
void BfPlan::CountsRound(PlanStep* step) {
  Requests& req = BeginStep(step);
  AddValidation(&req);
  AddCounts(&req);
  EndStep(step);
}

// The replies were checked (CheckReplies).
void BfPlan::OnCountsRound(StepReplies& r, PlanStep* step) {
  ApplyCounts(r.Get(kValidationReplies));
  int64_t total = 0;
  uint64_t capacity = 0, bytes = 0;
  bool counts_overflow = false, sizes_overflow = false;
  for (size_t l = 0; l < meta_->links.size(); ++l) {
    counts_overflow = counts_overflow || __builtin_add_overflow(total, meta_->counts[l], &total);
    sizes_overflow = sizes_overflow ||
                     __builtin_add_overflow(capacity, meta_->links[l].capacity, &capacity) ||
                     __builtin_add_overflow(bytes, meta_->links[l].bytes, &bytes);
  }
  if (counts_overflow) {
    return Finish(
        step, Unexpected(checks_[kValidationReplies], "the counts add up to more than 2^63 - 1"));
  }
  // BF.INFO: RedisBloom's Size counts its structures (32 bytes + 64 per link) and the bits.
  const uint64_t size = 32 + 64 * meta_->links.size() + bytes;
  constexpr uint64_t kMaxInt = static_cast<uint64_t>(INT64_MAX);
  if (sizes_overflow || capacity > kMaxInt || size > kMaxInt || size < bytes) {
    return Finish(step, Unexpected(Named("HGETALL"),
                                   "the filter's link capacities or sizes add up to more "
                                   "than 2^63 - 1"));
  }
  if (req_.command == BfCommand::kCard) return Finish(step, Integer(total));
  if (req_.command == BfCommand::kScanDump) {
    DumpHeader h;
    h.total_items = static_cast<uint64_t>(total);
    h.options = meta_->options;
    h.expansion = meta_->expansion;
    for (size_t l = 0; l < meta_->links.size(); ++l) {
      h.links.push_back({meta_->links[l], static_cast<uint64_t>(meta_->counts[l])});
    }
    std::string out = "*2\r\n:1\r\n";
    protocol::AppendBulk(&out, EncodeDumpHeader(h));
    return Finish(step, out);
  }
  const int64_t filters = static_cast<int64_t>(meta_->links.size());
  auto expansion = [&](std::string* o) {
    if (meta_->nonscaling()) {
      protocol::AppendNullBulk(o);
    } else {
      protocol::AppendInteger(o, meta_->expansion);
    }
  };
  std::string out;
  switch (req_.info_field) {
    case InfoField::kAll:
      out = "*10\r\n";
      protocol::AppendSimple(&out, "Capacity");
      protocol::AppendInteger(&out, static_cast<int64_t>(capacity));
      protocol::AppendSimple(&out, "Size");
      protocol::AppendInteger(&out, static_cast<int64_t>(size));
      protocol::AppendSimple(&out, "Number of filters");
      protocol::AppendInteger(&out, filters);
      protocol::AppendSimple(&out, "Number of items inserted");
      protocol::AppendInteger(&out, total);
      protocol::AppendSimple(&out, "Expansion rate");
      expansion(&out);
      break;
    case InfoField::kCapacity:
      out = "*1\r\n" + Integer(static_cast<int64_t>(capacity));
      break;
    case InfoField::kSize:
      out = "*1\r\n" + Integer(static_cast<int64_t>(size));
      break;
    case InfoField::kFilters:
      out = "*1\r\n" + Integer(filters);
      break;
    case InfoField::kItems:
      out = "*1\r\n" + Integer(total);
      break;
    case InfoField::kExpansion:
      out = "*1\r\n";
      expansion(&out);
      break;
  }
  Finish(step, out);
}

}  // namespace bloomproxy::filters::bf_plan_internal
