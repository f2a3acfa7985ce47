#include "filters/cuckoo/cf_plan.h"

#include <functional>
#include <utility>

#include "filters/common/plan_requests.h"
#include "filters/cuckoo/cf_replies.h"

namespace bloomproxy::filters {
namespace {

// One script call, sent by its SHA1 first, then by its text if the server did not have it.
class CfPlan : public Plan {
 public:
  // `fold` makes the client's reply (or, for a batch, fills member_replies_) from the answer.
  using Fold = std::function<std::string(std::string_view answer, const redisReply* decoded,
                                         std::vector<std::string>* member_replies)>;

  CfPlan(std::string key, CfCall call, const CfConfig* config, Fold fold)
      : key_(std::move(key)), call_(std::move(call)), config_(config), fold_(std::move(fold)) {}

  void Start(PlanStep* step) override { Send(step, /*body=*/false); }

  void OnReplies(StepReplies& r, PlanStep* step) override {
    const std::string_view answer = r.size() == 1 ? r.Frame(0) : std::string_view();
    if (IsNoScript(answer) && !sent_body_) return Send(step, /*body=*/true);
    step->done = true;
    if (answer.empty()) {
      step->reply = Unexpected(Named("EVALSHA"), "the reply is missing");
      return;
    }
    step->reply = fold_(answer, r.Get(0), &member_replies_);
  }

  const std::vector<std::string>& MemberReplies() const override { return member_replies_; }

 private:
  void Send(PlanStep* step, bool body) {
    sent_body_ = body;
    AppendCfCall(&step->requests, key_, call_, body, config_->upstream);
    step->replies = 1;
  }

  std::string key_;
  CfCall call_;
  const CfConfig* config_;
  Fold fold_;
  bool sent_body_ = false;
  std::vector<std::string> member_replies_;
};

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
  CfCall call = CfCallFor(owned->request, *config);
  return std::make_unique<CfPlan>(
      owned->key, std::move(call), config,
      [owned](std::string_view answer, const redisReply* decoded, std::vector<std::string>*) {
        return CfReply(owned->request, answer, decoded);
      });
}

}  // namespace bloomproxy::filters
