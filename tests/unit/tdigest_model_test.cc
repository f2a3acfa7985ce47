// The whole recorded TDIGEST vector set replayed against an in-memory model: a tiny keyspace that
// answers the few plain Redis, BF and CMS commands the recordings use, and TDIGEST.* answered with
// filters/tdigest/tdigest.h's maths and filters/tdigest/tdigest_args.h's parser, in the check
// order the parser's TdigestErrorOrder describes. Every reply is compared byte for byte with
// RedisBloom's, in RESP2 and in RESP3 (no recorded reply is approximate).
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "filters/cms/cms_args.h"
#include "filters/common/sketch_resp3.h"
#include "filters/tdigest/tdigest.h"
#include "filters/tdigest/tdigest_args.h"
#include "tests/unit/tdigest_fixtures.h"

namespace bloomproxy::filters {
namespace {
using namespace fixtures;  // NOLINT: test-local helpers

std::string Int(int64_t v) { return ":" + std::to_string(v) + "\r\n"; }
std::string Simple(std::string_view s) { return "+" + std::string(s) + "\r\n"; }
std::string Bulk(std::string_view s) {
  return "$" + std::to_string(s.size()) + "\r\n" + std::string(s) + "\r\n";
}
std::string Array(size_t n) { return "*" + std::to_string(n) + "\r\n"; }
std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = (c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : c;
  return out;
}

// A key of the model's keyspace. Only what the recordings look at is kept.
struct Value {
  Value() = default;
  explicit Value(std::string t, std::string s = "") : type(std::move(t)), text(std::move(s)) {}

  std::string type;             // TYPE's answer: string, list, hash, MBbloom--, TDIS-TYPE, ...
  std::string text;             // a string's value
  std::set<std::string> bloom;  // a Bloom filter's items
  Tdigest digest;
  int64_t ttl = -1;
};

class Model {
 public:
  // Returns the reply in RESP2 or RESP3, or "" for a command the model does not know (a test
  // failure).
  std::string Run(const std::vector<std::string>& args, bool resp3) {
    TdigestCommand command;
    if (LookupTdigestCommand(args[0], &command)) return Digest(args, resp3);
    const std::string resp2 = Plain(args);
    if (!resp3 || resp2.empty()) return resp2;
    const std::vector<std::string_view> views(args.begin(), args.end());
    return ToResp3(Resp3ShapeOf(views), resp2);
  }

 private:
  Value* Find(std::string_view key) {
    auto it = keys_.find(std::string(key));
    return it == keys_.end() ? nullptr : &it->second;
  }
  static std::string WrongType() { return std::string(kTdigestErrWrongType); }

  bool Upsert(const std::string& key, const std::string& type) {
    Value* v = Find(key);
    if (v == nullptr) v = &(keys_[key] = Value{type});
    return v->type == type;
  }

  std::string Plain(const std::vector<std::string>& args) {
    const std::string name = Upper(args[0]);
    const size_t argc = args.size();
    if (name == "BF.ADD" && argc == 3) {
      if (!Upsert(args[1], "MBbloom--")) return WrongType();
      return Int(Find(args[1])->bloom.insert(args[2]).second ? 1 : 0);
    }
    if (name == "BF.EXISTS" && argc == 3) {
      const Value* v = Find(args[1]);
      return Int(v != nullptr && v->type == "MBbloom--" && v->bloom.count(args[2]) > 0);
    }
    if (name.rfind("CMS.", 0) == 0 && argc >= 2) {
      const Value* v = Find(args[1]);
      if (name == "CMS.INITBYDIM") {
        if (v != nullptr) return std::string(kCmsErrKeyExists);
        keys_[args[1]] = Value{std::string(kCmsTypeName)};
        return Simple("OK");
      }
      if (v != nullptr && v->type != kCmsTypeName) return WrongType();
      return "";
    }
    const std::string keyspace = KeyCommand(name, args);
    if (!keyspace.empty()) return keyspace;
    return DataCommand(name, args);
  }

  // SET, GET, LPUSH, HSET: just enough for WRONGTYPE and TYPE.
  std::string DataCommand(const std::string& name, const std::vector<std::string>& args) {
    const size_t argc = args.size();
    if (name == "SET" && argc == 3) {
      keys_[args[1]] = Value{"string", args[2]};
      return Simple("OK");
    }
    if (name == "GET" && argc == 2) {
      const Value* v = Find(args[1]);
      if (v == nullptr) return "$-1\r\n";
      return v->type == "string" ? Bulk(v->text) : WrongType();
    }
    if (name == "LPUSH" && argc >= 3) {
      if (!Upsert(args[1], "list")) return WrongType();
      return Int(static_cast<int64_t>(argc - 2));
    }
    if (name == "HSET" && argc >= 4 && argc % 2 == 0) {
      if (!Upsert(args[1], "hash")) return WrongType();
      return Int(static_cast<int64_t>(argc - 2) / 2);
    }
    return "";
  }

  // TYPE, EXISTS, DEL, UNLINK, EXPIRE, TTL, PERSIST, RENAME, RENAMENX, COPY, OBJECT ENCODING.
  std::string KeyCommand(const std::string& name, const std::vector<std::string>& args) {
    const size_t argc = args.size();
    if (name == "TYPE" && argc == 2) {
      const Value* v = Find(args[1]);
      return Simple(v == nullptr ? "none" : v->type);
    }
    if ((name == "EXISTS" || name == "DEL" || name == "UNLINK") && argc >= 2) {
      int64_t n = 0;
      for (size_t i = 1; i < argc; ++i) {
        n += name == "EXISTS" ? Find(args[i]) != nullptr
                              : static_cast<int64_t>(keys_.erase(args[i]));
      }
      return Int(n);
    }
    if (name == "EXPIRE" && argc == 3) {
      Value* v = Find(args[1]);
      if (v == nullptr) return Int(0);
      v->ttl = std::stoll(args[2]);  // time stands still in the model
      return Int(1);
    }
    if (name == "TTL" && argc == 2) {
      const Value* v = Find(args[1]);
      return Int(v == nullptr ? -2 : v->ttl);
    }
    if (name == "PERSIST" && argc == 2) {
      Value* v = Find(args[1]);
      if (v == nullptr || v->ttl == -1) return Int(0);
      v->ttl = -1;
      return Int(1);
    }
    if ((name == "RENAME" || name == "RENAMENX") && argc == 3) {
      auto it = keys_.find(args[1]);
      if (it == keys_.end()) return "-ERR no such key\r\n";
      if (name == "RENAMENX" && Find(args[2]) != nullptr) return Int(0);
      Value moved = std::move(it->second);  // with its TTL
      keys_.erase(it);
      keys_[args[2]] = std::move(moved);
      return name == "RENAME" ? Simple("OK") : Int(1);
    }
    if (name == "COPY" && argc == 3) {
      const Value* v = Find(args[1]);
      if (v == nullptr) return Int(0);
      if (v->type == kTdigestTypeName) return std::string(kTdigestErrCopyNotSupported);
      return "";
    }
    if (name == "OBJECT" && argc == 3 && Upper(args[1]) == "ENCODING") {
      const Value* v = Find(args[2]);
      if (v != nullptr && v->type == kTdigestTypeName) return Bulk("raw");
      return "";
    }
    return "";
  }

  std::string Digest(const std::vector<std::string>& args, bool resp3) {
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

  std::string Merge(const TdigestRequest& req, const std::string& parse_error, Value* dest) {
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

  static std::string Doubles(const std::vector<double>& values, bool resp3) {
    std::string out = Array(values.size());
    for (double d : values) out += TdigestDoubleReply(d, resp3);
    return out;
  }

  static std::string Reply(const TdigestRequest& req, Tdigest* t, bool resp3) {
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

  static std::string Info(const Tdigest& t, bool resp3) {
    return (resp3 ? "%9\r\n" : "*18\r\n") + Simple("Compression") + Int(t.compression) +
           Simple("Capacity") + Int(TdigestCapacity(t.compression)) + Simple("Merged nodes") +
           Int(static_cast<int64_t>(t.merged)) + Simple("Unmerged nodes") +
           Int(static_cast<int64_t>(TdigestUnmergedNodes(t))) + Simple("Merged weight") +
           Int(t.merged_weight) + Simple("Unmerged weight") + Int(t.unmerged_weight) +
           Simple("Observations") + Int(TdigestSize(t)) + Simple("Total compressions") +
           Int(t.total_compressions) + Simple("Memory usage") +
           Int(TdigestMemoryUsage(t.compression));
  }

  std::map<std::string, Value> keys_;
};

struct ReplayCount {
  int commands = 0;
  int tdigest_commands = 0;
  int matched = 0;
};

// Replays every case in one protocol.
ReplayCount Replay(bool resp3) {
  ReplayCount count;
  for (const Case& c : TdigestCases()) {
    const std::vector<std::string>* resp3_replies = nullptr;
    if (resp3) {
      auto it = TdigestResp3Replies().find(c.name);
      if (it == TdigestResp3Replies().end()) {
        ADD_FAILURE() << "no RESP3 recording of case " << c.name;
        continue;
      }
      resp3_replies = &it->second;
      EXPECT_EQ(resp3_replies->size(), c.cmds.size()) << c.name;
    }
    Model model;  // each case runs on a fresh key set
    for (size_t i = 0; i < c.cmds.size(); ++i) {
      const std::string got = model.Run(c.cmds[i], resp3);
      EXPECT_NE(got, "") << c.name << " command " << i << ": the model does not know "
                         << c.cmds[i][0];
      const std::string& want = resp3 ? resp3_replies->at(i) : c.replies[i];
      EXPECT_EQ(got, want) << c.name << " command " << i << " (" << c.cmds[i][0] << ")"
                           << (resp3 ? " RESP3" : " RESP2");
      count.matched += got == want;
      TdigestCommand command;
      count.tdigest_commands += LookupTdigestCommand(c.cmds[i][0], &command);
      ++count.commands;
    }
  }
  return count;
}

TEST(TdigestModelTest, RecordedVectorsByteForByteResp2) {
  EXPECT_EQ(TdigestCases().size(), 32u);
  const ReplayCount count = Replay(false);
  EXPECT_EQ(count.commands, 2404);
  EXPECT_EQ(count.tdigest_commands, 2352);
  EXPECT_EQ(count.matched, count.commands);
}

TEST(TdigestModelTest, RecordedVectorsByteForByteResp3) {
  EXPECT_EQ(TdigestResp3Replies().size(), 32u);
  const ReplayCount count = Replay(true);
  EXPECT_EQ(count.commands, 2404);
  EXPECT_EQ(count.matched, count.commands);
}

// The RESP3 recording differs from the RESP2 one exactly where the model says it should: the
// doubles and INFO's map (and the BF.ADD and BF.EXISTS booleans of the recordings' other keys).
TEST(TdigestModelTest, Resp3DiffersOnlyInTheShapesTheModelConverts) {
  std::set<std::string> changed;
  for (const Case& c : TdigestCases()) {
    const std::vector<std::string>& resp3 = TdigestResp3Replies().at(c.name);
    for (size_t i = 0; i < c.cmds.size() && i < resp3.size(); ++i) {
      if (resp3[i] != c.replies[i]) changed.insert(Upper(c.cmds[i][0]));
    }
  }
  EXPECT_EQ(changed,
            (std::set<std::string>{"TDIGEST.MIN", "TDIGEST.MAX", "TDIGEST.QUANTILE", "TDIGEST.CDF",
                                   "TDIGEST.TRIMMED_MEAN", "TDIGEST.BYRANK", "TDIGEST.BYREVRANK",
                                   "TDIGEST.INFO", "BF.ADD", "BF.EXISTS"}));
}

}  // namespace
}  // namespace bloomproxy::filters
