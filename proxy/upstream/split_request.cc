#include "proxy/upstream/split_request.h"

#include "protocol/errors.h"
#include "proxy/client/client.h"
#include "proxy/server/server.h"
#include "proxy/upstream/cluster_router.h"
#include "proxy/upstream/upstream.h"

namespace bloomproxy::proxy {
namespace {

constexpr std::string_view kPing = "*1\r\n$4\r\nPING\r\n";

}  // namespace

SplitRequest::SplitRequest(Server* server, Pending* parent, size_t hint, std::vector<Part> parts,
                           protocol::Merge merge, size_t total)
    : server_(server),
      parent_(parent),
      hint_(hint),
      parts_(std::move(parts)),
      merge_(merge),
      total_(total),
      replies_(parts_.size()),
      conns_(parts_.size(), nullptr),
      remaining_(parts_.size()) {
  if (parent_->client != nullptr) flavor_ = parent_->client->flavor();
}

void SplitRequest::Run(Server* server, Pending* parent, size_t hint, std::vector<Part> parts,
                       protocol::Merge merge, size_t total, int scan_node, size_t scan_nodes) {
  auto* split = new SplitRequest(server, parent, hint, std::move(parts), merge, total);
  split->scan_node_ = scan_node;
  split->scan_nodes_ = scan_nodes;
  for (uint32_t i = 0; i < split->parts_.size(); ++i) split->Send(i);
}

void SplitRequest::Send(uint32_t i) {
  Part& part = parts_[i];
  auto* p = new Pending;
  p->sink = this;
  p->part = i;
  p->cluster_slot = part.slot;
  if (!part.dedicated) {
    p->request = std::move(part.request);
    server_->router().SendOrHold(p);
    return;
  }
  // Not resent elsewhere: it holds its own connection, which a redirection would not have.
  if (!part.pool->Reachable()) {
    ClusterRouter::Deliver(p, protocol::errors::kClusterDown);
    return;
  }
  UpstreamConn* conn = part.pool->AcquirePinned(nullptr, flavor_);
  conns_[i] = conn;
  if (part.up_to_date) {
    conn->Send(kPing, new Pending);
    conn->NoteOwnCommand({"PING"});
  }
  conn->Send(std::string_view(part.request), p);
}

void SplitRequest::OnPart(uint32_t part, std::string_view frame) {
  replies_[part].assign(frame);
  if (conns_[part] != nullptr) {
    UpstreamConn* conn = conns_[part];
    conns_[part] = nullptr;
    conn->pool()->ReleasePinned(conn);
  }
  if (--remaining_ == 0) Finish();
}

void SplitRequest::Finish() {
  std::string reply;
  if (scan_node_ >= 0) {
    reply = protocol::RewriteScanReply(replies_[0], static_cast<size_t>(scan_node_), scan_nodes_);
  } else {
    std::vector<std::string_view> views(replies_.begin(), replies_.end());
    std::vector<std::vector<size_t>> positions;
    if (merge_ == protocol::Merge::kByPosition) {
      for (Part& part : parts_) positions.push_back(std::move(part.positions));
    }
    reply = protocol::MergeReplies(merge_, views, positions, total_);
  }
  parent_->in_flight = false;
  if (parent_->client == nullptr) {
    delete parent_;
  } else {
    parent_->client->OnPlanDone(parent_, std::move(reply));
  }
  delete this;
}

}  // namespace bloomproxy::proxy
