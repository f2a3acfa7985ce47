// Tunnels. SYNC, PSYNC and REPLCONF make a connection a replication link (an RDB file, then the
// replication stream, and REPLCONF ACK which has no reply; the REPLCONFs of the handshake before
// SYNC are still answered one by one, see EnterTunnel); SCRIPT DEBUG starts the Lua
// debugger's own dialogue; SUBSCRIBE inside MULTI answers several times inside one EXEC reply.
// No reply matching survives that, and on a shared connection it would break every other
// client's replies. So the command goes on a connection of the client's own, and from then on
// the client's requests go to it as they are and its bytes come back as they are, until either
// side closes:
//
//   client ─► RequestParser ─► deny-command / ACL check ─► tunnel connection ─► upstream
//   client ◄──────────────── Output ◄──────────── unframed bytes ◄───────────── upstream
//
// The proxy still parses the client's requests, so deny-command and the user's command rules
// hold inside a tunnel: a refused command closes the client (a reply cannot be put into the
// upstream's byte stream). The tunnel connection is never returned to the pool. Both directions
// are bounded: a client that reads slowly stops the upstream side being read, and a backed-up
// upstream stops the client being read.
#include <cctype>

#include "protocol/errors.h"
#include "proxy/client/acl.h"
#include "proxy/client/client.h"
#include "proxy/server/log.h"
#include "proxy/server/server.h"
#include "proxy/upstream/cluster_router.h"
#include "proxy/upstream/upstream.h"

namespace bloomproxy::proxy {

using protocol::Command;

namespace {

// REPLCONF is answered unless one of its options is ACK or GETACK (a replica's acknowledgement,
// which Redis never answers).
bool ReplconfAnswers(const Command& cmd) {
  if (!IEquals(cmd.args[0], "replconf")) return false;
  for (size_t i = 1; i < cmd.args.size(); i += 2) {
    if (IEquals(cmd.args[i], "ack") || IEquals(cmd.args[i], "getack")) return false;
  }
  return true;
}

bool IsSync(const Command& cmd) {
  return IEquals(cmd.args[0], "sync") || IEquals(cmd.args[0], "psync");
}

}  // namespace

Client::Dispatched Client::EnterTunnel(const Command& cmd) {
  if (!tunnel_ && !in_multi_ && ReplconfAnswers(cmd)) {
    // A replica's handshake (REPLCONF listening-port, capa, rdb-only, ...) is still answered
    // reply by reply: it runs on a connection of the client's own, which it marks for good,
    // and the bytes flow raw only from SYNC or PSYNC on. So a SYNC the proxy refuses after
    // it (deny-command, the user's rules) is answered in its place, as Redis answers it.
    Outgoing out;
    out.own_conn = true;
    replica_handshake_ = true;
    const Dispatched d = SendUpstream(cmd, out);
    if (pinned_ != nullptr) pinned_->mark_dirty();
    return d;
  }
  if (inflight_ > 0) {
    // Its bytes start with the reply to this command: every earlier reply comes first.
    Pause(kPauseBarrier);
    return Dispatched::kRetryLater;
  }
  if (!out_.empty() || !replies_.empty()) {
    // Redis refuses to turn a connection that still has replies to write into a replication
    // link or a debugging session.
    if (IsSync(cmd)) {
      ReplyLocal("-ERR SYNC and PSYNC are invalid with pending output\r\n");
      return Dispatched::kDone;
    }
    if (IEquals(cmd.args[0], "script")) {
      ReplyLocal("-ERR SCRIPT DEBUG must be called outside a pipeline\r\n");
      return Dispatched::kDone;
    }
  }
  if (pinned_ == nullptr) {
    // A connection of its own (TargetFor answers at once when the upstream is down).
    Dispatched result = Dispatched::kDone;
    bool acquired = false;
    if (TargetFor(server_->router().Any(), /*own_conn=*/true, &result, &acquired) == nullptr) {
      return result;
    }
  }
  LOG_VERBOSE_F({{"client", addr_}, {"client_id", id_}, {"command", last_cmd_}},
                "Client id=%llu addr=%s: %.*s makes its upstream connection a tunnel",
                static_cast<unsigned long long>(id_), addr_.c_str(),
                static_cast<int>(std::min<size_t>(cmd.args[0].size(), 32)), cmd.args[0].data());
  // Whatever state the connection held (a transaction, a db) is the upstream's business now.
  ClearConnectionState();
  tunnel_ = true;
  replica_ = IsSync(cmd);
  pinned_->StartTunnel();
  pinned_->Send(RequestBytes(cmd), nullptr);
  return Dispatched::kDone;
}

void Client::ForwardToTunnel(const Command& cmd) {
  if (cmd.args.empty()) return;
  char name_buf[32];
  std::string_view name;
  const protocol::CommandInfo* info = nullptr;
  const protocol::CommandInfo* sub = nullptr;
  LookUp(cmd, name_buf, &name, &info, &sub);
  std::string storage;
  std::string_view full;
  const bool denied = !server_->options().denied_commands.empty() && server_->Denied(name);
  if (denied || !RulesAllow(cmd, info, sub, name, &storage, &full)) {
    LOG_NOTICE_F({{"client", addr_}, {"client_id", id_}, {"command", name}},
                 "Client id=%llu addr=%s closed: '%.*s' refused inside a tunnel",
                 static_cast<unsigned long long>(id_), addr_.c_str(),
                 static_cast<int>(std::min<size_t>(cmd.args[0].size(), 64)), cmd.args[0].data());
    Close();
    return;
  }
  UpstreamConn* conn = pinned_;
  if (conn == nullptr || !conn->usable()) {
    CloseWhenDrained();
    return;
  }
  ++server_->stats().commands_processed;
  if (IsSync(cmd)) replica_ = true;
  conn->Send(RequestBytes(cmd), nullptr);
  if (conn->pending_output() > static_cast<size_t>(server_->options().client_output_pause)) {
    Pause(kPauseTunnel);
  }
}

void Client::OnTunnelData(std::string_view bytes) {
  if (closing_ || bytes.empty()) return;
  out_.pending().append(bytes);
  MarkDirty();
  if (out_.size() > static_cast<size_t>(server_->options().client_output_pause) &&
      pinned_ != nullptr && !tunnel_read_paused_) {
    // The client reads more slowly than the upstream sends (an RDB transfer): stop reading the
    // upstream until the client has taken half of it (OnWrite).
    tunnel_read_paused_ = true;
    pinned_->PauseReading();
  }
}

void Client::OnTunnelWritten() {
  if ((paused_ & kPauseTunnel) && pinned_ != nullptr &&
      pinned_->pending_output() <=
          static_cast<size_t>(server_->options().client_output_pause / 2)) {
    Resume(kPauseTunnel);
  }
}

}  // namespace bloomproxy::proxy
