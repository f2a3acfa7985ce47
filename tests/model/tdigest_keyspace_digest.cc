// TDIGEST.* in tdigest_keyspace.h's model: filters/tdigest/tdigest_args.h parses, in the check
// order its TdigestErrorOrder gives (the key's errors before or after the arguments'), and
// filters/tdigest/tdigest.h answers.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tests/model/tdigest_keyspace.h"

namespace bloomproxy::filters {
namespace {

std::string Int(int64_t v) { return ":" + std::to_string(v) + "\r\n"; }
std::string Simple(std::string_view s) { return "+" + std::string(s) + "\r\n"; }
std::string Array(size_t n) { return "*" + std::to_string(n) + "\r\n"; }
std::string WrongType() { return std::string(kTdigestErrWrongType); }

std::string Info(const Tdigest& t, bool resp3) {
  return (resp3 ? "%9\r\n" : "*18\r\n") + Simple("Compression") + Int(t.compression) +
         Simple("Capacity") + Int(TdigestCapacity(t.compression)) + Simple("Merged nodes") +
         Int(static_cast<int64_t>(t.merged)) + Simple("Unmerged nodes") +
         Int(static_cast<int64_t>(TdigestUnmergedNodes(t))) + Simple("Merged weight") +
         Int(t.merged_weight) + Simple("Unmerged weight") + Int(t.unmerged_weight) +
         Simple("Observations") + Int(TdigestSize(t)) + Simple("Total compressions") +
         Int(t.total_compressions) + Simple("Memory usage") +
         Int(TdigestMemoryUsage(t.compression));
}

std::string Doubles(const std::vector<double>& values, bool resp3) {
  std::string out = Array(values.size());
  for (double d : values) out += TdigestDoubleReply(d, resp3);
  return out;
}

std::string Reply(const TdigestRequest& req, Tdigest* t, bool resp3) {
  switch (req.command) {
    case TdigestCommand::kReset:
      TdigestReset(t);
      return Simple("OK");
    case TdigestCommand::kAdd:
      for (double x : req.values) {
        if (!TdigestAddNode(t, x, 1)) return std::string(kTdigestErrOverflow);
      }
      return Simple("OK");
    case TdigestCommand::kMin:
      return TdigestDoubleReply(TdigestMin(*t), resp3);
    case TdigestCommand::kMax:
      return TdigestDoubleReply(TdigestMax(*t), resp3);
    case TdigestCommand::kQuantile:
      return Doubles(TdigestQuantiles(t, req.values), resp3);
    case TdigestCommand::kCdf: {
      TdigestCompress(t);
      std::vector<double> out;
      for (double x : req.values) out.push_back(TdigestCdf(t, x));
      return Doubles(out, resp3);
    }
    case TdigestCommand::kTrimmedMean:
      return TdigestDoubleReply(TdigestTrimmedMean(t, req.values[0], req.values[1]), resp3);
    case TdigestCommand::kRank:
    case TdigestCommand::kRevRank: {
      const std::vector<int64_t> ranks =
          TdigestRanks(t, req.values, req.command == TdigestCommand::kRevRank);
      std::string out = Array(ranks.size());
      for (int64_t r : ranks) out += Int(r);
      return out;
    }
    case TdigestCommand::kByRank:
    case TdigestCommand::kByRevRank:
      return Doubles(TdigestByRanks(t, req.ranks, req.command == TdigestCommand::kByRevRank),
                     resp3);
    case TdigestCommand::kInfo:
      return Info(*t, resp3);
    default:
      return "";
  }
}

}  // namespace

std::string TdigestKeyspace::Digest(const std::vector<std::string>& args, bool resp3) {
  const std::vector<std::string_view> views(args.begin(), args.end());
  TdigestRequest req;
  const std::string parse_error = ParseTdigestRequest(views, &req);
  if (!parse_error.empty() && req.error_order == TdigestErrorOrder::kNow) return parse_error;
  Value* v = Find(req.key);
  if (req.command == TdigestCommand::kCreate) {
    if (v != nullptr) {
      return v->type == kTdigestTypeName ? std::string(kTdigestErrKeyExists) : WrongType();
    }
    if (!parse_error.empty()) return parse_error;
    Value created{std::string(kTdigestTypeName)};
    created.digest = NewTdigest(req.compression);
    keys_[std::string(req.key)] = std::move(created);
    return Simple("OK");
  }
  if (req.command == TdigestCommand::kMerge) return Merge(req, parse_error, v);
  if (v == nullptr) return std::string(kTdigestErrKeyMissing);
  if (v->type != kTdigestTypeName) return WrongType();
  if (!parse_error.empty()) return parse_error;
  return Reply(req, &v->digest, resp3);
}

std::string TdigestKeyspace::Merge(const TdigestRequest& req, const std::string& parse_error,
                                   Value* dest) {
  if (dest != nullptr && dest->type != kTdigestTypeName) return WrongType();
  if (!parse_error.empty()) return parse_error;
  std::vector<Tdigest*> sources;
  std::vector<int64_t> compressions;
  for (std::string_view name : req.sources) {
    Value* s = Find(name);
    if (s == nullptr) return std::string(kTdigestErrKeyMissing);
    if (s->type != kTdigestTypeName) return WrongType();
    sources.push_back(&s->digest);
    compressions.push_back(s->digest.compression);
  }
  const int64_t c =
      TdigestMergeCompression(req, dest == nullptr ? nullptr : &dest->digest, compressions);
  if (!TdigestCompressionFits(c)) return std::string(kTdigestErrMergeAllocation);
  Tdigest merged = NewTdigest(c);
  if (!req.override_dest && dest != nullptr) TdigestMergeInto(&merged, &dest->digest);
  for (Tdigest* s : sources) {
    if (!TdigestMergeInto(&merged, s)) return std::string(kTdigestErrOverflow);
  }
  Value stored{std::string(kTdigestTypeName)};  // a new value: no TTL
  stored.digest = std::move(merged);
  keys_[std::string(req.key)] = std::move(stored);
  return Simple("OK");
}

}  // namespace bloomproxy::filters
