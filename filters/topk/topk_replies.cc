// Script answers (topk_*.lua) to RedisBloom's replies. An answer is a status (what the name holds)
// or an array whose last element is the sketch's fields; see each script's header comment.
#include "filters/topk/topk_replies.h"

#include <algorithm>
#include <cstdint>

#include "filters/common/plan_requests.h"
#include "filters/common/script_plan.h"
#include "protocol/encoder.h"

namespace bloomproxy::filters {
namespace {

// The reply for an answer that is not the command's success: the upstream's error, what the
// name holds, a damaged sketch, or nonsense. Empty when the answer is an array (success).
std::string FailureReply(std::string_view answer, const redisReply* r) {
  if (!answer.empty() && answer[0] == '-') return UpstreamError(answer, Named("EVALSHA"));
  if (r != nullptr && r->type == REDIS_REPLY_ARRAY && r->elements >= 1) return {};
  if (r == nullptr || r->type != REDIS_REPLY_STATUS) return ScriptNonsense(answer);
  std::string reply =
      ScriptStatusReply(Str(r), kTopkErrWrongType, kTopkErrKeyMissing, "the Top-K sketch");
  return reply.empty() ? ScriptNonsense(answer) : reply;
}

// One member's element of topk_add.lua's answer: an expelled item or a null per applied item.
std::string AddMemberReply(const redisReply* e, const TopkAddMember& m) {
  if (e == nullptr || e->type != REDIS_REPLY_ARRAY || e->elements != m.applied) return {};
  std::string out;
  protocol::AppendArrayHeader(&out, static_cast<int64_t>(m.announced));
  for (size_t i = 0; i < e->elements; ++i) {
    const redisReply* x = e->element[i];
    if (x->type == REDIS_REPLY_NIL) {
      protocol::AppendNullBulk(&out);
    } else if (x->type == REDIS_REPLY_STRING) {
      protocol::AppendBulk(&out, TopkReplyItem(Str(x)));
    } else {
      return {};
    }
  }
  // INCRBY's bad increment: the error element, then nothing (a short reply when pairs follow it,
  // as RedisBloom sends it).
  out += m.error;
  return out;
}

std::string IntegersReply(const redisReply* results, size_t items) {
  if (results->type != REDIS_REPLY_ARRAY || results->elements != items) return {};
  std::string out;
  protocol::AppendArrayHeader(&out, static_cast<int64_t>(items));
  for (size_t i = 0; i < items; ++i) {
    if (results->element[i]->type != REDIS_REPLY_INTEGER) return {};
    protocol::AppendInteger(&out, results->element[i]->integer);
  }
  return out;
}

// TOPK.LIST from the slots of count > 0, in heap-array order (count, item pairs): sorted by
// count, highest first, equal counts keeping their array order (glibc's qsort is a stable merge
// sort at these sizes); items cut at their first NUL.
std::string ListReply(const redisReply* results, bool with_count) {
  if (results->type != REDIS_REPLY_ARRAY || results->elements % 2 != 0) return {};
  struct Entry {
    int64_t count;
    std::string_view item;
  };
  std::vector<Entry> entries;
  for (size_t i = 0; i < results->elements; i += 2) {
    const redisReply* c = results->element[i];
    const redisReply* item = results->element[i + 1];
    if (c->type != REDIS_REPLY_INTEGER || item->type != REDIS_REPLY_STRING) return {};
    entries.push_back({c->integer, TopkReplyItem(Str(item))});
  }
  std::stable_sort(entries.begin(), entries.end(),
                   [](const Entry& a, const Entry& b) { return a.count > b.count; });
  std::string out;
  protocol::AppendArrayHeader(&out, static_cast<int64_t>(entries.size() * (with_count ? 2 : 1)));
  for (const Entry& e : entries) {
    protocol::AppendBulk(&out, e.item);
    if (with_count) protocol::AppendInteger(&out, e.count);
  }
  return out;
}

std::string InfoReply(const redisReply* fields) {
  std::string out;
  protocol::AppendArrayHeader(&out, 8);
  const char* labels[] = {"k", "width", "depth"};
  for (size_t i = 0; i < 3; ++i) {
    int64_t v = 0;
    if (!ParseCount(Str(fields->element[i + 1]), &v)) return {};
    protocol::AppendSimple(&out, labels[i]);
    protocol::AppendInteger(&out, v);
  }
  protocol::AppendSimple(&out, "decay");
  protocol::AppendBulk(&out, Str(fields->element[4]));
  return out;
}

}  // namespace

std::string TopkAddMemberReply(const std::vector<TopkExpelled>& expelled, const TopkAddMember& m) {
  std::string out;
  protocol::AppendArrayHeader(&out, static_cast<int64_t>(m.announced));
  for (const TopkExpelled& e : expelled) {
    if (e.has_value()) {
      protocol::AppendBulk(&out, TopkReplyItem(*e));
    } else {
      protocol::AppendNullBulk(&out);
    }
  }
  out += m.error;
  return out;
}

const redisReply* TopkAnswerFields(const redisReply* r) {
  if (r == nullptr || r->type != REDIS_REPLY_ARRAY || r->elements == 0) return nullptr;
  const redisReply* f = r->element[r->elements - 1];
  if (f->type != REDIS_REPLY_ARRAY || f->elements != 5) return nullptr;
  for (size_t i = 0; i < 5; ++i) {
    if (f->element[i]->type != REDIS_REPLY_STRING) return nullptr;
  }
  return f;
}

std::vector<std::string> TopkAddReplies(std::string_view answer, const redisReply* decoded,
                                        const std::vector<TopkAddMember>& members) {
  std::string failure = FailureReply(answer, decoded);
  if (failure.empty() &&
      (decoded->elements != members.size() + 1 || TopkAnswerFields(decoded) == nullptr)) {
    failure = ScriptNonsense(answer);
  }
  std::vector<std::string> out;
  if (!failure.empty()) {
    out.assign(members.size(), failure);
    return out;
  }
  for (size_t m = 0; m < members.size(); ++m) {
    std::string reply = AddMemberReply(decoded->element[m], members[m]);
    out.push_back(reply.empty() ? ScriptNonsense(answer) : std::move(reply));
  }
  return out;
}

std::string TopkReadReply(const TopkRequest& request, std::string_view answer,
                          const redisReply* decoded) {
  std::string failure = FailureReply(answer, decoded);
  if (!failure.empty()) return failure;
  const redisReply* fields = TopkAnswerFields(decoded);
  if (decoded->elements != 2 || fields == nullptr) return ScriptNonsense(answer);
  const redisReply* results = decoded->element[0];
  std::string reply;
  switch (request.command) {
    case TopkCommand::kQuery:
    case TopkCommand::kCount:
      reply = IntegersReply(results, request.items.size());
      break;
    case TopkCommand::kList:
      reply = ListReply(results, request.with_count);
      break;
    case TopkCommand::kInfo:
      reply = InfoReply(fields);
      break;
    default:
      break;
  }
  return reply.empty() ? ScriptNonsense(answer) : reply;
}

std::string TopkReserveReply(std::string_view refusal, std::string_view answer) {
  if (!answer.empty() && answer[0] == '-') return UpstreamError(answer, Named("EVALSHA"));
  if (answer == "+EXISTS\r\n") return std::string(kTopkErrKeyExists);
  if (answer == "+FREE\r\n" && !refusal.empty()) return std::string(refusal);
  if (answer == "+OK\r\n" && refusal.empty()) return "+OK\r\n";
  return ScriptNonsense(answer);
}

}  // namespace bloomproxy::filters
