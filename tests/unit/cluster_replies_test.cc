// The proxy's one-node cluster replies, compared byte for byte with what a real Redis 7.0.15
// node answered: a lone node given every slot with CLUSTER ADDSLOTSRANGE 0 16383 (it never met
// another node, so it does not know its own ip and shows ""), and the masters of a 3+3 cluster.
#include "protocol/cluster_replies.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "protocol/cluster_map.h"
#include "protocol/reply_decoder.h"
#include "protocol/reply_framer.h"

namespace bloomproxy::protocol {
namespace {

const std::string kLoneId = "44f3e2f899726acb625fa3816ba421c97bda1574";

// Captured from the lone node on port 35025.
const std::string kLoneSlots =
    "*1\r\n*3\r\n:0\r\n:16383\r\n*4\r\n$0\r\n\r\n:35025\r\n$40\r\n"
    "44f3e2f899726acb625fa3816ba421c97bda1574\r\n*0\r\n";
const std::string kLoneShards =
    "*1\r\n*4\r\n$5\r\nslots\r\n*2\r\n:0\r\n:16383\r\n$5\r\nnodes\r\n*1\r\n*14\r\n"
    "$2\r\nid\r\n$40\r\n44f3e2f899726acb625fa3816ba421c97bda1574\r\n$4\r\nport\r\n:35025\r\n"
    "$2\r\nip\r\n$0\r\n\r\n$8\r\nendpoint\r\n$0\r\n\r\n$4\r\nrole\r\n$6\r\nmaster\r\n"
    "$18\r\nreplication-offset\r\n:0\r\n$6\r\nhealth\r\n$6\r\nonline\r\n";
// Its config epoch was 0 (slots added without a bump); the proxy says 1.
const std::string kLoneNodesEpoch0 =
    "$94\r\n44f3e2f899726acb625fa3816ba421c97bda1574 :35025@45025 myself,master - 0 0 0 "
    "connected 0-16383\n\r\n";
// Its epochs were 0; the proxy says 1.
const std::string kLoneInfoEpoch0 =
    "$312\r\ncluster_state:ok\r\ncluster_slots_assigned:16384\r\ncluster_slots_ok:16384\r\n"
    "cluster_slots_pfail:0\r\ncluster_slots_fail:0\r\ncluster_known_nodes:1\r\ncluster_size:1\r\n"
    "cluster_current_epoch:0\r\ncluster_my_epoch:0\r\ncluster_stats_messages_sent:0\r\n"
    "cluster_stats_messages_received:0\r\ntotal_cluster_links_buffer_limit_exceeded:0\r\n\r\n";
const std::string kLoneMyId = "$40\r\n44f3e2f899726acb625fa3816ba421c97bda1574\r\n";

// One master's node entry in the 3+3 cluster's CLUSTER SHARDS, just after creation.
const std::string kShardMaster54507 =
    "*14\r\n$2\r\nid\r\n$40\r\n4b908eb3bb72fa09cc194bb597a431d9e2f899cd\r\n$4\r\nport\r\n"
    ":54507\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.1\r\n$4\r\nrole\r\n"
    "$6\r\nmaster\r\n$18\r\nreplication-offset\r\n:0\r\n$6\r\nhealth\r\n$6\r\nonline\r\n";
// One master's node in its CLUSTER SLOTS.
const std::string kSlotsMaster54507 =
    "*4\r\n$9\r\n127.0.0.1\r\n:54507\r\n$40\r\n4b908eb3bb72fa09cc194bb597a431d9e2f899cd\r\n*0\r\n";

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

// True when `reply` is exactly one RESP2 reply.
bool IsOneReply(const std::string& reply) {
  ReplyFramer framer;
  size_t len = 0;
  return framer.Next(reply, &len) == FrameStatus::kComplete && len == reply.size();
}

const ClusterSelf kLone{kLoneId, "", 35025};

TEST(ClusterRepliesTest, SlotsMatchRedisByteForByte) {
  EXPECT_EQ(ClusterSlotsReply(kLone), kLoneSlots);
  const std::string reply =
      ClusterSlotsReply({"4b908eb3bb72fa09cc194bb597a431d9e2f899cd", "127.0.0.1", 54507});
  EXPECT_NE(reply.find(kSlotsMaster54507), std::string::npos) << reply;
}

TEST(ClusterRepliesTest, ShardsMatchRedisByteForByte) {
  EXPECT_EQ(ClusterShardsReply(kLone), kLoneShards);
  const std::string reply =
      ClusterShardsReply({"4b908eb3bb72fa09cc194bb597a431d9e2f899cd", "127.0.0.1", 54507});
  EXPECT_NE(reply.find(kShardMaster54507), std::string::npos) << reply;
  EXPECT_TRUE(IsOneReply(reply));
}

TEST(ClusterRepliesTest, NodesMatchRedisWithEpochOne) {
  EXPECT_EQ(ClusterNodesReply(kLone), Replace(kLoneNodesEpoch0, " 0 0 0 ", " 0 0 1 "));
  EXPECT_EQ(
      ClusterNodesReply({kLoneId, "127.0.0.1", 7000}),
      "$102\r\n" + kLoneId + " 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-16383\n\r\n");
  // Redis writes an IPv6 ip unbracketed here too (clusterGenNodeDescription "%s:%i@%i").
  EXPECT_EQ(ClusterNodesReply({kLoneId, "::1", 7000}),
            "$96\r\n" + kLoneId + " ::1:7000@17000 myself,master - 0 0 1 connected 0-16383\n\r\n");
}

TEST(ClusterRepliesTest, InfoMatchesRedisWithEpochOne) {
  std::string want = Replace(kLoneInfoEpoch0, "cluster_current_epoch:0", "cluster_current_epoch:1");
  want = Replace(want, "cluster_my_epoch:0", "cluster_my_epoch:1");
  EXPECT_EQ(ClusterInfoReply(), want);
}

TEST(ClusterRepliesTest, MyIdMatchesRedis) { EXPECT_EQ(ClusterMyIdReply(kLone), kLoneMyId); }

TEST(ClusterRepliesTest, SlotsReplyParsesAsTheWholeMap) {
  for (const auto& [ip, address] :
       {std::pair<std::string, std::string>{"10.0.0.5", "10.0.0.5:7000"}, {"::1", "[::1]:7000"}}) {
    const ClusterSelf self{ClusterNodeId(ip, 7000), ip, 7000};
    std::vector<SlotRange> ranges;
    std::string error;
    ASSERT_TRUE(ParseClusterSlots(ClusterSlotsReply(self), "elsewhere", &ranges, &error)) << error;
    ASSERT_EQ(ranges.size(), 1u);
    EXPECT_EQ(ranges[0].master, address);
    EXPECT_EQ(ranges[0].master_id, self.id);
    EXPECT_TRUE(ranges[0].replicas.empty());
    EXPECT_TRUE(CoversAllSlots(ranges));
  }
}

TEST(ClusterRepliesTest, RepliesDecodeAsTheirTypes) {
  const ClusterSelf self{ClusterNodeId("127.0.0.1", 6400), "127.0.0.1", 6400};
  ReplyDecoder decoder;
  ReplyPtr shards = decoder.Decode(ClusterShardsReply(self));
  ASSERT_TRUE(shards);
  ASSERT_EQ(shards->type, REDIS_REPLY_ARRAY);
  ASSERT_EQ(shards->elements, 1u);
  const redisReply* node = shards->element[0]->element[3]->element[0];
  ASSERT_EQ(node->elements, 14u);
  EXPECT_EQ(ReplyString(node->element[1]), self.id);
  EXPECT_EQ(node->element[3]->type, REDIS_REPLY_INTEGER);
  EXPECT_EQ(node->element[3]->integer, 6400);
  for (const std::string& bulk :
       {ClusterNodesReply(self), ClusterInfoReply(), ClusterMyIdReply(self)}) {
    ReplyPtr r = decoder.Decode(bulk);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->type, REDIS_REPLY_STRING);
    EXPECT_TRUE(IsOneReply(bulk));
  }
}

bool IsLowerHex40(const std::string& id) {
  if (id.size() != 40) return false;
  for (const char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

TEST(ClusterNodeIdTest, StableFortyHexCharacters) {
  const std::string id = ClusterNodeId("127.0.0.1", 7000);
  EXPECT_TRUE(IsLowerHex40(id)) << id;
  EXPECT_EQ(ClusterNodeId("127.0.0.1", 7000), id);
  EXPECT_NE(ClusterNodeId("127.0.0.1", 7001), id);
  EXPECT_NE(ClusterNodeId("127.0.0.2", 7000), id);
  EXPECT_TRUE(IsLowerHex40(ClusterNodeId("::1", 7000)));
  EXPECT_TRUE(IsLowerHex40(ClusterNodeId("", 1)));
}

TEST(ClusterNodeIdTest, NeighbouringAddressesDifferThroughout) {
  // Ids of consecutive ports must not share long prefixes (clients and logs abbreviate ids),
  // and none may collide.
  std::set<std::string> seen;
  for (int port = 7000; port < 9000; ++port) {
    const std::string a = ClusterNodeId("10.0.0.1", port);
    const std::string b = ClusterNodeId("10.0.0.1", port + 1);
    ASSERT_TRUE(IsLowerHex40(a));
    int same = 0;
    for (size_t i = 0; i < 40; ++i) same += a[i] == b[i];
    EXPECT_LT(same, 15) << a << " " << b;
    EXPECT_NE(a.substr(0, 8), b.substr(0, 8));
    EXPECT_TRUE(seen.insert(a).second) << a;
  }
}

}  // namespace
}  // namespace bloomproxy::protocol
