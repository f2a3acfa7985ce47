// Routing on a Redis Cluster (proxy/upstream/cluster_router.h, the command table's Spread column):
// the node of a command's keys, commands split per node or sent to every master, SCAN over the
// masters, -CROSSSLOT for the rest, and transactions, which live on the node of their first
// keyed command.
#include "filters/common/sketch_commands.h"
#include "protocol/cluster_replies.h"
#include "protocol/command_keys.h"
#include "protocol/encoder.h"
#include "protocol/errors.h"
#include "protocol/key_slot.h"
#include "proxy/client/client.h"
#include "proxy/server/server.h"
#include "proxy/upstream/cluster_router.h"
#include "proxy/upstream/split_request.h"
#include "proxy/upstream/upstream.h"

namespace bloomproxy::proxy {

using protocol::Command;
using protocol::CommandInfo;
using protocol::Route;
using protocol::Spread;

namespace {

constexpr std::string_view kMulti = "*1\r\n$5\r\nMULTI\r\n";

bool IsWildcard(std::string_view ip) { return ip == "0.0.0.0" || ip == "::" || ip.empty(); }

}  // namespace

int Client::CommandSlot(const Command& cmd, const CommandInfo* info) {
  key_positions_.clear();
  if (info == nullptr) {
    key_positions_ = filters::SketchCommandKeys(cmd.args);  // BF.*, CMS.*: not Redis's commands
    if (key_positions_.empty()) return -1;
  } else if (!protocol::CommandKeys(*info, cmd.args, &key_positions_)) {
    return -1;
  }
  int slot = -1;
  for (size_t pos : key_positions_) {
    const int s = protocol::KeySlot(cmd.args[pos]);
    if (slot >= 0 && s != slot) return kSeveralSlots;
    slot = s;
  }
  return slot;
}

bool Client::WaitsForRouteEpoch() {
  // One client's commands run in its order: none overtakes one sent before a slot changed node
  // or a request was held (ClusterRouter::epoch); it waits for their replies instead.
  const uint64_t epoch = server_->router().epoch();
  if (inflight_ == 0) {
    route_epoch_ = epoch;
    return false;
  }
  if (route_epoch_ == epoch) return false;
  Pause(kPauseBarrier);
  return true;
}

Client::Dispatched Client::RouteInCluster(const Command& cmd, const CommandInfo* info,
                                          const Route& route, Outgoing* out) {
  ClusterRouter& router = server_->router();
  if (pinned_ != nullptr && (in_pubsub() || subscribing_ > 0 || monitor_ || in_multi_)) {
    out->pool = pinned_->pool();  // the upstream of its connection state decides
    return Dispatched::kForward;
  }
  switch (route.spread) {
    case Spread::kAllMasters:
      return FanOut(cmd, route);
    case Spread::kScan:
      return ScanMasters(cmd);
    case Spread::kSlotArg: {
      int64_t slot = -1;
      if (cmd.args.size() > 2 && protocol::StringToInt64(cmd.args[2], &slot) && slot >= 0 &&
          slot < protocol::kClusterSlots) {
        out->slot = static_cast<int>(slot);
      }
      break;
    }
    case Spread::kSlot:
    case Spread::kSplit:
      out->slot = CommandSlot(cmd, info);
      if (out->slot == kSeveralSlots) {
        if (route.spread == Spread::kSplit) return SplitByNode(cmd, info, route);
        ReplyLocal(protocol::errors::kCrossSlot);
        return Dispatched::kDone;
      }
      break;
  }
  out->pool = out->slot >= 0       ? router.ForSlot(out->slot)
              : pinned_ != nullptr ? pinned_->pool()
                                   : router.Any();
  return Dispatched::kForward;
}

Pending* Client::NewRoutedSlot() {
  Pending* p = NewSlot();
  replies_.push_back(p);
  p->in_flight = true;
  ++inflight_;
  return p;
}

Client::Dispatched Client::SplitByNode(const Command& cmd, const CommandInfo* info,
                                       const Route& route) {
  // key_positions_ holds the keys (CommandSlot). A key's arguments are the key and, for MSET,
  // its value: step arguments from the key on. Parts are found by a linear search: commands
  // with thousands of keys in thousands of slots are rare, and a map would cost every MGET.
  // Behind a sharding proxy (one pool, no slots) the same split is made per hash tag: keys of
  // one tag are on one server.
  const size_t step = info->key_step > 0 ? static_cast<size_t>(info->key_step) : 1;
  const bool by_tag = server_->sharding_proxy();
  ClusterRouter& router = server_->router();
  std::vector<SplitRequest::Part> parts;
  std::vector<std::vector<std::string_view>> args;
  std::vector<std::string_view> tags;
  for (size_t k = 0; k < key_positions_.size(); ++k) {
    const size_t pos = key_positions_[k];
    const int slot = protocol::KeySlot(cmd.args[pos]);
    bool has_tag = false;
    const std::string_view tag = by_tag ? protocol::HashTag(cmd.args[pos], &has_tag) : "";
    // One part per slot: a node refuses keys of two slots in one command even when it serves
    // both (the parts for one node are pipelined on one connection).
    size_t i = 0;
    while (i < parts.size() && (parts[i].slot != slot || tags[i] != tag)) ++i;
    if (i == parts.size()) {
      parts.emplace_back();
      parts.back().pool = router.ForSlot(slot);
      parts.back().slot = slot;
      args.push_back({cmd.args[0]});
      tags.push_back(tag);
    }
    parts[i].positions.push_back(k);
    for (size_t j = pos; j < pos + step && j < cmd.args.size(); ++j) args[i].push_back(cmd.args[j]);
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    Command part_cmd;
    part_cmd.args = args[i];
    if (!(server_->emulated() != 0 && (route.traits & protocol::kTraitFilterKey) &&
          RewriteKeyCommand(part_cmd, &parts[i].request))) {
      protocol::AppendCommand(&parts[i].request, args[i]);
    }
  }
  SplitRequest::Run(server_, NewRoutedSlot(), shared_slot_, std::move(parts), route.merge,
                    key_positions_.size());
  return Dispatched::kDone;
}

Client::Dispatched Client::FanOut(const Command& cmd, const Route& route) {
  const std::vector<UpstreamPool*>& masters = server_->router().masters();
  if (masters.empty()) {
    ReplyUnavailable();
    return Dispatched::kDone;
  }
  if (route.conn == protocol::Conn::kDedicated && inflight_ > 0) {
    // Its parts take connections of their own: the commands before it go first.
    Pause(kPauseBarrier);
    return Dispatched::kRetryLater;
  }
  std::vector<SplitRequest::Part> parts(masters.size());
  const std::string_view request = RequestBytes(cmd);
  for (size_t i = 0; i < masters.size(); ++i) {
    parts[i].pool = masters[i];
    parts[i].slot = server_->router().OtherSlotOf(masters[i], -1);
    parts[i].request.assign(request);
    parts[i].dedicated = route.conn == protocol::Conn::kDedicated;
    parts[i].up_to_date = route.effect == protocol::Effect::kWait;
  }
  Pending* slot = NewRoutedSlot();
  if (HidesInternalKeys(cmd, &slot->arg)) slot->hook = Hook::kHideKeys;
  SplitRequest::Run(server_, slot, shared_slot_, std::move(parts), route.merge, 0);
  return Dispatched::kDone;
}

Client::Dispatched Client::ScanMasters(const Command& cmd) {
  const std::vector<UpstreamPool*>& masters = server_->router().masters();
  uint64_t cursor = 0;
  if (masters.empty() || cmd.args.size() < 2) {
    ReplyUnavailable();
    return Dispatched::kDone;
  }
  size_t node = 0;
  uint64_t node_cursor = 0;
  if (protocol::ParseScanCursor(cmd.args[1], &cursor)) {
    protocol::DecodeScanCursor(cursor, &node, &node_cursor);
  }
  if (node >= masters.size()) {
    // A cursor of another topology (or made up): Redis answers an unknown cursor by starting
    // over, and so does this.
    node = 0;
    node_cursor = 0;
  }
  std::vector<std::string_view> args(cmd.args.begin(), cmd.args.end());
  const std::string cursor_text = std::to_string(node_cursor);
  if (protocol::ParseScanCursor(cmd.args[1], &cursor)) args[1] = cursor_text;
  std::vector<SplitRequest::Part> parts(1);
  parts[0].pool = masters[node];
  parts[0].slot = server_->router().OtherSlotOf(masters[node], -1);
  protocol::AppendCommand(&parts[0].request, args);
  Pending* slot = NewRoutedSlot();
  if (HidesInternalKeys(cmd, &slot->arg)) slot->hook = Hook::kHideKeys;
  SplitRequest::Run(server_, slot, shared_slot_, std::move(parts), protocol::Merge::kNone, 0,
                    static_cast<int>(node), masters.size());
  return Dispatched::kDone;
}

bool Client::StartDeferredMulti(const Command& cmd, const CommandInfo* info, Dispatched* result) {
  // MULTI waits for the transaction's first command to know its node: the node of that
  // command's keys, or any master.
  if (inflight_ > 0) {
    Pause(kPauseBarrier);
    *result = Dispatched::kRetryLater;
    return false;
  }
  const bool exec = info != nullptr && info->route.effect == protocol::Effect::kExec;
  const bool discard = info != nullptr && info->route.effect == protocol::Effect::kDiscard;
  if (multi_aborted_ && (exec || discard)) {
    // A command of the transaction found no node: Redis's answer to a transaction with a
    // refused command.
    ReplyLocal(exec ? protocol::errors::kExecAbort : "+OK\r\n");
    in_multi_ = deferred_multi_ = multi_aborted_ = watching_ = false;
    *result = Dispatched::kDone;
    return false;
  }
  const int slot = CommandSlot(cmd, info);
  ClusterRouter& router = server_->router();
  UpstreamPool* pool = slot >= 0 ? router.ForSlot(slot) : router.Any();
  if (pool == nullptr) pool = router.Any();
  if (multi_aborted_ || pool == nullptr || !pool->Reachable()) {
    multi_aborted_ = true;
    ReplyUnavailable(pool);
    *result = Dispatched::kDone;
    return false;
  }
  deferred_multi_ = false;
  pinned_ = pool->AcquirePinned(this, flavor_);
  multi_slot_ = slot >= 0 ? slot : -1;
  // The client has MULTI's +OK already.
  Pending* p = NewUpstreamSlot(pinned_);
  p->hook = Hook::kMulti;
  p->suppress = true;
  pinned_->Send(kMulti, p);
  return true;
}

bool Client::ForeignInMulti(const Command& cmd, const CommandInfo* info, std::string* request,
                            std::string* extra) {
  // A node refuses at EXEC a transaction whose keys are in two slots (-CROSSSLOT). A key on
  // another node than the transaction's cannot be queued there; two keys in two other slots of
  // the transaction's node are queued instead (the command's +QUEUED is the first one's), so
  // EXEC answers exactly what a node answers.
  const int slot = CommandSlot(cmd, info);
  if (slot < 0) return false;  // no keys, or keys in several slots: the node answers
  UpstreamPool* pool = pinned_->pool();
  if (server_->router().ForSlot(slot) == pool) {
    if (multi_slot_ < 0) multi_slot_ = slot;
    return false;
  }
  const int a = server_->router().OtherSlotOf(pool, -1);
  const int b = server_->router().OtherSlotOf(pool, a);
  if (a < 0 || b < 0) return false;
  auto exists = [](int s, std::string* out) {
    const std::string key = "{" + std::string(protocol::SlotTag(s)) + "}";
    protocol::AppendCommand(out, std::initializer_list<std::string_view>{"EXISTS", key});
  };
  exists(a, request);
  exists(b, extra);
  return true;
}

Client::Dispatched Client::HandleCluster(const Command& cmd) {
  // Cluster-aware clients see one node, this proxy, serving every slot at the announced address.
  // In front of a standalone server without cluster-view the proxy is a standalone server too:
  // the upstream answers ("ERR This instance has cluster support disabled").
  if (!server_->cluster_view()) return Dispatched::kForward;
  const conf::Options& o = server_->options();
  protocol::ClusterSelf self;
  self.ip = o.announce_ip;
  if (self.ip.empty()) {
    self.ip = o.bind;
    if (IsWildcard(self.ip)) self.ip = laddr_.substr(0, laddr_.rfind(':'));
  }
  self.port = o.announce_port != 0 ? o.announce_port : o.port;
  self.id = protocol::ClusterNodeId(self.ip, self.port);
  const std::string_view sub = cmd.args.size() > 1 ? cmd.args[1] : std::string_view();
  const CommandInfo* info = protocol::LookupFullName("cluster");
  const CommandInfo* row = info != nullptr ? protocol::LookupSubcommand(*info, sub) : nullptr;
  if (row != nullptr && !protocol::ArityOk(*row, cmd.args.size())) {
    ReplyLocal(protocol::errors::WrongArity(row->name));
    return Dispatched::kDone;
  }
  if (IEquals(sub, "slots")) {
    ReplyLocal(protocol::ClusterSlotsReply(self));
  } else if (IEquals(sub, "shards")) {
    ReplyLocal(protocol::ClusterShardsReply(self));
  } else if (IEquals(sub, "nodes")) {
    ReplyLocal(protocol::ClusterNodesReply(self));
  } else if (IEquals(sub, "info")) {
    ReplyLocal(protocol::ClusterInfoReply());
  } else if (IEquals(sub, "myid")) {
    ReplyLocal(protocol::ClusterMyIdReply(self));
  } else if (IEquals(sub, "keyslot")) {
    std::string reply;
    protocol::AppendInteger(&reply, protocol::KeySlot(cmd.args[2]));
    ReplyLocal(reply);
  } else {
    return Dispatched::kForward;
  }
  return Dispatched::kDone;
}

}  // namespace bloomproxy::proxy
