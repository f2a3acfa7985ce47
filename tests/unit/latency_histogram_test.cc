// LATENCY HISTOGRAM's entries for the commands the proxy answers itself, joined to the
// upstream's reply as Redis would have written them.
#include "protocol/latency_histogram.h"

#include <gtest/gtest.h>

#include <string>

namespace bloomproxy::protocol {
namespace {

std::string Resp2Entry(const std::string& name, int calls, const std::string& buckets, int n) {
  return "$" + std::to_string(name.size()) + "\r\n" + name +
         "\r\n*4\r\n$5\r\ncalls\r\n:" + std::to_string(calls) + "\r\n$14\r\nhistogram_usec\r\n*" +
         std::to_string(2 * n) + "\r\n" + buckets;
}

TEST(LatencyHistogram, BucketsAsRedisReportsThem) {
  // HdrHistogram with 2 significant figures, buckets doubling from 1024 ns.
  EXPECT_EQ(LatencyBucketMicros(0), 1);
  EXPECT_EQ(LatencyBucketMicros(1), 2);
  EXPECT_EQ(LatencyBucketMicros(3), 8);
  EXPECT_EQ(LatencyBucketMicros(5), 33);
  EXPECT_EQ(LatencyBucketMicros(6), 66);
  EXPECT_EQ(LatencyBucketMicros(15), 33816);  // an EVAL of 33.6 ms, as Redis 7.0 reported it
  LatencyCounts c;
  c.Record(0);
  c.Record(1031);
  c.Record(1032);
  c.Record(uint64_t{1} << 62);
  EXPECT_EQ(c.calls, 4u);
  EXPECT_EQ(c.buckets[0], 2u);
  EXPECT_EQ(c.buckets[1], 1u);
  EXPECT_EQ(c.buckets[LatencyCounts::kBuckets - 1], 1u);
}

TEST(LatencyHistogram, NamesAskForCommandsAndTheirContainers) {
  EXPECT_TRUE(LatencyHistogramAsks({}, "client|id"));
  EXPECT_TRUE(LatencyHistogramAsks({"CLIENT"}, "client|id"));
  EXPECT_TRUE(LatencyHistogramAsks({"set", "Client|ID"}, "client|id"));
  EXPECT_FALSE(LatencyHistogramAsks({"client|list"}, "client|id"));
  EXPECT_FALSE(LatencyHistogramAsks({"clien"}, "client|id"));
  EXPECT_FALSE(LatencyHistogramAsks({"ping|x"}, "ping"));
  EXPECT_TRUE(LatencyHistogramAsks({"PING"}, "ping"));
}

TEST(LatencyHistogram, LocalEntriesJoinTheUpstreamsInEitherProtocol) {
  ReplyDecoder decoder;
  LatencyTable local;
  local["client|id"].Record(500);
  local["ping"].Record(1500);
  local["unasked"].Record(1);
  local["never"];  // no call: not listed
  const std::string upstream = "*4\r\n" + Resp2Entry("set", 2, ":1\r\n:1\r\n:8\r\n:2\r\n", 2) +
                               Resp2Entry("ping", 2, ":1\r\n:1\r\n:2\r\n:2\r\n", 2);
  const std::vector<std::string_view> asks = {"set", "client", "ping"};
  EXPECT_EQ(MergeLatencyHistogram(upstream, local, asks, Resp::k2, &decoder),
            "*6\r\n" + Resp2Entry("set", 2, ":1\r\n:1\r\n:8\r\n:2\r\n", 2) +
                Resp2Entry("ping", 3, ":1\r\n:1\r\n:2\r\n:3\r\n", 2) +
                Resp2Entry("client|id", 1, ":1\r\n:1\r\n", 1));
  // RESP3: maps, as Redis writes them to a RESP3 client.
  const std::string resp3 =
      "%1\r\n$3\r\nset\r\n%2\r\n$5\r\ncalls\r\n:1\r\n$14\r\nhistogram_usec\r\n%1\r\n:4\r\n:1\r\n";
  EXPECT_EQ(MergeLatencyHistogram(resp3, local, {"set", "client|id"}, Resp::k3, &decoder),
            "%2\r\n$3\r\nset\r\n%2\r\n$5\r\ncalls\r\n:1\r\n$14\r\nhistogram_usec\r\n%1\r\n:4\r\n"
            ":1\r\n$9\r\nclient|id\r\n%2\r\n$5\r\ncalls\r\n:1\r\n$14\r\nhistogram_usec\r\n%1\r\n"
            ":1\r\n:1\r\n");
}

TEST(LatencyHistogram, OtherRepliesPassAsTheyAre) {
  ReplyDecoder decoder;
  LatencyTable local;
  local["ping"].Record(1);
  const std::string error = "-ERR wrong number of arguments for 'latency|histogram' command\r\n";
  EXPECT_EQ(MergeLatencyHistogram(error, local, {}, Resp::k2, &decoder), error);
  // Nothing of the proxy's asked for: the upstream's bytes.
  const std::string upstream = "*2\r\n" + Resp2Entry("set", 1, ":4\r\n:1\r\n", 1);
  EXPECT_EQ(MergeLatencyHistogram(upstream, local, {"set"}, Resp::k2, &decoder), upstream);
  EXPECT_EQ(MergeLatencyHistogram("*0\r\n", {}, {}, Resp::k2, &decoder), "*0\r\n");
}

}  // namespace
}  // namespace bloomproxy::protocol
