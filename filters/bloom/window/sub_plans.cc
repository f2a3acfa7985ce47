#include "filters/bloom/window/sub_plans.h"

#include <utility>

namespace bloomproxy::filters {

size_t SubPlans::Add(std::unique_ptr<Plan> plan) {
  subs_.emplace_back();
  subs_.back().plan = std::move(plan);
  return subs_.size() - 1;
}

// A plan's step just made: keep its reply when it is the last, and its requests to send.
void SubPlans::Settle(Sub& sub) {
  if (!sub.step.done) return;
  sub.done = true;
  sub.reply = std::move(sub.step.reply);
  sub.members = sub.plan->MemberReplies();
  trailing_ += sub.step.requests;
  trailing_replies_ += sub.step.replies;
  sub.step = PlanStep();
}

size_t SubPlans::Start(PlanStep* step) {
  for (Sub& sub : subs_) {
    sub.plan->Start(&sub.step);
    Settle(sub);
  }
  return Next(step);
}

size_t SubPlans::Next(PlanStep* step) {
  const size_t drop = trailing_replies_;
  step->requests += trailing_;
  step->replies += trailing_replies_;
  trailing_.clear();
  trailing_replies_ = 0;
  for (Sub& sub : subs_) {
    sub.sent = 0;
    if (sub.done) continue;
    if (step->requests.empty()) {
      step->requests.swap(sub.step.requests);  // no copy: a later step's only sub-plan
    } else {
      step->requests += sub.step.requests;
    }
    step->replies += sub.step.replies;
    sub.sent = sub.step.replies;
  }
  return drop;
}

void SubPlans::OnReplies(StepReplies& r, size_t at) {
  for (Sub& sub : subs_) {
    if (sub.done) continue;
    StepReplies mine(&decoder_);
    for (size_t i = 0; i < sub.sent && at + i < r.size(); ++i) mine.Add(r.Frame(at + i));
    at += sub.sent;
    sub.step = PlanStep();
    sub.plan->OnReplies(mine, &sub.step);
    Settle(sub);
  }
}

bool SubPlans::done() const {
  for (const Sub& sub : subs_) {
    if (!sub.done) return false;
  }
  return true;
}

void SubPlans::TakeTrailing(PlanStep* step) {
  step->requests += trailing_;
  step->replies += trailing_replies_;
  trailing_.clear();
  trailing_replies_ = 0;
}

}  // namespace bloomproxy::filters
