#include "filters/cuckoo/cf_plan.h"

#include <functional>
#include <utility>

#include "filters/common/plan_requests.h"
#include "filters/common/script_plan.h"
#include "filters/cuckoo/cf_replies.h"

namespace bloomproxy::filters {
namespace {

// A request whose views point into storage of its own.
struct OwnedRequest {
  explicit OwnedRequest(const CfRequest& r)
      : request(r), key(r.key), data(r.data), items(r.items.begin(), r.items.end()) {
    request.key = key;
    request.data = data;
    request.items.assign(items.begin(), items.end());
  }
  CfRequest request;
  std::string key;
  std::string data;
  std::vector<std::string> items;
};

}  // namespace

std::unique_ptr<Plan> MakeCfPlan(const CfRequest& request, const CfConfig* config) {
  auto owned = std::make_shared<OwnedRequest>(request);
  auto call = std::make_shared<CfCall>(CfCallFor(owned->request, *config));
  return MakeScriptPlan(
      [owned, call, config](std::string* out, bool body) {
        AppendCfCall(out, owned->key, *call, body, config->upstream);
      },
      [owned](std::string_view answer, const redisReply* decoded, std::vector<std::string>*) {
        return CfReply(owned->request, answer, decoded);
      });
}

}  // namespace bloomproxy::filters
