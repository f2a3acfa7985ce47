#include "proxy/upstream.h"

#include <arpa/inet.h>
#include <netdb.h>

#include <algorithm>
#include <cstring>

#include "protocol/encoder.h"
#include "protocol/errors.h"
#include "protocol/request_parser.h"
#include "proxy/client.h"
#include "proxy/log.h"
#include "proxy/plan_runner.h"
#include "proxy/server.h"

namespace bloomproxy::proxy {
namespace {

constexpr size_t kReadChunk = 64 * 1024;
constexpr int kFirstBackoffMs = 50;
// While the upstream is down, commands start reconnect attempts at most this often per slot.
constexpr uint64_t kDemandRetryMs = 100;

std::string HostOf(const UpstreamAddress& a) { return a.text; }

// Reads "field:value" out of an INFO reply body.
std::string InfoField(std::string_view body, std::string_view field) {
  size_t pos = 0;
  while (pos < body.size()) {
    size_t eol = body.find("\r\n", pos);
    if (eol == std::string_view::npos) eol = body.size();
    std::string_view line = body.substr(pos, eol - pos);
    if (line.size() > field.size() && line.substr(0, field.size()) == field &&
        line[field.size()] == ':') {
      return std::string(line.substr(field.size() + 1));
    }
    pos = eol + 2;
  }
  return {};
}

}  // namespace

bool ResolveUpstream(const std::string& spec, UpstreamAddress* out, std::string* error) {
  out->text = spec;
  if (spec.rfind("unix:", 0) == 0) {
    out->is_unix = true;
    out->path = spec.substr(5);
    if (out->path.empty()) {
      *error = "empty unix socket path";
      return false;
    }
    return true;
  }
  std::string host, port;
  if (!spec.empty() && spec[0] == '[') {
    size_t close = spec.find(']');
    if (close == std::string::npos || close + 1 >= spec.size() || spec[close + 1] != ':') {
      *error = "expected [IPV6]:PORT";
      return false;
    }
    host = spec.substr(1, close - 1);
    port = spec.substr(close + 2);
  } else {
    size_t colon = spec.rfind(':');
    if (colon == std::string::npos) {
      *error = "expected HOST:PORT";
      return false;
    }
    host = spec.substr(0, colon);
    port = spec.substr(colon + 1);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0 || res == nullptr) {
    *error = std::string("cannot resolve '") + host + "': " + gai_strerror(rc);
    return false;
  }
  std::memcpy(&out->addr, res->ai_addr, res->ai_addrlen);
  freeaddrinfo(res);
  return true;
}

// ---------------------------------------------------------------------------------------------
// UpstreamConn

UpstreamConn::UpstreamConn(Server* server, bool shared)
    : server_(server), shared_(shared), id_(server->NextUpstreamId()) {
  uv_loop_t* loop = server->loop();
  const UpstreamAddress& addr = server->upstream_address();
  int rc;
  if (addr.is_unix) {
    uv_pipe_init(loop, &sock_.pipe, 0);
  } else {
    uv_tcp_init(loop, &sock_.tcp);
  }
  sock_.handle.data = this;
  uv_timer_init(loop, &timer_);
  timer_.data = this;
  open_handles_ = 2;
  connect_req_.data = this;
  write_req_.data = this;
  if (addr.is_unix) {
    uv_pipe_connect(&connect_req_, &sock_.pipe, addr.path.c_str(), OnConnect);
    rc = 0;
  } else {
    uv_tcp_nodelay(&sock_.tcp, 1);
    rc = uv_tcp_connect(&connect_req_, &sock_.tcp, reinterpret_cast<const sockaddr*>(&addr.addr),
                        OnConnect);
  }
  if (rc != 0) {
    // The connect callback will not fire; fail on the next loop turn via the timer so the
    // caller's Send() calls, made right after construction, still find the connection.
    last_error_ = uv_strerror(rc);
    uv_timer_start(&timer_, OnConnectTimeout, 0, 0);
    return;
  }
  uv_timer_start(&timer_, OnConnectTimeout, server->options().connect_timeout_ms, 0);
}

UpstreamConn::~UpstreamConn() = default;

void UpstreamConn::OnConnectTimeout(uv_timer_t* t) {
  auto* self = static_cast<UpstreamConn*>(t->data);
  self->Close(self->last_error_.empty() ? "connect timeout" : self->last_error_);
}

void UpstreamConn::OnConnect(uv_connect_t* req, int status) {
  auto* self = static_cast<UpstreamConn*>(req->data);
  if (status == UV_ECANCELED) return;
  if (self->state_ == State::kClosed) return;
  if (status != 0) {
    self->Close(std::string(uv_strerror(status)));
    return;
  }
  uv_timer_stop(&self->timer_);
  self->state_ = State::kReady;
  self->ever_ready_ = true;
  if (!self->server_->upstream_address().is_unix) {
    uv_tcp_keepalive(&self->sock_.tcp, 1, 60);
  }
  int rc = uv_read_start(&self->sock_.stream, OnAlloc, OnRead);
  if (rc != 0) {
    self->Close(uv_strerror(rc));
    return;
  }
  LOG_VERBOSE(
      "upstream connection %llu to %s established (%s)", static_cast<unsigned long long>(self->id_),
      HostOf(self->server_->upstream_address()).c_str(), self->shared_ ? "shared" : "pinned");
  self->StartHandshake();
  self->server_->QueueFlush(self);
}

void UpstreamConn::StartHandshake() {
  // The handshake goes in front of anything queued while connecting.
  std::string bytes;
  std::vector<Pending*> slots;
  const conf::Options& o = server_->options();
  if (!o.upstream_password.empty()) {
    if (o.upstream_user.empty()) {
      protocol::AppendCommand(&bytes,
                              std::initializer_list<std::string_view>{"AUTH", o.upstream_password});
    } else {
      protocol::AppendCommand(&bytes, std::initializer_list<std::string_view>{
                                          "AUTH", o.upstream_user, o.upstream_password});
    }
    auto* p = new Pending;
    p->hook = Hook::kAuthUpstream;
    slots.push_back(p);
  }
  if (shared_) {
    protocol::AppendCommand(&bytes, std::initializer_list<std::string_view>{"INFO", "server"});
    protocol::AppendCommand(&bytes, std::initializer_list<std::string_view>{"INFO", "replication"});
    for (int i = 0; i < 2; ++i) {
      auto* p = new Pending;
      p->hook = Hook::kServerInfo;
      slots.push_back(p);
    }
  }
  if (!shared_) {
    protocol::AppendCommand(&bytes, std::initializer_list<std::string_view>{"CLIENT", "ID"});
    auto* p = new Pending;
    p->hook = Hook::kUpstreamId;
    slots.push_back(p);
  }
  if (slots.empty()) return;
  out_.pending().insert(0, bytes);
  for (auto it = slots.rbegin(); it != slots.rend(); ++it) {
    (*it)->in_flight = true;
    inflight_.push_front(*it);
  }
}

void UpstreamConn::Send(std::string_view request_bytes, Pending* slot) {
  out_.pending().append(request_bytes);
  if (slot != nullptr) {
    slot->in_flight = true;
    slot->sent_ms = server_->NowMs();
    inflight_.push_back(slot);
  }
  if (state_ == State::kReady) server_->QueueFlush(this);
}

void UpstreamConn::Send(std::string&& request_bytes, Pending* slot) {
  if (out_.pending().empty()) {
    out_.pending().swap(request_bytes);
    if (slot != nullptr) {
      slot->in_flight = true;
      slot->sent_ms = server_->NowMs();
      inflight_.push_back(slot);
    }
    if (state_ == State::kReady) server_->QueueFlush(this);
    return;
  }
  Send(std::string_view(request_bytes), slot);
}

void UpstreamConn::Flush() {
  flush_queued_ = false;
  if (state_ != State::kReady) return;
  int rc = out_.Flush(&sock_.stream, &write_req_, OnWrite);
  if (rc != 0) Close(uv_strerror(rc));
}

void UpstreamConn::OnWrite(uv_write_t* req, int status) {
  auto* self = static_cast<UpstreamConn*>(req->data);
  self->out_.OnWriteDone();
  if (status != 0) {
    if (status != UV_ECANCELED) self->Close(uv_strerror(status));
    return;
  }
  if (!self->out_.empty()) self->Flush();
}

void UpstreamConn::OnAlloc(uv_handle_t* h, size_t, uv_buf_t* buf) {
  auto* self = static_cast<UpstreamConn*>(h->data);
  char* p = self->in_.Reserve(kReadChunk);
  *buf = uv_buf_init(p, static_cast<unsigned>(self->in_.free_space()));
}

void UpstreamConn::OnRead(uv_stream_t* s, ssize_t nread, const uv_buf_t*) {
  auto* self = static_cast<UpstreamConn*>(s->data);
  if (nread < 0) {
    self->Close(nread == UV_EOF ? "connection closed by upstream" : uv_strerror(nread));
    return;
  }
  self->in_.Commit(static_cast<size_t>(nread));
  while (self->state_ != State::kClosed && !self->in_.empty()) {
    size_t len = 0;
    std::string_view view = self->in_.view();
    protocol::FrameStatus st = self->framer_.Next(view, &len);
    if (st == protocol::FrameStatus::kNeedMore) break;
    if (st == protocol::FrameStatus::kError) {
      LOG_WARNING("protocol error from upstream: %s", self->framer_.error().c_str());
      self->Close("protocol error from upstream");
      return;
    }
    self->OnFrame(view.substr(0, len));
    self->in_.Consume(len);
  }
  if (self->in_.empty()) self->in_.ShrinkIfIdle(kReadChunk * 4);
}

void UpstreamConn::OnFrame(std::string_view frame) {
  if (owner_ != nullptr && owner_->OnPush(this, frame)) return;
  if (inflight_.empty()) {
    LOG_WARNING("upstream connection %llu: reply without a request",
                static_cast<unsigned long long>(id_));
    Close("unexpected reply from upstream");
    return;
  }
  Pending* slot = inflight_.front();
  if (slot->plan != nullptr) {
    // A plan step: each of its replies goes to the plan, which may send its next step on this
    // connection (so the slot leaves the FIFO first).
    PlanRunner* runner = slot->plan;
    const bool last = --slot->frames_left <= 0;
    if (last) {
      inflight_.pop_front();
      delete slot;
    }
    runner->OnFrame(frame, last);
    return;
  }
  if (slot->client == nullptr) {
    // Internal request, or a client that left: the reply is read here and dropped.
    const bool is_error = !frame.empty() && frame[0] == '-';
    if (slot->hook == Hook::kAuthUpstream && is_error) {
      LOG_WARNING("upstream rejected the proxy's AUTH: %.*s",
                  static_cast<int>(frame.size() > 2 ? frame.size() - 2 : 0), frame.data());
      inflight_.pop_front();
      delete slot;
      Close("upstream authentication failed");
      return;
    }
    if (slot->hook == Hook::kServerInfo && !is_error) {
      protocol::ReplyPtr r = server_->decoder().Decode(frame);
      if (r && r->type == REDIS_REPLY_STRING) {
        std::string_view body(r->str, r->len);
        UpstreamInfo& info = server_->upstream_info();
        std::string v = InfoField(body, "redis_version");
        if (!v.empty()) info.version = v;
        std::string m = InfoField(body, "redis_mode");
        if (!m.empty()) info.mode = m;
        std::string role = InfoField(body, "role");
        if (!role.empty()) info.role = role == "slave" ? "replica" : role;
      }
    }
    if (slot->hook == Hook::kUpstreamId && frame.size() > 3 && frame[0] == ':') {
      int64_t id = 0;
      if (protocol::StringToInt64(frame.substr(1, frame.size() - 3), &id)) redis_client_id_ = id;
    }
    if (slot->frames_left < 0) slot->frames_left = 1;
    // Only a subscribe-family reply may end early with an error; the replies of internal
    // requests are counted exactly.
    const bool early = is_error && slot->hook == Hook::kSubscribe;
    if (--slot->frames_left <= 0 || early) {
      inflight_.pop_front();
      delete slot;
    }
    return;
  }
  // Pop before calling back: the client may close this connection from inside the call.
  inflight_.pop_front();
  if (!slot->client->OnUpstreamFrame(this, slot, frame)) inflight_.push_front(slot);
}

void UpstreamConn::FailAll(const std::string& reply) {
  std::deque<Pending*> slots;
  slots.swap(inflight_);
  for (Pending* slot : slots) {
    if (slot->plan != nullptr) {
      PlanRunner* runner = slot->plan;
      delete slot;
      runner->OnFail(reply);
      continue;
    }
    if (slot->client == nullptr) {
      delete slot;
      continue;
    }
    // An error frame completes any slot, even one owed several frames.
    slot->client->OnUpstreamFrame(this, slot, reply);
  }
}

void UpstreamConn::Close(const std::string& reason) {
  if (state_ == State::kClosed) return;
  const bool was_ready = state_ == State::kReady;
  state_ = State::kClosed;
  last_error_ = reason;
  if (was_ready || !inflight_.empty()) {
    LOG_VERBOSE("upstream connection %llu closed: %s", static_cast<unsigned long long>(id_),
                reason.c_str());
  }
  uv_timer_stop(&timer_);
  if (owner_ != nullptr) {
    Client* owner = owner_;
    owner_ = nullptr;
    owner->OnPinLost();
  }
  std::string reply =
      protocol::errors::UpstreamUnavailable(HostOf(server_->upstream_address()) + ": " + reason);
  FailAll(reply);
  server_->pool().OnConnClosed(this);
  out_.Clear();
  uv_close(&sock_.handle, OnClose);
  uv_close(reinterpret_cast<uv_handle_t*>(&timer_), OnClose);
}

void UpstreamConn::OnClose(uv_handle_t* h) {
  auto* self = static_cast<UpstreamConn*>(h->data);
  if (--self->open_handles_ == 0) delete self;
}

// ---------------------------------------------------------------------------------------------
// UpstreamPool

UpstreamPool::UpstreamPool(Server* server) : server_(server) {}

UpstreamPool::~UpstreamPool() = default;

void UpstreamPool::Start() {
  const int n = std::max(1, server_->options().upstream_connections);
  for (int i = 0; i < n; ++i) {
    auto slot = std::make_unique<Slot>();
    slot->pool = this;
    uv_timer_init(server_->loop(), &slot->timer);
    slot->timer.data = slot.get();
    slots_.push_back(std::move(slot));
  }
  for (auto& slot : slots_) Connect(slot.get());
}

void UpstreamPool::Connect(Slot* slot) {
  slot->last_attempt_ms = uv_now(server_->loop());
  slot->conn = new UpstreamConn(server_, true);
}

void UpstreamPool::ReconnectOnDemand() {
  if (closing_) return;
  const uint64_t now = uv_now(server_->loop());
  for (auto& slot : slots_) {
    if (slot->conn != nullptr || now - slot->last_attempt_ms < kDemandRetryMs) continue;
    uv_timer_stop(&slot->timer);
    Connect(slot.get());
  }
}

void UpstreamPool::OnReconnect(uv_timer_t* t) {
  auto* slot = static_cast<Slot*>(t->data);
  if (slot->pool->closing_ || slot->conn != nullptr) return;
  slot->pool->Connect(slot);
}

UpstreamConn* UpstreamPool::Shared(size_t* hint) {
  const size_t n = slots_.size();
  for (size_t i = 0; i < n; ++i) {
    size_t idx = (*hint + i) % n;
    UpstreamConn* c = slots_[idx]->conn;
    if (c != nullptr && c->usable()) {
      *hint = idx;
      return c;
    }
  }
  ReconnectOnDemand();
  return nullptr;
}

UpstreamConn* UpstreamPool::AcquirePinned(Client* owner) {
  UpstreamConn* conn = nullptr;
  while (!idle_pinned_.empty() && conn == nullptr) {
    conn = idle_pinned_.back();
    idle_pinned_.pop_back();
    if (!conn->usable()) conn = nullptr;
  }
  if (conn == nullptr) conn = new UpstreamConn(server_, false);
  conn->set_owner(owner);
  ++pinned_in_use_;
  return conn;
}

void UpstreamPool::ReleasePinned(UpstreamConn* conn) {
  if (pinned_in_use_ > 0) --pinned_in_use_;
  conn->set_owner(nullptr);
  const bool keep = !closing_ && conn->ready() && !conn->dirty() && conn->in_flight() == 0 &&
                    idle_pinned_.size() < static_cast<size_t>(server_->options().pinned_pool_size);
  if (keep) {
    idle_pinned_.push_back(conn);
  } else {
    conn->Close("released");
  }
}

void UpstreamPool::OnConnClosed(UpstreamConn* conn) {
  if (!conn->shared()) {
    auto it = std::find(idle_pinned_.begin(), idle_pinned_.end(), conn);
    if (it != idle_pinned_.end()) idle_pinned_.erase(it);
    return;
  }
  for (auto& slot : slots_) {
    if (slot->conn != conn) continue;
    slot->conn = nullptr;
    slot->last_error = conn->last_error();
    ++server_->stats().upstream_errors;
    if (closing_) return;
    // A connection that worked restarts the backoff; repeated failures double it up to the cap.
    const int cap = std::max(kFirstBackoffMs, server_->options().reconnect_max_ms);
    slot->backoff_ms = conn->ever_ready_
                           ? kFirstBackoffMs
                           : std::min(cap, std::max(kFirstBackoffMs, slot->backoff_ms * 2));
    if (conn->ever_ready_) {
      LOG_WARNING("upstream %s connection lost: %s", server_->upstream_address().text.c_str(),
                  conn->last_error().c_str());
    }
    uv_timer_start(&slot->timer, OnReconnect, static_cast<uint64_t>(slot->backoff_ms), 0);
    return;
  }
}

void UpstreamPool::CheckTimeouts(uint64_t now, uint64_t timeout_ms) {
  // A shared connection whose oldest request has waited too long is stalled (the upstream is
  // stopped, or a network path is black-holed): it fails, every request on it gets an error,
  // and a new connection is made. Pinned connections are exempt: a BLPOP may wait for ever.
  for (auto& slot : slots_) {
    UpstreamConn* c = slot->conn;
    if (c == nullptr || c->inflight_.empty()) continue;
    if (now - c->inflight_.front()->sent_ms > timeout_ms) c->Close("command timeout");
  }
}

std::string UpstreamPool::unavailable_reason() const {
  for (const auto& slot : slots_) {
    if (!slot->last_error.empty()) return slot->last_error;
  }
  return "not connected";
}

size_t UpstreamPool::shared_count() const {
  size_t n = 0;
  for (const auto& slot : slots_) n += slot->conn != nullptr && slot->conn->ready();
  return n;
}

void UpstreamPool::CloseAll() {
  closing_ = true;
  for (auto& slot : slots_) {
    uv_timer_stop(&slot->timer);
    if (!uv_is_closing(reinterpret_cast<uv_handle_t*>(&slot->timer))) {
      uv_close(reinterpret_cast<uv_handle_t*>(&slot->timer), nullptr);
    }
    if (slot->conn != nullptr) slot->conn->Close("proxy shutting down");
  }
  std::vector<UpstreamConn*> idle;
  idle.swap(idle_pinned_);
  for (UpstreamConn* c : idle) c->Close("proxy shutting down");
}

}  // namespace bloomproxy::proxy
