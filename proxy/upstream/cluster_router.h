// Which Redis serves a command. In standalone mode one node (one UpstreamPool) serves every
// slot. With --upstream-cluster the router reads the slot map from the cluster (CLUSTER SLOTS,
// asked of the masters it knows and then of the seeds), keeps one pool per master, and keeps the
// map current: at once on MOVED, soon after a connection to a node is lost or a CLUSTERDOWN,
// every kRefreshMs otherwise (every kDegradedRefreshMs while a master is unreachable).
//
// Redirections never reach a client. A request sent on a shared connection keeps its bytes
// (Pending::request), and its redirection is acted on here (docs/cluster.md has the diagram):
//
//   reply ─┬─ -MOVED slot addr ── map[slot] = addr, refresh soon ── send to addr ─┐
//          ├─ -ASK slot addr ──── ASKING + the request on addr (map unchanged) ───┤ (at most
//          ├─ -TRYAGAIN ───────── hold, resend after a short backoff ─────────────┤ kMaxRedirects
//          ├─ -CLUSTERDOWN ────── refresh soon, hold, resend ─────────────────────┤ times)
//          └─ anything else ───── to the client                                   │
//   no node for the slot, or its node unreachable: hold, resend once it has one ──┘
//
// A held request that finds no node within kHoldMs gets Redis's own error (the TRYAGAIN or
// CLUSTERDOWN it got, or -CLUSTERDOWN Hash slot not served / The cluster is down).
//
// A client's pipeline keeps its order across a redirection through the router's epoch, which
// moves on whenever a slot changes node in the map or a request is held. A client sends a
// command only under the epoch its in-flight commands were sent under; otherwise it waits for
// their replies first (Client::RouteInCluster). Without this, a GET sent to a slot's old node
// and redirected could run after a SET the same client sent later, straight to the new node.
#pragma once

#include <uv.h>

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/cluster_map.h"
#include "protocol/key_slot.h"
#include "proxy/upstream/upstream.h"

namespace bloomproxy::proxy {

class Server;
struct Pending;

class ClusterRouter {
 public:
  explicit ClusterRouter(Server* server);
  ~ClusterRouter();
  ClusterRouter(const ClusterRouter&) = delete;
  ClusterRouter& operator=(const ClusterRouter&) = delete;

  // Resolves the upstream (or the seeds), creates their pools and starts connecting (and, on a
  // cluster, reading the slot map). False with *error when an address cannot be resolved.
  bool Start(std::string* error);
  // Closes every pool; held requests get an error reply.
  void CloseAll();

  bool cluster() const { return cluster_; }
  // Moves on when a slot changes node or a request is held (the order of a client's commands).
  uint64_t epoch() const { return epoch_; }

  // The pool of the master serving `slot`; null when no node is known for it.
  UpstreamPool* ForSlot(int slot) const { return slots_[static_cast<size_t>(slot)]; }
  // A master for a command without keys: the first reachable one in masters() order.
  UpstreamPool* Any() const;
  // The masters, in a stable order (by address): fan-out, SCAN's cursor.
  const std::vector<UpstreamPool*>& masters() const { return masters_; }
  // A slot served by `pool` other than `avoid`; -1 when there is none.
  int OtherSlotOf(const UpstreamPool* pool, int avoid) const;
  // Every pool, masters and seeds (INFO, the stall check).
  std::vector<UpstreamPool*> pools() const;

  // A redirection (or -TRYAGAIN / -CLUSTERDOWN) answered `slot`'s request on `from`; the slot
  // is off `from`'s FIFO. True when the router took the slot over (resent or held); false when
  // the reply must be delivered as it is.
  bool Redirect(UpstreamConn* from, Pending* slot, const protocol::Redirect& redirect,
                std::string_view frame);
  // Sends `slot`'s request (Pending::request) to the node of its slot now, or holds it until
  // that node is known and reachable.
  void SendOrHold(Pending* slot);

  // A CLUSTER SLOTS reply, asked on `conn` (UpstreamConn::OnInternalReply).
  void OnSlotsReply(UpstreamConn* conn, std::string_view frame);
  // Reads the slot map again soon (a node's connection was lost).
  void RefreshSoon();

  // Before the first slot map: true, and client `id` is told (OnTopologyKnown) once the map is
  // read or kHoldMs after start; false from then on.
  bool WaitForMap(uint64_t id);

  // Delivers `frame` to a request's slot (a client's reply, a sink's part, or dropped).
  static void Deliver(Pending* slot, std::string_view frame);

 private:
  static constexpr uint64_t kTickMs = 10;
  static constexpr uint64_t kRefreshMs = 5000;
  static constexpr uint64_t kDegradedRefreshMs = 100;
  static constexpr uint64_t kRefreshTimeoutMs = 1000;
  static constexpr uint64_t kHoldMs = 3000;
  static constexpr uint16_t kMaxRedirects = 16;

  struct Held {
    Pending* slot;
    uint64_t due_ms;
    std::string error;  // the reply if no node takes it in time (empty: CLUSTERDOWN)
  };

  static void OnTick(uv_timer_t* t);
  void Tick();
  void Refresh(uint64_t now);
  bool Degraded() const;
  void ApplyRanges(const std::vector<protocol::SlotRange>& ranges);
  void WakeWaiting();
  // The pool of the node at `address` ("host:port"; an empty host is `asked`'s), created on
  // first use; null when the address cannot be resolved.
  UpstreamPool* ForAddress(const std::string& address, const UpstreamAddress* asked);
  // Sends the slot's request on a shared connection of `pool` (ASKING first when asked for).
  // False when the pool has no usable connection.
  bool SendTo(UpstreamPool* pool, Pending* slot);
  void Hold(Pending* slot, uint64_t delay_ms, std::string_view error);
  // Resends the held requests that are due; fails those past their time.
  void RetryHeld(uint64_t now);

  Server* server_;
  bool cluster_ = false;
  std::map<std::string, std::unique_ptr<UpstreamPool>> pools_;  // by address text
  std::vector<UpstreamPool*> seeds_;
  std::vector<UpstreamPool*> masters_;
  std::array<UpstreamPool*, protocol::kClusterSlots> slots_{};
  std::deque<Held> held_;
  uv_timer_t timer_;
  bool timer_started_ = false;
  bool closing_ = false;
  uint64_t epoch_ = 0;
  uint64_t next_refresh_ms_ = 0;
  uint64_t refresh_started_ms_ = 0;
  bool refreshing_ = false;
  size_t refresh_cursor_ = 0;
  bool map_known_ = false;
  uint64_t started_ms_ = 0;
  std::vector<uint64_t> waiting_;  // clients paused until the map is known
};

}  // namespace bloomproxy::proxy
