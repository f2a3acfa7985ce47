// The whole recorded TOPK vector set replayed against an in-memory model: a tiny keyspace that
// answers the few plain Redis, BF and CMS commands the recordings use, and TOPK.* answered with
// filters/topk/topk.h's maths and filters/topk/topk_args.h's parser, in the check order the
// parser's TopkErrorOrder describes. Every reply is compared byte for byte with RedisBloom's, in
// RESP2 and in RESP3. Every recorded reply is deterministic (decay 1, or no step against a
// foreign fingerprint), so the random source must never be called: the replay fails if it is.
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
#include "filters/topk/topk.h"
#include "filters/topk/topk_args.h"
#include "tests/unit/topk_fixtures.h"

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

  std::string type;             // TYPE's answer: string, list, hash, set, MBbloom--, ...
  std::string text;             // a string's value
  std::set<std::string> bloom;  // a Bloom filter's items (exact: the recordings add a few)
  TopkSketch topk;
  int64_t ttl = -1;
};

class Model {
 public:
  explicit Model(const TopkRandom* random) : random_(random) {}

  // Returns the reply in RESP2 or RESP3, or "" for a command the model does not know (a test
  // failure).
  std::string Run(const std::vector<std::string>& args, bool resp3) {
    TopkCommand topk;
    if (LookupTopkCommand(args[0], &topk)) return Topk(args, resp3);
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
  static std::string WrongType() { return std::string(kTopkErrWrongType); }

  // Creates a key of `type` if missing; false when the key holds another type.
  bool Upsert(const std::string& key, const std::string& type) {
    Value* v = Find(key);
    if (v == nullptr) v = &(keys_[key] = Value{type});
    return v->type == type;
  }

  std::string Plain(const std::vector<std::string>& args) {
    const std::string name = Upper(args[0]);
    if (name.rfind("BF.", 0) == 0) return Bloom(name, args);
    if (name.rfind("CMS.", 0) == 0) return Cms(name, args);
    const std::string keyspace = KeyCommand(name, args);
    if (!keyspace.empty()) return keyspace;
    return DataCommand(name, args);
  }

  // SET, GET, LPUSH, SADD, HSET, HGET: just enough for WRONGTYPE and TYPE.
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
    if ((name == "LPUSH" || name == "SADD") && argc >= 3) {
      if (!Upsert(args[1], name == "LPUSH" ? "list" : "set")) return WrongType();
      return Int(static_cast<int64_t>(argc - 2));
    }
    if (name == "HSET" && argc >= 4 && argc % 2 == 0) {
      if (!Upsert(args[1], "hash")) return WrongType();
      return Int(static_cast<int64_t>(argc - 2) / 2);
    }
    if (name == "HGET" && argc == 3) {
      const Value* v = Find(args[1]);
      if (v != nullptr && v->type != "hash") return WrongType();
      return "";  // a hash's fields: not in the recordings
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
    if ((name == "RENAME" || name == "RENAMENX") && argc == 3) return Rename(name, args);
    if (name == "COPY" && argc == 3) {
      const Value* v = Find(args[1]);
      if (v == nullptr) return Int(0);
      if (v->type == kTopkTypeName) return std::string(kTopkErrCopyNotSupported);
      return "";  // other types: not in the recordings
    }
    if (name == "OBJECT" && argc == 3 && Upper(args[1]) == "ENCODING") {
      const Value* v = Find(args[2]);
      if (v != nullptr && v->type == kTopkTypeName) return Bulk("raw");
      return "";
    }
    return "";
  }

  std::string Rename(const std::string& name, const std::vector<std::string>& args) {
    auto it = keys_.find(args[1]);
    if (it == keys_.end()) return "-ERR no such key\r\n";
    if (name == "RENAMENX" && Find(args[2]) != nullptr) return Int(0);
    Value moved = std::move(it->second);  // with its TTL, as Redis keeps it
    keys_.erase(it);
    keys_[args[2]] = std::move(moved);
    return name == "RENAME" ? Simple("OK") : Int(1);
  }

  std::string Bloom(const std::string& name, const std::vector<std::string>& args) {
    const size_t argc = args.size();
    Value* v = Find(args.size() > 1 ? args[1] : "");
    if (name == "BF.ADD" && argc == 3) {
      if (!Upsert(args[1], "MBbloom--")) return WrongType();
      return Int(Find(args[1])->bloom.insert(args[2]).second ? 1 : 0);
    }
    // RedisBloom treats any value that is not a Bloom filter as an empty one here.
    const bool is_bloom = v != nullptr && v->type == "MBbloom--";
    if (name == "BF.EXISTS" && argc == 3) return Int(is_bloom && v->bloom.count(args[2]) > 0);
    if (name == "BF.MEXISTS" && argc >= 3) {
      std::string out = Array(argc - 2);
      for (size_t i = 2; i < argc; ++i) out += Int(is_bloom && v->bloom.count(args[i]) > 0);
      return out;
    }
    if (name == "BF.RESERVE" && argc == 4) {
      if (v != nullptr) return is_bloom ? "-ERR item exists\r\n" : WrongType();
      keys_[args[1]] = Value{"MBbloom--"};
      return Simple("OK");
    }
    return "";
  }

  // CMS.* only as far as the recordings use them: creating a sketch, and any CMS command on a
  // key that is not one.
  std::string Cms(const std::string& name, const std::vector<std::string>& args) {
    if (args.size() < 2) return "";
    const Value* v = Find(args[1]);
    if (name == "CMS.INITBYDIM") {
      if (v != nullptr) return std::string(kCmsErrKeyExists);
      keys_[args[1]] = Value{std::string(kCmsTypeName)};
      return Simple("OK");
    }
    if (v != nullptr && v->type != kCmsTypeName) return WrongType();
    return "";
  }

  std::string Topk(const std::vector<std::string>& args, bool resp3) {
    const std::vector<std::string_view> views(args.begin(), args.end());
    TopkRequest req;
    const std::string parse_error = ParseTopkRequest(views, &req);
    if (!parse_error.empty() && req.error_order == TopkErrorOrder::kNow) return parse_error;

    if (req.command == TopkCommand::kReserve) {
      // Any existing key, whatever its type, wins over the arguments.
      if (Find(req.key) != nullptr) return std::string(kTopkErrKeyExists);
      if (!parse_error.empty()) return parse_error;
      Value v{std::string(kTopkTypeName)};
      v.topk = NewTopkSketch(req.params);
      keys_[std::string(req.key)] = std::move(v);
      return Simple("OK");
    }

    Value* v = Find(req.key);
    if (v == nullptr) return std::string(kTopkErrKeyMissing);
    if (v->type != kTopkTypeName) return WrongType();
    return TopkReply(req, parse_error, &v->topk, resp3);
  }

  std::string Expelled(const TopkExpelled& expelled, bool resp3) const {
    if (!expelled) return resp3 ? "_\r\n" : "$-1\r\n";
    return Bulk(TopkReplyItem(*expelled));
  }

  std::string TopkReply(const TopkRequest& req, const std::string& pair_error, TopkSketch* sketch,
                        bool resp3) {
    switch (req.command) {
      case TopkCommand::kAdd: {
        std::string out = Array(req.items.size());
        for (std::string_view item : req.items)
          out += Expelled(TopkAdd(sketch, item, 1, *random_), resp3);
        return out;
      }
      case TopkCommand::kIncrBy: {
        std::string out = Array(req.pairs);
        for (const TopkIncrement& inc : req.increments) {
          out += Expelled(TopkAdd(sketch, inc.item, inc.n, *random_), resp3);
        }
        return out + pair_error;  // empty unless a bad increment stopped the pairs
      }
      case TopkCommand::kQuery: {
        std::string out = Array(req.items.size());
        for (std::string_view item : req.items) {
          const bool found = TopkQuery(*sketch, item);
          out += resp3 ? (found ? "#t\r\n" : "#f\r\n") : Int(found);
        }
        return out;
      }
      case TopkCommand::kCount: {
        std::string out = Array(req.items.size());
        for (std::string_view item : req.items) out += Int(TopkCount(*sketch, item));
        return out;
      }
      case TopkCommand::kList:
        return List(*sketch, req.with_count);
      case TopkCommand::kInfo:
        return Info(sketch->params, resp3);
      case TopkCommand::kReserve:
        break;
    }
    return "";
  }

  static std::string List(const TopkSketch& sketch, bool with_count) {
    const std::vector<TopkListEntry> entries = TopkList(sketch);
    std::string out = Array(entries.size() * (with_count ? 2 : 1));
    for (const TopkListEntry& e : entries) {
      out += Bulk(e.item);
      if (with_count) out += Int(e.count);
    }
    return out;
  }

  static std::string Info(const TopkParams& p, bool resp3) {
    const std::string decay = TopkFormatDecay(p.decay);
    return (resp3 ? "%4\r\n" : "*8\r\n") + Simple("k") + Int(p.k) + Simple("width") + Int(p.width) +
           Simple("depth") + Int(p.depth) + Simple("decay") +
           (resp3 ? "," + decay + "\r\n" : Bulk(decay));
  }

  const TopkRandom* random_;
  std::map<std::string, Value> keys_;
};

// Replays every case in one protocol; returns the number of TOPK commands.
int Replay(bool resp3, int* random_calls) {
  const TopkRandom random = [random_calls]() {
    ++*random_calls;
    return 0.5;
  };
  int commands = 0;
  int topk_commands = 0;
  for (const Case& c : TopkCases()) {
    const std::vector<std::string>* resp3_replies = nullptr;
    if (resp3) {
      auto it = TopkResp3Replies().find(c.name);
      if (it == TopkResp3Replies().end()) {
        ADD_FAILURE() << "no RESP3 recording of case " << c.name;
        continue;
      }
      resp3_replies = &it->second;
      EXPECT_EQ(resp3_replies->size(), c.cmds.size()) << c.name;
    }
    Model model(&random);  // each case runs on a fresh key set
    for (size_t i = 0; i < c.cmds.size(); ++i) {
      const int calls_before = *random_calls;
      const std::string got = model.Run(c.cmds[i], resp3);
      EXPECT_NE(got, "") << c.name << " command " << i << ": the model does not know "
                         << c.cmds[i][0];
      const std::string& want = resp3 ? resp3_replies->at(i) : c.replies[i];
      EXPECT_EQ(got, want) << c.name << " command " << i << " (" << c.cmds[i][0] << ")"
                           << (resp3 ? " RESP3" : " RESP2");
      EXPECT_EQ(*random_calls, calls_before)
          << c.name << " command " << i << " drew a random number";
      TopkCommand command;
      topk_commands += LookupTopkCommand(c.cmds[i][0], &command);
      ++commands;
    }
  }
  EXPECT_EQ(commands, 711);
  return topk_commands;
}

TEST(TopkModelTest, RecordedVectorsByteForByteResp2) {
  int random_calls = 0;
  EXPECT_EQ(TopkCases().size(), 21u);
  EXPECT_GT(Replay(false, &random_calls), 600);
  EXPECT_EQ(random_calls, 0);
}

TEST(TopkModelTest, RecordedVectorsByteForByteResp3) {
  int random_calls = 0;
  EXPECT_EQ(TopkResp3Replies().size(), 21u);
  EXPECT_GT(Replay(true, &random_calls), 600);
  EXPECT_EQ(random_calls, 0);
}

// The RESP3 recording differs from the RESP2 one exactly where the model says it should: ADD and
// INCRBY nulls, QUERY booleans, INFO maps (and the BF booleans of the recordings' other keys).
TEST(TopkModelTest, Resp3DiffersOnlyInTheShapesTheModelConverts) {
  std::set<std::string> changed;
  for (const Case& c : TopkCases()) {
    const std::vector<std::string>& resp3 = TopkResp3Replies().at(c.name);
    for (size_t i = 0; i < c.cmds.size() && i < resp3.size(); ++i) {
      if (resp3[i] != c.replies[i]) changed.insert(Upper(c.cmds[i][0]));
    }
  }
  EXPECT_EQ(changed, (std::set<std::string>{"TOPK.ADD", "TOPK.INCRBY", "TOPK.QUERY", "TOPK.INFO",
                                            "BF.ADD", "BF.EXISTS", "BF.MEXISTS"}));
}

}  // namespace
}  // namespace bloomproxy::filters
