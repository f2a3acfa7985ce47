// What upstream replies change besides being forwarded: connection state the proxy follows
// (Hook), pub/sub pushes, and the replies the proxy completes (INFO's "# Proxy" section and
// module line, KEYS and SCAN without internal keys; COMMAND and MODULE LIST: module_face.cc).
#include <algorithm>
#include <cctype>

#include "protocol/encoder.h"
#include "protocol/internal_keys.h"
#include "protocol/latency_histogram.h"
#include "protocol/module_replies.h"
#include "protocol/reply_framer.h"
#include "protocol/request_parser.h"
#include "protocol/resp3.h"
#include "proxy/client/client.h"
#include "proxy/client/local_latency.h"
#include "proxy/client/monitor_filter.h"
#include "proxy/server/server.h"
#include "proxy/upstream/activity.h"
#include "proxy/upstream/own_connections.h"
#include "proxy/upstream/upstream.h"

namespace bloomproxy::proxy {
namespace {

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.substr(0, prefix.size()) == prefix;
}

}  // namespace

bool Client::OnUpstreamFrame(UpstreamConn* conn, Pending* slot, std::string_view frame) {
  reply_peak_ = std::max(frame.size(), reply_peak_ - reply_peak_ / 64);
  if (window_ < kMaxInFlight) ++window_;
  const bool is_error = !frame.empty() && frame[0] == '-';
  if (is_error) slot->error_reply = true;  // (metrics)
  if (slot->queued && frame == "+QUEUED\r\n") ++queued_;
  if (slot->hook == Hook::kClientAuth && auth_in_flight_ > 0) --auth_in_flight_;
  if (slot->hook != Hook::kNone && slot->client != nullptr) ApplyHook(slot, frame);
  // Subscribe-family confirmations are pushes: Redis sends them even under CLIENT REPLY OFF.
  if (!slot->suppress || slot->hook == Hook::kSubscribe) {
    if (slot->hook == Hook::kInfo && !is_error && !frame.empty() &&
        (frame[0] == '$' || frame[0] == '=')) {
      slot->data.append(WithProxySection(frame, slot->arg != 0));
    } else if (slot->hook >= Hook::kCommandAll && slot->hook <= Hook::kModuleList) {
      slot->data.append(CompleteFace(slot, frame));
    } else if (slot->hook == Hook::kClientAuth && !is_error) {
      slot->data.append(LoggedInUpstream(slot->arg));
    } else if (slot->hook == Hook::kLatencyHistogram && !latency_asks_.empty()) {
      const std::vector<std::string> asks = std::move(latency_asks_.front());
      latency_asks_.erase(latency_asks_.begin());
      slot->data.append(protocol::MergeLatencyHistogram(
          frame, LocalLatency::Snapshot(), {asks.begin(), asks.end()}, resp_, &server_->decoder()));
    } else if (slot->hook == Hook::kTrackingInfo && !is_error) {
      slot->data.append(WithProxyRedirect(frame));
    } else if (slot->hook == Hook::kResp3Pairs && !is_error) {
      slot->data.append(protocol::PairsToResp3(frame, slot->arg != 0));
    } else if (slot->hook == Hook::kHideKeys && !is_error) {
      slot->data.append(protocol::HideInternalKeys(frame, slot->arg != 0));
    } else if (slot->hook == Hook::kExec && !queued_entries_.empty() && !is_error) {
      slot->data.append(CompleteExec(slot, frame));
    } else if (!replies_.empty() && replies_.front() == slot) {
      Append(frame);
    } else {
      slot->data.append(frame);
    }
  }
  if (slot->hook == Hook::kExec || slot->hook == Hook::kDiscard) hello_in_transaction_ = false;
  if ((slot->hook == Hook::kExec || slot->hook == Hook::kDiscard) && !queued_entries_.empty()) {
    const uint64_t done = static_cast<uint64_t>(slot->arg);
    queued_entries_.erase(
        std::remove_if(queued_entries_.begin(), queued_entries_.end(),
                       [done](const QueuedEntry& e) { return e.transaction == done; }),
        queued_entries_.end());
  }
  if (slot->frames_left < 0) slot->frames_left = 1;
  if (!is_error && --slot->frames_left > 0) return false;

  slot->in_flight = false;
  slot->done = true;
  if (slot->subscribe && subscribing_ > 0) --subscribing_;
  if (inflight_ > 0) --inflight_;
  DeliverHead();
  if (inflight_ == 0) {
    MaybeReleasePin();
    if (paused_ & kPauseBarrier) Resume(kPauseBarrier);
  }
  if ((paused_ & kPauseBackpressure) && inflight_ <= MaxInFlight() / 2) {
    Resume(kPauseBackpressure);
  }
  (void)conn;
  return true;
}

std::string Client::WithProxySection(std::string_view frame, bool proxy_section) {
  // The upstream's INFO text plus (when asked for) this proxy's own section, as one bulk.
  protocol::ReplyPtr r = server_->decoder().Decode(frame);
  std::string body = r && r->type == REDIS_REPLY_STRING ? std::string(r->str, r->len) : "";
  // Clients shown the one-node cluster (CLUSTER SLOTS and friends answered here) in front of a
  // standalone server are told so: cluster-aware clients check this field before they ask.
  if (server_->cluster_view()) {
    const size_t field = body.find("cluster_enabled:0");
    if (field != std::string::npos) body[field + 16] = '1';
  }
  // The module whose commands the proxy answers, in "# Modules" (INFO, INFO modules, all, ...).
  if (server_->emulated() != 0) body = protocol::WithModuleLine(body, BloomModule());
  // Clients are the proxy's (CLIENT LIST, CLIENT KILL): INFO counts those.
  const size_t clients = body.find("\r\nconnected_clients:");
  if (clients != std::string::npos) {
    const size_t from = clients + 20;
    const size_t end = body.find("\r\n", from);
    body.replace(from, end == std::string::npos ? std::string::npos : end - from,
                 std::to_string(server_->client_count()));
  }
  if (proxy_section) {
    body += "\r\n";
    body += server_->ProxySection();
  }
  return Verbatim(body);
}

std::string Client::WithProxyRedirect(std::string_view frame) const {
  // CLIENT TRACKINGINFO names the upstream connection of the client that invalidations go to
  // ("redirect", -1 off, 0 none): clients know it by the proxy's id, which Redis keeps when the
  // redirection is broken, as the proxy does.
  constexpr std::string_view kField = "$8\r\nredirect\r\n:";
  const size_t at = frame.find(kField);
  if (at == std::string_view::npos) return std::string(frame);
  const size_t from = at + kField.size();
  const size_t end = frame.find("\r\n", from);
  int64_t upstream_id = 0;
  if (end == std::string_view::npos ||
      !protocol::StringToInt64(frame.substr(from, end - from), &upstream_id) || upstream_id <= 0) {
    return std::string(frame);
  }
  std::string out(frame.substr(0, from));
  out += std::to_string(tracking_redirect_);
  out.append(frame.substr(end));
  return out;
}

void Client::ApplyHook(Pending* slot, std::string_view frame) {
  const bool ok = frame == "+OK\r\n";
  switch (slot->hook) {
    case Hook::kMulti:
      // Places in EXEC's reply count from here (the entries were started at dispatch).
      if (ok) queued_ = 0;
      break;
    case Hook::kWatch:
      if (!ok && slot->arg == 0 && !in_multi_) watching_ = false;
      break;
    case Hook::kQueued:
      // Its place in EXEC's reply (queued_ already counts its own +QUEUED).
      for (QueuedEntry& e : queued_entries_) {
        if (e.id == static_cast<uint64_t>(slot->arg) && frame == "+QUEUED\r\n") {
          e.index = queued_ - 1;
        }
      }
      break;
    case Hook::kSubscribe:
      ApplySubscriptionFrame(slot, frame);
      break;
    case Hook::kReset:
      // The upstream reset the connection: no state is left on it.
      if (frame == "+RESET\r\n") ResetClientState();
      break;
    case Hook::kResetStat:
      if (ok) LocalLatency::Reset();
      break;
    default:
      ApplyStateReply(slot->hook, slot->arg, slot->sub_kind, frame);
      break;
  }
}

void Client::ApplyStateReply(Hook hook, int64_t arg, uint8_t sub_kind, std::string_view reply) {
  const bool ok = reply == "+OK\r\n";
  switch (hook) {
    case Hook::kSelect:
      if (ok) db_ = arg;
      break;
    case Hook::kMonitor:
      monitor_ = ok;
      if (ok && pinned_ != nullptr) {
        // What the proxy sends for itself from now on is known as its own.
        OwnConnections& own = OwnConnections::Global();
        monitor_filter_ = std::make_shared<MonitorFilter>(&own, pinned_->upstream_key(),
                                                          pinned_->local_address(), own.Now());
      }
      break;
    case Hook::kTracking:
      if (ok) {
        tracking_ = arg != 0;
        tracking_redirect_ = tracking_ ? pending_redirect_ : 0;
        // Redis keeps the keys a connection read after CLIENT TRACKING off, and sends their
        // invalidations once tracking is on again: such a connection must never serve another
        // client.
        if (tracking_ && pinned_ != nullptr) pinned_->mark_dirty();
      }
      break;
    case Hook::kNoEvict:
      if (ok) no_evict_ = arg != 0;
      break;
    case Hook::kReadonly:
      if (ok) readonly_ = arg != 0;
      break;
    case Hook::kPause:
      if (ok) {
        UpstreamActivity::Paused(UpstreamActivity::MonotonicMs(), static_cast<uint64_t>(arg),
                                 sub_kind == 1);
      }
      break;
    case Hook::kUnpause:
      if (ok) UpstreamActivity::Unpaused();
      break;
    default:
      break;
  }
}

void Client::ApplySubscriptionFrame(Pending* slot, std::string_view frame) {
  // RESP2: an array; RESP3: a push.
  if (frame.empty() || (frame[0] != '*' && frame[0] != '>')) return;
  protocol::ReplyPtr r = server_->decoder().Decode(frame);
  if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
      r->element[0]->type != REDIS_REPLY_STRING || r->element[2]->type != REDIS_REPLY_INTEGER) {
    return;
  }
  std::string_view kind = protocol::ReplyString(r->element[0]);
  const int64_t count = r->element[2]->integer;
  if (slot->frames_left == -1) {
    // UNSUBSCRIBE without arguments answers once per subscription of its kind that the
    // connection had when it ran (at least once); frames arrive in execution order, so the
    // counts known now are the counts it saw.
    const int64_t had =
        slot->sub_kind == 1 ? patterns_ : (slot->sub_kind == 2 ? shard_channels_ : channels_);
    slot->frames_left = static_cast<int32_t>(std::max<int64_t>(1, had));
  }
  if (kind == "subscribe" || kind == "unsubscribe") {
    channels_ = std::max<int64_t>(0, count - patterns_);
  } else if (kind == "psubscribe" || kind == "punsubscribe") {
    patterns_ = std::max<int64_t>(0, count - channels_);
  } else if (kind == "ssubscribe" || kind == "sunsubscribe") {
    shard_channels_ = count;
  }
}

bool Client::OnPush(UpstreamConn* conn, std::string_view frame) {
  if (conn != pinned_) return false;
  if (monitor_ && frame.size() > 1 && frame[0] == '+' &&
      std::isdigit(static_cast<unsigned char>(frame[1]))) {
    // The proxy's own traffic is taken out (proxy/client/monitor_filter.h). MONITOR output is an
    // ordinary reply for Redis: CLIENT REPLY OFF drops it.
    const bool shows =
        monitor_filter_ == nullptr || monitor_filter_->Shows(frame, server_->NowMs());
    if (shows && !reply_off_) Append(frame);
    return true;
  }
  if (!frame.empty() && frame[0] == '>') {
    // RESP3: messages and invalidations are pushes, and so are the replies of the subscribe
    // family, which stay replies to their command. Redis writes pushes even under CLIENT REPLY
    // OFF.
    if (protocol::IsSubscribeReplyPush(frame)) return false;
    Append(frame);
    return true;
  }
  if (in_pubsub() && (StartsWith(frame, "*3\r\n$7\r\nmessage\r\n") ||
                      StartsWith(frame, "*4\r\n$8\r\npmessage\r\n") ||
                      StartsWith(frame, "*3\r\n$8\r\nsmessage\r\n"))) {
    // Every earlier reply of this connection has been delivered (the head of replies_ is
    // waiting for this connection), so writing the message now keeps Redis's order. Messages
    // are pushes: Redis sends them even under CLIENT REPLY OFF.
    Append(frame);
    return true;
  }
  return false;
}

}  // namespace bloomproxy::proxy
