#include "filters/common/watch_plan.h"

#include <utility>

#include "filters/common/key_layout.h"
#include "filters/common/plan_requests.h"
#include "filters/common/watch_keys.lua.h"
#include "protocol/encoder.h"

namespace bloomproxy::filters {
namespace {

class WatchPlan : public Plan {
 public:
  explicit WatchPlan(const std::vector<std::string_view>& keys) : keys_(keys.begin(), keys.end()) {}

  void Start(PlanStep* step) override {
    std::vector<std::string> args = {"EVAL", std::string(lua::kWatchKeys.body),
                                     std::to_string(keys_.size())};
    args.insert(args.end(), keys_.begin(), keys_.end());
    for (const std::string& k : keys_) args.push_back(DataKeyPrefix(k));
    protocol::AppendCommand(&step->requests, args);
    step->replies = 1;
  }

  void OnReplies(StepReplies& r, PlanStep* step) override {
    if (!watching_) {
      // An error (CROSSSLOT, NOPERM, a script refused): WATCH alone, for Redis's own answer.
      std::vector<std::string> args = {"WATCH"};
      args.insert(args.end(), keys_.begin(), keys_.end());
      const redisReply* extra = r.Get(0);
      if (!r.IsErrorReply(0) && extra != nullptr && extra->type == REDIS_REPLY_ARRAY) {
        for (size_t i = 0; i < extra->elements; ++i) {
          if (extra->element[i]->type != REDIS_REPLY_STRING) continue;
          args.emplace_back(extra->element[i]->str, extra->element[i]->len);
        }
      }
      protocol::AppendCommand(&step->requests, args);
      step->replies = 1;
      watching_ = true;
      return;
    }
    step->done = true;
    step->reply.assign(r.Frame(0));
  }

 private:
  std::vector<std::string> keys_;
  bool watching_ = false;
};

}  // namespace

std::unique_ptr<Plan> MakeWatchPlan(const std::vector<std::string_view>& keys) {
  return std::make_unique<WatchPlan>(keys);
}

std::string_view WatchKeysScript() { return lua::kWatchKeys.body; }

}  // namespace bloomproxy::filters
