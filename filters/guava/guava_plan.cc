// The plan for a key that is one Guava filter (a bf-layout rule without `expanding`); the
// expanding rules' plan is in guava_expanding.cc.
#include "filters/guava/guava_plan.h"

#include <utility>

#include "filters/bloom/bf_replies.h"
#include "filters/common/plan_requests.h"
#include "filters/guava/guava_requests.h"
#include "protocol/encoder.h"

namespace bloomproxy::filters {

namespace {

using guava_plan::GuavaRequest;

class GuavaPlan : public Plan {
 public:
  GuavaPlan(GuavaRequest request, const LayoutRule& rule, protocol::UpstreamKind upstream,
            std::string deferred_error)
      : req_(std::move(request)),
        rule_(rule),
        upstream_(upstream),
        deferred_error_(std::move(deferred_error)) {}

  void Start(PlanStep* step) override;
  void OnReplies(StepReplies& r, PlanStep* step) override;

 private:
  enum class Stage { kWrite, kRead, kNoCreate, kCard, kInfo, kReserve, kCreated };

  void Send(PlanStep* step, Stage stage, std::initializer_list<std::string_view> args) {
    protocol::AppendCommand(&step->requests, args);
    ++step->replies;
    stage_ = stage;
  }
  void SendBitfield(PlanStep* step, bool set) {
    guava_plan::AppendBitfield(&step->requests, req_.key, req_.indexes.data(), req_.indexes.size(),
                               set, upstream_);
    step->replies = 1;
    stage_ = set ? Stage::kWrite : Stage::kRead;
  }
  static void Done(PlanStep* step, std::string reply) {
    step->done = true;
    step->reply = std::move(reply);
  }
  // The reply made of the items' old (write) or current (read) bits.
  std::string ItemsReply(StepReplies& r, bool write) const;

  GuavaRequest req_;
  LayoutRule rule_;
  protocol::UpstreamKind upstream_;
  std::string deferred_error_;
  Stage stage_ = Stage::kRead;
};

void GuavaPlan::Start(PlanStep* step) {
  if (!req_.error.empty()) return Done(step, req_.error);
  switch (req_.command) {
    case BfCommand::kExists:
    case BfCommand::kMExists:
      return SendBitfield(step, /*set=*/false);
    case BfCommand::kInsert:
      if (req_.nocreate) return Send(step, Stage::kNoCreate, {"EXISTS", req_.key});
      return SendBitfield(step, /*set=*/true);
    case BfCommand::kCard:
      return Send(step, Stage::kCard, {"BITCOUNT", req_.key});
    case BfCommand::kInfo:
    case BfCommand::kDebug:
      // STRLEN answers WRONGTYPE for a key of another type, as RedisBloom does.
      Send(step, Stage::kInfo, {"STRLEN", req_.key});
      Send(step, Stage::kInfo, {"EXISTS", req_.key});
      return Send(step, Stage::kInfo, {"BITCOUNT", req_.key});
    case BfCommand::kReserve:
      Send(step, Stage::kReserve, {"STRLEN", req_.key});
      return Send(step, Stage::kReserve, {"EXISTS", req_.key});
    default:
      return SendBitfield(step, /*set=*/true);
  }
}

void GuavaPlan::OnReplies(StepReplies& r, PlanStep* step) {
  // RedisBloom answers EXISTS on a key of another type as on a missing one: 0.
  if (stage_ == Stage::kRead && IsWrongType(r.Frame(0))) {
    return Done(step, guava_plan::ItemsReply(guava_plan::MultiItem(req_.command),
                                             std::vector<uint8_t>(req_.items, 0)));
  }
  // An error (WRONGTYPE, an offset past proto-max-bulk-len, OOM, ...) is Redis's answer about
  // the user's own key: the client gets it as it is.
  for (size_t i = 0; i < r.size(); ++i) {
    if (r.IsErrorReply(i)) return Done(step, std::string(r.Frame(i)));
  }
  if (stage_ == Stage::kWrite || stage_ == Stage::kRead) {
    return Done(step, ItemsReply(r, stage_ == Stage::kWrite));
  }
  // Every other reply is an integer. `a`: the only one, or EXISTS's after STRLEN's (INFO,
  // RESERVE); `b`: INFO's BITCOUNT.
  int64_t v[3] = {0, 0, 0};
  bool ints = r.size() <= 3;
  for (size_t i = 0; i < r.size() && ints; ++i) ints = FrameInt(r.Frame(i), &v[i]);
  const int64_t a = r.size() > 1 ? v[1] : v[0];
  const int64_t b = v[2];
  switch (stage_) {
    case Stage::kWrite:
    case Stage::kRead:
      return;
    case Stage::kNoCreate:
      if (!ints) return Done(step, guava_plan::Unexpected("EXISTS", r.Frame(0)));
      if (a == 0) return Done(step, std::string(kNotFound));
      return SendBitfield(step, /*set=*/true);
    case Stage::kCard:
      if (!ints) return Done(step, guava_plan::Unexpected("BITCOUNT", r.Frame(0)));
      return Done(step, guava_plan::CountsReply(req_, rule_, {a}));
    case Stage::kInfo:
      if (!ints) return Done(step, guava_plan::Unexpected("EXISTS", r.Frame(1)));
      if (a == 0) return Done(step, std::string(kNotFound));
      if (!deferred_error_.empty()) return Done(step, deferred_error_);
      return Done(step, guava_plan::CountsReply(req_, rule_, {b}));
    case Stage::kReserve:
      if (!ints) return Done(step, guava_plan::Unexpected("EXISTS", r.Frame(0)));
      if (a != 0) return Done(step, std::string(kItemExists));
      if (!guava_plan::SameParameters(req_, rule_)) {
        return Done(step, guava_plan::ReserveMismatch(rule_));
      }
      // The whole bit array, as Guava allocates it.
      return Send(step, Stage::kCreated, {"SETBIT", req_.key, U64(rule_.bits - 1), "0"});
    case Stage::kCreated:
      return Done(step, "+OK\r\n");
  }
}

std::string GuavaPlan::ItemsReply(StepReplies& r, bool write) const {
  const std::vector<int64_t>* bits = guava_plan::BitsReply(r, 0, req_.indexes.size());
  if (bits == nullptr)
    return guava_plan::Unexpected(write ? "BITFIELD" : "BITFIELD_RO", r.Frame(0));
  std::vector<uint8_t> results(req_.items, 0);
  for (size_t i = 0; i < req_.items; ++i) {
    // A write: the item is new if one of its bits was 0. A read: present if all are 1.
    const bool all_set = guava_plan::AllSet(bits, i, rule_.k);
    results[i] = static_cast<uint8_t>(write ? !all_set : all_set);
  }
  return guava_plan::ItemsReply(guava_plan::MultiItem(req_.command), results);
}

}  // namespace

std::unique_ptr<Plan> MakeGuavaPlan(const BfRequest& request, const LayoutRule& rule,
                                    protocol::UpstreamKind upstream, std::string deferred_error) {
  GuavaRequest kept = guava_plan::KeepRequest(request, rule);
  if (rule.expanding()) {
    return guava_plan::MakeExpandingPlan(std::move(kept), rule, upstream,
                                         std::move(deferred_error));
  }
  return std::make_unique<GuavaPlan>(std::move(kept), rule, upstream, std::move(deferred_error));
}

}  // namespace bloomproxy::filters
