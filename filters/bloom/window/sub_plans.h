// Several plans run side by side in one plan's steps: a windowed filter's command is the same
// command on each of its live slots, each slot an ordinary filter with its own BF plan. Each
// step of the outer plan carries, after requests of its own, the current step of every
// sub-plan still running; their replies are handed back to each in turn. A sub-plan that ends
// with requests still to send (cleanup, counts) has them sent with the next step, their
// replies dropped. Pure: no sockets.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "filters/common/plan.h"
#include "protocol/reply_decoder.h"

namespace bloomproxy::filters {

class SubPlans {
 public:
  // Adds a plan; returns its index. Only before Start().
  size_t Add(std::unique_ptr<Plan> plan);
  size_t size() const { return subs_.size(); }
  // Forgets every plan (and what finished ones still had to send).
  void Clear() {
    subs_.clear();
    trailing_.clear();
    trailing_replies_ = 0;
  }

  // Starts every plan and appends their first requests to `step`, after the last requests of
  // plans that ended at once; returns how many replies those are (to drop), as Next().
  size_t Start(PlanStep* step);
  // Appends to `step` what the next step sends: the finished plans' last requests (replies to
  // drop), then the running plans' requests. Returns how many leading replies are to be
  // dropped.
  size_t Next(PlanStep* step);
  // The replies from index `at` of `r` answer the running plans' requests of the last Next()
  // (or Start()), after `drop` replies to drop.
  void OnReplies(StepReplies& r, size_t at);

  bool done() const;
  // Plan i's reply and its members' replies (MemberReplies), once it is done.
  const std::string& reply(size_t i) const { return subs_[i].reply; }
  const std::vector<std::string>& member_replies(size_t i) const { return subs_[i].members; }
  // The requests finished plans still have to send (with the outer plan's last step).
  void TakeTrailing(PlanStep* step);

 private:
  struct Sub {
    std::unique_ptr<Plan> plan;
    PlanStep step;    // its step in flight (or to send)
    size_t sent = 0;  // how many replies its step in flight expects
    bool done = false;
    std::string reply;
    std::vector<std::string> members;
  };
  void Settle(Sub& sub);

  std::vector<Sub> subs_;
  std::string trailing_;  // finished plans' last requests
  size_t trailing_replies_ = 0;
  protocol::ReplyDecoder decoder_;
};

}  // namespace bloomproxy::filters
