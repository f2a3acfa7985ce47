#include "filters/topk/topk_plan.h"

#include <functional>
#include <utility>

#include "filters/common/plan_requests.h"
#include "filters/topk/topk_update_plan.h"

namespace bloomproxy::filters {
namespace {

// One script call, sent by its SHA1 first, then by its text if the server did not have it. The
// sketch's fields in the answer refresh the cache.
class TopkPlan : public Plan {
 public:
  // `fold` makes the client's reply (or, for a batch, fills member_replies_) from the answer.
  using Fold = std::function<std::string(std::string_view answer, const redisReply* decoded,
                                         std::vector<std::string>* member_replies)>;

  TopkPlan(std::string key, TopkCall call, TopkCache* cache, const TopkConfig* config, Fold fold)
      : key_(std::move(key)),
        call_(std::move(call)),
        cache_(cache),
        config_(config),
        fold_(std::move(fold)) {}

  void Start(PlanStep* step) override { Send(step, /*body=*/false); }

  void OnReplies(StepReplies& r, PlanStep* step) override {
    const std::string_view answer = r.size() == 1 ? r.Frame(0) : std::string_view();
    if (IsNoScript(answer) && !sent_body_) return Send(step, /*body=*/true);
    step->done = true;
    if (answer.empty()) {
      step->reply = Unexpected(Named("EVALSHA"), "the reply is missing");
      return;
    }
    const redisReply* decoded = answer[0] == '-' ? nullptr : r.Get(0);
    Remember(decoded);
    step->reply = fold_(answer, decoded, &member_replies_);
  }

  const std::vector<std::string>& MemberReplies() const override { return member_replies_; }

 private:
  void Send(PlanStep* step, bool body) {
    sent_body_ = body;
    AppendTopkCall(&step->requests, key_, call_, body, config_->upstream);
    step->replies = 1;
  }

  void Remember(const redisReply* decoded) { TopkRemember(cache_, key_, decoded); }

  std::string key_;
  TopkCall call_;
  TopkCache* cache_;
  const TopkConfig* config_;
  Fold fold_;
  bool sent_body_ = false;
  std::vector<std::string> member_replies_;
};

// A request whose views point into storage of its own.
struct OwnedRequest {
  explicit OwnedRequest(const TopkRequest& r, const std::string& e)
      : request(r), error(e), key(r.key) {
    request.key = key;
    items.reserve(r.items.size() + r.increments.size());
    for (std::string_view item : r.items) items.emplace_back(item);
    for (const TopkIncrement& inc : r.increments) items.emplace_back(inc.item);
    for (size_t i = 0; i < r.items.size(); ++i) request.items[i] = items[i];
    for (size_t i = 0; i < r.increments.size(); ++i) {
      request.increments[i].item = items[r.items.size() + i];
    }
  }
  TopkRequest request;
  std::string error;
  std::string key;
  std::vector<std::string> items;
};

std::unique_ptr<Plan> UpdatePlan(const OwnedRequest& owned, TopkCache* cache,
                                 const TopkConfig* config) {
  const TopkRequest& r = owned.request;
  std::vector<std::string> items;
  std::vector<uint32_t> increments;
  TopkAddMember member;
  if (r.command == TopkCommand::kAdd) {
    items.assign(r.items.begin(), r.items.end());
    increments.assign(items.size(), 1);
    member.announced = items.size();
  } else {
    for (const TopkIncrement& inc : r.increments) {
      items.emplace_back(inc.item);
      increments.push_back(inc.n);
    }
    member.announced = r.pairs;
    member.error = owned.error;
  }
  member.applied = items.size();
  return MakeTopkUpdatePlan(owned.key, std::move(items), std::move(increments), {member}, cache,
                            config);
}

}  // namespace

std::unique_ptr<Plan> MakeTopkPlan(const TopkRequest& request, const std::string& error,
                                   TopkCache* cache, const TopkConfig* config) {
  auto owned = std::make_shared<OwnedRequest>(request, error);
  const TopkRequest& r = owned->request;
  switch (r.command) {
    case TopkCommand::kReserve: {
      const bool refused = !error.empty() || !TopkFits(r.params, *config);
      if (error.empty() && refused) owned->error = std::string(kTopkErrInsufficientMemory);
      return std::make_unique<TopkPlan>(
          owned->key, TopkReserveCall(r.params, refused, *config), nullptr, config,
          [owned](std::string_view answer, const redisReply*, std::vector<std::string>*) {
            return TopkReserveReply(owned->error, answer);
          });
    }
    case TopkCommand::kAdd:
    case TopkCommand::kIncrBy:
      return UpdatePlan(*owned, cache, config);
    default: {
      const std::shared_ptr<TopkMeta> meta = cache->Find(r.key);
      return std::make_unique<TopkPlan>(
          owned->key, TopkReadCall(r.command, r.items, meta.get()), cache, config,
          [owned](std::string_view answer, const redisReply* decoded, std::vector<std::string>*) {
            return TopkReadReply(owned->request, answer, decoded);
          });
    }
  }
}

std::unique_ptr<Plan> MakeTopkAddBatchPlan(std::string key, std::vector<std::string> items,
                                           std::vector<uint64_t> increments,
                                           std::vector<PlanMember> members, TopkCache* cache,
                                           const TopkConfig* config) {
  std::vector<TopkAddMember> add_members;
  for (const PlanMember& m : members) add_members.push_back({m.count, m.count, {}});
  return MakeTopkUpdatePlan(std::move(key), std::move(items),
                            std::vector<uint32_t>(increments.begin(), increments.end()),
                            std::move(add_members), cache, config);
}

}  // namespace bloomproxy::filters
