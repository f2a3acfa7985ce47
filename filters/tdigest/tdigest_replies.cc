#include "filters/tdigest/tdigest_replies.h"

#include <cmath>
#include <cstring>

#include "filters/common/plan_requests.h"
#include "filters/common/script_plan.h"
#include "filters/tdigest/tdigest.h"
#include "protocol/encoder.h"

namespace bloomproxy::filters {
namespace {

constexpr size_t kHeaderBytes = 56;

// The reply for an answer that is not the command's success: the upstream's error, what the name
// holds, a damaged digest, or nonsense. Empty for any other status, and for an array.
std::string FailureReply(std::string_view answer, const redisReply* r) {
  if (!answer.empty() && answer[0] == '-') return UpstreamError(answer, Named("EVALSHA"));
  if (r != nullptr && r->type == REDIS_REPLY_ARRAY) return {};
  if (r == nullptr || r->type != REDIS_REPLY_STATUS) return ScriptNonsense(answer);
  return ScriptStatusReply(Str(r), kTdigestErrWrongType, kTdigestErrKeyMissing, "the t-digest");
}

std::string Status(const redisReply* r) {
  return r != nullptr && r->type == REDIS_REPLY_STATUS ? std::string(Str(r)) : std::string();
}

double DoubleAt(std::string_view bytes, size_t i) {
  double d;
  std::memcpy(&d, bytes.data() + 8 * i, sizeof d);
  return d;
}

void AppendInfoPair(std::string* out, std::string_view label, int64_t value) {
  *out += '+';
  out->append(label);
  *out += "\r\n";
  protocol::AppendInteger(out, value);
}

std::string InfoReply(const TdigestHeader& h) {
  const auto c = static_cast<int64_t>(h.compression);
  std::string out;
  protocol::AppendArrayHeader(&out, 18);
  AppendInfoPair(&out, "Compression", c);
  AppendInfoPair(&out, "Capacity", TdigestCapacity(c));
  AppendInfoPair(&out, "Merged nodes", h.merged);
  AppendInfoPair(&out, "Unmerged nodes", h.unmerged);
  AppendInfoPair(&out, "Merged weight", h.merged_weight);
  AppendInfoPair(&out, "Unmerged weight", h.unmerged_weight);
  AppendInfoPair(&out, "Observations",
                 static_cast<int64_t>(static_cast<uint64_t>(h.merged_weight) +
                                      static_cast<uint64_t>(h.unmerged_weight)));
  AppendInfoPair(&out, "Total compressions", h.total_compressions);
  AppendInfoPair(&out, "Memory usage", TdigestMemoryUsage(c));
  return out;
}

bool IsRankCommand(TdigestCommand c) {
  return c == TdigestCommand::kRank || c == TdigestCommand::kRevRank;
}

}  // namespace

bool ParseTdigestHeader(std::string_view bytes, TdigestHeader* out) {
  if (bytes.size() != kHeaderBytes) return false;
  const char* p = bytes.data();
  std::memcpy(&out->compression, p, 8);
  std::memcpy(&out->min, p + 8, 8);
  std::memcpy(&out->max, p + 16, 8);
  std::memcpy(&out->merged, p + 24, 4);
  std::memcpy(&out->unmerged, p + 28, 4);
  std::memcpy(&out->merged_weight, p + 32, 8);
  std::memcpy(&out->unmerged_weight, p + 40, 8);
  std::memcpy(&out->total_compressions, p + 48, 8);
  return out->compression >= 1;
}

std::string TdigestCreateReply(const std::string& error, std::string_view answer,
                               const redisReply* decoded) {
  // tdigest_create.lua never answers MISSING (nor does RedisBloom's CREATE say so).
  if (Status(decoded) == "MISSING") return ScriptNonsense(answer);
  if (std::string failure = FailureReply(answer, decoded); !failure.empty()) return failure;
  const std::string status = Status(decoded);
  if (status == "EXISTS") return std::string(kTdigestErrKeyExists);
  if (status == "FREE" && !error.empty()) return error;
  if (status == "OK" && error.empty()) return "+OK\r\n";
  return ScriptNonsense(answer);
}

std::string TdigestCheckReply(TdigestCommand command, const std::string& error,
                              std::string_view answer, const redisReply* decoded) {
  if (command == TdigestCommand::kMerge && Status(decoded) == "MISSING") return error;
  if (std::string failure = FailureReply(answer, decoded); !failure.empty()) return failure;
  if (Status(decoded) == "OK") return error;
  return ScriptNonsense(answer);
}

std::string TdigestResetReply(std::string_view answer, const redisReply* decoded) {
  if (std::string failure = FailureReply(answer, decoded); !failure.empty()) return failure;
  if (Status(decoded) == "OK") return "+OK\r\n";
  return ScriptNonsense(answer);
}

std::vector<std::string> TdigestAddReplies(std::string_view answer, const redisReply* decoded,
                                           size_t commands, std::string* shared) {
  *shared = FailureReply(answer, decoded);
  if (!shared->empty()) return {};
  if (decoded == nullptr || decoded->type != REDIS_REPLY_ARRAY || decoded->elements != commands) {
    *shared = ScriptNonsense(answer);
    return {};
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < commands; ++i) {
    const redisReply* e = decoded->element[i];
    // 1: every value added; 0: "overflow detected"; anything else makes no sense.
    if (e->type != REDIS_REPLY_INTEGER || (e->integer != 0 && e->integer != 1)) {
      *shared = ScriptNonsense(answer);
      return {};
    }
    out.push_back(e->integer == 1 ? std::string("+OK\r\n") : std::string(kTdigestErrOverflow));
  }
  return out;
}

std::string TdigestReadReply(const TdigestRequest& request, std::string_view answer,
                             const redisReply* decoded) {
  if (std::string failure = FailureReply(answer, decoded); !failure.empty()) return failure;
  TdigestHeader h;
  if (decoded == nullptr || decoded->type != REDIS_REPLY_ARRAY || decoded->elements != 2 ||
      decoded->element[0]->type != REDIS_REPLY_STRING ||
      decoded->element[1]->type != REDIS_REPLY_STRING ||
      !ParseTdigestHeader(Str(decoded->element[0]), &h)) {
    return ScriptNonsense(answer);
  }
  const std::string_view results = Str(decoded->element[1]);
  // MIN and MAX are NaN unless the digest holds an observation (td_size > 0).
  const bool empty = static_cast<int64_t>(static_cast<uint64_t>(h.merged_weight) +
                                          static_cast<uint64_t>(h.unmerged_weight)) <= 0;
  switch (request.command) {
    case TdigestCommand::kMin:
      return TdigestDoubleReply(empty ? NAN : h.min, false);
    case TdigestCommand::kMax:
      return TdigestDoubleReply(empty ? NAN : h.max, false);
    case TdigestCommand::kInfo:
      return InfoReply(h);
    default:
      break;
  }
  const size_t n = results.size() / 8;
  const size_t expected = request.command == TdigestCommand::kTrimmedMean
                              ? 1
                              : (request.command == TdigestCommand::kByRank ||
                                         request.command == TdigestCommand::kByRevRank
                                     ? request.ranks.size()
                                     : request.values.size());
  if (results.size() % 8 != 0 || n != expected) return ScriptNonsense(answer);
  if (request.command == TdigestCommand::kTrimmedMean) {
    return TdigestDoubleReply(DoubleAt(results, 0), false);
  }
  std::string out;
  protocol::AppendArrayHeader(&out, static_cast<int64_t>(n));
  for (size_t i = 0; i < n; ++i) {
    if (IsRankCommand(request.command)) {
      protocol::AppendInteger(&out, TdigestToInt64(DoubleAt(results, i)));
    } else {
      out += TdigestDoubleReply(DoubleAt(results, i), false);
    }
  }
  return out;
}

std::string TdigestMergeReply(std::string_view answer, const redisReply* decoded) {
  if (std::string failure = FailureReply(answer, decoded); !failure.empty()) return failure;
  const std::string status = Status(decoded);
  if (status == "OK") return "+OK\r\n";
  if (status == "ALLOC") return std::string(kTdigestErrMergeAllocation);
  if (status == "OVERFLOW") return std::string(kTdigestErrOverflow);
  return ScriptNonsense(answer);
}

}  // namespace bloomproxy::filters
