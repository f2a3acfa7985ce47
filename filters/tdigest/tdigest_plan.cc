#include "filters/tdigest/tdigest_plan.h"

#include <cstdlib>
#include <memory>
#include <utility>

#include "filters/common/script_plan.h"
#include "filters/tdigest/tdigest_replies.h"

namespace bloomproxy::filters {
namespace {

using Fold = std::function<std::string(std::string_view, const redisReply*)>;

std::unique_ptr<Plan> OneCall(std::string key, TdigestCall call, const TdigestConfig* config,
                              Fold fold) {
  auto shared_call = std::make_shared<TdigestCall>(std::move(call));
  return MakeScriptPlan(
      [key = std::move(key), shared_call, config](std::string* out, bool body) {
        AppendTdigestCall(out, key, *shared_call, body, config->upstream);
      },
      [fold = std::move(fold)](std::string_view answer, const redisReply* decoded,
                               std::vector<std::string>*) { return fold(answer, decoded); });
}

// A request whose views point into storage of its own.
struct OwnedRequest {
  OwnedRequest(const TdigestRequest& r, const std::string& e) : request(r), error(e), key(r.key) {
    request.key = key;
    sources.assign(r.sources.begin(), r.sources.end());
    for (size_t i = 0; i < sources.size(); ++i) request.sources[i] = sources[i];
  }
  TdigestRequest request;
  std::string error;
  std::string key;
  std::vector<std::string> sources;
};

std::unique_ptr<Plan> MergePlan(std::shared_ptr<OwnedRequest> owned, const TdigestConfig* config) {
  return MakeScriptPlan(
      [owned, config](std::string* out, bool body) {
        AppendTdigestMerge(out, owned->request, *config, body);
      },
      [](std::string_view answer, const redisReply* decoded, std::vector<std::string>*) {
        return TdigestMergeReply(answer, decoded);
      });
}

}  // namespace

double TdigestValueOf(const std::string& text) { return std::strtod(text.c_str(), nullptr); }

std::unique_ptr<Plan> MakeTdigestPlan(const TdigestRequest& request, const std::string& error,
                                      const TdigestConfig* config) {
  auto owned = std::make_shared<OwnedRequest>(request, error);
  const TdigestRequest& r = owned->request;
  if (r.command == TdigestCommand::kCreate) {
    if (error.empty() && r.compression > TdigestMaxCompression(*config)) {
      owned->error = std::string(kTdigestErrAllocation);
    }
    return OneCall(owned->key, TdigestCreateCall(r.compression, !owned->error.empty()), config,
                   [owned](std::string_view answer, const redisReply* decoded) {
                     return TdigestCreateReply(owned->error, answer, decoded);
                   });
  }
  if (!error.empty()) {
    return OneCall(owned->key, TdigestCheckCall(), config,
                   [owned](std::string_view answer, const redisReply* decoded) {
                     return TdigestCheckReply(owned->request.command, owned->error, answer,
                                              decoded);
                   });
  }
  switch (r.command) {
    case TdigestCommand::kMerge:
      return MergePlan(owned, config);
    case TdigestCommand::kReset:
      return OneCall(owned->key, TdigestResetCall(), config,
                     [](std::string_view answer, const redisReply* decoded) {
                       return TdigestResetReply(answer, decoded);
                     });
    case TdigestCommand::kAdd:
      return OneCall(owned->key, TdigestAddCall(r.values, {r.values.size()}), config,
                     [](std::string_view answer, const redisReply* decoded) {
                       std::string shared;
                       std::vector<std::string> replies =
                           TdigestAddReplies(answer, decoded, 1, &shared);
                       return replies.empty() ? shared : replies[0];
                     });
    default:
      return OneCall(owned->key, TdigestReadCall(r), config,
                     [owned](std::string_view answer, const redisReply* decoded) {
                       return TdigestReadReply(owned->request, answer, decoded);
                     });
  }
}

std::unique_ptr<Plan> MakeTdigestAddBatchPlan(std::string key, std::vector<std::string> values,
                                              std::vector<PlanMember> members,
                                              const TdigestConfig* config) {
  std::vector<double> parsed;
  parsed.reserve(values.size());
  for (const std::string& v : values) parsed.push_back(TdigestValueOf(v));
  std::vector<size_t> counts;
  for (const PlanMember& m : members) counts.push_back(m.count);
  auto call = std::make_shared<TdigestCall>(TdigestAddCall(parsed, counts));
  const size_t commands = members.size();
  return MakeScriptPlan(
      [key = std::move(key), call, config](std::string* out, bool body) {
        AppendTdigestCall(out, key, *call, body, config->upstream);
      },
      [commands](std::string_view answer, const redisReply* decoded,
                 std::vector<std::string>* member_replies) {
        std::string shared;
        *member_replies = TdigestAddReplies(answer, decoded, commands, &shared);
        return member_replies->empty() ? shared : (*member_replies)[0];
      });
}

}  // namespace bloomproxy::filters
