#include "filters/topk/topk_update_plan.h"

#include <utility>

#include "filters/common/lua_script.h"
#include "filters/common/plan_requests.h"
#include "filters/topk/topk_snapshot.h"

namespace bloomproxy::filters {
namespace {

class TopkUpdatePlan : public Plan {
 public:
  TopkUpdatePlan(std::string key, std::vector<std::string> items, std::vector<uint32_t> increments,
                 std::vector<TopkAddMember> members, TopkCache* cache, const TopkConfig* config)
      : key_(std::move(key)),
        items_(std::move(items)),
        increments_(std::move(increments)),
        members_(std::move(members)),
        cache_(cache),
        config_(config) {}

  void Start(PlanStep* step) override { StartSnapshot(step); }

  void OnReplies(StepReplies& r, PlanStep* step) override {
    const std::string_view answer = r.size() == 1 ? r.Frame(0) : std::string_view();
    if (IsNoScript(answer) && !sent_body_) return Send(step, /*body=*/true);
    if (answer.empty()) return Finish(step, Unexpected(Named("EVALSHA"), "the reply is missing"));
    const redisReply* decoded = answer[0] == '-' ? nullptr : r.Get(0);
    Remember(decoded);
    switch (phase_) {
      case Phase::kSnapshot:
        return OnSnapshot(answer, decoded, step);
      case Phase::kCommit:
        if (answer == "+OK\r\n") return FinishMembers(step);
        // Another update came between the snapshot and the commit (another proxy's, or this
        // one's on its other upstream connection): read again, a few times, then let the script
        // do it where it runs.
        if (answer == "+CONFLICT\r\n") return StartSnapshot(step);
        return Finish(step, answer[0] == '-' ? UpstreamError(answer, Named("EVALSHA"))
                                             : Unexpected(Named("EVALSHA"), DescribeFrame(answer)));
      case Phase::kScript:
        member_replies_ = TopkAddReplies(answer, decoded, members_);
        return Finish(step, member_replies_.empty() ? std::string() : member_replies_[0]);
    }
  }

  const std::vector<std::string>& MemberReplies() const override { return member_replies_; }

 private:
  enum class Phase { kSnapshot, kCommit, kScript };
  static constexpr int kMaxSnapshots = 4;

  void Send(PlanStep* step, bool body) {
    sent_body_ = body;
    AppendTopkCall(&step->requests, key_, call_, body, config_->upstream);
    step->replies = 1;
  }

  // The fast path, while the sketch is known, small enough, and this plan has not met
  // kMaxSnapshots conflicts.
  void StartSnapshot(PlanStep* step) {
    const std::shared_ptr<TopkMeta> meta = cache_->Find(key_);
    if (meta == nullptr || !TopkSnapshotFits(*meta) || ++snapshots_ > kMaxSnapshots) {
      return StartScript(step);
    }
    phase_ = Phase::kSnapshot;
    call_ = TopkSnapshotCall(*meta);
    Send(step, /*body=*/false);
  }

  // The general path: topk_add.lua reads and writes where it runs.
  void StartScript(PlanStep* step) {
    phase_ = Phase::kScript;
    std::vector<TopkUpdate> updates;
    for (size_t i = 0; i < items_.size(); ++i) updates.push_back({items_[i], increments_[i]});
    std::vector<size_t> counts;
    for (const TopkAddMember& m : members_) counts.push_back(m.applied);
    const std::shared_ptr<TopkMeta> meta = cache_->Find(key_);
    call_ = TopkAddCall(updates, counts, meta.get());
    Send(step, /*body=*/false);
  }

  // The snapshot: a failure (no sketch, another type) is every member's reply; a sketch that
  // does not parse as expected takes the general path; else the update is worked out here.
  void OnSnapshot(std::string_view answer, const redisReply* decoded, PlanStep* step) {
    const bool array = decoded != nullptr && decoded->type == REDIS_REPLY_ARRAY;
    if (!array) {
      member_replies_ = TopkAddReplies(answer, decoded, members_);
      return Finish(step, member_replies_.empty() ? std::string() : member_replies_[0]);
    }
    TopkSnapshot snapshot;
    if (decoded->elements != 2 ||
        !ParseTopkSnapshot(decoded->element[0], TopkAnswerFields(decoded), &snapshot)) {
      return StartScript(step);
    }
    TopkSketch after = snapshot.sketch;
    const TopkRandom random = TopkProxyRandom;
    size_t at = 0;
    expelled_.clear();
    for (const TopkAddMember& m : members_) {
      std::vector<TopkExpelled>& out = expelled_.emplace_back();
      for (size_t i = 0; i < m.applied; ++i, ++at) {
        out.push_back(TopkAdd(&after, items_[at], increments_[at], random));
      }
    }
    phase_ = Phase::kCommit;
    call_ = TopkCommitCall(snapshot, after);
    Send(step, /*body=*/false);
  }

  void FinishMembers(PlanStep* step) {
    member_replies_.clear();
    for (size_t m = 0; m < members_.size(); ++m) {
      member_replies_.push_back(TopkAddMemberReply(expelled_[m], members_[m]));
    }
    Finish(step, member_replies_.empty() ? std::string() : member_replies_[0]);
  }

  void Finish(PlanStep* step, std::string reply) {
    step->done = true;
    step->reply = std::move(reply);
  }

  void Remember(const redisReply* decoded) { TopkRemember(cache_, key_, decoded); }

  std::string key_;
  std::vector<std::string> items_;
  std::vector<uint32_t> increments_;
  std::vector<TopkAddMember> members_;
  TopkCache* cache_;
  const TopkConfig* config_;
  Phase phase_ = Phase::kScript;
  TopkCall call_;
  bool sent_body_ = false;
  int snapshots_ = 0;
  std::vector<std::vector<TopkExpelled>> expelled_;
  std::vector<std::string> member_replies_;
};

}  // namespace

void TopkRemember(TopkCache* cache, std::string_view key, const redisReply* decoded) {
  if (cache == nullptr || decoded == nullptr) return;
  if (decoded->type == REDIS_REPLY_STATUS) {
    if (Str(decoded) == "MISSING" || Str(decoded) == "WRONGTYPE") cache->Erase(key);
    return;
  }
  const redisReply* fields = TopkAnswerFields(decoded);
  if (fields == nullptr) return;
  const std::shared_ptr<TopkMeta> known = cache->Find(key);
  if (known != nullptr && known->id == Str(fields->element[0])) return;
  if (std::shared_ptr<TopkMeta> meta = TopkMetaFromFields(fields)) cache->Put(key, meta);
}

std::unique_ptr<Plan> MakeTopkUpdatePlan(std::string key, std::vector<std::string> items,
                                         std::vector<uint32_t> increments,
                                         std::vector<TopkAddMember> members, TopkCache* cache,
                                         const TopkConfig* config) {
  return std::make_unique<TopkUpdatePlan>(std::move(key), std::move(items), std::move(increments),
                                          std::move(members), cache, config);
}

}  // namespace bloomproxy::filters
