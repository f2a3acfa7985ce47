// TOPK.* argument parsing against RedisBloom: the grammar, the check order and the number
// formats one by one (the recorded replies as a whole are topk_model_test's).
#include "filters/topk/topk_args.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bloomproxy::filters {
namespace {

using namespace std::string_literals;  // NOLINT: arguments with NUL bytes

// Parses args (kept alive by the caller) and returns the error and when it is due.
std::pair<std::string, TopkErrorOrder> Parse(const std::vector<std::string>& args,
                                             TopkRequest* req) {
  const std::vector<std::string_view> views(args.begin(), args.end());
  std::string err = ParseTopkRequest(views, req);
  return {err, req->error_order};
}

std::string ErrorOf(const std::vector<std::string>& args) {
  TopkRequest req;
  return Parse(args, &req).first;
}

std::string Arity(std::string_view name) {
  return "-ERR wrong number of arguments for '" + std::string(name) + "' command\r\n";
}

TEST(TopkArgs, ErrorStringsVerbatim) {
  // 115 bytes between '-' and CRLF, 28 spaces in the middle.
  EXPECT_EQ(kTopkErrIncrement.size(), 1 + 115 + 2);
  EXPECT_NE(kTopkErrIncrement.find("to 0" + std::string(28, ' ') + "and smaller"),
            std::string_view::npos);
  EXPECT_EQ(kTopkErrWrongType,
            "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
}

TEST(TopkArgs, ArityNamesAreLowerCase) {
  const std::pair<std::vector<std::string>, std::string_view> cases[] = {
      {{"TOPK.RESERVE", "k"}, "topk.reserve"},
      {{"topk.reserve", "k", "1", "2"}, "topk.reserve"},
      {{"TOPK.RESERVE", "k", "1", "2", "3"}, "topk.reserve"},
      {{"TOPK.RESERVE", "k", "1", "2", "3", "0.9", "x"}, "topk.reserve"},
      {{"TopK.Add", "k"}, "topk.add"},
      {{"TOPK.INCRBY", "k", "a"}, "topk.incrby"},
      {{"TOPK.INCRBY", "k", "a", "1", "b"}, "topk.incrby"},
      {{"TOPK.QUERY", "k"}, "topk.query"},
      {{"TOPK.COUNT"}, "topk.count"},
      {{"TOPK.LIST"}, "topk.list"},
      {{"TOPK.LIST", "k", "WITHCOUNT", "x"}, "topk.list"},
      {{"TOPK.INFO", "k", "k"}, "topk.info"},
  };
  for (const auto& [args, name] : cases) {
    TopkRequest req;
    EXPECT_EQ(Parse(args, &req), std::make_pair(Arity(name), TopkErrorOrder::kNow)) << args[0];
  }
}

TEST(TopkArgs, ReserveDefaultsAndFullForm) {
  const std::vector<std::string> short_form = {"TOPK.RESERVE", "t", "37"};
  TopkRequest req;
  EXPECT_EQ(Parse(short_form, &req).first, "");
  EXPECT_EQ(req.key, "t");
  EXPECT_EQ(req.params.k, 37u);
  EXPECT_EQ(req.params.width, 8u);
  EXPECT_EQ(req.params.depth, 7u);
  EXPECT_EQ(req.params.decay, 0.9);
  const std::vector<std::string> full = {"TOPK.RESERVE", "t", "4294967295", "10", "2", "1"};
  EXPECT_EQ(Parse(full, &req).first, "");
  EXPECT_EQ(req.params.k, 4294967295u);
  EXPECT_EQ(req.params.decay, 1.0);
}

TEST(TopkArgs, ReserveCheckOrderAfterTheKey) {
  const std::pair<std::vector<std::string>, std::string_view> cases[] = {
      {{"-1"}, kTopkErrInvalidK},
      {{"+1"}, kTopkErrInvalidK},
      {{"01", "8", "7", "0.9"}, kTopkErrInvalidK},
      {{"-0", "8", "7", "0.9"}, kTopkErrInvalidK},
      {{"1e3"}, kTopkErrInvalidK},
      {{""}, kTopkErrInvalidK},
      {{"4294967296", "8", "7", "0.9"}, kTopkErrInvalidK},
      {{"0", "0", "0", "0"}, kTopkErrInvalidK},
      {{"1", "0", "0", "0"}, kTopkErrInvalidWidth},
      {{"1", "8 ", "7", "0.9"}, kTopkErrInvalidWidth},
      {{"1", "4294967296", "4294967295", "1"}, kTopkErrInvalidWidth},
      {{"1", "1", "0", "x"}, kTopkErrInvalidDepth},
      {{"1", "8", "8.0", "0.9"}, kTopkErrInvalidDepth},
      {{"1", "8", "7", "0"}, kTopkErrInvalidDecay},
      {{"1", "8", "7", "-0"}, kTopkErrInvalidDecay},
      {{"1", "8", "7", "nan"}, kTopkErrInvalidDecay},
      {{"1", "8", "7", "inf"}, kTopkErrInvalidDecay},
      {{"1", "8", "7", "1e400"}, kTopkErrInvalidDecay},
      {{"1", "8", "7", "1e-400"}, kTopkErrInvalidDecay},
      {{"1", "8", "7", "1.000000000000001"}, kTopkErrInvalidDecay},
      {{"1", "8", "7", "0.5 "}, kTopkErrInvalidDecay},
      {{"1", "8", "7", " 0.5"}, kTopkErrInvalidDecay},
      {{"1", "8", "7", "0.5\0"s}, kTopkErrInvalidDecay},
      {{"1", "4294967295", "4294967295", "0"}, kTopkErrInvalidDecay},
      {{"7", "4294967295", "4294967295", "0.9"}, kTopkErrInsufficientMemory},
      {{"1", "2147483648", "1073741824", "1"}, kTopkErrInsufficientMemory},
      {{"3", "3037000500", "3037000500", "0.9"}, kTopkErrInsufficientMemory},
      {{"3", "536870913", "4294967295", "0.5"}, kTopkErrInsufficientMemory},
  };
  for (const auto& [rest, want] : cases) {
    std::vector<std::string> args = {"TOPK.RESERVE", "t"};
    args.insert(args.end(), rest.begin(), rest.end());
    TopkRequest req;
    EXPECT_EQ(Parse(args, &req), std::make_pair(std::string(want), TopkErrorOrder::kAfterKey))
        << rest.back();
  }
  // Accepted oddities of strtod, and the largest sketch below the check.
  for (const std::string decay : {"0x1p-1", ".5", "+0.5", "1e-310", "0.99999999999999995"}) {
    EXPECT_EQ(ErrorOf({"TOPK.RESERVE", "t", "1", "8", "7", decay}), "") << decay;
  }
  EXPECT_TRUE(TopkBucketsFit(536870912, 4294967295));
  EXPECT_FALSE(TopkBucketsFit(536870913, 4294967295));
}

TEST(TopkArgs, IncrByStopsAtTheFirstBadIncrement) {
  const std::vector<std::string> args = {"TOPK.INCRBY", "t", "a", "0", "b", "100000",
                                         "c",           "x", "d", "1", "e", "100001"};
  TopkRequest req;
  EXPECT_EQ(Parse(args, &req),
            std::make_pair(std::string(kTopkErrIncrement), TopkErrorOrder::kInPairs));
  EXPECT_EQ(req.pairs, 5u);
  ASSERT_EQ(req.increments.size(), 2u);
  EXPECT_EQ(req.increments[0].item, "a");
  EXPECT_EQ(req.increments[0].n, 0u);
  EXPECT_EQ(req.increments[1].n, 100000u);
  for (const std::string bad : {"100001", "-1", "-0", " 1", "1 ", "01", "1e3", "100000.0"}) {
    EXPECT_EQ(ErrorOf({"TOPK.INCRBY", "t", "a", bad}), kTopkErrIncrement) << bad;
  }
  const std::vector<std::string> good = {"TOPK.INCRBY", "t", "a", "3", "a", "4"};
  EXPECT_EQ(Parse(good, &req).first, "");
  EXPECT_EQ(req.pairs, 2u);
  EXPECT_EQ(req.increments.size(), 2u);
}

TEST(TopkArgs, WithCountIsAnyCaseInsensitivePrefixUpToANul) {
  for (const std::string& ok : std::vector<std::string>{
           "WITHCOUNT", "withcount", "WithCount", "WITH", "w", "", "withc", "WITHCOUNT\0x"s}) {
    EXPECT_TRUE(IsWithCountToken(ok)) << ok;
    TopkRequest req;
    const std::vector<std::string> args = {"TOPK.LIST", "t", ok};
    EXPECT_EQ(Parse(args, &req).first, "") << ok;
    EXPECT_TRUE(req.with_count);
  }
  for (const std::string& bad :
       std::vector<std::string>{"WITHCOUNTS", "WITHCOUNT ", " WITHCOUNT", "x", "COUNT", "W\0"s, "0",
                                "WITHCOUNTWITHCOUNT"}) {
    EXPECT_FALSE(IsWithCountToken(bad)) << bad;
    TopkRequest req;
    const std::vector<std::string> args = {"TOPK.LIST", "t", bad};
    EXPECT_EQ(Parse(args, &req),
              std::make_pair(std::string(kTopkErrWithCount), TopkErrorOrder::kNow))
        << bad;
  }
  TopkRequest req;
  const std::vector<std::string> plain = {"tOpK.LiSt", "t"};
  EXPECT_EQ(Parse(plain, &req).first, "");
  EXPECT_FALSE(req.with_count);
}

TEST(TopkArgs, ItemsAndNames) {
  const std::vector<std::string> args = {"Topk.Count", "t", "a", "", "a\0b"s};
  TopkRequest req;
  EXPECT_EQ(Parse(args, &req).first, "");
  EXPECT_EQ(req.command, TopkCommand::kCount);
  ASSERT_EQ(req.items.size(), 3u);
  EXPECT_EQ(req.items[2], "a\0b"s);
  TopkCommand c;
  EXPECT_FALSE(LookupTopkCommand("TOPK.FOO", &c));
  EXPECT_FALSE(LookupTopkCommand("CMS.INFO", &c));
  EXPECT_TRUE(LookupTopkCommand("topk.info", &c));
  EXPECT_EQ(c, TopkCommand::kInfo);
}

}  // namespace
}  // namespace bloomproxy::filters
