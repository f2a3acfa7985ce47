// Reading, for the BF plan (bf_plan_state.h): BF.EXISTS and BF.MEXISTS (and coalesced ones),
// which read every link's bits of the items in one step; and BF.CARD, BF.INFO and the header
// BF.SCANDUMP answers to iterator 0, which are made of the metadata and the links' counts.
#include <cstdint>
#include <string>
#include <vector>

#include "filters/bf_plan_state.h"
#include "filters/bf_replies.h"
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
  std::string reply;
  switch (CountsReply(req_, *meta_, &reply)) {
    case CountsProblem::kNone:
      return Finish(step, reply);
    case CountsProblem::kCounts:
      return Finish(
          step, Unexpected(checks_[kValidationReplies], "the counts add up to more than 2^63 - 1"));
    case CountsProblem::kSizes:
      return Finish(step, Unexpected(Named("HGETALL"),
                                     "the filter's link capacities or sizes add up to more "
                                     "than 2^63 - 1"));
  }
}

}  // namespace bloomproxy::filters::bf_plan_internal
