// Script answers (cf_*.lua) to RedisBloom's replies. An answer is a status (what the name holds,
// or a command-wide outcome), an integer (CF.DEL), or an array (items' results, the fields, a
// chunk); see each script's header comment.
#include "filters/cuckoo/cf_replies.h"

#include <cstdint>
#include <string>

#include "filters/common/plan_requests.h"
#include "filters/common/script_plan.h"
#include "protocol/encoder.h"

namespace bloomproxy::filters {
namespace {

// The reply for a status that is not the command's success: what the name holds, or a damaged
// filter. `missing` is the command's reply for a free name.
std::string StatusReply(std::string_view status, std::string_view missing) {
  return ScriptStatusReply(status, kCfErrWrongType, missing, "the cuckoo filter");
}

// An item's result from cf_insert.lua as a single reply (CF.ADD, CF.ADDNX).
std::string AddItemReply(const redisReply* r) {
  if (r == nullptr || r->type != REDIS_REPLY_INTEGER) return {};
  switch (r->integer) {
    case 1:
    case 0:
      return Integer(r->integer);
    case -1:
      return std::string(kCfErrFull);
    case -2:
      return std::string(kCfErrInsufficientMemory);
    default:
      return {};
  }
}

// One member's element of cf_insert.lua's answer: MAXEXP, or its items' results.
std::string InsertMemberReply(const redisReply* e, bool multi) {
  if (e == nullptr) return {};
  if (e->type == REDIS_REPLY_STATUS && Str(e) == "MAXEXP") {
    return std::string(kCfErrMaxExpansions);
  }
  if (e->type != REDIS_REPLY_ARRAY) return {};
  if (!multi) return e->elements == 1 ? AddItemReply(e->element[0]) : std::string();
  std::string out;
  protocol::AppendArrayHeader(&out, static_cast<int64_t>(e->elements));
  for (size_t i = 0; i < e->elements; ++i) {
    const redisReply* r = e->element[i];
    if (r->type != REDIS_REPLY_INTEGER || r->integer < -2 || r->integer > 1) return {};
    // RedisBloom's CF.INSERT gives -1 for a failed growth as for a full filter.
    protocol::AppendInteger(&out, r->integer == -2 ? -1 : r->integer);
  }
  return out;
}

// The integers of a check answer's items [start, start + count): one, or an array.
std::string CheckMemberReply(const redisReply* r, size_t start, size_t count, bool multi) {
  if (r->elements < start + count) return {};
  std::string out;
  if (multi) protocol::AppendArrayHeader(&out, static_cast<int64_t>(count));
  for (size_t i = start; i < start + count; ++i) {
    if (r->element[i]->type != REDIS_REPLY_INTEGER || r->element[i]->integer < 0) return {};
    protocol::AppendInteger(&out, r->element[i]->integer);
  }
  return out;
}

uint64_t Hex(std::string_view s, bool* ok) {
  uint64_t v = 0;
  *ok = *ok && s.size() == 16;
  for (char c : s) {
    const int d = c >= '0' && c <= '9' ? c - '0' : (c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1);
    *ok = *ok && d >= 0;
    v = (v << 4) | static_cast<uint64_t>(d < 0 ? 0 : d);
  }
  return v;
}

// cf_info.lua's fields {nb, bs, mi, ex, nf, ni, nd} as a header.
bool HeaderOf(const redisReply* r, CfHeader* h) {
  if (r == nullptr || r->type != REDIS_REPLY_ARRAY || r->elements != 7) return false;
  int64_t v[5];
  for (size_t i = 0; i < 5; ++i) {
    if (r->element[i]->type != REDIS_REPLY_STRING || !ParseCount(Str(r->element[i]), &v[i])) {
      return false;
    }
  }
  bool ok = r->element[5]->type == REDIS_REPLY_STRING && r->element[6]->type == REDIS_REPLY_STRING;
  h->num_buckets = static_cast<uint64_t>(v[0]);
  h->bucket_size = static_cast<uint64_t>(v[1]);
  h->max_iterations = static_cast<uint64_t>(v[2]);
  h->expansion = static_cast<uint64_t>(v[3]);
  h->num_filters = static_cast<uint64_t>(v[4]);
  h->num_items = Hex(Str(r->element[5]), &ok);
  h->num_deletes = Hex(Str(r->element[6]), &ok);
  return ok;
}

std::string InfoReply(const CfHeader& h) {
  std::string out;
  protocol::AppendArrayHeader(&out, 16);
  const std::pair<std::string_view, int64_t> fields[] = {
      {"Size", static_cast<int64_t>(h.InfoSize())},
      {"Number of buckets", static_cast<int64_t>(h.num_buckets)},
      {"Number of filters", static_cast<int64_t>(h.num_filters)},
      // RedisBloom's u64 counters, printed as signed (a wrapped count shows as -1).
      {"Number of items inserted", static_cast<int64_t>(h.num_items)},
      {"Number of items deleted", static_cast<int64_t>(h.num_deletes)},
      {"Bucket size", static_cast<int64_t>(h.bucket_size)},
      {"Expansion rate", static_cast<int64_t>(h.expansion)},
      {"Max iterations", static_cast<int64_t>(h.max_iterations)},
  };
  for (const auto& [label, value] : fields) {
    protocol::AppendSimple(&out, label);
    protocol::AppendInteger(&out, value);
  }
  return out;
}

std::string EndOfDump() { return "*2\r\n:0\r\n$-1\r\n"; }

std::string FieldsReply(const CfRequest& request, const redisReply* r, std::string_view answer) {
  CfHeader h;
  if (!HeaderOf(r, &h)) return ScriptNonsense(answer);
  if (request.command == CfCommand::kInfo) return InfoReply(h);
  std::string out;
  if (request.command == CfCommand::kDebug) {
    protocol::AppendBulk(&out, CfDebugText(h));
    return out;
  }
  if (h.num_items == 0) return EndOfDump();  // SCANDUMP 0: an empty filter dumps nothing
  protocol::AppendArrayHeader(&out, 2);
  protocol::AppendInteger(&out, 1);
  protocol::AppendBulk(&out, EncodeCfHeader(h));
  return out;
}

std::string ChunkReply(const redisReply* r, std::string_view answer) {
  if (r == nullptr || r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
      r->element[0]->type != REDIS_REPLY_INTEGER) {
    return ScriptNonsense(answer);
  }
  if (r->element[0]->integer == 0 && r->elements == 1) return EndOfDump();
  if (r->elements != 2 || r->element[1]->type != REDIS_REPLY_STRING) return ScriptNonsense(answer);
  std::string out;
  protocol::AppendArrayHeader(&out, 2);
  protocol::AppendInteger(&out, r->element[0]->integer);
  protocol::AppendBulk(&out, Str(r->element[1]));
  return out;
}

// The reply of a command whose answer is a status.
std::string StatusAnswer(const CfRequest& request, std::string_view status,
                         std::string_view answer) {
  switch (request.command) {
    case CfCommand::kReserve:
      if (status == "CREATED") return "+OK\r\n";
      if (status == "EXISTS") return std::string(kCfErrItemExists);
      break;
    case CfCommand::kLoadChunk:
      if (status == "CREATED" || status == "OK") return "+OK\r\n";
      if (status == "EXISTS") return std::string(kCfErrItemExists);
      // A header or chunk RedisBloom refuses, answered once the key was checked.
      if (status == "BADCHUNK") return std::string(kCfErrCannotLoadChunk);
      if (status == "INVALIDHEADER") return std::string(kCfErrInvalidHeader);
      if (status == "CANNOTCREATE") return std::string(kCfErrCannotCreate);
      break;
    case CfCommand::kDel:
      if (status == "NOTFOUND") return std::string(kCfErrDelNotFound);
      break;
    case CfCommand::kCompact:
      if (status == "OK") return "+OK\r\n";
      if (status == "NOTFOUND") return std::string(kCfErrCompactNotFound);
      break;
    default:
      break;
  }
  std::string reply = StatusReply(status, kCfErrNotFound);
  return reply.empty() ? ScriptNonsense(answer) : reply;
}

}  // namespace

std::string CfReply(const CfRequest& request, std::string_view answer, const redisReply* r) {
  if (!answer.empty() && answer[0] == '-') return UpstreamError(answer, Named("EVALSHA"));
  if (r == nullptr) return ScriptNonsense(answer);
  if (r->type == REDIS_REPLY_STATUS) return StatusAnswer(request, Str(r), answer);
  std::vector<PlanMember> one = {{0, request.items.size(), false}};
  switch (request.command) {
    case CfCommand::kAdd:
    case CfCommand::kAddNx:
    case CfCommand::kInsert:
    case CfCommand::kInsertNx: {
      one[0].multi =
          request.command == CfCommand::kInsert || request.command == CfCommand::kInsertNx;
      return CfInsertReplies(answer, r, one)[0];
    }
    case CfCommand::kExists:
    case CfCommand::kMExists:
    case CfCommand::kCount:
      one[0].multi = request.command == CfCommand::kMExists;
      return CfCheckReplies(answer, r, one)[0];
    case CfCommand::kDel:
      if (r->type == REDIS_REPLY_INTEGER && (r->integer == 0 || r->integer == 1)) {
        return Integer(r->integer);
      }
      return ScriptNonsense(answer);
    case CfCommand::kInfo:
    case CfCommand::kDebug:
      return FieldsReply(request, r, answer);
    case CfCommand::kScanDump:
      return request.iterator == 0 ? FieldsReply(request, r, answer) : ChunkReply(r, answer);
    default:
      return ScriptNonsense(answer);
  }
}

namespace {

// The one reply every member of a batch gets when the script's answer is not per member: an
// upstream error, a status (the filter is missing or of another type), or nonsense. Empty when
// the answer is an array (whose shape the caller checks).
std::string WholeBatchReply(std::string_view answer, const redisReply* decoded,
                            std::string_view missing) {
  if (!answer.empty() && answer[0] == '-') return UpstreamError(answer, Named("EVALSHA"));
  if (decoded == nullptr) return ScriptNonsense(answer);
  if (decoded->type == REDIS_REPLY_STATUS) {
    std::string reply = StatusReply(Str(decoded), missing);
    return reply.empty() ? ScriptNonsense(answer) : reply;
  }
  if (decoded->type != REDIS_REPLY_ARRAY) return ScriptNonsense(answer);
  return {};
}

}  // namespace

std::vector<std::string> CfInsertReplies(std::string_view answer, const redisReply* decoded,
                                         const std::vector<PlanMember>& members) {
  std::vector<std::string> out(members.size());
  std::string all = WholeBatchReply(answer, decoded, kCfErrNotFound);
  if (all.empty() &&
      (decoded->elements < members.size() || decoded->elements > members.size() + 1)) {
    all = ScriptNonsense(answer);  // (the filter's fields may follow the members')
  }
  for (size_t m = 0; m < members.size(); ++m) {
    out[m] = all.empty() ? InsertMemberReply(decoded->element[m], members[m].multi) : all;
    if (out[m].empty()) out[m] = ScriptNonsense(answer);
  }
  return out;
}

std::vector<std::string> CfCheckReplies(std::string_view answer, const redisReply* decoded,
                                        const std::vector<PlanMember>& members) {
  std::vector<std::string> out(members.size());
  std::string all = WholeBatchReply(answer, decoded, {});
  for (size_t m = 0; m < members.size(); ++m) {
    out[m] = all.empty()
                 ? CheckMemberReply(decoded, members[m].start, members[m].count, members[m].multi)
                 : all;
    if (out[m].empty()) out[m] = ScriptNonsense(answer);
  }
  return out;
}

}  // namespace bloomproxy::filters
