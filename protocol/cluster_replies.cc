#include "protocol/cluster_replies.h"

#include "protocol/encoder.h"

namespace bloomproxy::protocol {
namespace {

// The cluster bus port a Redis node shows next to its port (cluster.h CLUSTER_PORT_INCR).
constexpr int kBusPortIncrement = 10000;

// FNV-1a over `data` from a seed-dependent basis, then SplitMix64's finaliser so that
// neighbouring addresses ("...:7000", "...:7001") differ in every hex digit, not only the last.
uint64_t SeededHash(std::string_view data, uint64_t seed) {
  uint64_t h = 0xcbf29ce484222325ULL ^ (seed * 0x9e3779b97f4a7c15ULL);
  for (const char c : data) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  h ^= h >> 31;
  return h;
}

// One node as CLUSTER SHARDS lists it (cluster.c addShardReplyForClusterShards): 7 pairs.
void AppendShardNode(std::string* out, const ClusterSelf& self) {
  AppendArrayHeader(out, 14);
  AppendBulk(out, "id");
  AppendBulk(out, self.id);
  AppendBulk(out, "port");
  AppendInteger(out, self.port);
  AppendBulk(out, "ip");
  AppendBulk(out, self.ip);
  AppendBulk(out, "endpoint");
  AppendBulk(out, self.ip);
  AppendBulk(out, "role");
  AppendBulk(out, "master");
  AppendBulk(out, "replication-offset");
  AppendInteger(out, 0);
  AppendBulk(out, "health");
  AppendBulk(out, "online");
}

}  // namespace

std::string ClusterNodeId(std::string_view ip, int port) {
  const std::string address = std::string(ip) + ":" + std::to_string(port);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id;
  id.reserve(40);
  // 160 bits from three 64-bit hashes with different seeds: 16 + 16 + 8 hex digits.
  for (uint64_t seed = 0; id.size() < 40; ++seed) {
    uint64_t h = SeededHash(address, seed);
    for (int i = 0; i < 16 && id.size() < 40; ++i, h >>= 4) id += kHex[h & 0xf];
  }
  return id;
}

std::string ClusterSlotsReply(const ClusterSelf& self) {
  // Redis 7.0: *1 [0, 16383, [ip, port, id, metadata]]; the metadata is empty when no
  // hostname is announced and the endpoint is the ip.
  std::string out;
  AppendArrayHeader(&out, 1);
  AppendArrayHeader(&out, 3);
  AppendInteger(&out, 0);
  AppendInteger(&out, 16383);
  AppendArrayHeader(&out, 4);
  AppendBulk(&out, self.ip);
  AppendInteger(&out, self.port);
  AppendBulk(&out, self.id);
  AppendArrayHeader(&out, 0);
  return out;
}

std::string ClusterShardsReply(const ClusterSelf& self) {
  std::string out;
  AppendArrayHeader(&out, 1);
  AppendArrayHeader(&out, 4);
  AppendBulk(&out, "slots");
  AppendArrayHeader(&out, 2);
  AppendInteger(&out, 0);
  AppendInteger(&out, 16383);
  AppendBulk(&out, "nodes");
  AppendArrayHeader(&out, 1);
  AppendShardNode(&out, self);
  return out;
}

std::string ClusterNodesReply(const ClusterSelf& self) {
  // Fields: id, ip:port@cport, flags, master, ping-sent, pong-recv, config-epoch, link-state,
  // slots (cluster.c clusterGenNodeDescription). Redis writes the ip unbracketed, IPv6 too.
  std::string line = self.id;
  line += ' ';
  line += self.ip;
  line += ':';
  line += std::to_string(self.port);
  line += '@';
  line += std::to_string(self.port + kBusPortIncrement);
  line += " myself,master - 0 0 1 connected 0-16383\n";
  std::string out;
  AppendBulk(&out, line);
  return out;
}

std::string ClusterInfoReply() {
  // Redis 7.0 omits the per-type message counters (cluster_stats_messages_ping_sent, ...)
  // while they are 0, so a node that never exchanged a message prints exactly these lines.
  static constexpr std::string_view kInfo =
      "cluster_state:ok\r\n"
      "cluster_slots_assigned:16384\r\n"
      "cluster_slots_ok:16384\r\n"
      "cluster_slots_pfail:0\r\n"
      "cluster_slots_fail:0\r\n"
      "cluster_known_nodes:1\r\n"
      "cluster_size:1\r\n"
      "cluster_current_epoch:1\r\n"
      "cluster_my_epoch:1\r\n"
      "cluster_stats_messages_sent:0\r\n"
      "cluster_stats_messages_received:0\r\n"
      "total_cluster_links_buffer_limit_exceeded:0\r\n";
  std::string out;
  AppendBulk(&out, kInfo);
  return out;
}

std::string ClusterMyIdReply(const ClusterSelf& self) {
  std::string out;
  AppendBulk(&out, self.id);
  return out;
}

}  // namespace bloomproxy::protocol
