// The CMS plans (filters/cms/cms_plan.h) stepped against a small in-memory server that runs the
// commands they send (BITFIELD with WRAP and SAT, HMGET, GET, GETRANGE and the scripts of
// filters/cms/cms_scripts.h), and compared with the in-memory model of filters/cms/cms.h: sketches
// in one part and in many, saturation and the wrapping count, a sketch replaced under a cached plan
// (the parts written to the gone sketch are removed), and MERGE's retry when a sketch changes
// between its read and its write.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "filters/cms/cms.h"
#include "filters/cms/cms_args.h"
#include "filters/cms/cms_plan.h"
#include "filters/cms/cms_scripts.h"
#include "protocol/encoder.h"
#include "protocol/reply_decoder.h"
#include "tests/unit/bf_plan_fixture.h"

namespace bloomproxy::filters {
namespace {

std::string Int(int64_t v) { return ":" + std::to_string(v) + "\r\n"; }
std::string Bulk(std::string_view s) {
  return "$" + std::to_string(s.size()) + "\r\n" + std::string(s) + "\r\n";
}
constexpr std::string_view kNil = "$-1\r\n";

// Just the commands the CMS plans send.
class CmsServer {
 public:
  std::map<std::string, std::string> strings;
  std::map<std::string, std::map<std::string, std::string>> hashes;
  std::vector<std::vector<std::string>> sent;
  // Called before each command runs (to change the keyspace under a plan).
  std::function<void(const std::vector<std::string>&)> before;

  std::string Reply(const std::vector<std::string>& c) {
    sent.push_back(c);
    if (before) before(c);
    if (c[0] == "EVAL" || c[0] == "EVAL_RO") return Eval(c);
    if (c[0] == "BITFIELD" || c[0] == "BITFIELD_RO") return Array(Bitfield(c[1], c, 2, c.size()));
    if (c[0] == "HMGET") {
      if (strings.count(c[1])) return "-WRONGTYPE Operation against a key\r\n";
      std::string out = "*" + std::to_string(c.size() - 2) + "\r\n";
      for (size_t i = 2; i < c.size(); ++i) out += Field(c[1], c[i]);
      return out;
    }
    if (c[0] == "GET") return strings.count(c[1]) ? Bulk(strings[c[1]]) : std::string(kNil);
    if (c[0] == "GETRANGE") return Bulk(strings[c[1]].substr(std::stoul(c[2]), 16));
    ADD_FAILURE() << "unexpected command " << c[0];
    return "-ERR unknown\r\n";
  }

 private:
  std::string Field(const std::string& key, const std::string& field) {
    auto h = hashes.find(key);
    if (h == hashes.end() || !h->second.count(field)) return std::string(kNil);
    return Bulk(h->second[field]);
  }
  static std::string Array(const std::vector<int64_t>& v) {
    std::string out = "*" + std::to_string(v.size()) + "\r\n";
    for (int64_t x : v) out += Int(x);
    return out;
  }
  // Big-endian integer of `bytes` bytes at byte `at` (the string grows with zeros as Redis's).
  uint64_t Read(std::string& s, size_t at, size_t bytes) {
    if (s.size() < at + bytes) s.resize(at + bytes, '\0');
    uint64_t v = 0;
    for (size_t i = 0; i < bytes; ++i) v = (v << 8) | static_cast<unsigned char>(s[at + i]);
    return v;
  }
  void Write(std::string& s, size_t at, size_t bytes, uint64_t v) {
    for (size_t i = 0; i < bytes; ++i) s[at + bytes - 1 - i] = static_cast<char>(v >> (8 * i));
  }
  std::vector<int64_t> Bitfield(const std::string& key, const std::vector<std::string>& a,
                                size_t from, size_t to) {
    std::string& s = strings[key];
    std::vector<int64_t> out;
    bool sat = false;
    for (size_t i = from; i < to;) {
      if (a[i] == "OVERFLOW") {
        sat = a[i + 1] == "SAT";
        i += 2;
        continue;
      }
      const bool i64 = a[i + 1] == "i64";
      const size_t bytes = i64 ? 8 : 4;
      const size_t at =
          a[i + 2][0] == '#' ? std::stoul(a[i + 2].substr(1)) * bytes : std::stoul(a[i + 2]) / 8;
      uint64_t v = Read(s, at, bytes);
      if (a[i] == "INCRBY") {
        const int64_t by = std::stoll(a[i + 3]);
        if (i64) {
          v += static_cast<uint64_t>(by);
        } else {
          EXPECT_TRUE(sat);
          v = std::min<uint64_t>(v + static_cast<uint64_t>(by), UINT32_MAX);
          if (by > static_cast<int64_t>(UINT32_MAX)) v = UINT32_MAX;
        }
        Write(s, at, bytes, v);
        i += 4;
      } else {
        i += 3;
      }
      out.push_back(i64 ? static_cast<int64_t>(v) : static_cast<int64_t>(v));
    }
    return out;
  }
  std::string Eval(const std::vector<std::string>& c) {
    const size_t n = std::stoul(c[2]);
    std::vector<std::string> keys(c.begin() + 3, c.begin() + 3 + static_cast<ptrdiff_t>(n));
    std::vector<std::string> argv(c.begin() + 3 + static_cast<ptrdiff_t>(n), c.end());
    const std::string_view script = c[1];
    if (script == CmsFetchScript()) {
      if (strings.count(keys[0])) return Int(1);
      if (!hashes.count(keys[0])) return Int(0);
      if (!strings.count(keys[1])) return Int(1);  // a hash that is not marked
      return Reply({"HMGET", keys[0], "cms", "id", "width", "depth", "part"});
    }
    if (script == CmsCreateScript()) {
      if (strings.count(keys[0]) || hashes.count(keys[0])) return Int(0);
      for (size_t i = 2; i < keys.size(); ++i) strings[keys[i]].assign(std::stoul(argv[i + 2]), 0);
      hashes[keys[0]] = {
          {"cms", "1"}, {"id", argv[0]}, {"width", argv[1]}, {"depth", argv[2]}, {"part", argv[3]}};
      strings[keys[1]] = "cms";
      return Int(1);
    }
    if (script == CmsMergeReadScript()) {
      std::string out = "*" + std::to_string(keys.size()) + "\r\n";
      for (size_t i = 0; i < keys.size(); ++i) {
        const std::string& v = strings[keys[i]];
        out += Bulk(argv[i] == "h" ? v.substr(0, 16) : v);
      }
      return out;
    }
    if (script == CmsMultiBitfieldScript()) {
      std::string out;
      size_t calls = 0;
      for (size_t a = 0; a < argv.size();) {
        const size_t k = std::stoul(argv[a]) - 1, len = std::stoul(argv[a + 1]);
        out += Array(Bitfield(keys[k], argv, a + 2, a + 2 + len));
        a += 2 + len;
        ++calls;
      }
      return "*" + std::to_string(calls) + "\r\n" + out;
    }
    if (script == CmsCleanupScript()) {
      if (hashes.count(keys[0]) && hashes[keys[0]]["id"] == argv[0]) return Int(0);
      for (size_t i = 1; i < keys.size(); ++i) strings.erase(keys[i]);
      return Int(1);
    }
    if (script == CmsMergeCommitScript()) {
      const size_t m = std::stoul(argv[0]);
      for (size_t i = 0; i < m; ++i) {
        if (!hashes.count(keys[i]) || hashes[keys[i]]["id"] != argv[1 + i]) return Int(0);
        if (strings[keys[m + i]].substr(8, 8) != argv[1 + m + i]) return Int(0);
      }
      for (size_t j = 2 * m; j < keys.size(); ++j) strings[keys[j]] = argv[j + 1];
      return Int(1);
    }
    ADD_FAILURE() << "unexpected script";
    return "-ERR unknown script\r\n";
  }
};

class CmsPlanTest : public ::testing::Test {
 protected:
  std::string Cms(std::vector<std::string> args) {
    std::vector<std::string_view> views(args.begin(), args.end());
    CmsRequest request;
    std::string error = ParseCmsRequest(views, &request);
    if (!error.empty() && request.error_order == CmsErrorOrder::kNow) return error;
    std::unique_ptr<Plan> plan = MakeCmsPlan(request, error, &cache_, &config_);
    return Drive(plan.get());
  }

  // Steps `plan` against the server to its end; its final reply.
  std::string Drive(Plan* plan) {
    PlanStep step;
    plan->Start(&step);
    for (int round = 0; round < 50; ++round) {
      StepReplies replies(&decoder_);
      for (auto& r : ParseRequests(step.requests)) replies.Add(server_.Reply(r));
      if (step.done) return step.reply;
      PlanStep next;
      plan->OnReplies(replies, &next);
      step = std::move(next);
    }
    ADD_FAILURE() << "the plan did not finish";
    return {};
  }

  // Runs the same INCRBYs on the plan and on the model; every reply must agree.
  void CompareWithModel(uint64_t width, uint64_t depth) {
    ASSERT_EQ(Cms({"CMS.INITBYDIM", "s", std::to_string(width), std::to_string(depth)}), "+OK\r\n");
    CmsSketch model = NewCmsSketch(width, depth);
    std::mt19937 rng(7);
    for (int round = 0; round < 40; ++round) {
      std::vector<std::string> args = {"CMS.INCRBY", "s"};
      std::string expected = "*5\r\n";
      for (int i = 0; i < 5; ++i) {
        const std::string item = "item" + std::to_string(rng() % 50);
        const uint64_t v = round == 30 && i == 0 ? UINT32_MAX : rng() % 1000;
        args.push_back(item);
        args.push_back(std::to_string(v));
        const uint32_t min = CmsIncrBy(&model, item, v);
        expected += min == kCmsCellMax ? std::string(kCmsErrIncrByOverflow) : Int(min);
      }
      ASSERT_EQ(Cms(args), expected) << "round " << round;
    }
    std::string expected = "*50\r\n";
    std::vector<std::string> query = {"CMS.QUERY", "s"};
    for (int i = 0; i < 50; ++i) {
      query.push_back("item" + std::to_string(i));
      expected += Int(CmsQuery(model, query.back()));
    }
    EXPECT_EQ(Cms(query), expected);
    EXPECT_EQ(Cms({"CMS.INFO", "s"}), "*6\r\n+width\r\n" + Int(static_cast<int64_t>(width)) +
                                          "+depth\r\n" + Int(static_cast<int64_t>(depth)) +
                                          "+count\r\n" + Int(CmsCounterShown(model.counter)));
  }

  size_t PartsOf(const std::string& name) {
    size_t n = 0;
    for (const auto& [key, value] : server_.strings) {
      n += key.rfind("{" + name + "}:cms:", 0) == 0 && key.find(":cms:m:") == std::string::npos;
    }
    return n;
  }

  CmsServer server_;
  CmsCache cache_;
  CmsConfig config_;
  protocol::ReplyDecoder decoder_;
};

TEST_F(CmsPlanTest, OnePartAgreesWithTheModel) {
  CompareWithModel(100, 5);
  EXPECT_EQ(PartsOf("s"), 1u);
  // The 50-item QUERY reads more cells than the part is worth: one GET of the part.
  bool whole = false;
  for (const auto& c : server_.sent)
    whole = whole || (c[0] == "GET" && c[1].find(":cms:") != std::string::npos);
  EXPECT_TRUE(whole);
}

TEST_F(CmsPlanTest, ManyPartsAgreeWithTheModel) {
  config_.max_part_bytes = 16 + 4 * 37;  // 37 cells per part: rows cross parts
  CompareWithModel(100, 5);
  EXPECT_EQ(PartsOf("s"), 14u);  // 500 cells in parts of 36 (equal parts, as few as fit)
  bool script = false;
  for (const auto& c : server_.sent)
    script = script || (c[0] == "EVAL" && c[1] == CmsMultiBitfieldScript());
  EXPECT_TRUE(script);
}

TEST_F(CmsPlanTest, BatchRepliesAreThoseOfTheCommandsInOrder) {
  ASSERT_EQ(Cms({"CMS.INITBYDIM", "s", "8", "3"}), "+OK\r\n");  // 24 cells: many repeats
  CmsSketch model = NewCmsSketch(8, 3);
  std::mt19937 rng(11);
  for (int round = 0; round < 20; ++round) {
    // 30 coalesced INCRBYs of 1 to 4 pairs, now and then one that saturates its cells.
    std::vector<std::string> items;
    std::vector<uint64_t> values;
    std::vector<PlanMember> members;
    std::vector<std::string> expected;
    for (int m = 0; m < 30; ++m) {
      PlanMember member{items.size(), 1 + rng() % 4, true};
      std::string reply = "*" + std::to_string(member.count) + "\r\n";
      for (size_t k = 0; k < member.count; ++k) {
        items.push_back("i" + std::to_string(rng() % 40));
        values.push_back(rng() % 97 == 0 ? uint64_t{4000000000} : rng() % 100000000);
        const uint32_t min = CmsIncrBy(&model, items.back(), values.back());
        reply += min == kCmsCellMax ? std::string(kCmsErrIncrByOverflow) : Int(min);
      }
      members.push_back(member);
      expected.push_back(reply);
    }
    std::unique_ptr<Plan> plan =
        MakeCmsBatchPlan(CmsCommand::kIncrBy, "s", items, values, members, &cache_, &config_);
    Drive(plan.get());
    EXPECT_EQ(plan->MemberReplies(), expected) << "round " << round;
  }
  EXPECT_EQ(Cms({"CMS.INFO", "s"}), "*6\r\n+width\r\n:8\r\n+depth\r\n:3\r\n+count\r\n" +
                                        Int(CmsCounterShown(model.counter)));
  // Each distinct cell is touched once per step: a GET and one INCRBY for repeated cells.
  size_t max_ops = 0;
  for (const auto& c : server_.sent) {
    if (c[0] != "BITFIELD") continue;
    const size_t ops = static_cast<size_t>(std::count(c.begin(), c.end(), "GET") +
                                           std::count(c.begin(), c.end(), "INCRBY")) -
                       2;  // the count's and the version's
    max_ops = std::max(max_ops, ops);
  }
  EXPECT_LE(max_ops, 2u * 24u);
}

TEST_F(CmsPlanTest, CountWrapsAndShowsSigned) {
  ASSERT_EQ(Cms({"CMS.INITBYDIM", "s", "10", "2"}), "+OK\r\n");
  const std::string max = "9223372036854775807";
  EXPECT_EQ(Cms({"CMS.INCRBY", "s", "a", max, "b", max}), std::string("*2\r\n") +
                                                              std::string(kCmsErrIncrByOverflow) +
                                                              std::string(kCmsErrIncrByOverflow));
  EXPECT_EQ(Cms({"CMS.INFO", "s"}), "*6\r\n+width\r\n:10\r\n+depth\r\n:2\r\n+count\r\n:-2\r\n");
}

TEST_F(CmsPlanTest, ReplacedSketchLeavesNoPartBehind) {
  ASSERT_EQ(Cms({"CMS.INITBYDIM", "s", "10", "2"}), "+OK\r\n");
  ASSERT_EQ(Cms({"CMS.INCRBY", "s", "a", "1"}), "*1\r\n:1\r\n");  // the metadata is cached
  const std::string old_part = "{s}:cms:" + server_.hashes["s"]["id"] + ":0";
  // Another proxy deletes the sketch and creates a new one just before this plan's write.
  server_.before = [this, &old_part](const std::vector<std::string>& c) {
    if (c[0] != "BITFIELD" || c[1] != old_part) return;
    server_.before = nullptr;
    server_.strings.clear();
    server_.hashes.clear();
    server_.hashes["s"] = {
        {"cms", "1"}, {"id", "00000000000000ff"}, {"width", "10"}, {"depth", "2"}, {"part", "20"}};
    server_.strings["{s}:cms:00000000000000ff:0"].assign(16 + 80, '\0');
    server_.strings["{s}:cms:m:s"] = "1";
  };
  EXPECT_EQ(Cms({"CMS.INCRBY", "s", "a", "5"}), "*1\r\n:5\r\n");
  EXPECT_EQ(server_.strings.count(old_part), 0u);
  EXPECT_EQ(PartsOf("s"), 1u);
  EXPECT_EQ(Cms({"CMS.INFO", "s"}), "*6\r\n+width\r\n:10\r\n+depth\r\n:2\r\n+count\r\n:5\r\n");
}

TEST_F(CmsPlanTest, DeletedSketchAnswersMissingAndLeavesNothing) {
  ASSERT_EQ(Cms({"CMS.INITBYDIM", "s", "10", "2"}), "+OK\r\n");
  ASSERT_EQ(Cms({"CMS.QUERY", "s", "a"}), "*1\r\n:0\r\n");
  server_.before = [this](const std::vector<std::string>& c) {
    if (c[0] != "BITFIELD") return;
    server_.before = nullptr;
    server_.strings.clear();
    server_.hashes.clear();
  };
  EXPECT_EQ(Cms({"CMS.INCRBY", "s", "a", "5"}), std::string(kCmsErrKeyMissing));
  EXPECT_TRUE(server_.strings.empty());
}

TEST_F(CmsPlanTest, MergeWithWeightsAgreesWithTheModel) {
  config_.max_part_bytes = 16 + 4 * 7;
  ASSERT_EQ(Cms({"CMS.INITBYDIM", "a", "10", "3"}), "+OK\r\n");
  ASSERT_EQ(Cms({"CMS.INITBYDIM", "b", "10", "3"}), "+OK\r\n");
  ASSERT_EQ(Cms({"CMS.INITBYDIM", "d", "10", "3"}), "+OK\r\n");
  ASSERT_EQ(Cms({"CMS.INCRBY", "a", "x", "3", "y", "4"}), "*2\r\n:3\r\n:4\r\n");
  ASSERT_EQ(Cms({"CMS.INCRBY", "b", "x", "1"}), "*1\r\n:1\r\n");
  EXPECT_EQ(Cms({"CMS.MERGE", "d", "2", "a", "b", "WEIGHTS", "2", "-1"}), "+OK\r\n");
  CmsSketch a = NewCmsSketch(10, 3), b = NewCmsSketch(10, 3), d;
  CmsIncrBy(&a, "x", 3);
  CmsIncrBy(&a, "y", 4);
  CmsIncrBy(&b, "x", 1);
  ASSERT_TRUE(CmsMerge({{&a, 2}, {&b, -1}}, &d));
  EXPECT_EQ(Cms({"CMS.QUERY", "d", "x", "y"}),
            "*2\r\n" + Int(CmsQuery(d, "x")) + Int(CmsQuery(d, "y")));
  EXPECT_EQ(Cms({"CMS.INFO", "d"}), "*6\r\n+width\r\n:10\r\n+depth\r\n:3\r\n+count\r\n:13\r\n");
  // A negative cell: nothing written.
  EXPECT_EQ(Cms({"CMS.MERGE", "d", "1", "b", "WEIGHTS", "-1"}), std::string(kCmsErrMergeOverflow));
  EXPECT_EQ(Cms({"CMS.INFO", "d"}), "*6\r\n+width\r\n:10\r\n+depth\r\n:3\r\n+count\r\n:13\r\n");
}

TEST_F(CmsPlanTest, MergeStartsOverWhenTheDestinationChangesBeforeItsWrite) {
  ASSERT_EQ(Cms({"CMS.INITBYDIM", "a", "10", "2"}), "+OK\r\n");
  ASSERT_EQ(Cms({"CMS.INITBYDIM", "d", "10", "2"}), "+OK\r\n");
  ASSERT_EQ(Cms({"CMS.INCRBY", "a", "x", "1"}), "*1\r\n:1\r\n");
  int commits = 0;
  server_.before = [this, &commits](const std::vector<std::string>& c) {
    if (c[0] != "EVAL" || c[1] != CmsMergeCommitScript() || ++commits > 1) return;
    // Another proxy's increments land between the merge's read and its write: one of the source
    // (alone it would not matter: the merge keeps the snapshot it read, as if it came first),
    // one of the destination (the merge reads again, or that increment would be lost without
    // the MERGE coming after it).
    auto saved = server_.before;
    server_.before = nullptr;
    EXPECT_EQ(Cms({"CMS.INCRBY", "a", "x", "1"}), "*1\r\n:2\r\n");
    EXPECT_EQ(Cms({"CMS.INCRBY", "d", "y", "7"}), "*1\r\n:7\r\n");
    server_.before = saved;
  };
  EXPECT_EQ(Cms({"CMS.MERGE", "d", "1", "a"}), "+OK\r\n");
  EXPECT_EQ(commits, 2);
  CmsSketch a = NewCmsSketch(10, 2);
  CmsIncrBy(&a, "x", 2);
  EXPECT_EQ(Cms({"CMS.QUERY", "d", "x", "y"}),
            "*2\r\n" + Int(CmsQuery(a, "x")) + Int(CmsQuery(a, "y")));
  EXPECT_EQ(Cms({"CMS.INFO", "d"}), "*6\r\n+width\r\n:10\r\n+depth\r\n:2\r\n+count\r\n:2\r\n");
}

TEST_F(CmsPlanTest, MergeKeepsItsSnapshotWhenOnlyASourceChanges) {
  ASSERT_EQ(Cms({"CMS.INITBYDIM", "a", "10", "2"}), "+OK\r\n");
  ASSERT_EQ(Cms({"CMS.INITBYDIM", "d", "10", "2"}), "+OK\r\n");
  ASSERT_EQ(Cms({"CMS.INCRBY", "a", "x", "1"}), "*1\r\n:1\r\n");
  int commits = 0;
  server_.before = [this, &commits](const std::vector<std::string>& c) {
    if (c[0] != "EVAL" || c[1] != CmsMergeCommitScript() || ++commits > 1) return;
    auto saved = server_.before;
    server_.before = nullptr;
    EXPECT_EQ(Cms({"CMS.INCRBY", "a", "x", "1"}), "*1\r\n:2\r\n");
    server_.before = saved;
  };
  EXPECT_EQ(Cms({"CMS.MERGE", "d", "1", "a"}), "+OK\r\n");
  EXPECT_EQ(commits, 1);
  EXPECT_EQ(Cms({"CMS.QUERY", "d", "x"}), "*1\r\n:1\r\n");
  EXPECT_EQ(Cms({"CMS.QUERY", "a", "x"}), "*1\r\n:2\r\n");
}

TEST_F(CmsPlanTest, ErrorsComeInRedisBloomsOrder) {
  EXPECT_EQ(Cms({"CMS.INCRBY", "nokey", "a", "x"}), std::string(kCmsErrKeyMissing));
  server_.strings["str"] = "v";
  EXPECT_EQ(Cms({"CMS.QUERY", "str", "a"}), std::string(kCmsErrWrongType));
  server_.hashes["h"] = {{"f", "v"}};
  EXPECT_EQ(Cms({"CMS.INFO", "h"}), std::string(kCmsErrWrongType));
  EXPECT_EQ(Cms({"CMS.INITBYDIM", "h", "0", "1"}), std::string(kCmsErrKeyExists));
  EXPECT_EQ(Cms({"CMS.INITBYDIM", "n", "0", "1"}), std::string(kCmsErrInvalidWidth));
  ASSERT_EQ(Cms({"CMS.INITBYDIM", "s", "10", "2"}), "+OK\r\n");
  ASSERT_EQ(Cms({"CMS.INITBYDIM", "t", "10", "3"}), "+OK\r\n");
  EXPECT_EQ(Cms({"CMS.INCRBY", "s", "a", "x"}), std::string(kCmsErrCannotParseNumber));
  EXPECT_EQ(Cms({"CMS.MERGE", "s", "2", "t", "nokey", "WEIGHTS", "1", "x"}),
            std::string(kCmsErrDimsNotEqual));
  EXPECT_EQ(Cms({"CMS.MERGE", "s", "2", "nokey", "s", "WEIGHTS", "1", "x"}),
            std::string(kCmsErrKeyMissing));
  EXPECT_EQ(Cms({"CMS.MERGE", "s", "2", "s", "s", "WEIGHTS", "1", "x"}),
            std::string(kCmsErrInvalidWeight));
}

TEST(CmsScriptsTest, LongBitfieldCallsKeepTheirOverflowMode) {
  std::vector<CmsPartOps> parts(1);
  parts[0].key = "k";
  parts[0].args = {"OVERFLOW", "WRAP", "INCRBY", "i64", "0", "1", "OVERFLOW", "SAT"};
  for (int i = 0; i < 5000; ++i) {
    parts[0].args.insert(parts[0].args.end(), {"INCRBY", "u32", "#4", "1"});
  }
  Requests req;
  AddCmsMultiBitfield(&req, parts);
  PlanStep step;
  req.MoveTo(&step);
  const std::vector<std::string> eval = ParseRequests(step.requests)[0];
  // ARGV groups: (key index, n, n arguments); every group after the first restates SAT.
  size_t groups = 0;
  for (size_t a = 4; a < eval.size();) {
    const size_t n = std::stoul(eval[a + 1]);
    EXPECT_LE(n, 6002u);
    if (groups > 0) {
      EXPECT_EQ(eval[a + 2], "OVERFLOW");
      EXPECT_EQ(eval[a + 3], "SAT");
    }
    EXPECT_TRUE(eval[a + 2] == "OVERFLOW" || eval[a + 2] == "INCRBY");
    a += 2 + n;
    ++groups;
  }
  EXPECT_GE(groups, 4u);
}

}  // namespace
}  // namespace bloomproxy::filters
