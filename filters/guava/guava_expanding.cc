// The plan for an expanding Guava filter (a bf-layout rule with `expanding CURSOR_KEY`): data
// keys NAME-0 .. NAME-c, each of the rule's bits, c the integer in the cursor key (absent: 0).
// An item is present if all its bits are set in one data key. An add goes to NAME-c unless the
// item is present; once BITCOUNT(NAME-c) * 2 > bits, the cursor is INCRed and the next key
// created with SETBIT NAME-<c+1> <bits - 1> 0, as the Java pattern does after each add.
//
//   1. GET cursor (RESERVE, INFO, DEBUG and INSERT NOCREATE: and STRLEN, EXISTS NAME-0)
//   2. ADD: BITFIELD_RO of every data key for the items, BITCOUNT NAME-c; EXISTS: the reads;
//      CARD, INFO and DEBUG: BITCOUNT of every data key
//   3. ADD: the items in order: the writes to NAME-c, and where the key fills up, INCR cursor,
//      SETBIT of the new key and the writes to it (BITFIELD SET u1: bits are only ever OR-ed)
#include <climits>
#include <cstdint>
#include <unordered_set>
#include <utility>

#include "filters/bloom/bf_replies.h"
#include "filters/common/plan_requests.h"
#include "filters/guava/guava_plan.h"
#include "filters/guava/guava_requests.h"
#include "protocol/encoder.h"

namespace bloomproxy::filters {
namespace {

using guava_plan::GuavaRequest;

// A cursor larger than this is taken for damage: each data key is read on every command.
constexpr int64_t kMaxCursor = 65535;

constexpr std::string_view kBadCursor =
    "-ERR bloomproxy: the cursor key of this expanding filter does not hold an integer in "
    "0..65535\r\n";

class ExpandingPlan : public Plan {
 public:
  ExpandingPlan(GuavaRequest request, const LayoutRule& rule, protocol::UpstreamKind upstream,
                std::string deferred_error)
      : req_(std::move(request)),
        rule_(rule),
        upstream_(upstream),
        deferred_error_(std::move(deferred_error)),
        cursor_key_(rule_.CursorKey(req_.key)) {}

  void Start(PlanStep* step) override;
  void OnReplies(StepReplies& r, PlanStep* step) override;

 private:
  enum class Stage { kCursor, kKeys, kWrites, kCreated };

  // Where each item goes, decided from the keys' bits as read (step 2).
  struct AddSchedule {
    std::vector<int64_t> target;  // per item: the data key it is written to, or -1 (present)
    int64_t last = 0;             // the cursor once every item is added
  };

  void Add(std::initializer_list<std::string_view> args) {
    protocol::AppendCommand(&step_->requests, args);
    ++step_->replies;
  }
  void Done(std::string reply) {
    step_->done = true;
    step_->reply = std::move(reply);
  }
  std::string Key(int64_t i) const { return LayoutRule::DataKey(req_.key, i); }
  // Whether a filter that does not exist is "not found" (INFO, DEBUG, INSERT NOCREATE).
  bool NeedsFilter() const {
    return req_.command == BfCommand::kInfo || req_.command == BfCommand::kDebug || req_.nocreate;
  }
  void OnCursor(StepReplies& r);
  void OnKeys(StepReplies& r);
  void SendWrites(const AddSchedule& schedule);
  // Each data key's bits for the items, as read (null: no bits, a key of another type).
  using KeyBits = std::vector<const std::vector<int64_t>*>;
  AddSchedule Schedule(const KeyBits& bits, int64_t bitcount) const;
  std::string CountsReply(StepReplies& r) const;
  void OnWrites(StepReplies* r);

  GuavaRequest req_;
  LayoutRule rule_;
  protocol::UpstreamKind upstream_;
  std::string deferred_error_;
  std::string cursor_key_;
  PlanStep* step_ = nullptr;
  Stage stage_ = Stage::kCursor;
  int64_t cursor_ = 0;
  bool cursor_set_ = false;   // the cursor key exists
  bool first_exists_ = true;  // NAME-0 exists (asked by INFO, RESERVE and INSERT NOCREATE)
  AddSchedule schedule_;
};

void ExpandingPlan::Start(PlanStep* step) {
  step_ = step;
  if (!req_.error.empty()) return Done(req_.error);
  Add({"GET", cursor_key_});
  if (NeedsFilter() || req_.command == BfCommand::kReserve) {
    Add({"STRLEN", Key(0)});  // WRONGTYPE for a key of another type, as RedisBloom answers
    Add({"EXISTS", Key(0)});
  }
}

void ExpandingPlan::OnReplies(StepReplies& r, PlanStep* step) {
  step_ = step;
  for (size_t i = 0; i < r.size(); ++i) {
    // RedisBloom answers EXISTS on a key of another type as on a missing one: OnKeys takes
    // the data key for empty.
    const bool empty_key = stage_ == Stage::kKeys && req_.reads() && IsWrongType(r.Frame(i));
    if (r.IsErrorReply(i) && !empty_key) return Done(std::string(r.Frame(i)));
  }
  switch (stage_) {
    case Stage::kCursor:
      return OnCursor(r);
    case Stage::kKeys:
      return OnKeys(r);
    case Stage::kWrites:
      return OnWrites(&r);
    case Stage::kCreated:
      return Done("+OK\r\n");
  }
}

void ExpandingPlan::OnCursor(StepReplies& r) {
  const redisReply* cursor = r.Get(0);
  if (cursor == nullptr) return Done(guava_plan::Unexpected("GET", r.Frame(0)));
  cursor_set_ = !IsNil(cursor);
  if (cursor_set_ && (!ParseCount(Str(cursor), &cursor_) || cursor_ > kMaxCursor)) {
    return Done(std::string(kBadCursor));
  }
  if (r.size() > 2) {
    int64_t exists = 0;
    if (!FrameInt(r.Frame(2), &exists)) return Done(guava_plan::Unexpected("EXISTS", r.Frame(2)));
    first_exists_ = exists != 0;
  }
  const bool found = cursor_set_ || first_exists_;
  if (req_.command == BfCommand::kReserve) {
    if (found) return Done(std::string(kItemExists));
    if (!guava_plan::SameParameters(req_, rule_)) return Done(guava_plan::ReserveMismatch(rule_));
    stage_ = Stage::kCreated;
    return Add({"SETBIT", Key(0), U64(rule_.bits - 1), "0"});
  }
  if (!found && NeedsFilter()) {
    return Done(std::string(kNotFound));
  }
  if (req_.command == BfCommand::kInfo && !deferred_error_.empty()) return Done(deferred_error_);
  stage_ = Stage::kKeys;
  for (int64_t i = 0; i <= cursor_; ++i) {
    const std::string key = Key(i);
    if (req_.adds() || req_.reads()) {
      guava_plan::AppendBitfield(&step_->requests, key, req_.indexes.data(), req_.indexes.size(),
                                 /*set=*/false, upstream_);
      ++step_->replies;
    } else {
      Add({"BITCOUNT", key});
    }
  }
  if (req_.adds()) Add({"BITCOUNT", Key(cursor_)});
}

void ExpandingPlan::OnKeys(StepReplies& r) {
  const size_t keys = static_cast<size_t>(cursor_) + 1;
  if (req_.command == BfCommand::kCard || req_.command == BfCommand::kInfo ||
      req_.command == BfCommand::kDebug) {
    return Done(CountsReply(r));
  }
  KeyBits bits(keys, nullptr);
  for (size_t i = 0; i < keys; ++i) {
    if (IsWrongType(r.Frame(i))) continue;
    bits[i] = guava_plan::BitsReply(r, i, req_.indexes.size());
    if (bits[i] == nullptr) return Done(guava_plan::Unexpected("BITFIELD_RO", r.Frame(i)));
  }
  if (req_.reads()) {
    std::vector<uint8_t> results(req_.items, 0);
    for (size_t j = 0; j < req_.items; ++j) {
      for (size_t i = 0; i < keys && results[j] == 0; ++i) {
        results[j] = guava_plan::AllSet(bits[i], j, rule_.k);
      }
    }
    return Done(guava_plan::ItemsReply(guava_plan::MultiItem(req_.command), results));
  }
  int64_t bitcount = 0;
  if (!FrameInt(r.Frame(keys), &bitcount)) {
    return Done(guava_plan::Unexpected("BITCOUNT", r.Frame(keys)));
  }
  schedule_ = Schedule(bits, bitcount);
  SendWrites(schedule_);
}

ExpandingPlan::AddSchedule ExpandingPlan::Schedule(const KeyBits& bits, int64_t bitcount) const {
  AddSchedule s;
  s.target.assign(req_.items, -1);
  s.last = cursor_;
  // Bits this command sets, per data key from the cursor on (keys past it start empty).
  std::vector<std::unordered_set<uint64_t>> added(1);
  auto bit_set = [&](int64_t key, size_t j, size_t h) {
    const uint64_t index = req_.indexes[j * rule_.k + h];
    const std::vector<int64_t>* read_bits =
        key <= cursor_ ? bits[static_cast<size_t>(key)] : nullptr;
    const bool read = read_bits != nullptr && (*read_bits)[j * rule_.k + h] != 0;
    return read || (key >= cursor_ && added[static_cast<size_t>(key - cursor_)].count(index) > 0);
  };
  uint64_t count = static_cast<uint64_t>(bitcount);
  for (size_t j = 0; j < req_.items; ++j) {
    bool present = false;
    for (int64_t key = 0; key <= s.last && !present; ++key) {
      bool all = true;
      for (size_t h = 0; h < rule_.k && all; ++h) all = bit_set(key, j, h);
      present = all;
    }
    if (present) continue;
    s.target[j] = s.last;
    for (size_t h = 0; h < rule_.k; ++h) {
      if (bit_set(s.last, j, h)) continue;
      added.back().insert(req_.indexes[j * rule_.k + h]);
      ++count;
    }
    if (count * 2 > rule_.bits) {
      ++s.last;
      added.emplace_back();
      count = 0;
    }
  }
  return s;
}

void ExpandingPlan::SendWrites(const AddSchedule& s) {
  stage_ = Stage::kWrites;
  std::vector<uint64_t> indexes;
  for (int64_t key = cursor_; key <= s.last; ++key) {
    indexes.clear();
    for (size_t j = 0; j < req_.items; ++j) {
      if (s.target[j] != key) continue;
      indexes.insert(indexes.end(), req_.indexes.begin() + j * rule_.k,
                     req_.indexes.begin() + (j + 1) * rule_.k);
    }
    if (!indexes.empty()) {
      guava_plan::AppendBitfield(&step_->requests, Key(key), indexes.data(), indexes.size(),
                                 /*set=*/true, upstream_);
      ++step_->replies;
    }
    if (key < s.last) {
      Add({"INCR", cursor_key_});
      Add({"SETBIT", Key(key + 1), U64(rule_.bits - 1), "0"});
    }
  }
  // Nothing to write (every item present): the replies are all 0.
  if (step_->replies == 0) OnWrites(nullptr);
}

void ExpandingPlan::OnWrites(StepReplies* r) {
  std::vector<uint8_t> results(req_.items, 0);
  size_t reply = 0;
  for (int64_t key = cursor_; key <= schedule_.last && r != nullptr; ++key) {
    size_t n = 0;
    for (size_t j = 0; j < req_.items; ++j) n += schedule_.target[j] == key ? rule_.k : 0;
    if (n > 0) {
      const std::vector<int64_t>* old = guava_plan::BitsReply(*r, reply, n);
      if (old == nullptr) return Done(guava_plan::Unexpected("BITFIELD", r->Frame(reply)));
      ++reply;
      // In item order: an item is new if one of its bits was 0 (the earlier items' bits
      // count, as they were set first).
      size_t at = 0;
      for (size_t j = 0; j < req_.items; ++j) {
        if (schedule_.target[j] != key) continue;
        for (size_t h = 0; h < rule_.k; ++h) results[j] |= (*old)[at + h] == 0;
        at += rule_.k;
      }
    }
    if (key < schedule_.last) reply += 2;  // INCR, SETBIT
  }
  Done(guava_plan::ItemsReply(guava_plan::MultiItem(req_.command), results));
}

std::string ExpandingPlan::CountsReply(StepReplies& r) const {
  std::vector<int64_t> bitcounts(static_cast<size_t>(cursor_) + 1);
  for (size_t i = 0; i < bitcounts.size(); ++i) {
    if (!FrameInt(r.Frame(i), &bitcounts[i])) return guava_plan::Unexpected("BITCOUNT", r.Frame(i));
  }
  return guava_plan::CountsReply(req_, rule_, bitcounts);
}

}  // namespace

std::unique_ptr<Plan> guava_plan::MakeExpandingPlan(GuavaRequest request, const LayoutRule& rule,
                                                    protocol::UpstreamKind upstream,
                                                    std::string deferred_error) {
  return std::make_unique<ExpandingPlan>(std::move(request), rule, upstream,
                                         std::move(deferred_error));
}

}  // namespace bloomproxy::filters
