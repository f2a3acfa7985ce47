// The whole recorded CMS vector set replayed against an in-memory model: a tiny keyspace that
// answers the few plain Redis and BF commands the recordings use, and CMS.* answered with
// filters/cms/cms.h's maths and filters/cms/cms_args.h's parser, in the check order the parser's
// CmsErrorOrder describes. Every reply is compared byte for byte with RedisBloom's. This proves
// the hashing, the dimensions, saturation, the counter, INFO and MERGE before any plan exists,
// and shows the order contract a plan has to follow.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "filters/cms/cms.h"
#include "filters/cms/cms_args.h"
#include "tests/unit/cms_fixtures.h"

namespace bloomproxy::filters {
namespace {
using namespace fixtures;  // NOLINT: test-local helpers

std::string Int(int64_t v) { return ":" + std::to_string(v) + "\r\n"; }
std::string Simple(std::string_view s) { return "+" + std::string(s) + "\r\n"; }
std::string Bulk(std::string_view s) {
  return "$" + std::to_string(s.size()) + "\r\n" + std::string(s) + "\r\n";
}
std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = (c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : c;
  return out;
}

// A key of the model's keyspace. Only what the recordings look at is kept.
struct Value {
  Value() = default;
  explicit Value(std::string t, std::string s = "") : type(std::move(t)), text(std::move(s)) {}

  std::string type;             // TYPE's answer: string, list, hash, set, MBbloom--, CMSk-TYPE
  std::string text;             // a string's value
  int64_t length = 0;           // list/hash/set members (adds only)
  std::set<std::string> bloom;  // a Bloom filter's items (exact: the recordings add a few)
  CmsSketch cms;
  int64_t ttl = -1;
};

class Model {
 public:
  // Returns the RESP2 reply, or "" for a command the model does not know (a test failure).
  std::string Run(const std::vector<std::string>& args) {
    CmsCommand cms;
    if (LookupCmsCommand(args[0], &cms)) return Cms(args);
    const std::string name = Upper(args[0]);
    const size_t argc = args.size();
    if (name == "SET" && argc == 3) {
      keys_[args[1]] = Value{"string", args[2]};
      return Simple("OK");
    }
    if (name == "GET" && argc == 2) {
      const Value* v = Find(args[1]);
      if (v == nullptr) return "$-1\r\n";
      return v->type == "string" ? Bulk(v->text) : std::string(kCmsErrWrongType);
    }
    if ((name == "LPUSH" || name == "SADD") && argc >= 3) {
      return Add(args[1], name == "LPUSH" ? "list" : "set", static_cast<int64_t>(argc - 2));
    }
    if (name == "HSET" && argc >= 4 && argc % 2 == 0) {
      return Add(args[1], "hash", static_cast<int64_t>(argc - 2) / 2);
    }
    if (name == "TYPE" && argc == 2) {
      const Value* v = Find(args[1]);
      return Simple(v == nullptr ? "none" : v->type);
    }
    if ((name == "EXISTS" || name == "DEL" || name == "UNLINK") && argc >= 2) {
      int64_t n = 0;
      for (size_t i = 1; i < argc; ++i) {
        if (name == "EXISTS") {
          n += Find(args[i]) != nullptr;
        } else {
          n += static_cast<int64_t>(keys_.erase(args[i]));
        }
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
      Value moved = std::move(it->second);  // with its TTL, as Redis keeps it
      keys_.erase(it);
      keys_[args[2]] = std::move(moved);
      return name == "RENAME" ? Simple("OK") : Int(1);
    }
    if (name == "COPY" && argc == 3) {
      const Value* v = Find(args[1]);
      if (v == nullptr) return Int(0);
      if (v->type == kCmsTypeName) return std::string(kCmsErrCopyNotSupported);
      return "";  // other types: not in the recordings
    }
    if (name == "BF.ADD" && argc == 3) {
      Value* v = Find(args[1]);
      if (v == nullptr) v = &(keys_[args[1]] = Value{"MBbloom--"});
      if (v->type != "MBbloom--") return std::string(kCmsErrWrongType);
      return Int(v->bloom.insert(args[2]).second ? 1 : 0);
    }
    if (name == "BF.EXISTS" && argc == 3) {
      // RedisBloom treats any value that is not a Bloom filter as an empty one here.
      const Value* v = Find(args[1]);
      return Int(v != nullptr && v->type == "MBbloom--" && v->bloom.count(args[2]) > 0);
    }
    if (name == "BF.RESERVE" && argc == 4) {
      if (Find(args[1]) != nullptr) {
        return Find(args[1])->type == "MBbloom--" ? "-ERR item exists\r\n"
                                                  : std::string(kCmsErrWrongType);
      }
      keys_[args[1]] = Value{"MBbloom--"};
      return Simple("OK");
    }
    return "";
  }

 private:
  Value* Find(const std::string& key) {
    auto it = keys_.find(key);
    return it == keys_.end() ? nullptr : &it->second;
  }
  Value* Find(std::string_view key) { return Find(std::string(key)); }

  std::string Add(const std::string& key, const std::string& type, int64_t n) {
    Value* v = Find(key);
    if (v == nullptr) v = &(keys_[key] = Value{type});
    if (v->type != type) return std::string(kCmsErrWrongType);
    v->length += n;
    return Int(n);
  }

  // The sketch at `key`, or the reply error (key does not exist / WRONGTYPE).
  const CmsSketch* Sketch(std::string_view key, std::string* error) {
    Value* v = Find(key);
    if (v == nullptr) {
      *error = std::string(kCmsErrKeyMissing);
      return nullptr;
    }
    if (v->type != kCmsTypeName) {
      *error = std::string(kCmsErrWrongType);
      return nullptr;
    }
    return &v->cms;
  }

  std::string Cms(const std::vector<std::string>& args) {
    const std::vector<std::string_view> views(args.begin(), args.end());
    CmsRequest req;
    const std::string parse_error = ParseCmsRequest(views, &req);
    if (!parse_error.empty() && req.error_order == CmsErrorOrder::kNow) return parse_error;

    if (req.command == CmsCommand::kInitByDim || req.command == CmsCommand::kInitByProb) {
      // Any existing key, whatever its type, wins over the arguments.
      if (Find(req.key) != nullptr) return std::string(kCmsErrKeyExists);
      if (!parse_error.empty()) return parse_error;
      Value v{std::string(kCmsTypeName)};
      v.cms = NewCmsSketch(req.width, req.depth);
      keys_[std::string(req.key)] = std::move(v);
      return Simple("OK");
    }

    std::string error;
    const CmsSketch* found = Sketch(req.key, &error);
    if (found == nullptr) return error;
    if (!parse_error.empty() && req.error_order == CmsErrorOrder::kAfterKey) return parse_error;
    CmsSketch* sketch = &Find(req.key)->cms;

    switch (req.command) {
      case CmsCommand::kIncrBy: {
        std::string out = "*" + std::to_string(req.increments.size()) + "\r\n";
        for (const CmsIncrement& inc : req.increments) {
          const uint32_t min = CmsIncrBy(sketch, inc.item, inc.value);
          out += min == kCmsCellMax ? std::string(kCmsErrIncrByOverflow) : Int(min);
        }
        return out;
      }
      case CmsCommand::kQuery: {
        std::string out = "*" + std::to_string(req.items.size()) + "\r\n";
        for (std::string_view item : req.items) out += Int(CmsQuery(*sketch, item));
        return out;
      }
      case CmsCommand::kInfo:
        return "*6\r\n" + Simple("width") + Int(static_cast<int64_t>(sketch->width)) +
               Simple("depth") + Int(static_cast<int64_t>(sketch->depth)) + Simple("count") +
               Int(CmsCounterShown(sketch->counter));
      case CmsCommand::kMerge: {
        // Weight i, then source i (existence, type, dimensions), in order.
        std::vector<CmsMergeSource> sources;
        for (size_t i = 0; i < req.sources.size(); ++i) {
          if (i == req.bad_weight) return parse_error;
          const CmsSketch* src = Sketch(req.sources[i], &error);
          if (src == nullptr) return error;
          if (src->width != sketch->width || src->depth != sketch->depth) {
            return std::string(kCmsErrDimsNotEqual);
          }
          sources.push_back({src, req.weights[i]});
        }
        if (!CmsMerge(sources, sketch)) return std::string(kCmsErrMergeOverflow);
        return Simple("OK");
      }
      default:
        return "";
    }
  }

  std::map<std::string, Value> keys_;
};

TEST(CmsModelTest, RecordedVectorsByteForByte) {
  int commands = 0;
  int cms_commands = 0;
  for (const Case& c : CmsCases()) {
    Model model;  // each case runs on a fresh key set
    for (size_t i = 0; i < c.cmds.size(); ++i) {
      const std::string got = model.Run(c.cmds[i]);
      ASSERT_NE(got, "") << c.name << " command " << i << ": the model does not know "
                         << c.cmds[i][0];
      EXPECT_EQ(got, c.replies[i]) << c.name << " command " << i << " (" << c.cmds[i][0] << ")";
      CmsCommand command;
      cms_commands += LookupCmsCommand(c.cmds[i][0], &command);
      ++commands;
    }
  }
  EXPECT_EQ(CmsCases().size(), 19u);
  EXPECT_EQ(commands, 497);
  EXPECT_GT(cms_commands, 400);
}

}  // namespace
}  // namespace bloomproxy::filters
