// BF.* inside MULTI (multi_command.h): what is worked out when the command is queued (its
// arguments, a new filter's metadata and a fresh id, each item's hashes) and passed to the script
// (filters/bloom/bf_multi.lua), and the RedisBloom reply made of the script's answer once EXEC ran
// it.
#include "filters/bloom/multi_bf.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "filters/bloom/bf_args.h"
#include "filters/bloom/bf_meta.h"
#include "filters/bloom/bf_multi.lua.h"
#include "filters/bloom/bf_plan_state.h"
#include "filters/bloom/bf_replies.h"
#include "filters/bloom/bloom.h"
#include "filters/bloom/window/window_rules.h"
#include "filters/common/key_layout.h"
#include "filters/common/sketch_commands.h"
#include "filters/guava/multi_guava.h"
#include "protocol/encoder.h"

namespace bloomproxy::filters {
namespace {

using bf_plan_internal::kBadData;
using bf_plan_internal::kFullError;
using bf_plan_internal::kItemExists;
using bf_plan_internal::kNoLink;
using bf_plan_internal::kNotFound;
using bf_plan_internal::kTooBig;
using bf_plan_internal::kWrongType;

const char* OpName(const BfRequest& req) {
  switch (req.command) {
    case BfCommand::kReserve:
      return "reserve";
    case BfCommand::kAdd:
    case BfCommand::kMAdd:
    case BfCommand::kInsert:
      return "add";
    case BfCommand::kExists:
    case BfCommand::kMExists:
      return "exists";
    case BfCommand::kScanDump:
      return req.iterator == 0 ? "counts" : "dump";
    case BfCommand::kLoadChunk:
      return "load";
    case BfCommand::kInfo:
    case BfCommand::kCard:
    case BfCommand::kDebug:
      return "counts";
  }
  return "counts";
}

// One BF command queued in a transaction.
class BfQueued : public QueuedSketch {
 public:
  BfQueued(const BfRequest& req, std::string deferred, const DumpHeader* header,
           const BfConfig& config);
  std::string Reply(std::string_view answer, protocol::ReplyDecoder* decoder) const override;

 private:
  std::string ItemsReply(const redisReply* r) const;
  std::string CountsFrom(const redisReply* r) const;

  BfRequest req_;  // its views are not kept: only the command and its options are read later
  std::string name_;
  std::string deferred_;
};

BfQueued::BfQueued(const BfRequest& req, std::string deferred, const DumpHeader* header,
                   const BfConfig& config)
    : req_(req), name_(req.key), deferred_(std::move(deferred)) {
  const std::string prefix = DataKeyPrefix(name_);
  std::vector<std::string> fields;
  std::vector<int64_t> counts;
  if (CreatesFilter(req) && deferred_.empty()) {
    const FilterMeta meta = NewFilterMeta(name_, req, header, config);
    fields = MetaHashFields(meta);
    counts = meta.counts;
  }
  std::vector<std::string> args = {"EVAL",
                                   std::string(MultiBfScript()),
                                   "2",
                                   name_,
                                   MarkerKey(prefix, name_),
                                   OpName(req),
                                   prefix,
                                   deferred_,
                                   CreatesFilter(req) ? "1" : "0",
                                   std::to_string(fields.size())};
  for (std::string& f : fields) args.push_back(std::move(f));
  args.push_back(std::to_string(counts.size()));
  for (int64_t c : counts) args.push_back(std::to_string(c));
  if (req.command == BfCommand::kScanDump || req.command == BfCommand::kLoadChunk) {
    args.push_back(std::to_string(req.iterator));
    if (req.command == BfCommand::kLoadChunk) args.emplace_back(req.data);
  } else {
    args.push_back(std::to_string(req.items.size()));
    for (std::string_view item : req.items) {
      const ItemHash h = HashItem(item);
      args.push_back(Hex64(h.a));
      args.push_back(Hex64(h.b));
    }
  }
  protocol::AppendArrayHeader(&request_, static_cast<int64_t>(args.size()));
  for (const std::string& a : args) protocol::AppendBulk(&request_, a);
  req_.items.clear();
  req_.data = {};
  req_.key = {};
}

std::string Damaged(std::string_view why) {
  return "-ERR bloomproxy: the filter's metadata is damaged: " + std::string(why) + "\r\n";
}

std::string BfQueued::Reply(std::string_view answer, protocol::ReplyDecoder* decoder) const {
  if (!answer.empty() && answer[0] == '-') return std::string(answer);  // the script failed
  protocol::ReplyPtr r = decoder->Decode(answer);
  if (r == nullptr || r->type != REDIS_REPLY_ARRAY || r->elements == 0 ||
      r->element[0]->type != REDIS_REPLY_STRING) {
    return Damaged("unexpected answer from the transaction's script");
  }
  const std::string_view status(r->element[0]->str, r->element[0]->len);
  if (status == "wrongtype") return std::string(kWrongType);
  if (status == "missing") {
    return req_.command == BfCommand::kCard ? ":0\r\n" : std::string(kNotFound);
  }
  if (status == "deferred") return deferred_;
  if (status == "exists") return std::string(kItemExists);
  if (status == "ok") return "+OK\r\n";
  if (status == "baddata") return std::string(kBadData);
  if (status == "nolink") return std::string(kNoLink);
  if (status == "toobig") return std::string(kTooBig);
  if (status == "damaged" && r->elements == 2 && r->element[1]->type == REDIS_REPLY_STRING) {
    return Damaged(std::string_view(r->element[1]->str, r->element[1]->len));
  }
  if (status == "add" || status == "found") return ItemsReply(r.get());
  if (status == "counts") return CountsFrom(r.get());
  if (status == "chunk" && r->elements == 3 && r->element[1]->type == REDIS_REPLY_INTEGER &&
      r->element[2]->type == REDIS_REPLY_STRING) {
    std::string out = "*2\r\n";
    protocol::AppendInteger(&out, r->element[1]->integer);
    protocol::AppendBulk(&out, std::string_view(r->element[2]->str, r->element[2]->len));
    return out;
  }
  return Damaged("unexpected answer from the transaction's script");
}

// ADD/MADD/INSERT (1 new, 0 present, 2 full: the error, after which nothing was added) and
// EXISTS/MEXISTS.
std::string BfQueued::ItemsReply(const redisReply* r) const {
  const bool multi = req_.command == BfCommand::kMAdd || req_.command == BfCommand::kInsert ||
                     req_.command == BfCommand::kMExists;
  std::string body;
  for (size_t i = 1; i < r->elements; ++i) {
    const redisReply* e = r->element[i];
    if (e->type != REDIS_REPLY_INTEGER || e->integer < 0 || e->integer > 2) {
      return Damaged("unexpected answer from the transaction's script");
    }
    body += e->integer == 2 ? std::string(kFullError) : e->integer == 1 ? ":1\r\n" : ":0\r\n";
  }
  if (!multi) return r->elements == 2 ? body : Damaged("no answer for the item");
  std::string out;
  protocol::AppendArrayHeader(&out, static_cast<int64_t>(r->elements - 1));
  return out + body;
}

// CARD, INFO, DEBUG and SCANDUMP 0: the metadata hash and the counts.
std::string BfQueued::CountsFrom(const redisReply* r) const {
  if (r->elements != 3 || r->element[1]->type != REDIS_REPLY_ARRAY ||
      r->element[2]->type != REDIS_REPLY_ARRAY) {
    return Damaged("unexpected answer from the transaction's script");
  }
  const redisReply* h = r->element[1];
  std::vector<std::pair<std::string_view, std::string_view>> fields;
  for (size_t i = 0; i + 1 < h->elements; i += 2) {
    fields.emplace_back(std::string_view(h->element[i]->str, h->element[i]->len),
                        std::string_view(h->element[i + 1]->str, h->element[i + 1]->len));
  }
  std::shared_ptr<FilterMeta> meta;
  std::string problem;
  if (MetaFromFields(name_, fields, /*strict=*/true, &meta, &problem) != MetaStatus::kFilter) {
    return Damaged(problem);
  }
  const redisReply* c = r->element[2];
  if (c->elements != meta->links.size()) return Damaged("counts missing");
  for (size_t l = 0; l < c->elements; ++l) {
    if (c->element[l]->type != REDIS_REPLY_STRING ||
        !ParseCount(std::string_view(c->element[l]->str, c->element[l]->len), &meta->counts[l])) {
      return Damaged("a count is not a number");
    }
  }
  std::string reply;
  switch (CountsReply(req_, *meta, &reply)) {
    case CountsProblem::kNone:
      return reply;
    case CountsProblem::kCounts:
      return Damaged("the counts add up to more than 2^63 - 1");
    case CountsProblem::kSizes:
      return Damaged("the link capacities or sizes add up to more than 2^63 - 1");
  }
  return reply;
}

}  // namespace

std::unique_ptr<QueuedSketch> QueueBfCommand(const std::vector<std::string_view>& args,
                                             const BfConfig& config, std::string* refusal) {
  BfRequest req;
  std::string error = ParseBfRequestWithWindows(args, config.defaults, config.windows, &req);
  // BF.INFO's field and BF.SCANDUMP's iterator are checked after the key, as RedisBloom does.
  const bool deferred = !error.empty() && args.size() == 3 &&
                        (req.command == BfCommand::kInfo || req.command == BfCommand::kScanDump);
  if (!error.empty() && !deferred) {
    return QueueRefused(args, std::move(error), refusal);
  }
  if (const LayoutRule* rule = config.layouts.Match(req.key)) {
    return QueueGuavaCommand(req, *rule, std::move(error));
  }
  DumpHeader header;
  if (req.command == BfCommand::kLoadChunk && req.iterator == 1) {
    error = bf_plan_internal::LoadHeaderError(req.data, &header);
  }
  return std::make_unique<BfQueued>(
      req, std::move(error), req.command == BfCommand::kLoadChunk ? &header : nullptr, config);
}

std::string_view MultiBfScript() { return lua::kBfMulti.body; }

}  // namespace bloomproxy::filters
