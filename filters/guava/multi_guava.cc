// BF.* inside MULTI on a key a bf-layout rule names (filters/common/multi_command.h,
// filters/guava/guava_plan.h): the command is queued as one script (guava_multi.lua) that does it
// whole when EXEC runs (reading the cursor, setting the bits, rolling an expanding filter over to
// its next key); the items' bit indexes are worked out here, and the script's raw answer becomes
// RedisBloom's reply.
#include "filters/guava/multi_guava.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "filters/bloom/bf_replies.h"
#include "filters/common/plan_requests.h"
#include "filters/guava/guava_multi.lua.h"
#include "filters/guava/guava_requests.h"
#include "protocol/encoder.h"

namespace bloomproxy::filters {
namespace {

const char* OpName(BfCommand command) {
  switch (command) {
    case BfCommand::kAdd:
    case BfCommand::kMAdd:
    case BfCommand::kInsert:
      return "add";
    case BfCommand::kExists:
    case BfCommand::kMExists:
      return "exists";
    case BfCommand::kReserve:
      return "reserve";
    default:
      return "counts";
  }
}

class GuavaQueued : public QueuedSketch {
 public:
  GuavaQueued(guava_plan::GuavaRequest req, const LayoutRule& rule, std::string deferred);
  std::string Reply(std::string_view answer, protocol::ReplyDecoder* decoder) const override;

 private:
  std::string CountsReply(const redisReply* r) const;

  guava_plan::GuavaRequest req_;
  LayoutRule rule_;
  std::string deferred_;
};

GuavaQueued::GuavaQueued(guava_plan::GuavaRequest req, const LayoutRule& rule, std::string deferred)
    : req_(std::move(req)), rule_(rule), deferred_(std::move(deferred)) {
  const std::string first = rule_.expanding() ? LayoutRule::DataKey(req_.key, 0) : req_.key;
  std::vector<std::string> args = {"EVAL", std::string(lua::kGuavaMulti.body),
                                   rule_.expanding() ? "2" : "1", first};
  if (rule_.expanding()) args.push_back(rule_.CursorKey(req_.key));
  args.insert(args.end(), {OpName(req_.command), U64(rule_.bits), std::to_string(rule_.k),
                           std::to_string(req_.items), rule_.expanding() ? req_.key : "",
                           req_.nocreate ? "1" : "0"});
  if (req_.command == BfCommand::kReserve) {
    const bool same = guava_plan::SameParameters(req_, rule_);
    // The script answers it as a Redis error: without the leading '-' and the CRLF.
    const std::string refusal = guava_plan::ReserveMismatch(rule_);
    args.push_back(same ? "" : refusal.substr(1, refusal.size() - 3));
  }
  for (uint64_t index : req_.indexes) args.push_back(U64(index));
  protocol::AppendArrayHeader(&request_, static_cast<int64_t>(args.size()));
  for (const std::string& a : args) protocol::AppendBulk(&request_, a);
  req_.indexes.clear();
}

std::string GuavaQueued::Reply(std::string_view answer, protocol::ReplyDecoder* decoder) const {
  if (!answer.empty() && (answer[0] == '-' || answer[0] == '+')) return std::string(answer);
  protocol::ReplyPtr r = decoder->Decode(answer);
  if (r == nullptr || r->type != REDIS_REPLY_ARRAY || r->elements == 0) {
    return guava_plan::Unexpected("the transaction's script", answer);
  }
  for (size_t i = 0; i < r->elements; ++i) {
    if (r->element[i]->type != REDIS_REPLY_INTEGER || r->element[i]->integer < 0) {
      return guava_plan::Unexpected("the transaction's script", answer);
    }
  }
  if (req_.command == BfCommand::kCard || req_.command == BfCommand::kInfo ||
      req_.command == BfCommand::kDebug) {
    return CountsReply(r.get());
  }
  std::vector<uint8_t> results;
  for (size_t i = 1; i < r->elements; ++i) results.push_back(r->element[i]->integer != 0);
  if (results.size() != req_.items) {
    return guava_plan::Unexpected("the transaction's script", answer);
  }
  return guava_plan::ItemsReply(guava_plan::MultiItem(req_.command), results);
}

std::string GuavaQueued::CountsReply(const redisReply* r) const {
  const bool found = r->element[0]->integer != 0;
  if (req_.command != BfCommand::kCard && !found) return std::string(kNotFound);
  if (req_.command == BfCommand::kInfo && !deferred_.empty()) return deferred_;
  std::vector<int64_t> bitcounts;
  for (size_t i = 1; i < r->elements; ++i) bitcounts.push_back(r->element[i]->integer);
  return guava_plan::CountsReply(req_, rule_, bitcounts);
}

}  // namespace

std::unique_ptr<QueuedSketch> QueueGuavaCommand(const BfRequest& request, const LayoutRule& rule,
                                                std::string deferred_error) {
  guava_plan::GuavaRequest kept = guava_plan::KeepRequest(request, rule);
  if (!kept.error.empty()) return std::make_unique<KnownReply>(std::move(kept.error));
  return std::make_unique<GuavaQueued>(std::move(kept), rule, std::move(deferred_error));
}

}  // namespace bloomproxy::filters
