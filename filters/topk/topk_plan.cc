#include "filters/topk/topk_plan.h"

#include <functional>
#include <utility>

#include "filters/common/plan_requests.h"
#include "filters/common/script_plan.h"
#include "filters/topk/topk_update_plan.h"

namespace bloomproxy::filters {
namespace {

// One script call (filters/common/script_plan.h) whose answer's fields refresh the cache.
std::unique_ptr<Plan> OneCall(std::string key, TopkCall call, TopkCache* cache,
                              const TopkConfig* config, FoldScriptAnswer fold) {
  auto shared_call = std::make_shared<TopkCall>(std::move(call));
  return MakeScriptPlan(
      [key, shared_call, config](std::string* out, bool body) {
        AppendTopkCall(out, key, *shared_call, body, config->upstream);
      },
      [key, cache, fold = std::move(fold)](std::string_view answer, const redisReply* decoded,
                                           std::vector<std::string>* members) {
        TopkRemember(cache, key, decoded);
        return fold(answer, decoded, members);
      });
}

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
  // Not one of the sketch's batches, which go one at a time: no state kept (TopkStates).
  return MakeTopkUpdatePlan(owned.key, std::move(items), std::move(increments), {member}, cache,
                            nullptr, config);
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
      return OneCall(
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
      return OneCall(
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
                                           TopkStates* states, const TopkConfig* config) {
  std::vector<TopkAddMember> add_members;
  for (const PlanMember& m : members) add_members.push_back({m.count, m.count, {}});
  return MakeTopkUpdatePlan(std::move(key), std::move(items),
                            std::vector<uint32_t>(increments.begin(), increments.end()),
                            std::move(add_members), cache, states, config);
}

}  // namespace bloomproxy::filters
