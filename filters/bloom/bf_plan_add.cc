// Adding, for the BF plan (bf_plan_state.h): BF.ADD, BF.MADD and BF.INSERT (and coalesced
// BF.ADD / BF.MADD commands) in rounds of a check step, which reserves places in the newest
// link and reads the items' bits in older ones, and a set step, which sets the bits and says
// which items are new; the places given back when unused or after an error; and the reply of
// each member command from the per-item results (BF.EXISTS / BF.MEXISTS use it too).
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "filters/bloom/bf_plan_state.h"
#include "filters/common/plan_requests.h"
#include "protocol/encoder.h"

namespace bloomproxy::filters::bf_plan_internal {

// An add round that ends with an error gives back the places it reserved. A count key that
// was missing (STRLEN 0, and INCRBY answered just this round's reservation) was created by
// the INCRBY: it is removed again, so the filter stays visibly damaged instead of going on
// with a count that restarted from nothing.
void BfPlan::ReleaseAfterError(StepReplies& r) {
  if (add_stage_ == AddStage::kSet) {
    Release(placed_);
    return;
  }
  if (add_stage_ == AddStage::kResolve) return;  // the items are set, their places kept
  int64_t after = 0;
  if (incr_at_ >= r.size() || !FrameInt(r.Frame(incr_at_), &after)) return;  // nothing reserved
  if (after == reserve_ && count_len_at_ < r.size() && r.Frame(count_len_at_) == ":0\r\n") {
    trailing_.Add({"UNLINK", meta_->CountKey(target_)});
    return;
  }
  Release(reserve_);
}

// ADD / MADD / INSERT, in rounds of two steps.
//
// The check step reserves room in the newest link: INCRBY of its count by the number of
// items the proxy expects to fit. The new count says how many of them really fit, whatever
// other proxies are adding at the same time, so a link never takes more than its capacity
// (which keeps the chain's error bound). When older links exist, the step also reads the
// items' bits there: RedisBloom adds nothing for an item an older link has. It also checks
// (STRLEN) that the count key and the shards the set step will write are there, at their
// size, before anything is written to them.
// The set step (bf_plan_set.cc) sets the bits of the items that fit and says, item by item,
// whether each is new. The reservation left unused (items that were not new) is given back
// with DECRBY. A full link gets a successor before the next round.
void BfPlan::AddRound(PlanStep* step) {
  if (reload_) {
    reload_ = false;
    meta_ = nullptr;
    cache_->Erase(name_);
    return Fetch(step);
  }
  if (ResumeAfterReload(step)) return;
  if (next_ >= items_.size()) return FinishMembers(step);
  const size_t last = meta_->links.size() - 1;
  const int64_t room = static_cast<int64_t>(meta_->links[last].capacity) - meta_->counts[last];
  const size_t remaining = items_.size() - next_;
  reserve_ = room > 0 ? std::min<int64_t>(room, static_cast<int64_t>(remaining)) : 0;
  window_.clear();
  const size_t want = reserve_ > 0 ? static_cast<size_t>(reserve_) : 1;
  for (size_t i = next_; i < items_.size() && window_.size() < want; ++i) window_.push_back(i);
  found_.assign(window_.size(), false);
  // A full filter still answers 0 for an item it has, and scales (or, non-scaling, fails) only
  // for one it must add, as RedisBloom's SBChain_Add: then every link is read, the newest too.
  CheckLinks(step, room <= 0 ? last + 1 : last);
}

void BfPlan::CheckLinks(PlanStep* step, size_t links) {
  add_stage_ = AddStage::kCheck;
  const size_t last = meta_->links.size() - 1;
  target_ = last;
  Requests& req = BeginStep(step);
  AddValidation(&req);
  count_len_at_ = req.count();
  req.Add({"STRLEN", meta_->CountKey(last)});
  req.Last().kind = ReplyCheck::Kind::kPresent;
  req.Last().role = ReplyCheck::Role::kCount;
  req.Last().link = static_cast<uint32_t>(last);
  if (reserve_ > 0) {
    // The shards of the newest link the set step may write.
    if (meta_->ShardCount(last) == 1) {
      AddShardLengths(&req, last, {0});
    } else {
      BitOps planned;
      PlanBits(last, window_, &planned);
      AddShardLengths(&req, last, planned.shards);
    }
  }
  incr_at_ = req.count();
  req.Add({"INCRBY", meta_->CountKey(last), std::to_string(reserve_)});
  req.Last().kind = ReplyCheck::Kind::kInteger;
  req.Last().role = ReplyCheck::Role::kCount;
  req.Last().link = static_cast<uint32_t>(last);
  check_ops_.assign(links, {});
  for (size_t l = 0; l < links; ++l) AddBitReads(&req, l, window_, &check_ops_[l]);
  EndStep(step);
}

// Gives back `n` places reserved in the round's link.
void BfPlan::Release(int64_t n) {
  if (n <= 0) return;
  meta_->counts[target_] -= n;
  trailing_.Add({"DECRBY", meta_->CountKey(target_), std::to_string(n)});
}

// The replies were checked (CheckReplies).
void BfPlan::OnAddRound(StepReplies& r, PlanStep* step) {
  const size_t last = meta_->links.size() - 1;
  const int64_t capacity = static_cast<int64_t>(meta_->links[last].capacity);
  if (add_stage_ == AddStage::kCheck) {
    int64_t after = 0;
    FrameInt(r.Frame(incr_at_), &after);
    if (after < reserve_) {
      Release(reserve_);
      return Finish(step, Unexpected(checks_[incr_at_], "the count was negative"));
    }
    meta_->counts[last] = after;
    // Of the places reserved, those below the capacity are this round's.
    int64_t granted = std::clamp<int64_t>(capacity - (after - reserve_), 0, reserve_);
    const int64_t unused_before = reserve_ - granted;
    // Items in order: one found in an older link answers 0 and takes no place; the others
    // take the granted places; the round ends at the first that has none.
    size_t take = 0;
    int64_t placed = 0;
    for (size_t j = 0; j < window_.size(); ++j) {
      for (size_t l = 0; l < check_ops_.size() && !found_[j]; ++l) {
        found_[j] = AllOnes(check_ops_[l], j, r);
      }
      if (!found_[j]) {
        if (granted == 0) break;
        --granted;
        ++placed;
      }
      take = j + 1;
    }
    window_.resize(take);
    found_.resize(take);
    Release(unused_before + granted);  // what neither overflowed nor was used
    placed_ = placed;
    link_full_ = after - reserve_ >= capacity;
    if (placed == 0) {
      for (size_t j = 0; j < take; ++j) results_.push_back(kRes0);
      next_ += take;
      if (take == 0) {
        link_full_ = true;
        if (!meta_->nonscaling() && check_ops_.size() == meta_->links.size() && after >= capacity) {
          return CreateLink(step);  // the next item is in no link, and the newest is full
        }
        if (meta_->nonscaling() && check_ops_.size() == meta_->links.size()) {
          // Full, and the next item is not there: RedisBloom stops the command with an error;
          // the command's later items are not looked at.
          results_.push_back(kResFull);
          const BfMember& m = members_[MemberOf(next_)];
          for (size_t i = next_ + 1; i < m.start + m.count; ++i) results_.push_back(kResSkipped);
          next_ = m.start + m.count;
          return AddRound(step);
        }
      }
      return AddRound(step);
    }
    return SetBits(step);
  }
  if (add_stage_ == AddStage::kResolve) return OnResolve(r, step);
  OnSetStep(r, step);
}

size_t BfPlan::MemberOf(size_t item) const {
  auto it = std::upper_bound(members_.begin(), members_.end(), item,
                             [](size_t i, const BfMember& m) { return i < m.start; });
  return static_cast<size_t>(it - members_.begin()) - 1;
}

// Each member's reply from the per-item results: a single item's own, or an array of the
// member's results up to (and including) an error that ended it.
void BfPlan::FinishMembers(PlanStep* step) {
  auto append = [](std::string* out, int8_t code) {
    out->append(code == kRes1   ? std::string_view(":1\r\n")
                : code == kRes0 ? std::string_view(":0\r\n")
                                : kFullError);
  };
  member_replies_.clear();
  member_replies_.reserve(members_.size());
  for (const BfMember& m : members_) {
    std::string out;
    if (!m.multi) {
      append(&out, m.start < results_.size() ? results_[m.start] : kResFull);
    } else {
      size_t n = 0;
      while (n < m.count && m.start + n < results_.size() && results_[m.start + n] != kResSkipped) {
        ++n;
      }
      out.reserve(8 + 4 * n);
      protocol::AppendArrayHeader(&out, static_cast<int64_t>(n));
      for (size_t i = m.start; i < m.start + n; ++i) append(&out, results_[i]);
    }
    member_replies_.push_back(std::move(out));
  }
  Finish(step, members_.size() == 1 ? member_replies_[0] : std::string());
}

}  // namespace bloomproxy::filters::bf_plan_internal
