#include "filters/bloom/window/window_plan.h"

#include <time.h>

#include <deque>
#include <string_view>
#include <utility>

#include "filters/bloom/bf_replies.h"
#include "filters/bloom/window/sub_plans.h"
#include "filters/bloom/window/upstream_time.lua.h"
#include "filters/bloom/window/window_check.h"
#include "filters/bloom/window/window_clock.h"
#include "filters/bloom/window/window_replies.h"
#include "filters/bloom/window/window_slots.h"
#include "filters/common/lua_script.h"
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
  bool Checkable();
  void BeginSlots(PlanStep* step, bool checked);
  void OnCheck(StepReplies& r, PlanStep* step);
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
  std::shared_ptr<FilterMeta> meta_;
  FilterCache* cache_;
  const BfConfig* config_;
  Phase phase_ = Phase::kTime;
  int64_t time_sent_us_ = 0;
  size_t drop_ = 0;  // replies of finished sub-plans' last requests, after the validation
  // What leads the step's replies: the name's validation (a round's first step), the check of
  // a checked lookup round (window_check.h), or nothing (the steps after).
  enum class Head { kNone, kValidation, kCheck };
  Head head_ = Head::kNone;
  SlotRange live_;                          // this round's live slots
  int64_t add_slot_ = 0;                    // adds: this round's slot
  std::vector<CheckedSlot> checked_slots_;  // a checked round's live slots, as known
  bool check_body_ = false;                 // send the check's text (the server lacked it)
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

// A round of the command on the live slots: `add_time_ms` is the upstream's time an add counts
// from (never before the client's request), `bracket` where the upstream's time is.
void WindowPlan::Begin(PlanStep* step, int64_t add_time_ms, const ClockBracket& bracket) {
  phase_ = Phase::kRound;
  ++rounds_;
  live_ = LiveSlots(Shape(), bracket.lo_ms, bracket.hi_ms);
  add_slot_ = Adding() ? SlotFor(Shape(), add_time_ms, Lifetime()) : 0;
  BeginSlots(step, Checkable());
}

// Whether a lookup round can run checked (window_check.h): the proxy knows every live slot it
// has seen, and which ones it has not (those must be missing).
bool WindowPlan::Checkable() {
  checked_slots_.clear();
  if (req_.command != BfCommand::kExists && req_.command != BfCommand::kMExists) return false;
  for (int64_t o = live_.first; o <= live_.last; ++o) {
    CheckedSlot slot{SlotName(meta_->prefix, meta_->id, o), nullptr};
    slot.meta = cache_->Find(slot.name);
    if (slot.meta != nullptr && (slot.meta->windowed() || slot.meta->links.empty())) return false;
    checked_slots_.push_back(std::move(slot));
  }
  return true;
}

// The command's sub-plans on the live slots, started after the round's head: an add's on the
// slot of its items, a lookup's on every live slot (in a checked round only on those the proxy
// knows, with neither validation nor STRLENs of their own), CARD, INFO and DEBUG's on every one.
void WindowPlan::BeginSlots(PlanStep* step, bool checked) {
  if (Adding()) {
    BfRequest add = SlotRequest(req_.command, add_slot_);
    add.expire_at_ms = SlotEnd(Shape(), add_slot_);
    add_sub_ = subs_.Add(MakeBatchPlan(add, members_, cache_, config_));
    sub_slot_.push_back(add_slot_);
  } else if (req_.command == BfCommand::kExists || req_.command == BfCommand::kMExists) {
    for (int64_t o = live_.first; o <= live_.last; ++o) {
      if (checked && checked_slots_[static_cast<size_t>(o - live_.first)].meta == nullptr) continue;
      BfRequest lookup = SlotRequest(BfCommand::kMExists, o);
      lookup.checked_outside = checked;
      subs_.Add(MakeBatchPlan(lookup, members_, cache_, config_));
      sub_slot_.push_back(o);
    }
  } else {
    for (int64_t o = live_.first; o <= live_.last; ++o) {
      subs_.Add(MakeBfPlan(SlotRequest(req_.command, o), cache_, config_));
      sub_slot_.push_back(o);
    }
  }
  if (checked) {
    AppendWindowCheck(&step->requests, name_, *meta_, checked_slots_, check_body_);
    step->replies += 1;
    head_ = Head::kCheck;
  } else {
    AddValidation(step);
    head_ = Head::kValidation;
  }
  drop_ = subs_.Start(step);
}

void WindowPlan::OnReplies(StepReplies& r, PlanStep* step) {
  if (phase_ == Phase::kFallback) {
    r.Skip(drop_);
    drop_ = 0;
    return fallback_->OnReplies(r, step);
  }
  if (phase_ == Phase::kTime) {
    if (!Valid(r, step)) return;
    int64_t upstream_us = 0;
    if (!ParseTimeReply(r.Get(1), &upstream_us)) {
      return Finish(step, Unexpected(Named("EVAL"), "expected TIME's reply, got " +
                                                        Described(r.Get(1), r.Frame(1))));
    }
    meta_->clock = {true, time_sent_us_, Now(), upstream_us};
    // An add counts from the time the upstream read: after the client's request arrived.
    return Begin(step, CeilMs(upstream_us), BracketAt(meta_->clock, Now()));
  }
  if (head_ == Head::kCheck) return OnCheck(r, step);
  if (head_ == Head::kValidation && !Valid(r, step)) return;
  Continue(r, step);
}

// A checked round's check: its reads stand, or (whatever is not as the proxy knew it, or the
// server lacked the script) the round runs again, on the slots' own plans with their checks.
void WindowPlan::OnCheck(StepReplies& r, PlanStep* step) {
  if (WindowCheckPassed(r.Get(0))) return Continue(r, step);
  const bool again = IsNoScript(r.Frame(0)) && !check_body_;
  check_body_ = check_body_ || again;
  subs_.Clear();
  sub_slot_.clear();
  BeginSlots(step, again);
}

// The sub-plans' replies, after the step's head; then their next step, or the command's reply.
void WindowPlan::Continue(StepReplies& r, PlanStep* step) {
  subs_.OnReplies(r, (head_ == Head::kNone ? 0 : 1) + drop_);
  head_ = Head::kNone;
  if (subs_.done()) return Adding() ? FinishAdd(step) : FinishLookup(step);
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
  // The slot's own replies: an item is new (1) when it was not yet in the slot that now holds it
  // (docs/windowed-filters.md, "What BF.ADD answers").
  member_replies_ = subs_.member_replies(add_sub_);
  if (member_replies_.empty()) return Finish(step, subs_.reply(add_sub_));  // one error for all
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
        if (!FoundInMembers(subs_.reply(i), subs_.member_replies(i), members_, &found, &error)) {
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
