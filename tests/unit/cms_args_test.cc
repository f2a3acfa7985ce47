// CMS.* argument parsing against RedisBloom: every recorded reply that the parser must produce,
// then the grammar, the check order and the number formats one by one.
#include "filters/cms/cms_args.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <list>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tests/unit/cms_fixtures.h"

namespace bloomproxy::filters {
namespace {
using namespace fixtures;  // NOLINT: test-local helpers

std::vector<std::string_view> Views(const std::vector<std::string>& args) {
  return std::vector<std::string_view>(args.begin(), args.end());
}

// The request's views point into the arguments: keep every argument list the tests parse.
const std::vector<std::string>& Keep(std::vector<std::string> args) {
  static std::list<std::vector<std::string>> keep;
  keep.push_back(std::move(args));
  return keep.back();
}

CmsRequest MustParse(std::vector<std::string> args) {
  const std::vector<std::string>& kept = Keep(std::move(args));
  CmsRequest req;
  const std::string err = ParseCmsRequest(Views(kept), &req);
  EXPECT_EQ(err, "") << kept[0];
  return req;
}

std::string ErrorOf(const std::vector<std::string>& args,
                    uint64_t max_bytes = kCmsDefaultMaxBytes) {
  CmsRequest req;
  return ParseCmsRequest(Views(args), &req, max_bytes);
}

// The error and when it is due.
std::pair<std::string, CmsErrorOrder> Parsed(std::vector<std::string> args, CmsRequest* req) {
  std::string err = ParseCmsRequest(Views(Keep(std::move(args))), req);
  return {err, req->error_order};
}

std::string Arity(std::string_view name) {
  return "-ERR wrong number of arguments for '" + std::string(name) + "' command\r\n";
}

// ---------------------------------------------------------------------------------------------
// Every recorded reply that depends only on the arguments.

// Replies decided by the key's state (the plan's), which win over argument errors found later.
bool IsKeyStateError(std::string_view reply) {
  return reply == kCmsErrKeyExists || reply == kCmsErrKeyMissing || reply == kCmsErrWrongType ||
         reply == kCmsErrDimsNotEqual;
}

TEST(CmsArgsFixtureTest, RecordedArgumentErrors) {
  int errors = 0;  // recorded argument errors reproduced byte for byte
  int parsed = 0;  // accepted commands, whose recorded reply is no argument error
  // Argument errors the recording never shows because a key check came first, by reason. They
  // depend on key state, which cms_model_test replays; here only their order is checked.
  std::map<std::string, int> skipped;
  std::set<std::string> distinct;
  for (const Case& c : CmsCases()) {
    for (size_t i = 0; i < c.cmds.size(); ++i) {
      CmsCommand command;
      if (!LookupCmsCommand(c.cmds[i][0], &command)) continue;
      const std::string& reply = c.replies[i];
      const std::string where = c.name + " command " + std::to_string(i);
      CmsRequest req;
      const auto [err, order] = Parsed(c.cmds[i], &req);
      if (err.empty()) {
        // Accepted arguments: RedisBloom either answered, or objected to the key's state or to
        // a MERGE overflow; never to the arguments.
        EXPECT_TRUE(reply[0] != '-' || IsKeyStateError(reply) || reply == kCmsErrMergeOverflow)
            << where << ": " << reply;
        ++parsed;
        continue;
      }
      if (reply == err) {
        distinct.insert(err);
        ++errors;
        continue;
      }
      // An arity error is never pre-empted; the others only by the key checks before them.
      EXPECT_NE(order, CmsErrorOrder::kNow) << where;
      if (command == CmsCommand::kInitByDim || command == CmsCommand::kInitByProb) {
        EXPECT_EQ(reply, kCmsErrKeyExists) << where;
        ++skipped["INITBY* on an existing key"];
      } else if (reply == kCmsErrKeyMissing || reply == kCmsErrWrongType) {
        ++skipped["key (MERGE: a source before the bad weight) missing or not a sketch"];
      } else {
        // Only a source before the bad weight can have other dimensions.
        EXPECT_EQ(reply, kCmsErrDimsNotEqual) << where;
        EXPECT_EQ(order, CmsErrorOrder::kAfterSources) << where;
        EXPECT_GT(req.bad_weight, 0u) << where;
        ++skipped["MERGE source before the bad weight of other dimensions"];
      }
    }
  }
  // The recorded set (19 cases, 497 commands): 90 argument errors (19 distinct) reproduced, 354
  // accepted, 8 pre-empted by key state.
  EXPECT_GE(errors, 90);
  EXPECT_GE(distinct.size(), 19u);
  EXPECT_GE(parsed, 354);
  EXPECT_EQ(skipped.size(), 3u);
  int total_skipped = 0;
  for (const auto& [reason, n] : skipped) total_skipped += n;
  EXPECT_GE(total_skipped, 8);
}

TEST(CmsArgsFixtureTest, RecordedCreations) {
  // The dimensions of the recorded INITBYPROB calls as the parser hands them on (CMS.INFO showed
  // these).
  struct Created {
    std::string error, prob;
    uint64_t width, depth;
  };
  const Created created[] = {
      {"0.001", "0.01", 2000, 7},      {"1e-3", "1e-3", 2000, 10},
      {"0.1", "0.5", 20, 1},           {"0.25", "0.25", 8, 2},
      {"0.01", "0.001", 200, 10},      {"0.03125", "0.03125", 64, 5},
      {"0.636845", "4.4e-12", 4, 38},  {"0.911961", "0.57", 3, 1},
      {"0.3693", "2e-07", 6, 23},      {"0.95", "2.81065e-10", 3, 32},
      {"0.42892", "5.275e-12", 5, 38}, {"0.05", "0.02", 40, 6},
      {"0.2", "0.2", 10, 3},           {"0.1", "0.1", 20, 4},
  };
  for (const Created& c : created) {
    const CmsRequest r = MustParse({"CMS.INITBYPROB", "k", c.error, c.prob});
    EXPECT_EQ(r.command, CmsCommand::kInitByProb);
    EXPECT_EQ(r.width, c.width) << c.error << " " << c.prob;
    EXPECT_EQ(r.depth, c.depth) << c.error << " " << c.prob;
  }
  const CmsRequest r = MustParse({"CMS.INITBYDIM", "cms1:d4", "250000", "8"});
  EXPECT_EQ(r.command, CmsCommand::kInitByDim);
  EXPECT_EQ(r.key, "cms1:d4");
  EXPECT_EQ(r.width, 250000u);
  EXPECT_EQ(r.depth, 8u);
}

TEST(CmsArgsTest, ErrorStringsMatchTheRecordings) {
  // Each constant appears verbatim among the recorded replies (as a reply or an array element).
  std::string all;
  for (const Case& c : CmsCases()) {
    for (const std::string& reply : c.replies) all += reply;
  }
  for (std::string_view e : {kCmsErrKeyExists,          kCmsErrInvalidWidth,
                             kCmsErrInvalidDepth,       kCmsErrInvalidOverestimation,
                             kCmsErrInvalidProb,        kCmsErrInvalidInitArguments,
                             kCmsErrInsufficientMemory, kCmsErrKeyMissing,
                             kCmsErrWrongType,          kCmsErrCannotParseNumber,
                             kCmsErrNegativeNumber,     kCmsErrIncrByOverflow,
                             kCmsErrInvalidNumKeys,     kCmsErrNumKeysNotPositive,
                             kCmsErrWrongNumKeys,       kCmsErrWrongNumKeysWeights,
                             kCmsErrInvalidWeight,      kCmsErrDimsNotEqual,
                             kCmsErrMergeOverflow,      kCmsErrCopyNotSupported}) {
    EXPECT_NE(all.find(e), std::string::npos) << e;
  }
  EXPECT_NE(all.find("+" + std::string(kCmsTypeName) + "\r\n"), std::string::npos);
  EXPECT_EQ(CmsDimsError(CmsDimsCheck::kOk), "");
  EXPECT_EQ(CmsDimsError(CmsDimsCheck::kInvalidInitArguments), kCmsErrInvalidInitArguments);
  EXPECT_EQ(CmsDimsError(CmsDimsCheck::kInsufficientMemory), kCmsErrInsufficientMemory);
}

// ---------------------------------------------------------------------------------------------
// Command names and arity.

TEST(CmsArgsTest, LookupCommand) {
  const std::pair<std::string_view, CmsCommand> names[] = {
      {"CMS.INITBYDIM", CmsCommand::kInitByDim}, {"cms.initbyprob", CmsCommand::kInitByProb},
      {"Cms.IncrBy", CmsCommand::kIncrBy},       {"cMs.QuErY", CmsCommand::kQuery},
      {"CMS.merge", CmsCommand::kMerge},         {"CmS.iNfO", CmsCommand::kInfo},
  };
  for (const auto& [name, want] : names) {
    CmsCommand got;
    ASSERT_TRUE(LookupCmsCommand(name, &got)) << name;
    EXPECT_EQ(got, want) << name;
  }
  CmsCommand got;
  const std::string_view others[] = {"",
                                     "CMS",
                                     "CMS.",
                                     "CMS.INF",
                                     "CMS.INFOX",
                                     "CMS.RESERVE",
                                     "BF.ADD",
                                     " CMS.INFO",
                                     "CMS_INFO",
                                     "TOPK.ADD",
                                     "CMS.INITBY",
                                     "GET",
                                     std::string_view("CMS.INFO\0", 9)};
  for (std::string_view other : others) {
    EXPECT_FALSE(LookupCmsCommand(other, &got)) << other;
  }
  EXPECT_EQ(ErrorOf({"BF.ADD", "k", "a"}), "-ERR unknown command\r\n");
}

TEST(CmsArgsTest, ArityErrorsUseTheLowerCaseName) {
  const std::vector<std::vector<std::string>> bad = {
      {"CMS.INITBYDIM"},
      {"cms.initbydim"},
      {"CMS.INITBYDIM", "k"},
      {"CMS.INITBYDIM", "k", "5"},
      {"CMS.INITBYDIM", "k", "5", "5", "5"},
      {"CMS.INITBYPROB"},
      {"CMS.INITBYPROB", "k", "0.1"},
      {"CMS.INITBYPROB", "k", "0.1", "0.1", "0.1"},
      {"CMS.INCRBY"},
      {"CMS.INCRBY", "k"},
      {"CMS.INCRBY", "k", "a"},
      {"CMS.INCRBY", "k", "a", "1", "b"},
      {"Cms.IncrBy", "k", "a", "1", "b", "2", "c"},
      {"CMS.QUERY"},
      {"CMS.QUERY", "k"},
      {"CMS.MERGE"},
      {"cms.merge"},
      {"CMS.MERGE", "d"},
      {"CMS.MERGE", "d", "1"},
      {"CMS.INFO"},
      {"CMS.INFO", "k", "width"},
      {"CmS.iNfO", "k", "k2"},
  };
  for (const auto& args : bad) {
    std::string lower = args[0];
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    CmsRequest req;
    const auto [err, order] = Parsed(args, &req);
    EXPECT_EQ(err, Arity(lower)) << args[0] << " with " << args.size() << " args";
    EXPECT_EQ(order, CmsErrorOrder::kNow);
  }
  // Even with arguments that would be bad, arity is reported first.
  EXPECT_EQ(ErrorOf({"CMS.INCRBY", "k", "a", "x", "b"}), Arity("cms.incrby"));
  EXPECT_EQ(ErrorOf({"CMS.INITBYDIM", "k", "0", "0", "0"}), Arity("cms.initbydim"));
  // The smallest accepted forms.
  EXPECT_EQ(ErrorOf({"CMS.INCRBY", "k", "a", "1"}), "");
  EXPECT_EQ(ErrorOf({"CMS.QUERY", "k", "a"}), "");
  EXPECT_EQ(ErrorOf({"CMS.MERGE", "d", "1", "s"}), "");
  EXPECT_EQ(ErrorOf({"CMS.INFO", "k"}), "");
}

// ---------------------------------------------------------------------------------------------
// CMS.INITBYDIM / CMS.INITBYPROB.

TEST(CmsInitTest, InitByDimNumbers) {
  const std::string kWidth(kCmsErrInvalidWidth);
  const std::string kDepth(kCmsErrInvalidDepth);
  CmsRequest r = MustParse({"CMS.INITBYDIM", "k", "2000", "5"});
  EXPECT_EQ(r.width, 2000u);
  EXPECT_EQ(r.depth, 5u);
  EXPECT_EQ(r.key, "k");
  r = MustParse({"CMS.INITBYDIM", "k", "1", "1"});
  EXPECT_EQ(r.width, 1u);
  // string2ll's rules, and < 1.
  for (std::string bad :
       {"1e3", "5 ", " 5", "+5", "-0", "05", "1.5", "0x10", "", "abc", "0", "-1",
        "9223372036854775808", "-9223372036854775808", "99999999999999999999999"}) {
    CmsRequest req;
    const auto [err, order] = Parsed({"CMS.INITBYDIM", "k", bad, "5"}, &req);
    EXPECT_EQ(err, kWidth) << bad;
    EXPECT_EQ(order, CmsErrorOrder::kAfterKey) << bad;
    EXPECT_EQ(req.key, "k");
    EXPECT_EQ(ErrorOf({"CMS.INITBYDIM", "k", "5", bad}), kDepth) << bad;
  }
  EXPECT_EQ(ErrorOf({"CMS.INITBYDIM", "k", std::string("5\0", 2), "5"}), kWidth);
  // Width is checked first.
  EXPECT_EQ(ErrorOf({"CMS.INITBYDIM", "k", "0", "0"}), kWidth);
  EXPECT_EQ(ErrorOf({"CMS.INITBYDIM", "k", "x", "y"}), kWidth);
}

TEST(CmsInitTest, InitByDimSizes) {
  const std::string kInvalid(kCmsErrInvalidInitArguments);
  const std::string kMemory(kCmsErrInsufficientMemory);
  // The recorded ones.
  EXPECT_EQ(ErrorOf({"CMS.INITBYDIM", "k", "4294967296", "4294967296"}), kInvalid);
  EXPECT_EQ(ErrorOf({"CMS.INITBYDIM", "k", "3037000500", "3037000500"}), kInvalid);
  EXPECT_EQ(ErrorOf({"CMS.INITBYDIM", "k", "9223372036854775807", "2"}), kInvalid);
  EXPECT_EQ(ErrorOf({"CMS.INITBYDIM", "k", "4611686018427387904", "1"}), kMemory);
  EXPECT_EQ(ErrorOf({"CMS.INITBYDIM", "k", "1", "144115188075855872"}), kMemory);
  EXPECT_EQ(ErrorOf({"CMS.INITBYDIM", "k", "2147483648", "2147483648"}), kMemory);
  // The spec's others.
  EXPECT_EQ(ErrorOf({"CMS.INITBYDIM", "k", "9223372036854775807", "1"}), kMemory);
  EXPECT_EQ(ErrorOf({"CMS.INITBYDIM", "k", "1099511627776", "131072"}), kMemory);
  // A caller's own limit.
  EXPECT_EQ(ErrorOf({"CMS.INITBYDIM", "k", "1000", "5"}, 20000), "");
  EXPECT_EQ(ErrorOf({"CMS.INITBYDIM", "k", "1001", "5"}, 20000), kMemory);
  CmsRequest req;
  std::vector<std::string> args = {"CMS.INITBYDIM", "k", "3037000500", "3037000500"};
  EXPECT_EQ(ParseCmsRequest(Views(args), &req), kInvalid);
  EXPECT_EQ(req.error_order, CmsErrorOrder::kAfterKey);
}

TEST(CmsInitTest, InitByProbNumbers) {
  const std::string kError(kCmsErrInvalidOverestimation);
  const std::string kProb(kCmsErrInvalidProb);
  CmsRequest r = MustParse({"CMS.INITBYPROB", "k", "0.001", "0.01"});
  EXPECT_EQ(r.error, 0.001);
  EXPECT_EQ(r.prob, 0.01);
  EXPECT_EQ(r.width, 2000u);
  EXPECT_EQ(r.depth, 7u);
  // strtod's forms are numbers.
  for (std::string ok : {"1e-1", ".1", "+0.1", "0.1e0", "1E-1"}) {
    r = MustParse({"CMS.INITBYPROB", "k", ok, ok});
    EXPECT_EQ(r.width, 20u) << ok;
    EXPECT_EQ(r.depth, 4u) << ok;
  }
  // Not numbers, or outside (0, 1).
  for (std::string bad : {"abc", "", " 0.1", "0.1 ", "0.1x", "nan", "-nan", "1e-400", "1e400",
                          "0,1", "0", "-0", "1", "1.0", "-0.1", "inf", "-inf", "2"}) {
    EXPECT_EQ(ErrorOf({"CMS.INITBYPROB", "k", bad, "0.5"}), kError) << bad;
    EXPECT_EQ(ErrorOf({"CMS.INITBYPROB", "k", "0.5", bad}), kProb) << bad;
  }
  EXPECT_EQ(ErrorOf({"CMS.INITBYPROB", "k", std::string("0.5\0", 4), "0.5"}), kError);
  // The error first.
  EXPECT_EQ(ErrorOf({"CMS.INITBYPROB", "k", "0", "0"}), kError);
  EXPECT_EQ(ErrorOf({"CMS.INITBYPROB", "k", "1.0", "1.0"}), kError);
  EXPECT_EQ(ErrorOf({"CMS.INITBYPROB", "k", "0.01", "1"}), kProb);
}

TEST(CmsInitTest, InitByProbSizes) {
  const std::string kInvalid(kCmsErrInvalidInitArguments);
  const std::string kMemory(kCmsErrInsufficientMemory);
  EXPECT_EQ(ErrorOf({"CMS.INITBYPROB", "k", "1e-20", "0.5"}), kInvalid);
  EXPECT_EQ(ErrorOf({"CMS.INITBYPROB", "k", "2.1e-19", "0.5"}), kInvalid);  // width >= 2^63
  EXPECT_EQ(ErrorOf({"CMS.INITBYPROB", "k", "1e-300", "0.5"}), kInvalid);
  EXPECT_EQ(ErrorOf({"CMS.INITBYPROB", "k", "5e-324", "0.5"}), kInvalid);  // 2 / denormal = inf
  EXPECT_EQ(ErrorOf({"CMS.INITBYPROB", "k", "0.1", "1e-300"}), kInvalid);
  EXPECT_EQ(ErrorOf({"CMS.INITBYPROB", "k", "0.1", "1e-46"}), kInvalid);
  EXPECT_EQ(ErrorOf({"CMS.INITBYPROB", "k", "0.1", "0.99999999"}), kInvalid);  // 1.0f: depth 0
  EXPECT_EQ(ErrorOf({"CMS.INITBYPROB", "k", "2.2e-19", "0.5"}), kMemory);
  EXPECT_EQ(ErrorOf({"CMS.INITBYPROB", "k", "5e-19", "0.5"}), kMemory);
  EXPECT_EQ(ErrorOf({"CMS.INITBYPROB", "k", "1e-17", "0.5"}), kMemory);
  const CmsRequest r = MustParse({"CMS.INITBYPROB", "k", "0.01", "1e-45"});
  EXPECT_EQ(r.depth, 149u);
}

// ---------------------------------------------------------------------------------------------
// CMS.INCRBY / CMS.QUERY / CMS.INFO.

TEST(CmsIncrByTest, Pairs) {
  CmsRequest r = MustParse({"CMS.INCRBY", "k", "a", "2", "b", "0", "a", "9223372036854775807"});
  EXPECT_EQ(r.command, CmsCommand::kIncrBy);
  EXPECT_EQ(r.key, "k");
  ASSERT_EQ(r.increments.size(), 3u);
  EXPECT_EQ(r.increments[0].item, "a");
  EXPECT_EQ(r.increments[0].value, 2u);
  EXPECT_EQ(r.increments[1].item, "b");
  EXPECT_EQ(r.increments[1].value, 0u);
  EXPECT_EQ(r.increments[2].item, "a");  // repeats are kept, in order
  EXPECT_EQ(r.increments[2].value, 9223372036854775807u);
  // Items are binary and may be empty or spelled like numbers.
  std::vector<std::string> args = {"CMS.INCRBY", "k", "", "1", std::string("\0\r\n", 3),
                                   "2",          "5", "3"};
  r = MustParse(args);
  ASSERT_EQ(r.increments.size(), 3u);
  EXPECT_EQ(r.increments[0].item, "");
  EXPECT_EQ(r.increments[1].item, std::string_view("\0\r\n", 3));
  EXPECT_EQ(r.increments[2].item, "5");
}

TEST(CmsIncrByTest, Numbers) {
  const std::string kParse(kCmsErrCannotParseNumber);
  const std::string kNegative(kCmsErrNegativeNumber);
  for (std::string bad : {"abc", "18446744073709551616", "9223372036854775808", "1.0", "0x10", "",
                          " 1", "1 ", "+1", "01", "1e3", "-0"}) {
    CmsRequest req;
    const auto [err, order] = Parsed({"CMS.INCRBY", "k", "x", bad}, &req);
    EXPECT_EQ(err, kParse) << bad;
    EXPECT_EQ(order, CmsErrorOrder::kAfterKey);
  }
  for (std::string neg : {"-1", "-5", "-9223372036854775808"}) {
    EXPECT_EQ(ErrorOf({"CMS.INCRBY", "k", "x", neg}), kNegative) << neg;
  }
  // Every pair is parsed before any is applied; the first bad pair is the one reported.
  EXPECT_EQ(ErrorOf({"CMS.INCRBY", "k", "x", "1", "y", "2", "z", ""}), kParse);
  EXPECT_EQ(ErrorOf({"CMS.INCRBY", "k", "x", "-1", "y", "abc"}), kNegative);
  EXPECT_EQ(ErrorOf({"CMS.INCRBY", "k", "x", "abc", "y", "-1"}), kParse);
  CmsRequest req;
  std::vector<std::string> args = {"CMS.INCRBY", "missing", "x", "abc"};
  EXPECT_EQ(ParseCmsRequest(Views(args), &req), kParse);
  EXPECT_EQ(req.error_order, CmsErrorOrder::kAfterKey);  // "key does not exist" would win
  EXPECT_EQ(req.key, "missing");
}

TEST(CmsQueryInfoTest, Items) {
  CmsRequest r = MustParse({"CMS.QUERY", "k", "a", "", "a", "WEIGHTS"});
  EXPECT_EQ(r.command, CmsCommand::kQuery);
  ASSERT_EQ(r.items.size(), 4u);
  EXPECT_EQ(r.items[1], "");
  EXPECT_EQ(r.items[3], "WEIGHTS");
  r = MustParse({"cms.info", "k"});
  EXPECT_EQ(r.command, CmsCommand::kInfo);
  EXPECT_EQ(r.key, "k");
}

// ---------------------------------------------------------------------------------------------
// CMS.MERGE.

TEST(CmsMergeArgsTest, Layouts) {
  CmsRequest r = MustParse({"CMS.MERGE", "d", "2", "a", "b"});
  EXPECT_EQ(r.command, CmsCommand::kMerge);
  EXPECT_EQ(r.key, "d");
  ASSERT_EQ(r.sources.size(), 2u);
  EXPECT_EQ(r.sources[0], "a");
  EXPECT_EQ(r.sources[1], "b");
  EXPECT_EQ(r.weights, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(r.bad_weight, kCmsNoBadWeight);

  r = MustParse({"CMS.MERGE", "d", "3", "a", "d", "a", "weights", "9", "-6", "0"});
  EXPECT_EQ(r.sources, (std::vector<std::string_view>{"a", "d", "a"}));
  EXPECT_EQ(r.weights, (std::vector<int64_t>{9, -6, 0}));

  r = MustParse({"CMS.MERGE", "d", "1", "s", "WeIgHtS", "-9223372036854775808"});
  EXPECT_EQ(r.weights, (std::vector<int64_t>{INT64_MIN}));
  // The destination may be spelled WEIGHTS: only arguments after numkeys are searched.
  r = MustParse({"CMS.MERGE", "WEIGHTS", "1", "s"});
  EXPECT_EQ(r.key, "WEIGHTS");
  EXPECT_EQ(r.weights, (std::vector<int64_t>{1}));
}

TEST(CmsMergeArgsTest, NumKeysAndLayoutErrors) {
  const std::string kNumKeys(kCmsErrInvalidNumKeys);
  const std::string kPositive(kCmsErrNumKeysNotPositive);
  const std::string kKeys(kCmsErrWrongNumKeys);
  const std::string kKeysWeights(kCmsErrWrongNumKeysWeights);
  for (std::string bad : {"x", "1.0", "+1", " 1", "01", "", "9223372036854775808", "-0"}) {
    CmsRequest req;
    const auto [err, order] = Parsed({"CMS.MERGE", "d", bad, "a"}, &req);
    EXPECT_EQ(err, kNumKeys) << bad;
    EXPECT_EQ(order, CmsErrorOrder::kAfterKey);
  }
  EXPECT_EQ(ErrorOf({"CMS.MERGE", "d", "0", "a"}), kPositive);
  EXPECT_EQ(ErrorOf({"CMS.MERGE", "d", "-2", "a"}), kPositive);
  EXPECT_EQ(ErrorOf({"CMS.MERGE", "d", "-9223372036854775808", "a"}), kPositive);
  // Without WEIGHTS: exactly numkeys sources.
  EXPECT_EQ(ErrorOf({"CMS.MERGE", "d", "3", "a", "b"}), kKeys);
  EXPECT_EQ(ErrorOf({"CMS.MERGE", "d", "1", "a", "b"}), kKeys);
  EXPECT_EQ(ErrorOf({"CMS.MERGE", "d", "9223372036854775807", "a"}), kKeys);
  EXPECT_EQ(ErrorOf({"CMS.MERGE", "d", "1", "a", "WEIGHT", "1"}), kKeys);  // not the word
  EXPECT_EQ(ErrorOf({"CMS.MERGE", "d", "1", "a", "WEIGHTSS", "1"}), kKeys);
  // With WEIGHTS: right after numkeys sources, then exactly numkeys weights.
  EXPECT_EQ(ErrorOf({"CMS.MERGE", "d", "2", "a", "b", "WEIGHTS", "1"}), kKeysWeights);
  EXPECT_EQ(ErrorOf({"CMS.MERGE", "d", "2", "a", "b", "WEIGHTS", "1", "2", "3"}), kKeysWeights);
  EXPECT_EQ(ErrorOf({"CMS.MERGE", "d", "2", "a", "b", "WEIGHTS"}), kKeysWeights);
  EXPECT_EQ(ErrorOf({"CMS.MERGE", "d", "2", "a", "WEIGHTS", "1", "2"}), kKeysWeights);
  EXPECT_EQ(ErrorOf({"CMS.MERGE", "d", "1", "WEIGHTS"}), kKeysWeights);
  EXPECT_EQ(ErrorOf({"CMS.MERGE", "d", "1", "WEIGHTS", "1"}), kKeysWeights);
  EXPECT_EQ(ErrorOf({"CMS.MERGE", "d", "9223372036854775807", "WEIGHTS", "1"}), kKeysWeights);
  // A source spelled weights is taken for the word.
  EXPECT_EQ(ErrorOf({"CMS.MERGE", "d", "2", "a", "weights", "WEIGHTS", "1", "1"}), kKeysWeights);
  // The numkeys errors come before the layout's.
  EXPECT_EQ(ErrorOf({"CMS.MERGE", "d", "x", "a", "WEIGHTS"}), kNumKeys);
  EXPECT_EQ(ErrorOf({"CMS.MERGE", "d", "0", "a", "WEIGHTS"}), kPositive);
}

TEST(CmsMergeArgsTest, WeightsInterleaveWithSources) {
  const std::string kWeight(kCmsErrInvalidWeight);
  for (std::string bad : {"x", "", "1.5", "9223372036854775808", "+1", "-0", "WEIGHTS", "1 "}) {
    CmsRequest req;
    auto [err, order] = Parsed({"CMS.MERGE", "d", "2", "a", "b", "WEIGHTS", bad, "1"}, &req);
    EXPECT_EQ(err, kWeight) << bad;
    EXPECT_EQ(order, CmsErrorOrder::kAfterSources);
    EXPECT_EQ(req.bad_weight, 0u);  // reported before source 0 is looked at
    EXPECT_TRUE(req.weights.empty());
    EXPECT_EQ(req.sources, (std::vector<std::string_view>{"a", "b"}));

    std::tie(err, order) = Parsed({"CMS.MERGE", "d", "2", "a", "b", "WEIGHTS", "7", bad}, &req);
    EXPECT_EQ(err, kWeight) << bad;
    EXPECT_EQ(order, CmsErrorOrder::kAfterSources);
    EXPECT_EQ(req.bad_weight, 1u);  // source 0 is checked first
    EXPECT_EQ(req.weights, (std::vector<int64_t>{7}));
    EXPECT_EQ(req.sources.size(), 2u);
  }
  // WEIGHTS WEIGHTS: the second is weight 0.
  CmsRequest req;
  EXPECT_EQ(Parsed({"CMS.MERGE", "d", "1", "a", "WEIGHTS", "WEIGHTS"}, &req).first, kWeight);
  EXPECT_EQ(req.bad_weight, 0u);
}

}  // namespace
}  // namespace bloomproxy::filters
