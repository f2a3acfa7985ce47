#include "filters/common/watch_plan.h"

#include <utility>

#include "filters/common/key_layout.h"
#include "filters/common/plan_requests.h"
#include "protocol/encoder.h"

namespace bloomproxy::filters {
namespace {

// KEYS: the watched names; ARGV: their data-key prefixes. Answers the data keys of every name
// that is a filter or a sketch (its marker says which).
constexpr std::string_view kWatchKeys = R"lua(
local out = {}
for i, name in ipairs(KEYS) do
  local prefix = ARGV[i]
  if redis.call('EXISTS', prefix .. ':bf:m:' .. name) == 1 then
    local m = redis.call('HGETALL', name)
    local f = {}
    for j = 1, #m, 2 do f[m[j]] = m[j + 1] end
    local shard, l = tonumber(f.shard), 0
    while f.id and shard and f['l' .. l] do
      local bytes = tonumber(string.match(f['l' .. l], '^(%d+)'))
      local base = prefix .. ':bf:' .. f.id .. ':' .. l
      out[#out + 1] = base .. ':n'
      for s = 0, math.ceil((bytes or 0) / shard) - 1 do out[#out + 1] = base .. '.' .. s end
      l = l + 1
    end
  elseif redis.call('EXISTS', prefix .. ':cms:m:' .. name) == 1 then
    local m = redis.call('HMGET', name, 'id', 'width', 'depth', 'part')
    local cells, part = (tonumber(m[2]) or 0) * (tonumber(m[3]) or 0), tonumber(m[4])
    if m[1] and part and part > 0 then
      for p = 0, math.ceil(cells / part) - 1 do out[#out + 1] = prefix .. ':cms:' .. m[1] .. ':' .. p end
    end
  end
end
return out
)lua";

class WatchPlan : public Plan {
 public:
  explicit WatchPlan(const std::vector<std::string_view>& keys) : keys_(keys.begin(), keys.end()) {}

  void Start(PlanStep* step) override {
    std::vector<std::string> args = {"EVAL", std::string(kWatchKeys), std::to_string(keys_.size())};
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

std::string_view WatchKeysScript() { return kWatchKeys; }

}  // namespace bloomproxy::filters
