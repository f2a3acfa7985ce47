// Key commands on an expanding Guava filter's name (filters/guava/guava_plan.h): the name is no
// Redis key, its filter is the data keys NAME-0 .. NAME-c and, when the rule's cursor key holds the
// name ("%s"), that cursor key too. A shared cursor key (one fixed name) is left alone.
//
//   1. GET cursor
//   2. DEL / UNLINK / EXISTS / TYPE   one command over every key of the filter
//      EXPIRE / PEXPIRE / EXPIREAT / PEXPIREAT / PERSIST   the command on each key
//      TTL / PTTL / EXPIRETIME / PEXPIRETIME   the command on NAME-0
#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "filters/common/module_args.h"
#include "filters/common/plan_requests.h"
#include "filters/guava/guava_plan.h"
#include "filters/guava/guava_requests.h"
#include "protocol/encoder.h"

namespace bloomproxy::filters {
namespace {

enum class KeyOp { kDelete, kExists, kType, kEach, kFirst };

// What `name` (lower or upper case) does, for the commands this plan serves, and how many
// arguments the command takes (the name included); false for any other command.
bool LookupKeyOp(std::string_view name, KeyOp* op, size_t* min_args, size_t* max_args) {
  struct Row {
    const char* name;
    KeyOp op;
    size_t min_args;
    size_t max_args;
  };
  static constexpr Row kRows[] = {
      {"del", KeyOp::kDelete, 2, 2},       {"unlink", KeyOp::kDelete, 2, 2},
      {"exists", KeyOp::kExists, 2, 2},    {"type", KeyOp::kType, 2, 2},
      {"expire", KeyOp::kEach, 3, 4},      {"pexpire", KeyOp::kEach, 3, 4},
      {"expireat", KeyOp::kEach, 3, 4},    {"pexpireat", KeyOp::kEach, 3, 4},
      {"persist", KeyOp::kEach, 2, 2},     {"ttl", KeyOp::kFirst, 2, 2},
      {"pttl", KeyOp::kFirst, 2, 2},       {"expiretime", KeyOp::kFirst, 2, 2},
      {"pexpiretime", KeyOp::kFirst, 2, 2}};
  for (const Row& row : kRows) {
    if (EqualsIgnoreCase(name, row.name)) {
      *op = row.op;
      *min_args = row.min_args;
      *max_args = row.max_args;
      return true;
    }
  }
  return false;
}

class ExpandingKeyPlan : public Plan {
 public:
  ExpandingKeyPlan(const std::vector<std::string_view>& args, KeyOp op, const LayoutRule& rule)
      : args_(args.begin(), args.end()),
        op_(op),
        rule_(rule),
        cursor_key_(rule.CursorKey(args[1])) {
    // The cursor key belongs to this filter only when it is made of its name.
    own_cursor_ = rule_.cursor_key.find("%s") != std::string::npos;
  }

  void Start(PlanStep* step) override {
    protocol::AppendCommand(&step->requests, std::vector<std::string_view>{"GET", cursor_key_});
    step->replies = 1;
  }

  void OnReplies(StepReplies& r, PlanStep* step) override {
    for (size_t i = 0; i < r.size(); ++i) {
      if (r.IsErrorReply(i)) return Done(step, std::string(r.Frame(i)));
    }
    if (keys_.empty()) return OnCursor(r, step);
    Done(step, Reply(r));
  }

 private:
  static void Done(PlanStep* step, std::string reply) {
    step->done = true;
    step->reply = std::move(reply);
  }
  void OnCursor(StepReplies& r, PlanStep* step);
  std::string Reply(StepReplies& r) const;

  std::vector<std::string> args_;
  KeyOp op_;
  LayoutRule rule_;
  std::string cursor_key_;
  bool own_cursor_ = false;
  std::vector<std::string> keys_;  // the filter's keys, once the cursor is known
};

void ExpandingKeyPlan::OnCursor(StepReplies& r, PlanStep* step) {
  const redisReply* cursor = r.Get(0);
  int64_t c = 0;
  if (cursor == nullptr || (!IsNil(cursor) && !ParseCount(Str(cursor), &c))) {
    // Not this plan's to judge: the key commands act on the data keys there are.
    c = 0;
  }
  for (int64_t i = 0; i <= std::min<int64_t>(c, 65535); ++i) {
    keys_.push_back(LayoutRule::DataKey(args_[1], i));
  }
  if (own_cursor_) keys_.push_back(cursor_key_);
  std::string& out = step->requests;
  step->replies = 0;
  if (op_ == KeyOp::kFirst) {
    protocol::AppendCommand(&out, std::vector<std::string_view>{args_[0], keys_[0]});
    step->replies = 1;
    return;
  }
  if (op_ == KeyOp::kEach) {
    for (const std::string& key : keys_) {
      std::vector<std::string_view> cmd(args_.begin(), args_.end());
      cmd[1] = key;
      protocol::AppendCommand(&out, cmd);
      ++step->replies;
    }
    return;
  }
  std::vector<std::string_view> cmd = {op_ == KeyOp::kDelete ? std::string_view(args_[0])
                                                             : std::string_view("EXISTS")};
  cmd.insert(cmd.end(), keys_.begin(), keys_.end());
  protocol::AppendCommand(&out, cmd);
  step->replies = 1;
}

std::string ExpandingKeyPlan::Reply(StepReplies& r) const {
  if (op_ == KeyOp::kFirst) return std::string(r.Frame(0));
  // DEL, EXISTS, TYPE: one count; EXPIRE and PERSIST: 1 if the command took on any key.
  int64_t any = 0;
  for (size_t i = 0; i < r.size(); ++i) {
    int64_t v = 0;
    if (!FrameInt(r.Frame(i), &v)) return guava_plan::Unexpected(args_[0], r.Frame(i));
    any += v > 0 ? 1 : 0;
  }
  if (op_ == KeyOp::kType) return any > 0 ? "+string\r\n" : "+none\r\n";
  return any > 0 ? ":1\r\n" : ":0\r\n";
}

}  // namespace

std::unique_ptr<Plan> MakeExpandingKeyPlan(const std::vector<std::string_view>& args,
                                           const LayoutRules& rules, const LayoutRule** rule,
                                           bool* writes) {
  KeyOp op;
  size_t min_args = 0;
  size_t max_args = 0;
  if (!rules.has_expanding() || args.size() < 2 ||
      !LookupKeyOp(args[0], &op, &min_args, &max_args) || args.size() < min_args ||
      args.size() > max_args) {
    return nullptr;
  }
  *rule = rules.Match(args[1]);
  if (*rule == nullptr || !(*rule)->expanding()) return nullptr;
  *writes = op == KeyOp::kDelete || op == KeyOp::kEach;
  return std::make_unique<ExpandingKeyPlan>(args, op, **rule);
}

}  // namespace bloomproxy::filters
