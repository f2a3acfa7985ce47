// QueueCmsCommand (filters/common/multi_command.h): a CMS command inside MULTI becomes one EVAL of
// CmsMultiScript (filters/cms/cms_multi.lua) in its place in the transaction. What depends only on
// the arguments is worked out here (the parse and its errors, a new sketch's id and parts, the
// count's increment, canonical weights); what depends on the keys (whether the sketch exists,
// its dimensions and id, hence every cell) is left to the script, which runs when EXEC does.
//
//   ARGV:  op  pending  prefix_1 .. prefix_k  | the command's own:
//          init    id width depth part_cells
//          incrby  count_increment item_1 value_1 ...
//          query   item_1 ...
//          info    (nothing)
//          merge   n bad_weight  name_index_1 weight_1 .. name_index_n weight_n
//   KEYS:  (name, marker) of the sketch, then of each distinct MERGE source (k pairs)
#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "filters/bloom/bf_meta.h"
#include "filters/cms/cms.h"
#include "filters/cms/cms_args.h"
#include "filters/cms/cms_meta.h"
#include "filters/cms/cms_multi.lua.h"
#include "filters/cms/multi_cms.h"
#include "filters/common/key_layout.h"
#include "filters/common/multi_command.h"
#include "filters/common/plan_requests.h"
#include "filters/common/sketch_commands.h"
#include "protocol/encoder.h"

namespace bloomproxy::filters {
namespace {

const char* OpName(CmsCommand c) {
  switch (c) {
    case CmsCommand::kInitByDim:
    case CmsCommand::kInitByProb:
      return "init";
    case CmsCommand::kIncrBy:
      return "incrby";
    case CmsCommand::kQuery:
      return "query";
    case CmsCommand::kInfo:
      return "info";
    case CmsCommand::kMerge:
      return "merge";
  }
  return "";
}

// The queued command: what its script's answer means.
class QueuedCms : public QueuedSketch {
 public:
  QueuedCms(CmsCommand command, std::string arg_error, size_t items)
      : command_(command), arg_error_(std::move(arg_error)), items_(items) {}
  void set_request(std::string request) { request_ = std::move(request); }
  std::string Reply(std::string_view answer, protocol::ReplyDecoder* decoder) const override;

 private:
  std::string CodeReply(int64_t code, std::string_view answer) const;
  std::string ItemsReply(const redisReply* r, std::string_view answer) const;
  std::string InfoReply(const redisReply* r, std::string_view answer) const;
  static std::string Nonsense(std::string_view answer) {
    return Unexpected(Named("EVAL"), DescribeFrame(answer));
  }

  CmsCommand command_;
  std::string arg_error_;  // the argument error to reply after the key checks, if any
  size_t items_;           // INCRBY / QUERY: the items
};

std::string QueuedCms::Reply(std::string_view answer, protocol::ReplyDecoder* decoder) const {
  if (!answer.empty() && answer[0] == '-') return UpstreamError(answer, Named("EVAL"));
  int64_t code = 0;
  if (FrameInt(answer, &code)) return CodeReply(code, answer);
  protocol::ReplyPtr r = decoder->Decode(answer);
  if (r == nullptr || r->type != REDIS_REPLY_ARRAY) return Nonsense(answer);
  switch (command_) {
    case CmsCommand::kIncrBy:
    case CmsCommand::kQuery:
      return ItemsReply(r.get(), answer);
    case CmsCommand::kInfo:
      return InfoReply(r.get(), answer);
    default:
      return Nonsense(answer);
  }
}

std::string QueuedCms::CodeReply(int64_t code, std::string_view answer) const {
  const bool init = command_ == CmsCommand::kInitByDim || command_ == CmsCommand::kInitByProb;
  const bool merge = command_ == CmsCommand::kMerge;
  switch (code) {
    case kCmsMultiOk:
      if (init || merge) return "+OK\r\n";
      break;
    case kCmsMultiExists:
      if (init) return std::string(kCmsErrKeyExists);
      break;
    case kCmsMultiArgError:
      if (!arg_error_.empty()) return arg_error_;
      break;
    case kCmsMultiMissing:
      if (!init) return std::string(kCmsErrKeyMissing);
      break;
    case kCmsMultiWrongType:
      if (!init) return std::string(kCmsErrWrongType);
      break;
    case kCmsMultiDimsDiffer:
      if (merge) return std::string(kCmsErrDimsNotEqual);
      break;
    case kCmsMultiOverflow:
      if (merge) return std::string(kCmsErrMergeOverflow);
      break;
    case kCmsMultiDamaged:
      if (!init) {
        return Unexpected(Named("EVAL"), "the sketch's metadata is incomplete or does not parse");
      }
      break;
    case kCmsMultiPartSize:
      if (merge) return Unexpected(Named("EVAL"), "a part of a sketch has the wrong size");
      break;
    default:
      break;
  }
  return Nonsense(answer);
}

// INCRBY / QUERY: the minimum of each item's cells; INCRBY's element for a saturated item is
// RedisBloom's overflow error.
std::string QueuedCms::ItemsReply(const redisReply* r, std::string_view answer) const {
  if (r->elements != items_) return Nonsense(answer);
  std::string out;
  protocol::AppendArrayHeader(&out, static_cast<int64_t>(items_));
  for (size_t i = 0; i < r->elements; ++i) {
    const redisReply* e = r->element[i];
    if (e->type != REDIS_REPLY_INTEGER || e->integer < 0 || e->integer > kCmsCellMax) {
      return Nonsense(answer);
    }
    if (command_ == CmsCommand::kIncrBy && e->integer == kCmsCellMax) {
      out += kCmsErrIncrByOverflow;
    } else {
      protocol::AppendInteger(&out, e->integer);
    }
  }
  return out;
}

// INFO: width and depth as the hash holds them, and up to 8 bytes of part 0 (fewer when the
// part is shorter: BITFIELD reads missing bytes as zeros, and so does this).
std::string QueuedCms::InfoReply(const redisReply* r, std::string_view answer) const {
  uint64_t width = 0;
  uint64_t depth = 0;
  if (r->elements != 3 || r->element[0]->type != REDIS_REPLY_STRING ||
      r->element[1]->type != REDIS_REPLY_STRING || r->element[2]->type != REDIS_REPLY_STRING ||
      !ParseU64(Str(r->element[0]), &width) || !ParseU64(Str(r->element[1]), &depth) ||
      r->element[2]->len > 8) {
    return Nonsense(answer);
  }
  std::string count(Str(r->element[2]));
  count.resize(8, '\0');
  std::string out;
  protocol::AppendArrayHeader(&out, 6);
  protocol::AppendSimple(&out, "width");
  protocol::AppendInteger(&out, static_cast<int64_t>(width));
  protocol::AppendSimple(&out, "depth");
  protocol::AppendInteger(&out, static_cast<int64_t>(depth));
  protocol::AppendSimple(&out, "count");
  protocol::AppendInteger(&out, CmsCounterShown(CmsHeaderField(count, 0)));
  return out;
}

// The EVAL's keys and arguments before the command's own: the names' (name, marker) pairs and
// prefixes, the operation and whether an argument error waits for the key check.
struct Eval {
  std::vector<std::string> keys;
  std::vector<std::string> argv;
};

Eval Start(const CmsRequest& req, bool pending) {
  std::vector<std::string_view> names = {req.key};
  for (std::string_view source : req.sources) {
    if (std::find(names.begin(), names.end(), source) == names.end()) names.push_back(source);
  }
  Eval e;
  e.argv = {OpName(req.command), pending ? "e" : ""};
  for (std::string_view name : names) {
    const std::string prefix = DataKeyPrefix(name);
    e.keys.emplace_back(name);
    e.keys.push_back(CmsMarkerKey(prefix, name));
    e.argv.push_back(prefix);
  }
  return e;
}

// The command's own arguments (see the top of the file).
void AddOwnArgs(const CmsRequest& req, const CmsConfig& config, Eval* e) {
  switch (req.command) {
    case CmsCommand::kInitByDim:
    case CmsCommand::kInitByProb: {
      const std::shared_ptr<CmsMeta> meta = NewCmsMeta(req.key, req.width, req.depth, config);
      e->argv.insert(e->argv.end(),
                     {meta->id, U64(meta->width), U64(meta->depth), U64(meta->part_cells)});
      return;
    }
    case CmsCommand::kIncrBy: {
      uint64_t sum = 0;
      for (const CmsIncrement& inc : req.increments) sum = CmsCounterAdd(sum, inc.value);
      e->argv.push_back(std::to_string(CmsCounterShown(sum)));
      for (const CmsIncrement& inc : req.increments) {
        e->argv.emplace_back(inc.item);
        e->argv.push_back(U64(inc.value));
      }
      return;
    }
    case CmsCommand::kQuery:
      e->argv.insert(e->argv.end(), req.items.begin(), req.items.end());
      return;
    case CmsCommand::kInfo:
      return;
    case CmsCommand::kMerge: {
      e->argv.push_back(U64(req.sources.size()));
      e->argv.push_back(req.bad_weight == kCmsNoBadWeight ? "-1" : U64(req.bad_weight));
      for (size_t i = 0; i < req.sources.size(); ++i) {
        // The source's pair in KEYS (1-based; the destination's is 1).
        size_t pair = 0;
        while (e->keys[2 * pair] != req.sources[i]) ++pair;
        e->argv.push_back(U64(pair + 1));
        // Weights from bad_weight on are never read (the script stops there).
        e->argv.push_back(i < req.weights.size() ? std::to_string(req.weights[i]) : "0");
      }
      return;
    }
  }
}

}  // namespace

std::unique_ptr<QueuedSketch> QueueCmsCommand(const std::vector<std::string_view>& args,
                                              const CmsConfig& config, std::string* refusal) {
  CmsRequest req;
  std::string error = ParseCmsRequest(args, &req, config.max_bytes);
  if (!error.empty() && req.error_order == CmsErrorOrder::kNow) {
    return QueueRefused(args, std::move(error), refusal);
  }
  // kAfterKey errors wait for the key check; kAfterSources ones for the sources' (bad_weight).
  const bool pending = !error.empty() && req.error_order == CmsErrorOrder::kAfterKey;
  const size_t items =
      req.command == CmsCommand::kIncrBy ? req.increments.size() : req.items.size();
  auto queued = std::make_unique<QueuedCms>(req.command, error, items);
  Eval e = Start(req, pending);
  if (!pending) AddOwnArgs(req, config, &e);
  std::vector<std::string_view> eval = {"EVAL", CmsMultiScript()};
  const std::string count = U64(e.keys.size());
  eval.push_back(count);
  eval.insert(eval.end(), e.keys.begin(), e.keys.end());
  eval.insert(eval.end(), e.argv.begin(), e.argv.end());
  std::string request;
  protocol::AppendCommand(&request, eval);
  queued->set_request(std::move(request));
  return queued;
}

const std::string& CmsMultiScript() {
  static const std::string* const script = new std::string(lua::kCmsMulti.body);
  return *script;
}

}  // namespace bloomproxy::filters
