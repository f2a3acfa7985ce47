#include "filters/common/script_plan.h"

#include <utility>

#include "filters/common/lua_script.h"
#include "filters/common/plan_requests.h"

namespace bloomproxy::filters {
namespace {

class ScriptPlan : public Plan {
 public:
  ScriptPlan(AppendScriptCall append, FoldScriptAnswer fold)
      : append_(std::move(append)), fold_(std::move(fold)) {}

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
    step->reply = fold_(answer, decoded, &member_replies_);
  }

  const std::vector<std::string>& MemberReplies() const override { return member_replies_; }

 private:
  void Send(PlanStep* step, bool body) {
    sent_body_ = body;
    append_(&step->requests, body);
    step->replies = 1;
  }

  AppendScriptCall append_;
  FoldScriptAnswer fold_;
  bool sent_body_ = false;
  std::vector<std::string> member_replies_;
};

}  // namespace

std::string ScriptNonsense(std::string_view answer) {
  return Unexpected(Named("EVALSHA"), DescribeFrame(answer));
}

std::string ScriptStatusReply(std::string_view status, std::string_view wrong_type,
                              std::string_view missing, std::string_view structure) {
  constexpr std::string_view kDamaged = "DAMAGED ";
  if (status == "WRONGTYPE") return std::string(wrong_type);
  if (status == "MISSING") return std::string(missing);
  if (status.substr(0, kDamaged.size()) == kDamaged) {
    return Unexpected(Named("EVALSHA"), std::string(structure) + " is damaged: " +
                                            std::string(status.substr(kDamaged.size())));
  }
  return {};
}

std::unique_ptr<Plan> MakeScriptPlan(AppendScriptCall append, FoldScriptAnswer fold) {
  return std::make_unique<ScriptPlan>(std::move(append), std::move(fold));
}

}  // namespace bloomproxy::filters
