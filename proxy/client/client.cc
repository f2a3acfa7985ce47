#include "proxy/client/client.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "protocol/encoder.h"
#include "protocol/errors.h"
#include "proxy/server/log.h"
#include "proxy/server/server.h"
#include "proxy/upstream/activity.h"
#include "proxy/upstream/upstream.h"

namespace bloomproxy::proxy {

namespace {

constexpr size_t kReadChunk = 16 * 1024;

}  // namespace

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

namespace {

// Freed slots of this thread, reused by the next commands.
struct PendingFreeList {
  std::vector<void*> blocks;
  ~PendingFreeList() {
    for (void* p : blocks) ::operator delete(p);
  }
};
thread_local PendingFreeList g_free_pending;
constexpr size_t kMaxFreePending = 4096;

}  // namespace

void* Pending::operator new(size_t size) {
  std::vector<void*>& blocks = g_free_pending.blocks;
  if (size == sizeof(Pending) && !blocks.empty()) {
    void* p = blocks.back();
    blocks.pop_back();
    return p;
  }
  return ::operator new(size);
}

Pending::~Pending() {
  if (stalls) UpstreamActivity::EndStallingCommand();
  if (shared_write) UpstreamActivity::EndSharedWrite();
}

void Pending::MarkSharedWrite() {
  if (shared_write) return;
  shared_write = true;
  UpstreamActivity::BeginSharedWrite();
}

void Pending::MarkStalling() {
  if (stalls) return;
  stalls = true;
  UpstreamActivity::BeginStallingCommand();
}

void Pending::operator delete(void* p) {
  std::vector<void*>& blocks = g_free_pending.blocks;
  if (p != nullptr && blocks.size() < kMaxFreePending) {
    blocks.push_back(p);
  } else {
    ::operator delete(p);
  }
}

Client::Client(Server* server, uint64_t id, bool is_unix)
    : server_(server), id_(id), is_unix_(is_unix) {
  protocol::ParserLimits limits;
  limits.max_bulk_len = server->options().proto_max_bulk_len;
  parser_ = protocol::RequestParser(limits);
  if (is_unix) {
    uv_pipe_init(server->loop(), &sock_.pipe, 0);
  } else {
    uv_tcp_init(server->loop(), &sock_.tcp);
  }
  sock_.handle.data = this;
  write_req_.data = this;
  authenticated_ = !server->auth_required();
  flavor_ = server->DefaultFlavor(resp_);
  created_ms_ = last_interaction_ms_ = server->NowMs();
  shared_slot_ = static_cast<size_t>(id);
  ++server->metrics().connected_clients;
}

Client::~Client() {
  server_->metrics().connected_clients.Sub(1);
  for (Pending* p : replies_) {
    if (p->in_flight) {
      p->client = nullptr;
    } else {
      delete p;
    }
  }
}

void Client::Start() {
  sockaddr_storage ss;
  int len = sizeof(ss);
  char host[64] = "";
  auto format = [&](const sockaddr_storage& a) {
    int port = 0;
    if (a.ss_family == AF_INET) {
      auto* in = reinterpret_cast<const sockaddr_in*>(&a);
      uv_ip4_name(in, host, sizeof(host));
      port = ntohs(in->sin_port);
    } else if (a.ss_family == AF_INET6) {
      auto* in6 = reinterpret_cast<const sockaddr_in6*>(&a);
      uv_ip6_name(in6, host, sizeof(host));
      port = ntohs(in6->sin6_port);
    }
    return std::string(host) + ":" + std::to_string(port);
  };
  if (is_unix_) {
    addr_ = laddr_ = server_->options().unixsocket + ":0";
  } else {
    if (uv_tcp_getpeername(&sock_.tcp, reinterpret_cast<sockaddr*>(&ss), &len) == 0) {
      addr_ = format(ss);
    }
    len = sizeof(ss);
    if (uv_tcp_getsockname(&sock_.tcp, reinterpret_cast<sockaddr*>(&ss), &len) == 0) {
      laddr_ = format(ss);
    }
    uv_tcp_nodelay(&sock_.tcp, 1);
  }
  if (uv_read_start(stream(), OnAlloc, OnRead) == 0) {
    reading_ = true;
  } else {
    Close();
  }
}

// ---------------------------------------------------------------------------------------------
// Reading and dispatch

void Client::OnAlloc(uv_handle_t* h, size_t, uv_buf_t* buf) {
  auto* self = static_cast<Client*>(h->data);
  if (self->tls_ != nullptr) {
    *buf = self->tls_->ReadBuffer();
    return;
  }
  size_t want = kReadChunk;
  // A big bulk announced by its header is read into one buffer reserved once.
  const size_t expected = self->parser_.expected_size();
  if (expected > self->in_.size() + want) want = expected - self->in_.size();
  char* p = self->in_.Reserve(want);
  *buf = uv_buf_init(p, static_cast<unsigned>(std::min<size_t>(self->in_.free_space(), 1u << 30)));
}

void Client::OnRead(uv_stream_t* s, ssize_t nread, const uv_buf_t*) {
  auto* self = static_cast<Client*>(s->data);
  if (nread == 0) return;
  if (nread < 0) {
    // Like Redis, a client that closes its side is gone: its pending replies are dropped.
    self->Close();
    return;
  }
  if (self->tls_ != nullptr) {
    if (!self->OnTlsRead(static_cast<size_t>(nread))) return;
  } else {
    self->in_.Commit(static_cast<size_t>(nread));
  }
  self->last_interaction_ms_ = self->server_->NowMs();
  self->ProcessInput();
}

bool Client::OnTlsRead(size_t n) {
  const bool ok = tls_->OnRead(n, &in_, &out_.sealed());
  if (!out_.sealed().empty()) MarkDirty();
  if (!ok || tls_->closed()) {
    // A failed handshake (a plaintext client, garbage, a refused certificate) gets no Redis
    // reply: the alert, if any, and the connection closes.
    if (!ok) {
      LOG_VERBOSE_F({{"client", addr_}, {"client_id", id_}},
                    "TLS error from client id=%llu addr=%s: %s",
                    static_cast<unsigned long long>(id_), addr_.c_str(), tls_->error().c_str());
    }
    Flush();
    Close();
    return false;
  }
  return true;
}

void Client::ProcessInput() {
  processing_ = true;
  ProcessCommands();
  processing_ = false;
  // A pause lifted while the commands ran (a plan that finished at once) leaves reading
  // stopped: start it again.
  if (paused_ == 0 && !closing_ && !reading_ && !input_closed_) {
    if (uv_read_start(stream(), OnAlloc, OnRead) == 0) reading_ = true;
  }
}

bool Client::Authenticated() const {
  return authenticated_ && (logged_in_ || !server_->upstream_login_required());
}

void Client::ProcessCommands() {
  while (paused_ == 0 && !closing_ && !in_.empty()) {
    if (auth_in_flight_ > 0) {
      // What follows an AUTH the upstream checks runs as what it answers, and is read with the
      // request limits of that answer (Redis's for a client not logged in, or not).
      Pause(kPauseBarrier);
      break;
    }
    size_t consumed = 0;
    protocol::ParseStatus st = parser_.Parse(in_.view(), Authenticated(), &consumed, &cmd_);
    if (st == protocol::ParseStatus::kNeedMore) {
      in_.Consume(consumed);
      break;
    }
    if (st == protocol::ParseStatus::kError) {
      ReplyProtocolError(parser_.error());
      return;
    }
    if (tunnel_) {
      // Past a tunnel's start the client talks to the upstream itself.
      ForwardToTunnel(cmd_);
      in_.Consume(consumed);
      continue;
    }
    Dispatched d = Dispatch(cmd_);
    metric_ = 0;  // a command that made no reply (it closed the connection) is not counted
    if (d == Dispatched::kRetryLater) {
      // The command is parsed again when the client resumes.
      parser_.Reset();
      break;
    }
    in_.Consume(consumed);
    if (d == Dispatched::kStop) break;
  }
  if (closing_) return;
  if (in_.size() > static_cast<size_t>(server_->options().client_query_buffer_limit)) {
    LOG_WARNING_F({{"client", addr_}, {"client_id", id_}},
                  "Closing client that reached max query buffer length: id=%llu addr=%s",
                  static_cast<unsigned long long>(id_), addr_.c_str());
    Close();
    return;
  }
  if (in_.empty()) in_.ShrinkIfIdle(kReadChunk * 4);
}

// ---------------------------------------------------------------------------------------------
// Replies

void Client::BeginMetric(const protocol::CommandInfo* info, std::string_view lower_name) {
  metric_ = static_cast<uint16_t>(
      1 + (info != nullptr ? command_ids::ForInfo(info) : command_ids::ForName(lower_name)));
  metric_start_ns_ = server_->metrics().NowNs();
}

void Client::TakeMetricBack(Pending* slot) {
  if (slot->metric == 0) return;
  metric_ = slot->metric;
  metric_start_ns_ = slot->metric_start_ns;
  slot->metric = 0;
}

void Client::RecordMetric(uint16_t metric, uint64_t start_ns, bool error) {
  LoopMetrics& m = server_->metrics();
  const uint64_t now = m.NowNs();
  m.Record(static_cast<uint16_t>(metric - 1), now > start_ns ? now - start_ns : 0, error);
}

Pending* Client::NewSlot() {
  auto* p = new Pending;
  p->client = this;
  if (metric_ != 0) {
    p->metric = metric_;
    p->metric_start_ns = metric_start_ns_;
    metric_ = 0;
  }
  if (reply_skip_) {
    p->suppress = true;
    reply_skip_ = false;
  } else if (reply_off_) {
    p->suppress = true;
  }
  return p;
}

void Client::Append(std::string_view bytes) {
  out_.pending().append(bytes);
  MarkDirty();
  const size_t size = out_.size();
  const conf::Options& o = server_->options();
  if (in_pubsub() && size > static_cast<size_t>(o.client_output_limit_pubsub)) {
    if (!close_asap_) {
      LOG_WARNING_F({{"client", addr_}, {"client_id", id_}},
                    "Client id=%llu addr=%s closed for overcoming of output buffer limits.",
                    static_cast<unsigned long long>(id_), addr_.c_str());
    }
    close_asap_ = true;  // closed by Flush, outside whatever is delivering now
  } else if (size > static_cast<size_t>(o.client_output_pause) && (paused_ & kPauseOutput) == 0) {
    Pause(kPauseOutput);
  }
}

void Client::ReplyLocal(std::string_view bytes, bool close_after) {
  if (capture_ != nullptr) {
    // A command answered at EXEC (transaction.cc): its reply goes into EXEC's.
    capture_->append(bytes);
    capture_close_ = capture_close_ || close_after;
    return;
  }
  if (replies_.empty() && !close_after && !reply_off_ && !reply_skip_) {
    // Nothing ahead of it: straight to the output, no slot needed.
    if (metric_ != 0) {
      RecordMetric(metric_, metric_start_ns_, !bytes.empty() && bytes[0] == '-');
      metric_ = 0;
    }
    Append(bytes);
    return;
  }
  Pending* p = NewSlot();
  p->data.assign(bytes);
  p->done = true;
  p->close_after = close_after;
  replies_.push_back(p);
  DeliverHead();
}

void Client::DeliverHead() {
  while (!replies_.empty()) {
    Pending* head = replies_.front();
    if (!head->data.empty()) {
      if (head->data[0] == '-') head->error_reply = true;
      if (!head->suppress) Append(head->data);
      head->data.clear();
    }
    if (!head->done) break;
    replies_.pop_front();
    if (head->metric != 0) RecordMetric(head->metric, head->metric_start_ns, head->error_reply);
    if (head->close_after) {
      close_when_drained_ = true;
      MarkDirty();
    }
    delete head;
  }
}

Pending* Client::NewUpstreamSlot(UpstreamConn* target) {
  Pending* p = NewSlot();
  replies_.push_back(p);
  ++inflight_;
  inflight_conn_ = target;
  inflight_pool_ = target->pool();
  inflight_shared_ = target->shared();
  return p;
}

size_t Client::MaxInFlight() const {
  // Replies of commands in flight land in the output buffer whether or not the client reads,
  // and their sizes are unknown until they arrive. So a new client starts with a small window
  // that grows by one per reply (a pipeline of small replies soon runs at kMaxInFlight), and
  // with big replies fewer commands go upstream at once, sized by the largest recent reply,
  // so that the buffered replies stay near client-output-pause.
  // What the output buffer already holds counts too: a client that stops reading gets fewer
  // commands upstream as its output grows, not a second client-output-pause in flight.
  const size_t pause = static_cast<size_t>(server_->options().client_output_pause);
  const size_t room = pause > out_.size() ? pause - out_.size() : 0;
  if (room == 0) return 1;  // (reading it stops too: kPauseOutput)
  const size_t by_size = room / std::max<size_t>(reply_peak_, 1);
  return std::clamp<size_t>(by_size, 16, window_);
}

// ---------------------------------------------------------------------------------------------
// Pinning

bool Client::NeedsPin() const {
  return in_multi_ || watching_ || monitor_ || tracking_ || db_ != 0 || in_pubsub() ||
         subscribing_ > 0 || no_evict_ || readonly_ || asking_ || tunnel_ || replica_handshake_ ||
         unknown_state_ || redirect_target_;
}

void Client::ClearConnectionState() {
  in_multi_ = watching_ = monitor_ = tracking_ = no_evict_ = readonly_ = asking_ = false;
  replica_handshake_ = unknown_state_ = redirect_target_ = false;
  db_ = channels_ = patterns_ = shard_channels_ = 0;
  subscribing_ = 0;
  queued_ = 0;
  queued_entries_.clear();
}

void Client::MaybeReleasePin() {
  if (pinned_ == nullptr || inflight_ > 0 || NeedsPin()) return;
  UpstreamConn* conn = pinned_;
  pinned_ = nullptr;
  conn->pool()->ReleasePinned(conn);
}

void Client::DropPin() {
  if (pinned_ == nullptr) return;
  UpstreamConn* conn = pinned_;
  pinned_ = nullptr;
  // A connection that holds state, or owes replies, is closed rather than reused dirty.
  if (NeedsPin() || conn->in_flight() > 0) conn->mark_dirty();
  ClearConnectionState();
  tunnel_ = false;
  conn->pool()->ReleasePinned(conn);
}

void Client::OnPinLost() {
  const bool had_state = NeedsPin();
  pinned_ = nullptr;
  ClearConnectionState();
  tunnel_ = false;
  if (had_state) {
    // The state lived in the lost connection (a transaction, subscriptions, a db, a tunnel).
    // Like a server going away, the client is closed once it has the error replies, so it
    // reconnects and rebuilds its state instead of running on without it.
    CloseWhenDrained();
  }
}

// ---------------------------------------------------------------------------------------------
// Writing and closing

void Client::MarkDirty() {
  if (!flush_queued_ && !closing_) {
    flush_queued_ = true;
    server_->QueueFlush(this);
  }
}

void Client::Flush() {
  flush_queued_ = false;
  if (closing_) return;
  if (close_asap_) {
    Close();
    return;
  }
  int rc = out_.Flush(stream(), &write_req_, OnWrite, tls_.get());
  if (rc != 0) {
    Close();
    return;
  }
  if (close_when_drained_ && replies_.empty() && out_.empty()) Close();
}

void Client::OnWrite(uv_write_t* req, int status) {
  auto* self = static_cast<Client*>(req->data);
  self->out_.OnWriteDone();
  if (status != 0) {
    if (status != UV_ECANCELED) self->Close();
    return;
  }
  self->last_interaction_ms_ = self->server_->NowMs();
  self->Flush();
  const bool drained =
      self->out_.size() <= static_cast<size_t>(self->server_->options().client_output_pause / 2);
  if (drained && self->tunnel_read_paused_ && self->pinned_ != nullptr && !self->closing_) {
    self->tunnel_read_paused_ = false;
    self->pinned_->ResumeReading();
  }
  if ((self->paused_ & kPauseOutput) && !self->closing_ && drained) {
    self->Resume(kPauseOutput);
  }
}

void Client::Pause(uint16_t reason) {
  paused_ |= reason;
  if (reading_) {
    uv_read_stop(stream());
    reading_ = false;
  }
}

void Client::Resume(uint16_t reason) {
  paused_ &= static_cast<uint16_t>(~reason);
  // Inside ProcessInput (a plan that finished at once) the loop there carries on by itself.
  if (paused_ != 0 || closing_ || processing_) return;
  ProcessInput();
  if (paused_ == 0 && !closing_ && !reading_) {
    if (uv_read_start(stream(), OnAlloc, OnRead) == 0) reading_ = true;
  }
}

void Client::CloseWhenDrained() {
  input_closed_ = true;
  Pause(kPauseClosing);
  close_when_drained_ = true;
  MarkDirty();
}

void Client::ReleaseIdleMemory() {
  if (closing_) return;
  if (in_.empty()) in_.ShrinkIfIdle(0);
  out_.ReleaseIfIdle();
}

bool Client::ExemptFromTimeout() const {
  // As Redis: pub/sub clients, monitors, replicas (tunnels) and clients blocked in a command are
  // not timed out.
  return in_pubsub() || monitor_ || tunnel_ || (pinned_ != nullptr && inflight_ > 0);
}

void Client::Close() {
  if (closing_) return;
  closing_ = true;
  for (Pending* p : replies_) {
    if (p->in_flight) {
      p->client = nullptr;  // the connection frees it when the reply comes
    } else {
      delete p;
    }
  }
  replies_.clear();
  inflight_ = 0;
  DropPin();
  if (reading_) uv_read_stop(stream());
  reading_ = false;
  uv_close(handle(), OnClose);
}

void Client::OnClose(uv_handle_t* h) {
  auto* self = static_cast<Client*>(h->data);
  self->server_->OnClientClosed(self);
}

}  // namespace bloomproxy::proxy
