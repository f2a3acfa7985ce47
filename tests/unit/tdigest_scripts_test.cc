// What the C++ sends to the TDIGEST scripts (filters/tdigest/tdigest_scripts.h), not the Lua
// text: ADD's 16-byte nodes, its smallest and largest value as the library's strict comparisons
// leave them and its counts; the reads' op names and 8-byte doubles (BYRANK's ranks as C's
// (double)); CREATE's check / create; MERGE's keys and arguments; EVALSHA, or EVAL with the body;
// and the largest compression sketch-max-bytes and Redis's 512 MB strings allow.
#include "filters/tdigest/tdigest_scripts.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "filters/common/key_layout.h"
#include "filters/tdigest/tdigest.h"
#include "filters/tdigest/tdigest_add.lua.h"
#include "filters/tdigest/tdigest_args.h"
#include "filters/tdigest/tdigest_create.lua.h"
#include "filters/tdigest/tdigest_merge.lua.h"
#include "filters/tdigest/tdigest_read.lua.h"

namespace bloomproxy::filters {
namespace {

using Args = std::vector<std::string>;

template <typename T>
std::string Bytes(T v) {
  char out[sizeof v];
  std::memcpy(out, &v, sizeof v);
  return std::string(out, sizeof v);
}

std::string Doubles(const std::vector<double>& values) {
  std::string out;
  for (double d : values) out += Bytes(d);
  return out;
}

double DoubleOf(std::string_view bytes) {
  EXPECT_EQ(bytes.size(), 8u);
  double d = 0;
  if (bytes.size() == 8) std::memcpy(&d, bytes.data(), 8);
  return d;
}

// Bit-for-bit equality (tells -0 from 0).
bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

bool IsId(std::string_view s) {
  if (s.size() != 16) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// The multibulk requests in `in`, split into their arguments.
std::vector<Args> ParseRequests(std::string_view in) {
  std::vector<Args> out;
  size_t pos = 0;
  auto number = [&]() {
    const size_t eol = in.find("\r\n", pos);
    const size_t n = std::stoul(std::string(in.substr(pos + 1, eol - pos - 1)));
    pos = eol + 2;
    return n;
  };
  while (pos < in.size()) {
    EXPECT_EQ(in[pos], '*');
    const size_t n = number();
    Args args;
    for (size_t i = 0; i < n; ++i) {
      EXPECT_EQ(in[pos], '$');
      const size_t len = number();
      args.emplace_back(in.substr(pos, len));
      pos += len + 2;
    }
    out.push_back(std::move(args));
  }
  return out;
}

// A request parsed from `args` (kept alive by the caller).
TdigestRequest Parse(const std::vector<std::string>& args) {
  const std::vector<std::string_view> views(args.begin(), args.end());
  TdigestRequest request;
  EXPECT_EQ(ParseTdigestRequest(views, &request), "") << args[0];
  return request;
}

// ---------------------------------------------------------------------------------------------
// ADD.

TEST(TdigestScriptsTest, AddSendsSixteenByteNodesTheBoundsAndTheCounts) {
  const TdigestCall call = TdigestAddCall({1.5, -2, 1e308, 0.25}, {1, 3});
  EXPECT_EQ(call.script, &lua::kTdigestAdd);
  ASSERT_EQ(call.argv.size(), 6u);
  EXPECT_EQ(call.argv[0], "add");
  const std::string one = Bytes(int64_t{1});
  EXPECT_EQ(one, std::string("\x01\0\0\0\0\0\0\0", 8));
  EXPECT_EQ(call.argv[1],
            Bytes(1.5) + one + Bytes(-2.0) + one + Bytes(1e308) + one + Bytes(0.25) + one);
  EXPECT_EQ(DoubleOf(call.argv[2]), -2);
  EXPECT_EQ(DoubleOf(call.argv[3]), 1e308);
  EXPECT_EQ(call.argv[4], "1");
  EXPECT_EQ(call.argv[5], "3");
}

TEST(TdigestScriptsTest, AddOfOneValueHasItAsBothBounds) {
  const TdigestCall call = TdigestAddCall({-DBL_MAX}, {1});
  ASSERT_EQ(call.argv.size(), 5u);
  EXPECT_EQ(call.argv[1], Bytes(-DBL_MAX) + Bytes(int64_t{1}));
  EXPECT_EQ(DoubleOf(call.argv[2]), -DBL_MAX);
  EXPECT_EQ(DoubleOf(call.argv[3]), -DBL_MAX);
  const TdigestCall top = TdigestAddCall({DBL_MAX}, {1});
  EXPECT_EQ(DoubleOf(top.argv[2]), DBL_MAX);
  EXPECT_EQ(DoubleOf(top.argv[3]), DBL_MAX);
}

// `if (x < min) min = x; if (x > max) max = x;`: of equal values, the first one stays.
TEST(TdigestScriptsTest, AddBoundsKeepTheFirstOfEqualValuesAsTheLibraryDoes) {
  const TdigestCall minus_first = TdigestAddCall({-0.0, 0.0}, {2});
  EXPECT_TRUE(SameBits(DoubleOf(minus_first.argv[2]), -0.0));
  EXPECT_TRUE(SameBits(DoubleOf(minus_first.argv[3]), -0.0));
  const TdigestCall plus_first = TdigestAddCall({0.0, -0.0}, {1, 1});
  EXPECT_TRUE(SameBits(DoubleOf(plus_first.argv[2]), 0.0));
  EXPECT_TRUE(SameBits(DoubleOf(plus_first.argv[3]), 0.0));
  // The nodes keep each value's own sign.
  EXPECT_EQ(plus_first.argv[1], Bytes(0.0) + Bytes(int64_t{1}) + Bytes(-0.0) + Bytes(int64_t{1}));
  // A smaller value after -0 replaces it; an equal one does not.
  const TdigestCall mixed = TdigestAddCall({5, -0.0, 3, 0.0, -1, 7, 7.0}, {7});
  EXPECT_EQ(DoubleOf(mixed.argv[2]), -1);
  EXPECT_EQ(DoubleOf(mixed.argv[3]), 7);
  const TdigestCall zeros = TdigestAddCall({1, -0.0, 0.0, 2}, {4});
  EXPECT_TRUE(SameBits(DoubleOf(zeros.argv[2]), -0.0));
  const TdigestCall zeros2 = TdigestAddCall({1, 0.0, -0.0, 2}, {4});
  EXPECT_TRUE(SameBits(DoubleOf(zeros2.argv[2]), 0.0));
  const TdigestCall tops = TdigestAddCall({-1, 0.0, -0.0}, {3});
  EXPECT_TRUE(SameBits(DoubleOf(tops.argv[3]), 0.0));
  const TdigestCall tops2 = TdigestAddCall({-1, -0.0, 0.0}, {3});
  EXPECT_TRUE(SameBits(DoubleOf(tops2.argv[3]), -0.0));
}

TEST(TdigestScriptsTest, AddCountsOnePerCommandInOrder) {
  std::vector<double> values(10, 1);
  const TdigestCall call = TdigestAddCall(values, {2, 1, 5, 2});
  EXPECT_EQ(call.argv[1].size(), 160u);
  EXPECT_EQ(Args(call.argv.begin() + 4, call.argv.end()), (Args{"2", "1", "5", "2"}));
}

TEST(TdigestScriptsTest, ResetAndCheckCalls) {
  const TdigestCall reset = TdigestResetCall();
  EXPECT_EQ(reset.script, &lua::kTdigestAdd);
  EXPECT_EQ(reset.argv, Args{"reset"});
  const TdigestCall check = TdigestCheckCall();
  EXPECT_EQ(check.script, &lua::kTdigestRead);
  EXPECT_EQ(check.argv, Args{"check"});
}

// ---------------------------------------------------------------------------------------------
// CREATE.

TEST(TdigestScriptsTest, CreateMakesANewIdAndSendsTheCompression) {
  const TdigestCall call = TdigestCreateCall(100, false);
  EXPECT_EQ(call.script, &lua::kTdigestCreate);
  ASSERT_EQ(call.argv.size(), 3u);
  EXPECT_EQ(call.argv[0], "create");
  EXPECT_TRUE(IsId(call.argv[1])) << call.argv[1];
  EXPECT_EQ(call.argv[2], "100");
  const TdigestCall other = TdigestCreateCall(5592403, false);
  EXPECT_NE(other.argv[1], call.argv[1]);
  EXPECT_EQ(other.argv[2], "5592403");
  const TdigestCall check = TdigestCreateCall(100, true);
  EXPECT_EQ(check.script, &lua::kTdigestCreate);
  EXPECT_EQ(check.argv, Args{"check"});
}

// ---------------------------------------------------------------------------------------------
// Reads.

TEST(TdigestScriptsTest, ReadOpNamesAndDoubles) {
  struct Want {
    Args args;
    std::string op;
    std::vector<double> doubles;
  };
  const std::vector<Want> wants = {
      {{"TDIGEST.MIN", "t"}, "header", {}},
      {{"TDIGEST.MAX", "t"}, "header", {}},
      {{"TDIGEST.INFO", "t"}, "header", {}},
      {{"TDIGEST.QUANTILE", "t", "0", "0.1", "1"}, "quantile", {0, 0.1, 1}},
      {{"TDIGEST.CDF", "t", "-inf", "-0", "3.5"}, "cdf", {-INFINITY, -0.0, 3.5}},
      {{"TDIGEST.TRIMMED_MEAN", "t", "0.1", "0.9"}, "trimmed", {0.1, 0.9}},
      {{"tdigest.rank", "t", "inf", "1e308"}, "rank", {INFINITY, 1e308}},
      {{"TDIGEST.REVRANK", "t", "-2"}, "revrank", {-2}},
      {{"TDIGEST.BYRANK", "t", "0", "7"}, "byrank", {0, 7}},
      {{"TDIGEST.BYREVRANK", "t", "3"}, "byrevrank", {3}},
  };
  for (const Want& w : wants) {
    const TdigestCall call = TdigestReadCall(Parse(w.args));
    EXPECT_EQ(call.script, &lua::kTdigestRead) << w.args[0];
    ASSERT_EQ(call.argv.size(), 2u) << w.args[0];
    EXPECT_EQ(call.argv[0], w.op);
    EXPECT_EQ(call.argv[1], Doubles(w.doubles)) << w.args[0];
  }
  // -0 goes with its sign.
  const TdigestCall cdf = TdigestReadCall(Parse({"TDIGEST.CDF", "t", "-0"}));
  EXPECT_EQ(cdf.argv[1], Bytes(-0.0));
}

TEST(TdigestScriptsTest, ByRankRanksGoAsCsDoubleOfThem) {
  // Past 2^53 the cast rounds to nearest even, as C's (double) does.
  const Args args = {"TDIGEST.BYRANK",      "t", "9007199254740993", "9007199254740995",
                     "9223372036854775807", "1"};
  const TdigestCall call = TdigestReadCall(Parse(args));
  EXPECT_EQ(call.argv[1],
            Doubles({9007199254740992.0, 9007199254740996.0, 9223372036854775808.0, 1.0}));
  const TdigestCall rev = TdigestReadCall(Parse({"TDIGEST.BYREVRANK", "t", "9223372036854775807"}));
  EXPECT_EQ(rev.argv[1], Bytes(9223372036854775808.0));
}

// ---------------------------------------------------------------------------------------------
// EVALSHA, EVAL.

TEST(TdigestScriptsTest, CallIsEvalshaThenEvalWithTheBody) {
  const TdigestCall call = TdigestResetCall();
  for (protocol::UpstreamKind upstream :
       {protocol::UpstreamKind::kRedis, protocol::UpstreamKind::kShardingProxy}) {
    std::string out;
    AppendTdigestCall(&out, "t", call, false, upstream);
    AppendTdigestCall(&out, "t", call, true, upstream);
    const std::vector<Args> requests = ParseRequests(out);
    ASSERT_EQ(requests.size(), 2u);
    const std::string prefix = DataKeyPrefix("t");
    EXPECT_EQ(prefix, "{t}");
    EXPECT_EQ(requests[0], (Args{"EVALSHA", std::string(lua::kTdigestAdd.sha1), "1", "t",
                                 "{t}:td:m:t", "{t}", "reset"}));
    EXPECT_EQ(requests[1], (Args{"EVAL", std::string(lua::kTdigestAdd.body), "1", "t", "{t}:td:m:t",
                                 "{t}", "reset"}));
  }
}

TEST(TdigestScriptsTest, ReadsGoAsEvalshaNeverEvalshaRo) {
  // Reads may compress the digest and write it back.
  const TdigestCall call = TdigestReadCall(Parse({"TDIGEST.QUANTILE", "t", "0.5"}));
  std::string out;
  AppendTdigestCall(&out, "t", call, false, protocol::UpstreamKind::kRedis);
  AppendTdigestCall(&out, "t", call, true, protocol::UpstreamKind::kRedis);
  const std::vector<Args> requests = ParseRequests(out);
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0][0], "EVALSHA");
  EXPECT_EQ(requests[0][1], lua::kTdigestRead.sha1);
  EXPECT_EQ(requests[1][0], "EVAL");
  EXPECT_EQ(requests[1][1], lua::kTdigestRead.body);
  EXPECT_EQ(Args(requests[0].begin() + 2, requests[0].end()),
            (Args{"1", "t", "{t}:td:m:t", "{t}", "quantile", Bytes(0.5)}));
}

TEST(TdigestScriptsTest, CallKeysFollowTheNamesHashTag) {
  std::string out;
  AppendTdigestCall(&out, "{user}:lat", TdigestCheckCall(), false, protocol::UpstreamKind::kRedis);
  const std::vector<Args> requests = ParseRequests(out);
  ASSERT_EQ(requests.size(), 1u);
  const std::string prefix = DataKeyPrefix("{user}:lat");
  EXPECT_EQ(requests[0], (Args{"EVALSHA", std::string(lua::kTdigestRead.sha1), "1", "{user}:lat",
                               TdigestMarkerKey(prefix, "{user}:lat"), prefix, "check"}));
  EXPECT_EQ(TdigestMarkerKey("{t}", "t"), "{t}:td:m:t");
}

// ---------------------------------------------------------------------------------------------
// MERGE.

TEST(TdigestScriptsTest, MergeKeysThenIdCompressionOverrideLimitAndEachKeysMarkerAndPrefix) {
  const Args args = {"TDIGEST.MERGE", "d", "2", "a", "{x}b", "COMPRESSION", "50", "OVERRIDE"};
  const TdigestRequest request = Parse(args);
  TdigestConfig config;
  config.max_bytes = 240 + 96 * 1000;
  std::string out;
  AppendTdigestMerge(&out, request, config, false);
  const std::vector<Args> requests = ParseRequests(out);
  ASSERT_EQ(requests.size(), 1u);
  const Args& r = requests[0];
  ASSERT_EQ(r.size(), 16u);
  EXPECT_EQ(r[0], "EVALSHA");
  EXPECT_EQ(r[1], lua::kTdigestMerge.sha1);
  EXPECT_EQ(r[2], "3");
  EXPECT_EQ(Args(r.begin() + 3, r.begin() + 6), (Args{"d", "a", "{x}b"}));
  EXPECT_TRUE(IsId(r[6])) << r[6];
  EXPECT_EQ(r[7], "50");
  EXPECT_EQ(r[8], "1");
  EXPECT_EQ(r[9], "1000");
  EXPECT_EQ(Args(r.begin() + 10, r.end()),
            (Args{"{d}:td:m:d", "{d}", "{a}:td:m:a", "{a}", "{x}b:td:m:{x}b", "{x}b"}));
  EXPECT_EQ(DataKeyPrefix("{x}b"), "{x}b");
}

TEST(TdigestScriptsTest, MergeWithoutOptionsSendsEmptyCompressionAndNoOverride) {
  const Args args = {"TDIGEST.MERGE", "d", "3", "a", "a", "d"};
  const TdigestRequest request = Parse(args);
  TdigestConfig config;
  std::string out;
  AppendTdigestMerge(&out, request, config, true);
  const std::vector<Args> requests = ParseRequests(out);
  ASSERT_EQ(requests.size(), 1u);
  const Args& r = requests[0];
  ASSERT_EQ(r.size(), 19u);
  EXPECT_EQ(r[0], "EVAL");
  EXPECT_EQ(r[1], lua::kTdigestMerge.body);
  EXPECT_EQ(r[2], "4");
  // Repeated sources and dest as a source are kept, in argument order.
  EXPECT_EQ(Args(r.begin() + 3, r.begin() + 7), (Args{"d", "a", "a", "d"}));
  EXPECT_TRUE(IsId(r[7]));
  EXPECT_EQ(r[8], "");
  EXPECT_EQ(r[9], "0");
  EXPECT_EQ(r[10], std::to_string(TdigestMaxCompression(config)));
  EXPECT_EQ(Args(r.begin() + 11, r.end()), (Args{"{d}:td:m:d", "{d}", "{a}:td:m:a", "{a}",
                                                 "{a}:td:m:a", "{a}", "{d}:td:m:d", "{d}"}));
}

TEST(TdigestScriptsTest, MergeOverrideAloneAndCompressionAlone) {
  {
    const Args args = {"TDIGEST.MERGE", "d", "1", "a", "override"};
    std::string out;
    AppendTdigestMerge(&out, Parse(args), TdigestConfig{}, false);
    const Args r = ParseRequests(out).at(0);
    EXPECT_EQ(r[6], "");
    EXPECT_EQ(r[7], "1");
  }
  {
    const Args args = {"TDIGEST.MERGE", "d", "1", "a", "COMPRESSION", "100000"};
    std::string out;
    AppendTdigestMerge(&out, Parse(args), TdigestConfig{}, false);
    const Args r = ParseRequests(out).at(0);
    EXPECT_EQ(r[6], "100000");
    EXPECT_EQ(r[7], "0");
  }
}

// ---------------------------------------------------------------------------------------------
// The largest compression.

int64_t MaxFor(uint64_t max_bytes) {
  TdigestConfig config;
  config.max_bytes = max_bytes;
  return TdigestMaxCompression(config);
}

TEST(TdigestScriptsTest, MaxCompressionKeepsInfosMemoryUsageWithinSketchMaxBytes) {
  // 80 + 16 * (6C + 10) = 240 + 96C.
  EXPECT_EQ(MaxFor(9840), 100);
  EXPECT_EQ(MaxFor(9839), 99);
  EXPECT_EQ(MaxFor(9840 + 95), 100);
  EXPECT_EQ(MaxFor(336), 1);
  EXPECT_EQ(MaxFor(335), 0);
  EXPECT_EQ(MaxFor(240), 0);
  EXPECT_EQ(MaxFor(239), 0);
  EXPECT_EQ(MaxFor(0), 0);
  for (uint64_t bytes : {uint64_t{336}, uint64_t{9840}, uint64_t{1} << 20, uint64_t{12345678}}) {
    const int64_t c = MaxFor(bytes);
    EXPECT_LE(static_cast<uint64_t>(TdigestMemoryUsage(c)), bytes) << bytes;
    EXPECT_GT(static_cast<uint64_t>(TdigestMemoryUsage(c + 1)), bytes) << bytes;
  }
}

TEST(TdigestScriptsTest, MaxCompressionKeepsTheDataKeyWithinRedissStrings) {
  // 56 + 16 * (6C + 9) <= 512 MB: C <= 5592403.
  constexpr uint64_t kMaxString = uint64_t{512} * 1024 * 1024;
  const int64_t c = 5592403;
  EXPECT_LE(56 + 16 * (6 * static_cast<uint64_t>(c) + 9), kMaxString);
  EXPECT_GT(56 + 16 * (6 * static_cast<uint64_t>(c + 1) + 9), kMaxString);
  EXPECT_EQ(MaxFor(uint64_t{1} << 47), c);  // the default sketch-max-bytes
  EXPECT_EQ(TdigestMaxCompression(TdigestConfig{}), c);
  EXPECT_EQ(MaxFor(UINT64_MAX), c);
  EXPECT_EQ(MaxFor(static_cast<uint64_t>(TdigestMemoryUsage(c))), c);
  EXPECT_EQ(MaxFor(static_cast<uint64_t>(TdigestMemoryUsage(c)) - 1), c - 1);
  // Far below RedisBloom's own limit.
  EXPECT_LT(static_cast<double>(c), kTdigestMaxCompression);
}

}  // namespace
}  // namespace bloomproxy::filters
