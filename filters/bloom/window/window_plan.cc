#include "filters/bloom/window/window_plan.h"

#include <time.h>

#include <deque>
#include <string_view>
#include <utility>

#include "filters/bloom/bf_replies.h"
#include "filters/bloom/window/sub_plans.h"
#include "filters/bloom/window/upstream_time.lua.h"
#include "filters/bloom/window/window_clock.h"
#include "filters/bloom/window/window_replies.h"
#include "filters/bloom/window/window_slots.h"
#include "filters/common/plan_requests.h"

namespace bloomproxy::filters {
namespace {

class WindowPlan : public Plan {
 public:
  WindowPlan(const BfRequest& request, std::vector<BfMember> members,
             std::shared_ptr<FilterMeta> meta, FilterCache* cache, const BfConfig* config);

  void Start(PlanStep* step) override;
  void OnReplies(StepReplies& r, PlanStep* step) override;
  const std::vector<std::string>& MemberReplies() const override {
    return fallback_ ? fallback_->MemberReplies() : member_replies_;
  }

 private:
  enum class Phase { kTime, kRound, kFallback };

  bool Adding() const {
    return req_.command == BfCommand::kAdd || req_.command == BfCommand::kMAdd ||
           req_.command == BfCommand::kInsert;
  }
  WindowShape Shape() const { return {meta_->window_ms, meta_->slots}; }
  uint64_t Lifetime() const { return req_.ttl_ms > 0 ? req_.ttl_ms : meta_->window_ms; }
  int64_t Now() const;
  void AddValidation(PlanStep* step) const;
  bool Valid(StepReplies& r, PlanStep* step);
  void AskTime(PlanStep* step);
  void Begin(PlanStep* step, int64_t add_time_ms, const ClockBracket& bracket);
  BfRequest SlotRequest(BfCommand command, int64_t e);
  void Continue(StepReplies& r, PlanStep* step);
  void Finish(PlanStep* step, std::string reply);
  void FinishAdd(PlanStep* step);
  void FinishLookup(PlanStep* step);
  bool Ended(size_t sub) const;
  bool Failed(size_t sub) const;

  BfRequest req_;
  std::string name_;
  std::vector<std::string> items_;
  std::vector<BfMember> members_;
  std::vector<BfMember> lookup_members_;  // the lookups' members (adds: one per item)
  std::shared_ptr<FilterMeta> meta_;
  FilterCache* cache_;
  const BfConfig* config_;
  Phase phase_ = Phase::kTime;
  int64_t time_sent_us_ = 0;
  size_t drop_ = 0;  // replies of finished sub-plans' last requests, after the validation
  std::deque<std::string> slot_names_;
  SubPlans subs_;
  std::vector<int64_t> sub_slot_;  // the slot each sub-plan runs on
  size_t add_sub_ = 0;             // adds: the sub-plan that adds; the others look up
  int rounds_ = 0;                 // rounds begun (an add restarts when its slot ended)
  std::unique_ptr<Plan> fallback_;
  std::vector<std::string> member_replies_;
};

WindowPlan::WindowPlan(const BfRequest& request, std::vector<BfMember> members,
                       std::shared_ptr<FilterMeta> meta, FilterCache* cache, const BfConfig* config)
    : req_(request),
      name_(request.key),
      members_(std::move(members)),
      meta_(std::move(meta)),
      cache_(cache),
      config_(config) {
  if (members_.empty()) members_.push_back(WholeCommand(request));
  items_.reserve(request.items.size());
  for (std::string_view item : request.items) items_.emplace_back(item);
  req_.items.clear();
  req_.data = {};
  req_.key = name_;
}

int64_t WindowPlan::Now() const {
  if (config_->monotonic_us != nullptr) return config_->monotonic_us();
  // CLOCK_BOOTTIME: monotonic, and it keeps counting while the host is suspended (the
  // upstream's clock does too), where CLOCK_MONOTONIC stops.
  timespec ts{};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000 + ts.tv_nsec / 1000;
}

void WindowPlan::Start(PlanStep* step) {
  if (req_.command == BfCommand::kScanDump || req_.command == BfCommand::kLoadChunk) {
    return Finish(step, std::string(kNoWindowDump));
  }
  if (req_.ttl_ms > meta_->window_ms) return Finish(step, std::string(kErrBadTtl));
  const int64_t now = Now();
  if (!ClockUsable(meta_->clock, now)) return AskTime(step);
  const ClockBracket b = BracketAt(meta_->clock, now);
  if (Adding() && SlotFor(Shape(), b.lo_ms, Lifetime()) != SlotFor(Shape(), b.hi_ms, Lifetime())) {
    // The bracket straddles a slot's end: the upstream says which side it is on.
    return AskTime(step);
  }
  Begin(step, b.hi_ms, b);
}

void WindowPlan::AddValidation(PlanStep* step) const {
  Requests req;
  req.Add({"HMGET", name_, kMarkerField, "id", "window"});
  req.MoveTo(step);
}

// The validation reply (the step's first): false, and the command handed to an ordinary BF
// plan, when the name is no longer this windowed filter.
bool WindowPlan::Valid(StepReplies& r, PlanStep* step) {
  const redisReply* v = r.Get(0);
  const bool same = v != nullptr && v->type == REDIS_REPLY_ARRAY && v->elements == 3 &&
                    Str(v->element[0]) == kMarkerValue && Str(v->element[1]) == meta_->id &&
                    !IsNil(v->element[2]);
  if (same) return true;
  cache_->Erase(name_);
  std::vector<std::string_view> views(items_.begin(), items_.end());
  BfRequest again = req_;
  again.items = views;
  fallback_ = MakeBatchPlan(again, members_, cache_, config_);
  phase_ = Phase::kFallback;
  subs_.TakeTrailing(step);  // what finished slots still had to send
  const size_t dropped = step->replies;
  PlanStep first;
  fallback_->Start(&first);
  step->requests += first.requests;
  step->replies += first.replies;
  step->done = first.done;
  step->reply = std::move(first.reply);
  drop_ = dropped;
  return false;
}

void WindowPlan::AskTime(PlanStep* step) {
  phase_ = Phase::kTime;
  AddValidation(step);
  Requests req;
  req.Add({"EVAL", lua::kUpstreamTime.body, "1", name_});  // upstream_time.lua
  req.MoveTo(step);
  time_sent_us_ = Now();
}

BfRequest WindowPlan::SlotRequest(BfCommand command, int64_t e) {
  slot_names_.push_back(SlotName(meta_->prefix, meta_->id, e));
  BfRequest r;
  r.command = command;
  r.key = slot_names_.back();
  r.error_rate = SlotError(meta_->error, meta_->slots);
  r.capacity = SlotCapacity(meta_->capacity, meta_->slots);
  r.expansion = meta_->nonscaling() ? 0 : meta_->expansion;
  r.nonscaling = meta_->nonscaling();
  r.info_field = InfoField::kAll;
  r.items.assign(items_.begin(), items_.end());
  return r;
}

// The command's sub-plans on the live slots, started: `add_time_ms` is the upstream's time an
// add counts from (never before the client's request), `bracket` where the upstream's time is.
void WindowPlan::Begin(PlanStep* step, int64_t add_time_ms, const ClockBracket& bracket) {
  phase_ = Phase::kRound;
  ++rounds_;
  const SlotRange live = LiveSlots(Shape(), bracket.lo_ms, bracket.hi_ms);
  if (Adding()) {
    const int64_t e = SlotFor(Shape(), add_time_ms, Lifetime());
    BfRequest add = SlotRequest(req_.command, e);
    add.expire_at_ms = SlotEnd(Shape(), e);
    add_sub_ = subs_.Add(MakeBatchPlan(add, members_, cache_, config_));
    sub_slot_.push_back(e);
    // The other live slots are looked up item by item (single-item lookups are probed: an
    // absent item costs one bit read per link, bf_plan_read.cc).
    lookup_members_.clear();
    for (size_t i = 0; i < items_.size(); ++i) lookup_members_.push_back({i, 1, false});
    for (int64_t o = live.first; o <= live.last; ++o) {
      if (o == e) continue;
      subs_.Add(
          MakeBatchPlan(SlotRequest(BfCommand::kMExists, o), lookup_members_, cache_, config_));
    }
  } else if (req_.command == BfCommand::kExists || req_.command == BfCommand::kMExists) {
    lookup_members_ = members_;
    for (int64_t o = live.first; o <= live.last; ++o) {
      subs_.Add(MakeBatchPlan(SlotRequest(BfCommand::kMExists, o), members_, cache_, config_));
      sub_slot_.push_back(o);
    }
  } else {
    for (int64_t o = live.first; o <= live.last; ++o) {
      subs_.Add(MakeBfPlan(SlotRequest(req_.command, o), cache_, config_));
      sub_slot_.push_back(o);
    }
  }
  AddValidation(step);
  drop_ = subs_.Start(step);
  if (subs_.done()) {
    // Every slot's plan answered without a request (none does today): nothing to wait for.
    return Adding() ? FinishAdd(step) : FinishLookup(step);
  }
}

void WindowPlan::OnReplies(StepReplies& r, PlanStep* step) {
  if (phase_ == Phase::kFallback) {
    r.Skip(drop_);
    drop_ = 0;
    return fallback_->OnReplies(r, step);
  }
  if (!Valid(r, step)) return;
  if (phase_ == Phase::kTime) {
    int64_t upstream_us = 0;
    if (!ParseTimeReply(r.Get(1), &upstream_us)) {
      return Finish(step, Unexpected(Named("EVAL"), "expected TIME's reply, got " +
                                                        Described(r.Get(1), r.Frame(1))));
    }
    meta_->clock = {true, time_sent_us_, Now(), upstream_us};
    // An add counts from the time the upstream read: after the client's request arrived.
    return Begin(step, CeilMs(upstream_us), BracketAt(meta_->clock, Now()));
  }
  Continue(r, step);
}

void WindowPlan::Continue(StepReplies& r, PlanStep* step) {
  subs_.OnReplies(r, 1 + drop_);
  if (subs_.done()) return Adding() ? FinishAdd(step) : FinishLookup(step);
  AddValidation(step);
  drop_ = subs_.Next(step);
}

void WindowPlan::Finish(PlanStep* step, std::string reply) {
  step->done = true;
  step->reply = std::move(reply);
  subs_.TakeTrailing(step);
}

// Whether sub-plan `sub`'s slot may have ended by now on the upstream's clock: Redis drops a
// slot's keys at its end, so a plan whose rounds span that moment finds a key missing (an
// error), which then only says the slot is gone.
bool WindowPlan::Ended(size_t sub) const {
  return SlotEnd(Shape(), sub_slot_[sub]) < BracketAt(meta_->clock, Now()).hi_ms;
}

bool WindowPlan::Failed(size_t sub) const {
  if (subs_.member_replies(sub).empty()) return true;
  for (const std::string& r : subs_.member_replies(sub)) {
    if (!r.empty() && r[0] == '-') return true;
  }
  return false;
}

void WindowPlan::FinishAdd(PlanStep* step) {
  if (Failed(add_sub_) && Ended(add_sub_) && rounds_ < 3) {
    // The items' slot ended while they were added (a short TTL, a slow round): add them again
    // from now. What the slot's plan still had to send (its cleanup) is for keys Redis dropped.
    subs_.Clear();
    sub_slot_.clear();
    return Start(step);  // the upstream's TIME again where the bracket cannot decide the slot
  }
  const std::vector<std::string>& added = subs_.member_replies(add_sub_);
  if (added.empty()) return Finish(step, subs_.reply(add_sub_));  // one error for all
  std::vector<bool> elsewhere(items_.size(), false);
  for (size_t i = 0; i < subs_.size(); ++i) {
    if (i == add_sub_ || (Failed(i) && Ended(i))) continue;
    std::string error;
    if (!FoundInMembers(subs_.reply(i), subs_.member_replies(i), lookup_members_, &elsewhere,
                        &error)) {
      return Finish(step, error);
    }
  }
  member_replies_.clear();
  for (size_t m = 0; m < members_.size(); ++m) {
    member_replies_.push_back(NotNewWhere(added[m], members_[m], elsewhere));
  }
  Finish(step, member_replies_.size() == 1 ? member_replies_[0] : std::string());
}

void WindowPlan::FinishLookup(PlanStep* step) {
  std::vector<std::string> replies;
  for (size_t i = 0; i < subs_.size(); ++i) {
    const std::string& r = subs_.reply(i);
    const bool gone = !r.empty() && r[0] == '-' && Ended(i);
    replies.push_back(!gone                              ? r
                      : req_.command == BfCommand::kCard ? Integer(0)
                                                         : std::string(kNotFound));
  }
  switch (req_.command) {
    case BfCommand::kExists:
    case BfCommand::kMExists: {
      std::vector<bool> found(items_.size(), false);
      for (size_t i = 0; i < subs_.size(); ++i) {
        if (Failed(i) && Ended(i)) continue;  // a slot that ended under the lookup: gone
        std::string error;
        if (!FoundInMembers(subs_.reply(i), subs_.member_replies(i), lookup_members_, &found,
                            &error)) {
          return Finish(step, error);
        }
      }
      member_replies_.clear();
      for (const BfMember& m : members_) member_replies_.push_back(LookupReply(m, found));
      return Finish(step, member_replies_.size() == 1 ? member_replies_[0] : std::string());
    }
    case BfCommand::kCard:
      return Finish(step, CardOfSlots(replies));
    case BfCommand::kInfo:
      return Finish(step, InfoOfSlots(replies, req_.info_field, *meta_));
    case BfCommand::kDebug:
      return Finish(step, DebugOfSlots(replies));
    default:
      return Finish(step, std::string(kItemExists));
  }
}

}  // namespace

std::unique_ptr<Plan> MakeWindowPlan(const BfRequest& request, std::vector<BfMember> members,
                                     std::shared_ptr<FilterMeta> meta, FilterCache* cache,
                                     const BfConfig* config) {
  return std::make_unique<WindowPlan>(request, std::move(members), std::move(meta), cache, config);
}

}  // namespace bloomproxy::filters
