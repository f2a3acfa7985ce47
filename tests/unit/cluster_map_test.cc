// ParseClusterSlots, CoversAllSlots, ParseRedirect, SplitHostPort and JoinHostPort, on replies
// captured from real Redis 7.0.15 clusters (a 3-master, 3-replica cluster made by
// `redis-cli --cluster create ... --cluster-replicas 1`, and a lone node with every slot).
#include "protocol/cluster_map.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace bloomproxy::protocol {
namespace {

// CLUSTER SLOTS of the 3+3 cluster once the replicas had synced (cluster-preferred-endpoint-type
// ip, no hostname announced): every node [ip, port, id, empty metadata].
const std::string kSixNodes =
    "*3\r\n"
    "*4\r\n:0\r\n:5460\r\n"
    "*4\r\n$9\r\n127.0.0.1\r\n:38031\r\n$40\r\ne737442cd56b129b1e57694351d3a0f07a0e2117\r\n*0\r\n"
    "*4\r\n$9\r\n127.0.0.1\r\n:46507\r\n$40\r\nbc272f601b10878acb2210f5f04e86161301739d\r\n*0\r\n"
    "*4\r\n:5461\r\n:10922\r\n"
    "*4\r\n$9\r\n127.0.0.1\r\n:39321\r\n$40\r\n650423e6e1a951a62498551abcc288870689b7df\r\n*0\r\n"
    "*4\r\n$9\r\n127.0.0.1\r\n:51479\r\n$40\r\n6ab39b527fca99b2696b70f043989fe299ff8261\r\n*0\r\n"
    "*4\r\n:10923\r\n:16383\r\n"
    "*4\r\n$9\r\n127.0.0.1\r\n:54507\r\n$40\r\n4b908eb3bb72fa09cc194bb597a431d9e2f899cd\r\n*0\r\n"
    "*4\r\n$9\r\n127.0.0.1\r\n:50885\r\n$40\r\n4b7782f8a52cc4df0b04c9ccf602936da241b177\r\n*0\r\n";

// The same cluster right after creation: replicas that have not synced are left out, so each
// range has 3 elements.
const std::string kReplicasLoading =
    "*3\r\n"
    "*3\r\n:0\r\n:5460\r\n"
    "*4\r\n$9\r\n127.0.0.1\r\n:38031\r\n$40\r\ne737442cd56b129b1e57694351d3a0f07a0e2117\r\n*0\r\n"
    "*3\r\n:5461\r\n:10922\r\n"
    "*4\r\n$9\r\n127.0.0.1\r\n:39321\r\n$40\r\n650423e6e1a951a62498551abcc288870689b7df\r\n*0\r\n"
    "*3\r\n:10923\r\n:16383\r\n"
    "*4\r\n$9\r\n127.0.0.1\r\n:54507\r\n$40\r\n4b908eb3bb72fa09cc194bb597a431d9e2f899cd\r\n*0\r\n";

// After `CONFIG SET cluster-announce-hostname node2.example` on the second master: its metadata
// carries the hostname (a RESP2 flat key/value array); the endpoint is still the ip.
const std::string kHostnameMetadata =
    "*1\r\n*4\r\n:5461\r\n:10922\r\n"
    "*4\r\n$9\r\n127.0.0.1\r\n:39321\r\n$40\r\n650423e6e1a951a62498551abcc288870689b7df\r\n"
    "*2\r\n$8\r\nhostname\r\n$13\r\nnode2.example\r\n"
    "*4\r\n$9\r\n127.0.0.1\r\n:51479\r\n$40\r\n6ab39b527fca99b2696b70f043989fe299ff8261\r\n*0\r\n";

// cluster-preferred-endpoint-type hostname on the asked node: nodes without a hostname are "?"
// and their metadata gives the ip.
const std::string kQuestionMarks =
    "*1\r\n*4\r\n:0\r\n:5460\r\n"
    "*4\r\n$1\r\n?\r\n:38031\r\n$40\r\ne737442cd56b129b1e57694351d3a0f07a0e2117\r\n"
    "*2\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n"
    "*4\r\n$1\r\n?\r\n:46507\r\n$40\r\nbc272f601b10878acb2210f5f04e86161301739d\r\n"
    "*2\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n";

// cluster-preferred-endpoint-type unknown-endpoint: the endpoint is a null bulk, meaning "the
// host you asked", even though the metadata names the ip and the hostname.
const std::string kUnknownEndpoint =
    "*1\r\n*4\r\n:5461\r\n:10922\r\n"
    "*4\r\n$-1\r\n:39321\r\n$40\r\n650423e6e1a951a62498551abcc288870689b7df\r\n"
    "*4\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nhostname\r\n$13\r\nnode2.example\r\n"
    "*4\r\n$-1\r\n:51479\r\n$40\r\n6ab39b527fca99b2696b70f043989fe299ff8261\r\n"
    "*2\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n";

// A lone node that was given every slot but never met another node: it does not know its own
// ip and says "".
const std::string kLoneNode =
    "*1\r\n*3\r\n:0\r\n:16383\r\n"
    "*4\r\n$0\r\n\r\n:35025\r\n$40\r\n44f3e2f899726acb625fa3816ba421c97bda1574\r\n*0\r\n";

std::vector<SlotRange> MustParse(const std::string& reply, std::string_view asked_host) {
  std::vector<SlotRange> ranges;
  std::string error;
  EXPECT_TRUE(ParseClusterSlots(reply, asked_host, &ranges, &error)) << error;
  return ranges;
}

TEST(ParseClusterSlotsTest, ThreeMastersThreeReplicas) {
  const std::vector<SlotRange> r = MustParse(kSixNodes, "127.0.0.1");
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].start, 0);
  EXPECT_EQ(r[0].end, 5460);
  EXPECT_EQ(r[0].master, "127.0.0.1:38031");
  EXPECT_EQ(r[0].master_id, "e737442cd56b129b1e57694351d3a0f07a0e2117");
  EXPECT_EQ(r[0].replicas, std::vector<std::string>{"127.0.0.1:46507"});
  EXPECT_EQ(r[1].start, 5461);
  EXPECT_EQ(r[1].end, 10922);
  EXPECT_EQ(r[1].master, "127.0.0.1:39321");
  EXPECT_EQ(r[1].master_id, "650423e6e1a951a62498551abcc288870689b7df");
  EXPECT_EQ(r[1].replicas, std::vector<std::string>{"127.0.0.1:51479"});
  EXPECT_EQ(r[2].start, 10923);
  EXPECT_EQ(r[2].end, 16383);
  EXPECT_EQ(r[2].master, "127.0.0.1:54507");
  EXPECT_EQ(r[2].replicas, std::vector<std::string>{"127.0.0.1:50885"});
  EXPECT_TRUE(CoversAllSlots(r));
}

TEST(ParseClusterSlotsTest, RangesWithoutSyncedReplicas) {
  const std::vector<SlotRange> r = MustParse(kReplicasLoading, "127.0.0.1");
  ASSERT_EQ(r.size(), 3u);
  for (const SlotRange& range : r) EXPECT_TRUE(range.replicas.empty());
  EXPECT_EQ(r[2].master, "127.0.0.1:54507");
  EXPECT_TRUE(CoversAllSlots(r));
}

TEST(ParseClusterSlotsTest, HostnameMetadataDoesNotChangeTheEndpoint) {
  const std::vector<SlotRange> r = MustParse(kHostnameMetadata, "10.9.9.9");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].master, "127.0.0.1:39321");
  EXPECT_EQ(r[0].master_id, "650423e6e1a951a62498551abcc288870689b7df");
  EXPECT_EQ(r[0].replicas, std::vector<std::string>{"127.0.0.1:51479"});
  EXPECT_FALSE(CoversAllSlots(r));
}

TEST(ParseClusterSlotsTest, QuestionMarkTakesTheMetadataIp) {
  const std::vector<SlotRange> r = MustParse(kQuestionMarks, "10.9.9.9");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].master, "127.0.0.1:38031");
  EXPECT_EQ(r[0].replicas, std::vector<std::string>{"127.0.0.1:46507"});
}

TEST(ParseClusterSlotsTest, QuestionMarkWithoutIpTakesTheAskedHost) {
  const std::string reply = "*1\r\n*3\r\n:0\r\n:16383\r\n*3\r\n$1\r\n?\r\n:7000\r\n$3\r\nabc\r\n";
  const std::vector<SlotRange> r = MustParse(reply, "10.9.9.9");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].master, "10.9.9.9:7000");
  EXPECT_EQ(r[0].master_id, "abc");
}

TEST(ParseClusterSlotsTest, NullEndpointTakesTheAskedHost) {
  const std::vector<SlotRange> r = MustParse(kUnknownEndpoint, "lb.example");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].master, "lb.example:39321");
  EXPECT_EQ(r[0].replicas, std::vector<std::string>{"lb.example:51479"});
}

TEST(ParseClusterSlotsTest, EmptyEndpointTakesTheAskedHostBracketedWhenIpv6) {
  std::vector<SlotRange> r = MustParse(kLoneNode, "127.0.0.1");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].master, "127.0.0.1:35025");
  EXPECT_EQ(r[0].master_id, "44f3e2f899726acb625fa3816ba421c97bda1574");
  EXPECT_TRUE(CoversAllSlots(r));
  r = MustParse(kLoneNode, "::1");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].master, "[::1]:35025");
  r = MustParse(kLoneNode, "[::1]");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].master, "[::1]:35025");
}

TEST(ParseClusterSlotsTest, Ipv6EndpointsAreBracketed) {
  const std::string reply =
      "*1\r\n*4\r\n:0\r\n:16383\r\n"
      "*4\r\n$3\r\n::1\r\n:7000\r\n$1\r\na\r\n*0\r\n"
      "*4\r\n$11\r\nfe80::1:2:3\r\n:7001\r\n$1\r\nb\r\n*0\r\n";
  const std::vector<SlotRange> r = MustParse(reply, "127.0.0.1");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].master, "[::1]:7000");
  EXPECT_EQ(r[0].replicas, std::vector<std::string>{"[fe80::1:2:3]:7001"});
}

TEST(ParseClusterSlotsTest, OlderAndNewerNodeShapes) {
  // Redis 3.x sends [ip, port], 4.0-6.2 [ip, port, id]; later versions may add elements.
  const std::string reply =
      "*3\r\n"
      "*3\r\n:0\r\n:99\r\n*2\r\n$8\r\n10.0.0.1\r\n:6379\r\n"
      "*3\r\n:100\r\n:199\r\n*3\r\n$8\r\n10.0.0.2\r\n:6379\r\n$2\r\nid\r\n"
      "*3\r\n:200\r\n:16383\r\n*5\r\n$8\r\n10.0.0.3\r\n:6379\r\n$2\r\nid\r\n*0\r\n:42\r\n";
  const std::vector<SlotRange> r = MustParse(reply, "x");
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].master, "10.0.0.1:6379");
  EXPECT_EQ(r[0].master_id, "");
  EXPECT_EQ(r[1].master, "10.0.0.2:6379");
  EXPECT_EQ(r[1].master_id, "id");
  EXPECT_EQ(r[2].master, "10.0.0.3:6379");
  EXPECT_TRUE(CoversAllSlots(r));
}

TEST(ParseClusterSlotsTest, NoSlotsAssignedIsAnEmptyMap) {
  // What a fresh cluster node answers (captured).
  std::vector<SlotRange> r = {SlotRange{}};
  std::string error;
  EXPECT_TRUE(ParseClusterSlots("*0\r\n", "h", &r, &error));
  EXPECT_TRUE(r.empty());
  EXPECT_FALSE(CoversAllSlots(r));
}

TEST(ParseClusterSlotsTest, ErrorReplyGivesItsText) {
  std::vector<SlotRange> r;
  std::string error;
  EXPECT_FALSE(
      ParseClusterSlots("-ERR This instance has cluster support disabled\r\n", "h", &r, &error));
  EXPECT_EQ(error, "ERR This instance has cluster support disabled");
  EXPECT_TRUE(r.empty());
}

TEST(ParseClusterSlotsTest, MalformedRepliesAreRefused) {
  const std::string node = "*3\r\n$1\r\na\r\n:1\r\n$1\r\nx\r\n";
  const std::vector<std::string> bad = {
      "",
      "garbage",
      ":1\r\n",
      "$3\r\nabc\r\n",
      "*1\r\n:1\r\n",                                             // entry not an array
      "*1\r\n*2\r\n:0\r\n:1\r\n",                                 // no master
      "*1\r\n*3\r\n:5\r\n:4\r\n" + node,                          // end < start
      "*1\r\n*3\r\n:0\r\n:16384\r\n" + node,                      // past the last slot
      "*1\r\n*3\r\n:-1\r\n:3\r\n" + node,                         // negative start
      "*1\r\n*3\r\n$1\r\n0\r\n:3\r\n" + node,                     // start not an integer
      "*1\r\n*3\r\n:0\r\n:3\r\n*1\r\n$1\r\na\r\n",                // node without port
      "*1\r\n*3\r\n:0\r\n:3\r\n*2\r\n$1\r\na\r\n$4\r\n6379\r\n",  // port as a string
      "*1\r\n*3\r\n:0\r\n:3\r\n*2\r\n$1\r\na\r\n:0\r\n",          // port 0
      "*1\r\n*3\r\n:0\r\n:3\r\n*2\r\n$1\r\na\r\n:65536\r\n",      // port too large
      "*1\r\n*3\r\n:0\r\n:3\r\n*2\r\n:1\r\n:6379\r\n",            // endpoint an integer
      "*1\r\n*3\r\n:0\r\n:3\r\n*3\r\n$1\r\na\r\n:1\r\n:7\r\n",    // id an integer
      "*1\r\n*4\r\n:0\r\n:3\r\n" + node + ":7\r\n",               // replica not an array
      kSixNodes.substr(0, kSixNodes.size() - 3),                  // truncated
  };
  for (const std::string& reply : bad) {
    std::vector<SlotRange> r = {SlotRange{}};
    std::string error;
    EXPECT_FALSE(ParseClusterSlots(reply, "h", &r, &error)) << reply;
    EXPECT_FALSE(error.empty()) << reply;
    EXPECT_TRUE(r.empty()) << reply;
  }
}

TEST(CoversAllSlotsTest, GapsOverlapsAndBounds) {
  auto range = [](int start, int end) {
    SlotRange r;
    r.start = start;
    r.end = end;
    return r;
  };
  EXPECT_TRUE(CoversAllSlots({range(0, 16383)}));
  EXPECT_TRUE(CoversAllSlots({range(8192, 16383), range(0, 0), range(1, 8191)}));
  EXPECT_FALSE(CoversAllSlots({}));
  EXPECT_FALSE(CoversAllSlots({range(0, 16382)}));
  EXPECT_FALSE(CoversAllSlots({range(1, 16383)}));
  EXPECT_FALSE(CoversAllSlots({range(0, 100), range(102, 16383)}));
  EXPECT_FALSE(CoversAllSlots({range(0, 100), range(100, 16383)}));
  EXPECT_FALSE(CoversAllSlots({range(0, 16383), range(5, 5)}));
  EXPECT_FALSE(CoversAllSlots({range(0, 16384)}));
  EXPECT_FALSE(CoversAllSlots({range(-1, 16383)}));
  EXPECT_FALSE(CoversAllSlots({range(16383, 0)}));
}

TEST(ParseRedirectTest, CapturedMovedAndAsk) {
  Redirect r = ParseRedirect("-MOVED 12182 127.0.0.1:54507\r\n");
  EXPECT_EQ(r.kind, RedirectKind::kMoved);
  EXPECT_EQ(r.slot, 12182);
  EXPECT_EQ(r.address, "127.0.0.1:54507");
  r = ParseRedirect("-ASK 5061 127.0.0.1:39321\r\n");
  EXPECT_EQ(r.kind, RedirectKind::kAsk);
  EXPECT_EQ(r.slot, 5061);
  EXPECT_EQ(r.address, "127.0.0.1:39321");
  r = ParseRedirect("-MOVED 0 redis-2.example.com:6379\r\n");
  EXPECT_EQ(r.kind, RedirectKind::kMoved);
  EXPECT_EQ(r.slot, 0);
  EXPECT_EQ(r.address, "redis-2.example.com:6379");
  r = ParseRedirect("-MOVED 16383 10.0.0.1:6379");  // without CRLF too
  EXPECT_EQ(r.kind, RedirectKind::kMoved);
  EXPECT_EQ(r.slot, 16383);
}

TEST(ParseRedirectTest, UnknownEndpointsKeepTheirEmptyOrQuestionMarkHost) {
  // Captured with cluster-preferred-endpoint-type unknown-endpoint, then hostname.
  Redirect r = ParseRedirect("-MOVED 12182 :54507\r\n");
  EXPECT_EQ(r.kind, RedirectKind::kMoved);
  EXPECT_EQ(r.address, ":54507");
  std::string host = "x";
  int port = 0;
  ASSERT_TRUE(SplitHostPort(r.address, &host, &port));
  EXPECT_EQ(host, "");
  EXPECT_EQ(port, 54507);
  r = ParseRedirect("-MOVED 12182 ?:54507\r\n");
  EXPECT_EQ(r.kind, RedirectKind::kMoved);
  EXPECT_EQ(r.address, "?:54507");
}

TEST(ParseRedirectTest, UnbracketedIpv6) {
  const Redirect r = ParseRedirect("-MOVED 1 ::1:6380\r\n");
  EXPECT_EQ(r.kind, RedirectKind::kMoved);
  EXPECT_EQ(r.slot, 1);
  EXPECT_EQ(r.address, "::1:6380");
  std::string host;
  int port = 0;
  ASSERT_TRUE(SplitHostPort(r.address, &host, &port));
  EXPECT_EQ(host, "::1");
  EXPECT_EQ(port, 6380);
  EXPECT_EQ(JoinHostPort(host, port), "[::1]:6380");
  const Redirect a = ParseRedirect("-ASK 77 2001:db8::7:7000\r\n");
  EXPECT_EQ(a.kind, RedirectKind::kAsk);
  ASSERT_TRUE(SplitHostPort(a.address, &host, &port));
  EXPECT_EQ(host, "2001:db8::7");
  EXPECT_EQ(port, 7000);
}

TEST(ParseRedirectTest, TryAgainAndClusterDown) {
  const std::vector<std::pair<std::string, RedirectKind>> cases = {
      {"-TRYAGAIN Multiple keys request during rehashing of slot\r\n", RedirectKind::kTryAgain},
      {"-TRYAGAIN\r\n", RedirectKind::kTryAgain},
      {"-CLUSTERDOWN The cluster is down\r\n", RedirectKind::kClusterDown},
      {"-CLUSTERDOWN Hash slot not served\r\n", RedirectKind::kClusterDown},
      {"-CLUSTERDOWN The cluster is down and only accepts read commands\r\n",
       RedirectKind::kClusterDown},
  };
  for (const auto& [frame, kind] : cases) {
    const Redirect r = ParseRedirect(frame);
    EXPECT_EQ(r.kind, kind) << frame;
    EXPECT_EQ(r.slot, -1) << frame;
    EXPECT_EQ(r.address, "") << frame;
  }
}

TEST(ParseRedirectTest, EverythingElseIsNone) {
  const std::vector<std::string> frames = {
      "",
      "+OK\r\n",
      "$5\r\nMOVED\r\n",
      "-ERR unknown command 'FOO', with args beginning with: \r\n",
      "-CROSSSLOT Keys in request don't hash to the same slot\r\n",
      "-MOVED\r\n",
      "-MOVED 1\r\n",
      "-MOVED 1 \r\n",
      "-MOVEDX 1 a:1\r\n",
      "-moved 1 a:1\r\n",
      "-MOVED  1 a:1\r\n",
      "-MOVED 16384 a:1\r\n",
      "-MOVED -1 a:1\r\n",
      "-MOVED x a:1\r\n",
      "-MOVED 1 a\r\n",
      "-MOVED 1 a:0\r\n",
      "-MOVED 1 a:65536\r\n",
      "-MOVED 1 a:1 extra\r\n",
      "-ASK 1 [::1\r\n",
      "-TRYAGAINX\r\n",
      "-CLUSTERDOWNX\r\n",
      "-ERR MOVED 1 a:1\r\n",
  };
  for (const std::string& frame : frames) {
    const Redirect r = ParseRedirect(frame);
    EXPECT_EQ(r.kind, RedirectKind::kNone) << frame;
    EXPECT_EQ(r.slot, -1) << frame;
    EXPECT_EQ(r.address, "") << frame;
  }
}

TEST(SplitHostPortTest, Accepted) {
  const std::vector<std::tuple<std::string, std::string, int>> cases = {
      {"127.0.0.1:6379", "127.0.0.1", 6379},
      {"localhost:1", "localhost", 1},
      {"redis.example.com:65535", "redis.example.com", 65535},
      {"[::1]:6380", "::1", 6380},
      {"::1:6380", "::1", 6380},
      {"[fe80::1%eth0]:7000", "fe80::1%eth0", 7000},
      {"fe80::1:7000", "fe80::1", 7000},
      {":6380", "", 6380},
      {"[]:6380", "", 6380},
  };
  for (const auto& [address, want_host, want_port] : cases) {
    std::string host;
    int port = 0;
    ASSERT_TRUE(SplitHostPort(address, &host, &port)) << address;
    EXPECT_EQ(host, want_host) << address;
    EXPECT_EQ(port, want_port) << address;
  }
}

TEST(SplitHostPortTest, Refused) {
  for (const std::string address :
       {"", "localhost", "localhost:", "h:0", "h:65536", "h:99999999999", "h:+1", "h:-1", "h: 1",
        "h:1 ", "h:6379x", "[::1]", "[::1]6380", "[::1:6380", "[::1]:"}) {
    std::string host = "unchanged";
    int port = -7;
    EXPECT_FALSE(SplitHostPort(address, &host, &port)) << address;
    EXPECT_EQ(host, "unchanged") << address;
    EXPECT_EQ(port, -7) << address;
  }
}

TEST(JoinHostPortTest, BracketsIpv6Once) {
  EXPECT_EQ(JoinHostPort("127.0.0.1", 6379), "127.0.0.1:6379");
  EXPECT_EQ(JoinHostPort("redis.example", 1), "redis.example:1");
  EXPECT_EQ(JoinHostPort("::1", 6380), "[::1]:6380");
  EXPECT_EQ(JoinHostPort("[::1]", 6380), "[::1]:6380");
  EXPECT_EQ(JoinHostPort("", 6380), ":6380");
  for (const std::string host : {"10.1.2.3", "::", "2001:db8::1", "h.example"}) {
    std::string back;
    int port = 0;
    ASSERT_TRUE(SplitHostPort(JoinHostPort(host, 40000), &back, &port)) << host;
    EXPECT_EQ(back, host);
    EXPECT_EQ(port, 40000);
  }
}

}  // namespace
}  // namespace bloomproxy::protocol
