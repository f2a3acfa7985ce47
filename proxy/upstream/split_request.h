// A command the cluster router sends as several parts: MGET, MSET, DEL, ... with keys on several
// nodes (one part per node), DBSIZE, KEYS, FLUSHALL, SCRIPT LOAD, ... (one part per master),
// SCAN (one part, on the master its cursor names). Each part is an internal request of its own,
// redirected on its own by the ClusterRouter; the parts' replies are merged into the client's
// one reply (protocol/reply_merge.h). Like a PlanRunner it owns itself: it is deleted once every
// part has answered, also when the client left meanwhile.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/reply_merge.h"
#include "proxy/upstream/reply_sink.h"

namespace bloomproxy::proxy {

class Server;
class UpstreamConn;
class UpstreamPool;
struct Pending;

class SplitRequest : public ReplySink {
 public:
  struct Part {
    UpstreamPool* pool = nullptr;
    int slot = -1;  // a slot of the part's keys, or of its node (resent there after a failover)
    std::string request;
    std::vector<size_t> positions;  // kByPosition: the places of its replies' elements
    bool dedicated = false;         // on a connection of its own until it answers (KEYS, WAIT)
    bool up_to_date = false;        // WAIT: its connection runs a PING first
  };

  // Sends the parts; `parent` (the client's slot, in flight) gets the merged reply. With
  // `scan_node` >= 0 the one part is a SCAN on master `scan_node` of `scan_nodes`.
  static void Run(Server* server, Pending* parent, size_t hint, std::vector<Part> parts,
                  protocol::Merge merge, size_t total, int scan_node = -1, size_t scan_nodes = 0);

  void OnPart(uint32_t part, std::string_view frame) override;
  size_t hint() const override { return hint_; }
  uint16_t flavor() const override { return flavor_; }

 private:
  SplitRequest(Server* server, Pending* parent, size_t hint, std::vector<Part> parts,
               protocol::Merge merge, size_t total);
  void Send(uint32_t i);
  void Finish();

  Server* server_;
  Pending* parent_;
  size_t hint_;
  uint16_t flavor_ = 0;
  std::vector<Part> parts_;
  protocol::Merge merge_;
  size_t total_;
  int scan_node_ = -1;
  size_t scan_nodes_ = 0;
  std::vector<std::string> replies_;
  std::vector<UpstreamConn*> conns_;  // dedicated parts' connections
  size_t remaining_;
};

}  // namespace bloomproxy::proxy
