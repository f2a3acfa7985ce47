// filters/tdigest/tdigest_args.h: every TDIGEST command's grammar, RedisBloom's error strings
// verbatim and when each is the reply (TdigestErrorOrder). The recorded replies check the same
// through the model (tdigest_model_test); these pin each rule on its own.
#include "filters/tdigest/tdigest_args.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <string_view>
#include <vector>

namespace bloomproxy::filters {
namespace {

struct Parsed {
  std::string error;
  TdigestRequest req;
};

Parsed Parse(std::vector<std::string_view> args) {
  Parsed p;
  p.error = ParseTdigestRequest(args, &p.req);
  return p;
}

void ExpectError(std::vector<std::string_view> args, std::string_view error,
                 TdigestErrorOrder order) {
  const Parsed p = Parse(args);
  EXPECT_EQ(p.error, error) << args[0] << " " << (args.size() > 1 ? args[1] : "");
  EXPECT_EQ(p.req.error_order, order) << args[0];
}

constexpr TdigestErrorOrder kNow = TdigestErrorOrder::kNow;
constexpr TdigestErrorOrder kAfterKey = TdigestErrorOrder::kAfterKey;

TEST(TdigestArgsTest, LooksUpCommandNamesInAnyCase) {
  TdigestCommand c;
  ASSERT_TRUE(LookupTdigestCommand("TdIgEsT.iNfO", &c));
  EXPECT_EQ(c, TdigestCommand::kInfo);
  ASSERT_TRUE(LookupTdigestCommand("tdigest.trimmed_mean", &c));
  EXPECT_EQ(c, TdigestCommand::kTrimmedMean);
  ASSERT_TRUE(LookupTdigestCommand("TDIGEST.BYREVRANK", &c));
  EXPECT_EQ(c, TdigestCommand::kByRevRank);
  EXPECT_FALSE(LookupTdigestCommand("TDIGEST.ADDX", &c));
  EXPECT_FALSE(LookupTdigestCommand("TOPK.ADD", &c));
}

TEST(TdigestArgsTest, ArityErrorsNameTheCommandInLowerCase) {
  ExpectError({"TDIGEST.CREATE"}, "-ERR wrong number of arguments for 'tdigest.create' command\r\n",
              kNow);
  ExpectError({"TDigest.Add", "k"}, "-ERR wrong number of arguments for 'tdigest.add' command\r\n",
              kNow);
  ExpectError({"TDIGEST.MERGE", "d", "1"},
              "-ERR wrong number of arguments for 'tdigest.merge' command\r\n", kNow);
  ExpectError({"TDIGEST.MIN", "k", "x"},
              "-ERR wrong number of arguments for 'tdigest.min' command\r\n", kNow);
  ExpectError({"tdigest.info"}, "-ERR wrong number of arguments for 'tdigest.info' command\r\n",
              kNow);
  ExpectError({"TDIGEST.QUANTILE", "k"},
              "-ERR wrong number of arguments for 'tdigest.quantile' command\r\n", kNow);
  ExpectError({"TDIGEST.TRIMMED_MEAN", "k", "0.1"},
              "-ERR wrong number of arguments for 'tdigest.trimmed_mean' command\r\n", kNow);
  ExpectError({"TDIGEST.TRIMMED_MEAN", "k", "0.1", "0.2", "0.3"},
              "-ERR wrong number of arguments for 'tdigest.trimmed_mean' command\r\n", kNow);
}

// CREATE takes exactly 2 or 4 arguments (3 and 5 are arity errors even on an existing key).
TEST(TdigestArgsTest, Create) {
  Parsed p = Parse({"TDIGEST.CREATE", "k"});
  EXPECT_EQ(p.error, "");
  EXPECT_EQ(p.req.key, "k");
  EXPECT_EQ(p.req.compression, 100);
  p = Parse({"TDIGEST.CREATE", "k", "compression", "7"});
  EXPECT_EQ(p.error, "");
  EXPECT_EQ(p.req.compression, 7);
  ExpectError({"TDIGEST.CREATE", "k", "x"},
              "-ERR wrong number of arguments for 'tdigest.create' command\r\n", kNow);
  ExpectError({"TDIGEST.CREATE", "k", "COMPRESSION", "10", "x"},
              "-ERR wrong number of arguments for 'tdigest.create' command\r\n", kNow);
  ExpectError({"TDIGEST.CREATE", "k", "foo", "100"}, kTdigestErrWrongKeyword, kAfterKey);
  ExpectError({"TDIGEST.CREATE", "k", "COMPRESS", "100"}, kTdigestErrWrongKeyword, kAfterKey);
  // The keyword may be the fourth argument; the value is always the fourth.
  ExpectError({"TDIGEST.CREATE", "k", "100", "COMPRESSION"}, kTdigestErrParseCompression,
              kAfterKey);
  ExpectError({"TDIGEST.CREATE", "k", "compression", "compression"}, kTdigestErrParseCompression,
              kAfterKey);
  for (std::string_view bad : {"abc", "5 ", " 5", "1e3", "+5", "05", "-0", "1.5", "",
                               "9223372036854775808", "-9223372036854775809"}) {
    ExpectError({"TDIGEST.CREATE", "k", "COMPRESSION", bad}, kTdigestErrParseCompression,
                kAfterKey);
  }
  for (std::string_view bad : {"0", "-1", "-9223372036854775808"}) {
    ExpectError({"TDIGEST.CREATE", "k", "COMPRESSION", bad}, kTdigestErrCompressionPositive,
                kAfterKey);
  }
  for (std::string_view big :
       {"400000000000000000", "1000000000000000000", "9223372036854775807"}) {
    ExpectError({"TDIGEST.CREATE", "k", "COMPRESSION", big}, kTdigestErrAllocation, kAfterKey);
  }
  EXPECT_EQ(Parse({"TDIGEST.CREATE", "k", "COMPRESSION", "100000"}).error, "");
}

TEST(TdigestArgsTest, CompressionLimit) {
  EXPECT_TRUE(TdigestCompressionFits(384307168202282304));
  EXPECT_TRUE(TdigestCompressionFits(384307168202282315));  // the same double
  EXPECT_FALSE(TdigestCompressionFits(384307168202282400));
  EXPECT_FALSE(TdigestCompressionFits(INT64_MAX));
}

TEST(TdigestArgsTest, AddValues) {
  Parsed p = Parse({"TDIGEST.ADD", "k", "1", "-0", "1e-3", ".5", "1e308"});
  EXPECT_EQ(p.error, "");
  ASSERT_EQ(p.req.values.size(), 5u);
  EXPECT_TRUE(std::signbit(p.req.values[1]));
  EXPECT_EQ(p.req.values[3], 0.5);
  for (std::string_view bad : {"abc", "nan", "-nan", "1 ", " 1", "", "1e999", "1e-400"}) {
    ExpectError({"TDIGEST.ADD", "k", "1", bad}, kTdigestErrParseVal, kAfterKey);
  }
  for (std::string_view inf : {"inf", "-inf", "Infinity"}) {
    ExpectError({"TDIGEST.ADD", "k", inf}, kTdigestErrValFinite, kAfterKey);
  }
  // Left to right: the first bad value decides.
  ExpectError({"TDIGEST.ADD", "k", "inf", "abc"}, kTdigestErrValFinite, kAfterKey);
  ExpectError({"TDIGEST.ADD", "k", "abc", "inf"}, kTdigestErrParseVal, kAfterKey);
}

TEST(TdigestArgsTest, QuantileCdfRank) {
  Parsed p = Parse({"TDIGEST.QUANTILE", "k", "0", "1", "0.5"});
  EXPECT_EQ(p.error, "");
  EXPECT_EQ(p.req.values, (std::vector<double>{0, 1, 0.5}));
  ExpectError({"TDIGEST.QUANTILE", "k", "x"}, kTdigestErrParseQuantile, kAfterKey);
  ExpectError({"TDIGEST.QUANTILE", "k", "1.5"}, kTdigestErrQuantileRange, kAfterKey);
  ExpectError({"TDIGEST.QUANTILE", "k", "-0.1", "x"}, kTdigestErrQuantileRange, kAfterKey);
  ExpectError({"TDIGEST.QUANTILE", "k", "inf"}, kTdigestErrQuantileRange, kAfterKey);
  ExpectError({"TDIGEST.QUANTILE", "k", "nan"}, kTdigestErrParseQuantile, kAfterKey);

  p = Parse({"TDIGEST.CDF", "k", "inf", "-inf", "3"});
  EXPECT_EQ(p.error, "");
  EXPECT_EQ(p.req.values[0], INFINITY);
  ExpectError({"TDIGEST.CDF", "k", "nan"}, kTdigestErrParseCdf, kAfterKey);

  EXPECT_EQ(Parse({"TDIGEST.RANK", "k", "-inf"}).error, "");
  ExpectError({"TDIGEST.RANK", "k", "abc"}, kTdigestErrParseValue, kAfterKey);
  ExpectError({"TDIGEST.REVRANK", "k", "1", "nan"}, kTdigestErrParseValue, kAfterKey);
}

TEST(TdigestArgsTest, ByRank) {
  Parsed p = Parse({"TDIGEST.BYRANK", "k", "0", "9223372036854775807"});
  EXPECT_EQ(p.error, "");
  EXPECT_EQ(p.req.ranks, (std::vector<int64_t>{0, INT64_MAX}));
  for (std::string_view bad : {"1.5", "x", "+1", "-0", "1e3", "9223372036854775808"}) {
    ExpectError({"TDIGEST.BYREVRANK", "k", bad}, kTdigestErrParseRank, kAfterKey);
  }
  ExpectError({"TDIGEST.BYRANK", "k", "-1"}, kTdigestErrRankNegative, kAfterKey);
  ExpectError({"TDIGEST.BYRANK", "k", "-1", "x"}, kTdigestErrRankNegative, kAfterKey);
}

TEST(TdigestArgsTest, TrimmedMean) {
  Parsed p = Parse({"TDIGEST.TRIMMED_MEAN", "k", "0.1", "0.9"});
  EXPECT_EQ(p.error, "");
  EXPECT_EQ(p.req.values, (std::vector<double>{0.1, 0.9}));
  ExpectError({"TDIGEST.TRIMMED_MEAN", "k", "x", "y"}, kTdigestErrParseLow, kAfterKey);
  ExpectError({"TDIGEST.TRIMMED_MEAN", "k", "2", "y"}, kTdigestErrParseHigh, kAfterKey);
  ExpectError({"TDIGEST.TRIMMED_MEAN", "k", "0.5", "2"}, kTdigestErrCutRange, kAfterKey);
  ExpectError({"TDIGEST.TRIMMED_MEAN", "k", "-1", "0.5"}, kTdigestErrCutRange, kAfterKey);
  ExpectError({"TDIGEST.TRIMMED_MEAN", "k", "0.5", "0.5"}, kTdigestErrCutOrder, kAfterKey);
  ExpectError({"TDIGEST.TRIMMED_MEAN", "k", "0.6", "0.5"}, kTdigestErrCutOrder, kAfterKey);
}

TEST(TdigestArgsTest, MergeNumkeys) {
  ExpectError({"TDIGEST.MERGE", "d", "x", "a"}, kTdigestErrParseNumkeys, kAfterKey);
  ExpectError({"TDIGEST.MERGE", "d", "1.0", "a"}, kTdigestErrParseNumkeys, kAfterKey);
  ExpectError({"TDIGEST.MERGE", "d", "", "a"}, kTdigestErrParseNumkeys, kAfterKey);
  ExpectError({"TDIGEST.MERGE", "d", "9223372036854775808", "a"}, kTdigestErrParseNumkeys,
              kAfterKey);
  ExpectError({"TDIGEST.MERGE", "d", "0", "a"}, kTdigestErrNumkeysPositive, kAfterKey);
  ExpectError({"TDIGEST.MERGE", "d", "-3", "a"}, kTdigestErrNumkeysPositive, kAfterKey);
  // More sources than arguments: an arity error, but after dest's type check.
  ExpectError({"TDIGEST.MERGE", "d", "2", "a"},
              "-ERR wrong number of arguments for 'tdigest.merge' command\r\n", kAfterKey);
  ExpectError({"TDIGEST.MERGE", "d", "9223372036854775807", "a"},
              "-ERR wrong number of arguments for 'tdigest.merge' command\r\n", kAfterKey);
}

TEST(TdigestArgsTest, MergeTail) {
  Parsed p = Parse({"TDIGEST.MERGE", "d", "2", "a", "b"});
  EXPECT_EQ(p.error, "");
  EXPECT_EQ(p.req.key, "d");
  EXPECT_EQ(p.req.sources, (std::vector<std::string_view>{"a", "b"}));
  EXPECT_FALSE(p.req.has_compression);
  EXPECT_FALSE(p.req.override_dest);
  // Keywords inside the numkeys positions are source names.
  p = Parse({"TDIGEST.MERGE", "d", "2", "a", "OVERRIDE"});
  EXPECT_EQ(p.error, "");
  EXPECT_FALSE(p.req.override_dest);
  ExpectError({"TDIGEST.MERGE", "d", "2", "a", "COMPRESSION", "10"}, kTdigestErrWrongKeyword,
              kAfterKey);
  ExpectError({"TDIGEST.MERGE", "d", "1", "a", "b"}, kTdigestErrWrongKeyword, kAfterKey);
  ExpectError({"TDIGEST.MERGE", "d", "1", "a", "COMPRESSIONS", "5"}, kTdigestErrWrongKeyword,
              kAfterKey);
  ExpectError({"TDIGEST.MERGE", "d", "1", "a", "COMPRESSION"},
              "-ERR wrong number of arguments for 'tdigest.merge' command\r\n", kAfterKey);
  ExpectError({"TDIGEST.MERGE", "d", "1", "a", "OVERRIDE", "COMPRESSION"},
              "-ERR wrong number of arguments for 'tdigest.merge' command\r\n", kAfterKey);
  ExpectError({"TDIGEST.MERGE", "d", "1", "a", "COMPRESSION", "OVERRIDE"},
              kTdigestErrParseCompression, kAfterKey);
  ExpectError({"TDIGEST.MERGE", "d", "1", "a", "COMPRESSION", "2.5"}, kTdigestErrParseCompression,
              kAfterKey);
  ExpectError({"TDIGEST.MERGE", "d", "1", "a", "COMPRESSION", "0"}, kTdigestErrCompressionPositive,
              kAfterKey);
  // Too large a compression is checked after the sources (TdigestCompressionFits).
  p = Parse({"TDIGEST.MERGE", "d", "1", "a", "COMPRESSION", "9223372036854775807"});
  EXPECT_EQ(p.error, "");
  EXPECT_FALSE(TdigestCompressionFits(p.req.compression));
  // One keyword present: other words are ignored.
  p = Parse({"TDIGEST.MERGE", "d", "1", "a", "override", "junk", "more"});
  EXPECT_EQ(p.error, "");
  EXPECT_TRUE(p.req.override_dest);
  p = Parse({"TDIGEST.MERGE", "d", "1", "a", "junk", "compression", "9", "junk"});
  EXPECT_EQ(p.error, "");
  EXPECT_TRUE(p.req.has_compression);
  EXPECT_EQ(p.req.compression, 9);
}

TEST(TdigestArgsTest, MergeCompressionChoice) {
  Tdigest dest = NewTdigest(40);
  TdigestRequest req;
  EXPECT_EQ(TdigestMergeCompression(req, &dest, {100, 50}), 40);      // dest's
  EXPECT_EQ(TdigestMergeCompression(req, nullptr, {100, 150}), 150);  // max of the sources
  req.override_dest = true;
  EXPECT_EQ(TdigestMergeCompression(req, &dest, {100, 50}), 100);
  req.has_compression = true;
  req.compression = 9;
  EXPECT_EQ(TdigestMergeCompression(req, &dest, {100, 50}), 9);
  req.override_dest = false;
  EXPECT_EQ(TdigestMergeCompression(req, nullptr, {100}), 9);
}

TEST(TdigestArgsTest, ErrorStringsVerbatim) {
  EXPECT_EQ(kTdigestErrKeyMissing, "-ERR T-Digest: key does not exist\r\n");
  EXPECT_EQ(kTdigestErrWrongType,
            "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
  EXPECT_EQ(kTdigestErrCutRange,
            "-ERR T-Digest: low_cut_percentile and high_cut_percentile should be in [0,1]\r\n");
  EXPECT_EQ(kTdigestTypeName, "TDIS-TYPE");
}

}  // namespace
}  // namespace bloomproxy::filters
