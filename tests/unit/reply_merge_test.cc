// MergeReplies folds per-master replies into one; the SCAN cursor walks the masters in turn.
// Part replies are shaped as a Redis 7.0.15 cluster node sent them (KEYS, SCAN, SCRIPT EXISTS,
// RANDOMKEY, errors).
#include "protocol/reply_merge.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "protocol/encoder.h"

namespace bloomproxy::protocol {
namespace {

using Parts = std::vector<std::string_view>;
using namespace std::string_literals;

const std::string kOom = "-OOM command not allowed when used memory > 'maxmemory'.\r\n";
const std::string kLoading = "-LOADING Redis is loading the dataset in memory\r\n";

std::string Bulk(std::string_view s) {
  std::string out;
  AppendBulk(&out, s);
  return out;
}

TEST(MergeByPositionTest, MgetAcrossThreePartsInterleavedWithNils) {
  // MGET a b c d e f g with a, d, g on master 0, b, e on master 1, c, f on master 2.
  const std::string p0 = "*3\r\n$1\r\nA\r\n$-1\r\n$1\r\nG\r\n";
  const std::string p1 = "*2\r\n$0\r\n\r\n$5\r\nE\r\n\0x\r\n"s;  // binary-safe: CR LF NUL
  const std::string p2 = "*2\r\n$-1\r\n$2\r\nFF\r\n";
  EXPECT_EQ(MergeReplies(Merge::kByPosition, Parts{p0, p1, p2}, {{0, 3, 6}, {1, 4}, {2, 5}}, 7),
            "*7\r\n$1\r\nA\r\n$0\r\n\r\n$-1\r\n$-1\r\n$5\r\nE\r\n\0x\r\n$2\r\nFF\r\n$1\r\nG\r\n"s);
}

TEST(MergeByPositionTest, OnePartAndUnfilledPlaces) {
  EXPECT_EQ(MergeReplies(Merge::kByPosition, Parts{"*2\r\n$1\r\nx\r\n$1\r\ny\r\n"}, {{1, 0}}, 2),
            "*2\r\n$1\r\ny\r\n$1\r\nx\r\n");
  // A place that no part fills stays nil.
  EXPECT_EQ(MergeReplies(Merge::kByPosition, Parts{"*1\r\n$1\r\nx\r\n"}, {{2}}, 3),
            "*3\r\n$-1\r\n$-1\r\n$1\r\nx\r\n");
  EXPECT_EQ(MergeReplies(Merge::kByPosition, Parts{}, {}, 2), "*2\r\n$-1\r\n$-1\r\n");
}

TEST(MergeByPositionTest, FirstErrorInPartOrderWins) {
  const std::string ok = "*1\r\n$1\r\nx\r\n";
  EXPECT_EQ(MergeReplies(Merge::kByPosition, Parts{ok, kLoading, kOom}, {{0}, {1}, {2}}, 3),
            kLoading);
  EXPECT_EQ(MergeReplies(Merge::kByPosition, Parts{ok, ok, kOom}, {{0}, {1}, {2}}, 3), kOom);
  // An error beats an earlier malformed part: the command failed on a server.
  EXPECT_EQ(MergeReplies(Merge::kByPosition, Parts{":1\r\n", kOom}, {{0}, {1}}, 2), kOom);
}

TEST(MergeByPositionTest, SurprisingPartsAreReturnedAsTheyAre) {
  const std::string ok = "*1\r\n$1\r\nx\r\n";
  // Fewer elements than positions.
  EXPECT_EQ(MergeReplies(Merge::kByPosition, Parts{ok, ok}, {{0}, {1, 2}}, 3), ok);
  // Not an array, a nil array, trailing bytes, a truncated array.
  for (const std::string part :
       {":1\r\n", "*-1\r\n", "*1\r\n$1\r\ny\r\n+OK\r\n", "*2\r\n$1\r\ny\r\n", "+OK\r\n"}) {
    EXPECT_EQ(MergeReplies(Merge::kByPosition, Parts{ok, part}, {{0}, {1}}, 2), part) << part;
  }
  // A position outside the array, a part without positions.
  EXPECT_EQ(MergeReplies(Merge::kByPosition, Parts{ok}, {{5}}, 2), ok);
  EXPECT_EQ(MergeReplies(Merge::kByPosition, Parts{ok, ok}, {{0}}, 2), ok);
}

TEST(MergeAllOkTest, MsetSucceedsOnlyWhenEveryPartDid) {
  EXPECT_EQ(MergeReplies(Merge::kAllOk, Parts{"+OK\r\n", "+OK\r\n", "+OK\r\n"}), "+OK\r\n");
  EXPECT_EQ(MergeReplies(Merge::kAllOk, Parts{"+OK\r\n", kOom, "+OK\r\n"}), kOom);
  EXPECT_EQ(MergeReplies(Merge::kAllOk, Parts{"+OK\r\n", kLoading, kOom}), kLoading);
  EXPECT_EQ(MergeReplies(Merge::kAllOk, Parts{"+OK\r\n", "+QUEUED\r\n"}), "+QUEUED\r\n");
  EXPECT_EQ(MergeReplies(Merge::kAllOk, Parts{}), "+OK\r\n");
}

TEST(MergeSumTest, AddsIntegers) {
  EXPECT_EQ(MergeReplies(Merge::kSum, Parts{":1\r\n", ":0\r\n", ":2\r\n"}), ":3\r\n");
  EXPECT_EQ(MergeReplies(Merge::kSum, Parts{":10\r\n"}), ":10\r\n");
  EXPECT_EQ(MergeReplies(Merge::kSum, Parts{}), ":0\r\n");
  EXPECT_EQ(MergeReplies(Merge::kSum, Parts{":4000000000\r\n", ":5000000000\r\n"}),
            ":9000000000\r\n");
  EXPECT_EQ(MergeReplies(Merge::kSum, Parts{":1\r\n", kOom}), kOom);
}

TEST(MergeSumTest, SurprisesAndOverflow) {
  EXPECT_EQ(MergeReplies(Merge::kSum, Parts{":1\r\n", "$1\r\n1\r\n"}), "$1\r\n1\r\n");
  EXPECT_EQ(MergeReplies(Merge::kSum, Parts{":1\r\n", ":x\r\n"}), ":x\r\n");
  EXPECT_EQ(MergeReplies(Merge::kSum, Parts{":1\r\n", ":2"}), ":2");
  EXPECT_EQ(MergeReplies(Merge::kSum, Parts{":9223372036854775807\r\n", ":1\r\n"}), ":1\r\n");
}

TEST(MergeMinTest, SmallestInteger) {
  EXPECT_EQ(MergeReplies(Merge::kMin, Parts{":2\r\n", ":1\r\n", ":3\r\n"}), ":1\r\n");
  EXPECT_EQ(MergeReplies(Merge::kMin, Parts{":0\r\n", ":5\r\n"}), ":0\r\n");
  EXPECT_EQ(MergeReplies(Merge::kMin, Parts{":5\r\n"}), ":5\r\n");
  EXPECT_EQ(MergeReplies(Merge::kMin, Parts{":5\r\n",
                                            "-ERR WAIT cannot be used with replica "
                                            "instances.\r\n"}),
            "-ERR WAIT cannot be used with replica instances.\r\n");
  EXPECT_EQ(MergeReplies(Merge::kMin, Parts{":5\r\n", "+OK\r\n"}), "+OK\r\n");
}

TEST(MergeConcatTest, KeysFromEveryMaster) {
  const std::string p0 = "*2\r\n$3\r\nk12\r\n$3\r\nk16\r\n";  // captured KEYS k1*
  const std::string p1 = "*0\r\n";
  const std::string p2 = "*1\r\n$2\r\nk1\r\n";
  EXPECT_EQ(MergeReplies(Merge::kConcat, Parts{p0, p1, p2}),
            "*3\r\n$3\r\nk12\r\n$3\r\nk16\r\n$2\r\nk1\r\n");
  EXPECT_EQ(MergeReplies(Merge::kConcat, Parts{p1, p1}), "*0\r\n");
  EXPECT_EQ(MergeReplies(Merge::kConcat, Parts{}), "*0\r\n");
  // Nested elements are kept whole.
  EXPECT_EQ(MergeReplies(Merge::kConcat, Parts{"*1\r\n*2\r\n:1\r\n$-1\r\n", "*1\r\n:2\r\n"}),
            "*2\r\n*2\r\n:1\r\n$-1\r\n:2\r\n");
  EXPECT_EQ(MergeReplies(Merge::kConcat, Parts{p0, kOom}), kOom);
  EXPECT_EQ(MergeReplies(Merge::kConcat, Parts{p0, "*-1\r\n"}), "*-1\r\n");
  EXPECT_EQ(MergeReplies(Merge::kConcat, Parts{p0, "*1\r\n"}), "*1\r\n");
}

TEST(MergeSameTest, FirstReplyUnlessAnyPartFailed) {
  EXPECT_EQ(MergeReplies(Merge::kSame, Parts{"+OK\r\n", "+OK\r\n"}), "+OK\r\n");
  const std::string sha = Bulk("e0e1f9fabfc9d4800c877a703b823ac0578ff8db");
  EXPECT_EQ(MergeReplies(Merge::kSame, Parts{sha, sha, sha}), sha);
  EXPECT_EQ(MergeReplies(Merge::kSame, Parts{"+OK\r\n", "+OK\r\n", kLoading}), kLoading);
  EXPECT_EQ(MergeReplies(Merge::kSame, Parts{}), "");
  EXPECT_EQ(MergeReplies(Merge::kNone, Parts{"$1\r\nv\r\n"}), "$1\r\nv\r\n");
  EXPECT_EQ(MergeReplies(Merge::kNone, Parts{kOom}), kOom);
}

TEST(MergeAllOneTest, ScriptExistsEverywhere) {
  EXPECT_EQ(
      MergeReplies(Merge::kAllOne, Parts{"*3\r\n:1\r\n:0\r\n:1\r\n", "*3\r\n:1\r\n:1\r\n:0\r\n",
                                         "*3\r\n:1\r\n:1\r\n:1\r\n"}),
      "*3\r\n:1\r\n:0\r\n:0\r\n");
  EXPECT_EQ(MergeReplies(Merge::kAllOne, Parts{"*2\r\n:0\r\n:0\r\n"}), "*2\r\n:0\r\n:0\r\n");
  EXPECT_EQ(MergeReplies(Merge::kAllOne, Parts{"*1\r\n:1\r\n", "*1\r\n:1\r\n"}), "*1\r\n:1\r\n");
  EXPECT_EQ(MergeReplies(Merge::kAllOne, Parts{}), "*0\r\n");
}

TEST(MergeAllOneTest, Surprises) {
  const std::string two = "*2\r\n:1\r\n:1\r\n";
  EXPECT_EQ(MergeReplies(Merge::kAllOne, Parts{two, "*1\r\n:1\r\n"}), "*1\r\n:1\r\n");
  EXPECT_EQ(MergeReplies(Merge::kAllOne, Parts{two, "*2\r\n:1\r\n$1\r\n1\r\n"}),
            "*2\r\n:1\r\n$1\r\n1\r\n");
  EXPECT_EQ(MergeReplies(Merge::kAllOne, Parts{two, ":1\r\n"}), ":1\r\n");
  EXPECT_EQ(MergeReplies(Merge::kAllOne, Parts{two, kOom}), kOom);
}

TEST(MergeFirstNonNilTest, RandomKey) {
  const std::string k23 = "$3\r\nk23\r\n";  // captured RANDOMKEY
  EXPECT_EQ(MergeReplies(Merge::kFirstNonNil, Parts{"$-1\r\n", k23, "$2\r\nk1\r\n"}), k23);
  EXPECT_EQ(MergeReplies(Merge::kFirstNonNil, Parts{"$2\r\nk1\r\n", k23}), "$2\r\nk1\r\n");
  EXPECT_EQ(MergeReplies(Merge::kFirstNonNil, Parts{"$-1\r\n", "$-1\r\n"}), "$-1\r\n");
  EXPECT_EQ(MergeReplies(Merge::kFirstNonNil, Parts{}), "$-1\r\n");
  EXPECT_EQ(MergeReplies(Merge::kFirstNonNil, Parts{"$0\r\n\r\n", k23}), "$0\r\n\r\n");
  EXPECT_EQ(MergeReplies(Merge::kFirstNonNil, Parts{k23, ":1\r\n"}), ":1\r\n");
  EXPECT_EQ(MergeReplies(Merge::kFirstNonNil, Parts{k23, "$3\r\nk2\r\n"}), "$3\r\nk2\r\n");
  EXPECT_EQ(MergeReplies(Merge::kFirstNonNil, Parts{"$-1\r\n", kOom}), kOom);
}

TEST(ScanCursorTest, EncodeDecodeRoundTrips) {
  EXPECT_EQ(EncodeScanCursor(0, 0), 0u);
  EXPECT_EQ(EncodeScanCursor(3, 0), 3u);
  EXPECT_EQ(EncodeScanCursor(2, 5), 5122u);
  EXPECT_EQ(EncodeScanCursor(kMaxScanNodes - 1, kMaxNodeScanCursor), UINT64_MAX);
  // Redis 7.4+ cluster cursors: a dict cursor shifted past the 14 slot bits.
  const uint64_t per_slot = (uint64_t{123456789} << 14) | 16383;
  const std::vector<uint64_t> node_cursors = {
      0, 1, 2, 1023, 1024, per_slot, 1ULL << 40, kMaxNodeScanCursor, kMaxNodeScanCursor - 1};
  for (const size_t index : {size_t{0}, size_t{1}, size_t{5}, size_t{1023}}) {
    for (const uint64_t c : node_cursors) {
      size_t back_index = 99999;
      uint64_t back_cursor = 7;
      DecodeScanCursor(EncodeScanCursor(index, c), &back_index, &back_cursor);
      EXPECT_EQ(back_index, index) << c;
      EXPECT_EQ(back_cursor, c) << index;
    }
  }
}

TEST(ScanCursorTest, ParsesLikeRedis) {
  // Each checked against redis-server 7.0.15's SCAN: accepted (replied *2) or "invalid cursor".
  const std::map<std::string, uint64_t> accepted = {
      {"0", 0},       {"007", 7},         {"+5", 5},
      {"", 0},        {"-1", UINT64_MAX}, {"18446744073709551615", UINT64_MAX},
      {"5122", 5122},
  };
  for (const auto& [arg, want] : accepted) {
    uint64_t c = 42;
    EXPECT_TRUE(ParseScanCursor(arg, &c)) << arg;
    EXPECT_EQ(c, want) << arg;
  }
  for (const std::string arg :
       {" 1", "1 ", "18446744073709551616", "-18446744073709551616", "1x", "x", "0x10"}) {
    uint64_t c = 42;
    EXPECT_FALSE(ParseScanCursor(arg, &c)) << arg;
    EXPECT_EQ(c, 42u) << arg;
  }
}

// A captured SCAN 0 COUNT 3 reply of one master.
const std::string kScanMiddle =
    "*2\r\n$1\r\n2\r\n*4\r\n$2\r\nk2\r\n$2\r\nk3\r\n$2\r\nk6\r\n$3\r\nk23\r\n";
const std::string kScanDone = "*2\r\n$1\r\n0\r\n*0\r\n";

TEST(RewriteScanReplyTest, CursorOfAMasterInTheMiddleOfItsScan) {
  EXPECT_EQ(RewriteScanReply(kScanMiddle, 1, 3),
            "*2\r\n$4\r\n2049\r\n*4\r\n$2\r\nk2\r\n$2\r\nk3\r\n$2\r\nk6\r\n$3\r\nk23\r\n");
  EXPECT_EQ(RewriteScanReply(kScanMiddle, 0, 1),
            "*2\r\n$4\r\n2048\r\n*4\r\n$2\r\nk2\r\n$2\r\nk3\r\n$2\r\nk6\r\n$3\r\nk23\r\n");
}

TEST(RewriteScanReplyTest, DoneMasterHandsOverToTheNext) {
  EXPECT_EQ(RewriteScanReply(kScanDone, 0, 3), "*2\r\n$1\r\n1\r\n*0\r\n");
  EXPECT_EQ(RewriteScanReply(kScanDone, 1, 3), "*2\r\n$1\r\n2\r\n*0\r\n");
  // The last master: the whole scan is over.
  EXPECT_EQ(RewriteScanReply(kScanDone, 2, 3), "*2\r\n$1\r\n0\r\n*0\r\n");
  EXPECT_EQ(RewriteScanReply(kScanDone, 0, 1), "*2\r\n$1\r\n0\r\n*0\r\n");
  // Keys found in the master's last step are kept.
  EXPECT_EQ(RewriteScanReply("*2\r\n$1\r\n0\r\n*1\r\n$1\r\nz\r\n", 1, 2),
            "*2\r\n$1\r\n0\r\n*1\r\n$1\r\nz\r\n");
}

TEST(RewriteScanReplyTest, LargeMasterCursors) {
  const std::string max = std::to_string(kMaxNodeScanCursor);
  EXPECT_EQ(RewriteScanReply("*2\r\n" + Bulk(max) + "*0\r\n", 1023, 1024),
            "*2\r\n$20\r\n18446744073709551615\r\n*0\r\n");
  const std::string too_large = std::to_string(kMaxNodeScanCursor + 1);
  const std::string reply = RewriteScanReply("*2\r\n" + Bulk(too_large) + "*0\r\n", 5, 6);
  EXPECT_EQ(reply, "-ERR bloomproxy: unexpected reply from upstream to SCAN of master 5: cursor " +
                       too_large + " is too large to combine with a master index\r\n");
}

TEST(RewriteScanReplyTest, OtherRepliesUntouched) {
  for (const std::string& reply : {
           std::string("-ERR invalid cursor\r\n"),
           kLoading,
           std::string("*2\r\n:1\r\n*0\r\n"),
           std::string("*2\r\n$1\r\nx\r\n*0\r\n"),
           std::string("*2\r\n$2\r\n+1\r\n*0\r\n"),
           std::string("*2\r\n$0\r\n\r\n*0\r\n"),
           std::string("*2\r\n$-1\r\n*0\r\n"),
           std::string("*2\r\n$20\r\n18446744073709551616\r\n*0\r\n"),
           std::string("*2\r\n$1\r\n2\r\n:1\r\n"),
           std::string("*2\r\n$1\r\n2\r\n*1\r\n"),
           std::string("*2\r\n$1\r\n2\r\n*0\r\n+extra\r\n"),
           std::string("*3\r\n$1\r\n2\r\n*0\r\n:1\r\n"),
           std::string("*2\r\n$1\r\n2\r\n"),
       }) {
    EXPECT_EQ(RewriteScanReply(reply, 1, 3), reply) << reply;
  }
}

TEST(RewriteScanReplyTest, ClientWalksEveryMasterOnce) {
  // Three masters whose SCAN takes 3, 1 and 2 steps; the client only ever sees the combined
  // cursor, and the walk visits each master's steps in order, then ends at 0.
  const std::vector<std::vector<uint64_t>> steps = {{17, 999999999999, 0}, {0}, {1ULL << 40, 0}};
  std::vector<size_t> pos(steps.size(), 0);
  std::vector<std::string> visited;
  uint64_t cursor = 0;
  for (int round = 0; round < 100; ++round) {
    size_t node = 0;
    uint64_t node_cursor = 0;
    DecodeScanCursor(cursor, &node, &node_cursor);
    ASSERT_LT(node, steps.size());
    // The master is asked from where its previous reply left off.
    const uint64_t expected_from = pos[node] == 0 ? 0 : steps[node][pos[node] - 1];
    ASSERT_EQ(node_cursor, expected_from);
    const uint64_t next = steps[node][pos[node]++];
    const std::string key = "m" + std::to_string(node) + "s" + std::to_string(pos[node]);
    const std::string reply =
        RewriteScanReply("*2\r\n" + Bulk(std::to_string(next)) + "*1\r\n" + Bulk(key), node, 3);
    ASSERT_EQ(reply.substr(0, 4), "*2\r\n");
    const size_t eol = reply.find("\r\n", 4);
    const size_t end = reply.find("\r\n", eol + 2);
    uint64_t client_cursor = 0;
    ASSERT_TRUE(ParseScanCursor(reply.substr(eol + 2, end - eol - 2), &client_cursor));
    EXPECT_EQ(reply.substr(end + 2), "*1\r\n" + Bulk(key));
    visited.push_back(key);
    cursor = client_cursor;
    if (cursor == 0) break;
  }
  EXPECT_EQ(visited, (std::vector<std::string>{"m0s1", "m0s2", "m0s3", "m1s1", "m2s1", "m2s2"}));
  EXPECT_EQ(cursor, 0u);
}

}  // namespace
}  // namespace bloomproxy::protocol
