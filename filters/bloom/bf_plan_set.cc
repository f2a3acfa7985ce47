// The set step of adding, for the BF plan (bf_plan_state.h): the window's items that were not
// found in older links get their bits set in the link holding their places, and each is
// found new or not. Of all the adds of one item, through any number of proxies, exactly one
// may answer 1, also while the filter scales and two proxies could put the item in two links.
//
// Two forms:
// - Plain, when the filter has one link and the items' bits are in one shard (the common case,
//   and the fastest): one BITFIELD SET, whose old values decide atomically between the writers
//   of that shard, followed by a second validation. If that validation shows a link the proxy
//   did not know, a proxy that knew it may have put an item there just before: the items this
//   write found new are in doubt, and after the metadata is read again the newer links are read
//   for them (Resolve). Writers of newer links use the script, which reads link 0 atomically
//   with their write, so an item is in a newer link only if its writer there answered 1.
// - By script (add_script.h) otherwise: reading every other link and setting the items in
//   theirs is one atomic step; a link the proxy does not know makes the script write nothing,
//   and the step is sent again, for the same places, on fresh metadata.
#include <cstdint>
#include <string>
#include <vector>

#include "filters/bloom/add_script.h"
#include "filters/bloom/bf_plan_state.h"
#include "filters/common/plan_requests.h"

namespace bloomproxy::filters::bf_plan_internal {

void BfPlan::SetBits(PlanStep* step) {
  add_stage_ = AddStage::kSet;
  set_items_.clear();
  for (size_t j = 0; j < window_.size(); ++j) {
    if (!found_[j]) set_items_.push_back(window_[j]);
  }
  Requests& req = BeginStep(step);
  AddValidation(&req);
  plain_set_ = false;
  if (meta_->links.size() == 1) {
    PlanBits(target_, set_items_, &set_ops_);
    plain_set_ = set_ops_.shards.size() == 1;
  }
  if (plain_set_) {
    SetPlain(&req);
  } else {
    SetByScript(&req);
  }
  EndStep(step);
}

// BITFIELD SET of the items' bits in the only link, then the validation again.
void BfPlan::SetPlain(Requests* req) {
  AddBitfields(req, target_, /*set=*/true, &set_ops_);
  post_at_ = req->count();
  AddValidation(req);
}

// The add script, with every link: the others to read, the items' own last.
void BfPlan::SetByScript(Requests* req) {
  AddScriptRequest script(name_, meta_->id, meta_->links.size(), set_items_.size());
  BitOps ops;
  std::vector<uint32_t> keys;  // per command of `ops`: its shard's index among the script's keys
  auto group = [&](size_t l) {
    PlanBits(l, set_items_, &ops);
    keys.clear();
    for (uint64_t shard : ops.shards) keys.push_back(script.Key(meta_->BitsKey(l, shard)));
    script.BeginGroup(ops.k);
    for (size_t x = 0; x < ops.offsets.size(); ++x)
      script.Bit(keys[ops.command[x]], ops.offsets[x]);
  };
  for (size_t l = 0; l < meta_->links.size(); ++l) {
    if (l != target_) group(l);
  }
  group(target_);
  post_at_ = req->count();
  script.AddTo(req, static_cast<uint32_t>(target_));
}

// The replies were checked (CheckReplies); the first validation showed the same filter, maybe
// with a link more.
void BfPlan::OnSetStep(StepReplies& r, PlanStep* step) {
  if (plain_set_) return OnPlainSet(r, step);
  OnScriptSet(r, step);
}

void BfPlan::OnPlainSet(StepReplies& r, PlanStep* step) {
  std::string error;
  const KeyState after = Validate(r, &error, post_at_);
  if (after == KeyState::kError) {
    Release(placed_);
    return Finish(step, error);
  }
  if (after != KeyState::kFilter && after != KeyState::kNewLink) {
    ForgetOrphanBits();  // deleted or replaced around the write
    return Restart(step);
  }
  int64_t added = 0;
  size_t s = 0;
  doubt_.clear();
  for (size_t j = 0; j < window_.size(); ++j) {
    const bool is_new = !found_[j] && !AllOnes(set_ops_, s++, r);
    if (is_new && after == KeyState::kNewLink) doubt_.push_back(window_[j]);
    results_.push_back(is_new ? kRes1 : kRes0);
    added += is_new ? 1 : 0;
  }
  next_ = window_.back() + 1;
  Release(placed_ - added);
  restarts_ = 0;
  if (doubt_.empty()) return AddRound(step);
  resume_id_ = meta_->id;
  Restart(step);
}

void BfPlan::OnScriptSet(StepReplies& r, PlanStep* step) {
  const std::vector<int64_t>* set = r.Ints(post_at_);
  if (set == nullptr) {
    // The filter changed before the script ran (kAddStale): nothing was written. The places
    // stay reserved (giving them back could leave the link short of its capacity for good, as
    // its successor takes the new items), and the step is sent again on fresh metadata.
    resume_id_ = meta_->id;
    if (restarts_ >= kMaxRestarts) Release(placed_);  // Restart gives up
    return Restart(step);
  }
  int64_t added = 0;
  size_t s = 0;
  for (size_t j = 0; j < window_.size(); ++j) {
    const bool is_new = !found_[j] && (*set)[s++] == kAddNew;
    results_.push_back(is_new ? kRes1 : kRes0);
    added += is_new ? 1 : 0;
  }
  next_ = window_.back() + 1;
  Release(placed_ - added);
  restarts_ = 0;  // progress: only changes without progress in between count as restarts
  AddRound(step);
}

// With the metadata read again (AddRound calls this first): the script sent again, or the
// items in doubt resolved, if the filter is still the same one; true if a step was made.
bool BfPlan::ResumeAfterReload(PlanStep* step) {
  if (resume_id_.empty()) return false;
  const bool same = resume_id_ == meta_->id && target_ < meta_->links.size();
  resume_id_.clear();
  if (!same) {
    doubt_.clear();  // another filter now: what was written went with the old one
    return false;
  }
  if (!doubt_.empty()) {
    Resolve(step);
  } else {
    SetBits(step);
  }
  return true;
}

// The items in doubt read in the links after the one they were written to.
void BfPlan::Resolve(PlanStep* step) {
  add_stage_ = AddStage::kResolve;
  Requests& req = BeginStep(step);
  AddValidation(&req);
  check_ops_.assign(meta_->links.size(), {});
  for (size_t l = target_ + 1; l < meta_->links.size(); ++l) {
    AddBitReads(&req, l, doubt_, &check_ops_[l]);
  }
  EndStep(step);
}

// An item in doubt found in a newer link was added there first, by an add that answered 1:
// this one answers 0 and gives its place back.
void BfPlan::OnResolve(StepReplies& r, PlanStep* step) {
  int64_t found = 0;
  for (size_t d = 0; d < doubt_.size(); ++d) {
    bool there = false;
    for (size_t l = target_ + 1; l < check_ops_.size() && !there; ++l) {
      there = AllOnes(check_ops_[l], d, r);
    }
    if (there) {
      results_[doubt_[d]] = kRes0;
      ++found;
    }
  }
  doubt_.clear();
  Release(found);
  AddRound(step);
}

// A plain set step wrote to a filter that was deleted or replaced meanwhile: the shard it
// wrote belongs to no filter (BITFIELD may even have created it anew).
void BfPlan::ForgetOrphanBits() {
  if (!plain_set_ || add_stage_ != AddStage::kSet || set_ops_.shards.empty()) return;
  trailing_.Add({"UNLINK", meta_->BitsKey(target_, set_ops_.shards[0])});
  plain_set_ = false;
}

}  // namespace bloomproxy::filters::bf_plan_internal
