// The replies that make the proxy look like a one-node Redis Cluster to cluster-aware clients
// (redis-py RedisCluster, go-redis ClusterClient, Jedis, Lettuce): the node is the proxy
// itself, it serves all 16384 slots, at the announced address. Built in Redis 7.0's formats
// (cluster.c clusterReplyMultiBulkSlots, clusterReplyShards, clusterGenNodesDescription,
// CLUSTER INFO). Pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace bloomproxy::protocol {

struct ClusterSelf {
  std::string id;  // 40 lower-case hex characters
  std::string ip;  // announced address ("127.0.0.1", "::1")
  int port = 0;    // announced port; the bus port shown is port + 10000
};

// A stable node id for an announced address: 40 hex characters derived from "ip:port", so
// every proxy (and every restart) announcing the same address has the same id.
std::string ClusterNodeId(std::string_view ip, int port);

// CLUSTER SLOTS: one range 0-16383, master = self as [ip, port, id, empty metadata], no replicas.
std::string ClusterSlotsReply(const ClusterSelf& self);
// CLUSTER SHARDS: one shard, slots [0, 16383], one node (self) with id, port, ip, endpoint,
// role master, replication-offset 0, health online.
std::string ClusterShardsReply(const ClusterSelf& self);
// CLUSTER NODES: "<id> <ip>:<port>@<port+10000> myself,master - 0 0 1 connected 0-16383\n"
// as a bulk string (an IPv6 ip unbracketed, as Redis writes it).
std::string ClusterNodesReply(const ClusterSelf& self);
// CLUSTER INFO: cluster_state:ok, 16384 slots assigned/ok, 1 known node, size 1, epochs 1,
// message counters 0; lines end in "\r\n", as a bulk string.
std::string ClusterInfoReply();
// CLUSTER MYID: the id as a bulk string.
std::string ClusterMyIdReply(const ClusterSelf& self);

}  // namespace bloomproxy::protocol
