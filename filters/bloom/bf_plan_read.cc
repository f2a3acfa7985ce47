// Reading, for the BF plan (bf_plan_state.h): BF.EXISTS and BF.MEXISTS (and coalesced ones),
// which read every link's bits of the items, in one step or, probing, two; and BF.CARD, BF.INFO,
// BF.DEBUG and the header BF.SCANDUMP answers to iterator 0, which are made of the metadata and
// the links' counts.
#include <cstdint>
#include <string>
#include <vector>

#include "filters/bloom/bf_plan_state.h"
#include "filters/bloom/bf_replies.h"
#include "filters/bloom/bloom.h"
#include "filters/common/plan_requests.h"
#include "protocol/encoder.h"

namespace bloomproxy::filters::bf_plan_internal {

// EXISTS / MEXISTS: one BITFIELD_RO per link and shard for all the items (each shard's size
// checked in the same pipeline), in one step.
//
// Most lookups of a Bloom filter are usually of items it does not have, and such an item
// mostly shows it in its first bit: a filter at capacity has half its bits 0, one far from it
// nearly all. So while at most half of the items looked up lately had their first bit set in
// some link (FilterMeta::ProbeTally, kept from every lookup), the items of single-item
// commands (BF.EXISTS, a BF.MEXISTS of one item) are probed: the first step reads only their
// first bit in each link, and a second step reads their other bits only in the links where
// it was 1. Redis then does about one op per absent item instead of k, for one more round
// trip for the items that pass. Each answer is the filter's at a moment of the command (bits
// only go from 0 to 1, and both steps validate the filter). Items of a BF.MEXISTS of several
// are read whole in the first step, so that its answers are all of the same moment.
void BfPlan::ExistsRound(PlanStep* step) {
  exists_rest_ = false;
  const bool probing = meta_->probes.Probing();
  spans_.assign(items_.size(), BitSpan::kAll);
  if (probing) {
    for (const BfMember& m : members_) {
      if (m.count == 1 && m.start < spans_.size()) spans_[m.start] = BitSpan::kProbe;
    }
  }
  Requests& req = BeginStep(step);
  AddValidation(&req);
  std::vector<size_t> all(items_.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  check_ops_.assign(meta_->links.size(), {});
  for (size_t l = 0; l < meta_->links.size(); ++l) {
    AddBitReads(&req, l, all, &check_ops_[l], probing ? &spans_ : nullptr);
  }
  EndStep(step);
}

// The replies were checked (CheckReplies). Items read whole are answered; probed items whose
// probe read 1 in some link go to the second step (ExistsRest).
void BfPlan::OnExistsRound(StepReplies& r, PlanStep* step) {
  if (exists_rest_) return OnExistsRest(r, step);
  results_.assign(items_.size(), kRes0);
  rest_items_.assign(check_ops_.size(), {});
  bool rest = false;
  for (size_t j = 0; j < items_.size(); ++j) {
    bool passed = false;
    for (size_t l = 0; l < check_ops_.size() && results_[j] == kRes0; ++l) {
      if (!FirstOne(check_ops_[l], j, r)) continue;
      passed = true;
      if (spans_[j] == BitSpan::kAll || meta_->links[l].k == 1) {
        if (AllOnes(check_ops_[l], j, r)) results_[j] = kRes1;
      } else {
        rest_items_[l].push_back(j);
        rest = true;
      }
    }
    meta_->probes.Count(passed);
  }
  if (rest) return ExistsRest(step);
  FinishMembers(step);
}

// The second step: the other bits of the probed items, in the links where their probe read 1.
void BfPlan::ExistsRest(PlanStep* step) {
  exists_rest_ = true;
  for (BitSpan& s : spans_) {
    if (s == BitSpan::kProbe) s = BitSpan::kRest;
  }
  Requests& req = BeginStep(step);
  AddValidation(&req);
  check_ops_.assign(meta_->links.size(), {});
  for (size_t l = 0; l < rest_items_.size(); ++l) {
    if (!rest_items_[l].empty()) AddBitReads(&req, l, rest_items_[l], &check_ops_[l], &spans_);
  }
  EndStep(step);
}

// The replies were checked (CheckReplies).
void BfPlan::OnExistsRest(StepReplies& r, PlanStep* step) {
  for (size_t l = 0; l < rest_items_.size(); ++l) {
    for (size_t m = 0; m < rest_items_[l].size(); ++m) {
      if (AllOnes(check_ops_[l], m, r)) results_[rest_items_[l][m]] = kRes1;
    }
  }
  FinishMembers(step);
}

// CARD / INFO / DEBUG / SCANDUMP's header: the counts.
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
