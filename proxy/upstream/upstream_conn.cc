#include "proxy/upstream/upstream.h"

#include <arpa/inet.h>
#include <netdb.h>

#include <algorithm>
#include <cstring>

#include "protocol/cluster_map.h"
#include "protocol/encoder.h"
#include "protocol/errors.h"
#include "protocol/monitor_line.h"
#include "protocol/request_parser.h"
#include "protocol/resp3.h"
#include "proxy/client/client.h"
#include "proxy/server/log.h"
#include "proxy/server/server.h"
#include "proxy/sketch/plan_runner.h"
#include "proxy/upstream/cluster_router.h"
#include "proxy/upstream/own_connections.h"
#include "proxy/upstream/pin_registry.h"

namespace bloomproxy::proxy {
namespace {

constexpr size_t kReadChunk = 64 * 1024;

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

// An address as Redis writes it in CLIENT LIST (anetFormatAddr): "ip:port", "[ip6]:port".
std::string FormatAddress(const sockaddr_storage& a) {
  char host[INET6_ADDRSTRLEN] = "";
  if (a.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&a);
    uv_ip4_name(in, host, sizeof(host));
    return std::string(host) + ":" + std::to_string(ntohs(in->sin_port));
  }
  if (a.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&a);
    uv_ip6_name(in6, host, sizeof(host));
    return "[" + std::string(host) + "]:" + std::to_string(ntohs(in6->sin6_port));
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

UpstreamConn::UpstreamConn(UpstreamPool* pool, Kind kind, uint16_t flavor)
    : server_(pool->server()),
      pool_(pool),
      kind_(kind),
      flavor_(flavor),
      id_(server_->NextUpstreamId()) {
  Server* server = server_;
  uv_loop_t* loop = server->loop();
  const UpstreamAddress& addr = pool->address();
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
    if (server->upstream_tls() != nullptr) {
      // The name verified: upstream-tls-server-name, else the address's host (a cluster node's
      // announced IP, say).
      std::string name = server->options().upstream_tls_server_name;
      int port = 0;
      if (name.empty()) protocol::SplitHostPort(addr.text, &name, &port);
      tls_ = TlsSession::Connecting(server->upstream_tls(), name);
    }
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

const UpstreamAddress& UpstreamConn::address() const { return pool_->address(); }

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
  // Over TLS a connection counts as working once its handshake is done.
  self->ever_ready_ = self->tls_ == nullptr;
  if (!self->pool_->address().is_unix) {
    uv_tcp_keepalive(&self->sock_.tcp, 1, 60);
    sockaddr_storage ss;
    int len = sizeof(ss);
    if (uv_tcp_getsockname(&self->sock_.tcp, reinterpret_cast<sockaddr*>(&ss), &len) == 0) {
      self->local_address_ = FormatAddress(ss);
      self->Register();
      self->PublishOwner();
    }
  }
  if (self->tls_ != nullptr) {
    if (!self->tls_->Start(&self->out_.sealed())) {
      self->Close("upstream " + self->tls_->error());
      return;
    }
    // The handshake gets connect-timeout-ms too (a server that does not speak TLS never
    // answers the ClientHello).
    self->last_error_ = "upstream TLS handshake timed out";
    uv_timer_start(&self->timer_, OnConnectTimeout, self->server_->options().connect_timeout_ms, 0);
  }
  self->reading_ = true;
  if (!self->read_paused_) {
    int rc = uv_read_start(&self->sock_.stream, OnAlloc, OnRead);
    if (rc != 0) {
      self->Close(uv_strerror(rc));
      return;
    }
  }
  static constexpr const char* kKinds[] = {"shared", "pinned", "probe", "background"};
  LOG_VERBOSE_F({{"upstream", self->pool_->address().text}, {"upstream_conn", self->id_}},
                "upstream connection %llu to %s established (%s)",
                static_cast<unsigned long long>(self->id_), HostOf(self->pool_->address()).c_str(),
                kKinds[static_cast<int>(self->kind_)]);
  self->StartHandshake();
  if (self->kind_ == Kind::kShared) self->pool_->OnSharedReady(self);
  self->server_->QueueFlush(self);
}

void UpstreamConn::StartHandshake() {
  // The handshake goes in front of anything queued while connecting.
  std::string bytes;
  std::vector<Pending*> slots;
  auto add = [&](std::initializer_list<std::string_view> args, Hook hook) {
    protocol::AppendCommand(&bytes, args);
    NoteOwnCommand(args);
    slots.push_back(new Pending);
    slots.back()->hook = hook;
  };
  const conf::Options& o = server_->options();
  const ConnFlavor& flavor = server_->flavor(flavor_);
  const std::string& user = flavor.client_user ? flavor.user : o.upstream_user;
  const std::string& password = flavor.client_user ? flavor.password : o.upstream_password;
  if (!password.empty() && user.empty()) add({"AUTH", password}, Hook::kAuthUpstream);
  if (!password.empty() && !user.empty()) add({"AUTH", user, password}, Hook::kAuthUpstream);
  // A sharding proxy refuses INFO and CLIENT (closing the connection): nothing is asked.
  const bool sharding = server_->sharding_proxy();
  const bool background = kind_ == Kind::kProbe || kind_ == Kind::kBackground;
  // Named, so that other proxies take its lines out of their clients' MONITORs too.
  if (background && !sharding) add({"CLIENT", "SETNAME", kBackgroundName}, Hook::kNone);
  if (kind_ == Kind::kShared && !sharding) {
    add({"INFO", "server"}, Hook::kServerInfo);
    add({"INFO", "replication"}, Hook::kServerInfo);
  }
  // Something a sharding proxy answers, so that the connection is known to work (/readyz).
  if (kind_ == Kind::kShared && sharding) add({"PING"}, Hook::kNone);
  // Over TCP the id is looked up in CLIENT LIST when needed (see set_redis_client_id).
  if (kind_ == Kind::kPinned && pool_->address().is_unix && !sharding) {
    add({"CLIENT", "ID"}, Hook::kUpstreamId);
  }
  // Last, so that the replies read above are RESP2 ones; everything after it is RESP3.
  if (flavor.resp == protocol::Resp::k3) add({"HELLO", "3"}, Hook::kHelloUpstream);
  if (slots.empty()) return;
  out_.pending().insert(0, bytes);
  for (auto it = slots.rbegin(); it != slots.rend(); ++it) {
    (*it)->in_flight = true;
    (*it)->sent_ms = server_->NowMs();  // the stall check counts from here
    inflight_.push_front(*it);
  }
}

std::string UpstreamConn::upstream_key() const {
  const UpstreamAddress& a = pool_->address();
  return a.is_unix ? "unix:" + a.path : FormatAddress(a.addr);
}

void UpstreamConn::Register() {
  if (own_id_ != 0 || local_address_.empty()) return;
  const bool background = kind_ == Kind::kProbe || kind_ == Kind::kBackground;
  own_id_ = OwnConnections::Global().Opened(
      upstream_key(), local_address_,
      background ? OwnConnections::Role::kBackground : OwnConnections::Role::kClients);
}

void UpstreamConn::NoteOwnCommand(std::initializer_list<std::string_view> args) {
  // A background connection's lines are all hidden: nothing to record.
  if (own_id_ == 0 || kind_ == Kind::kProbe || kind_ == Kind::kBackground) return;
  OwnConnections::Global().Sent(own_id_, protocol::MonitorArgs(args));
}

void UpstreamConn::Send(std::string_view request_bytes, Pending* slot) {
  out_.pending().append(request_bytes);
  Queued(slot);
}

void UpstreamConn::Send(std::string&& request_bytes, Pending* slot) {
  if (!out_.pending().empty()) return Send(std::string_view(request_bytes), slot);
  out_.pending().swap(request_bytes);
  Queued(slot);
}

void UpstreamConn::Queued(Pending* slot) {
  ++server_->metrics().upstream_requests;
  if (slot != nullptr) {
    slot->in_flight = true;
    slot->sent_ms = server_->NowMs();
    inflight_.push_back(slot);
  }
  if (state_ == State::kReady) server_->QueueFlush(this);
}

void UpstreamConn::Flush() {
  flush_queued_ = false;
  if (state_ != State::kReady) return;
  int rc = out_.Flush(&sock_.stream, &write_req_, OnWrite, tls_.get());
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
  if (self->tunnel_ && self->owner_ != nullptr) self->owner_->OnTunnelWritten();
}

void UpstreamConn::OnAlloc(uv_handle_t* h, size_t, uv_buf_t* buf) {
  auto* self = static_cast<UpstreamConn*>(h->data);
  if (self->tls_ != nullptr) {
    *buf = self->tls_->ReadBuffer();
    return;
  }
  char* p = self->in_.Reserve(kReadChunk);
  *buf = uv_buf_init(p, static_cast<unsigned>(self->in_.free_space()));
}

void UpstreamConn::OnRead(uv_stream_t* s, ssize_t nread, const uv_buf_t*) {
  auto* self = static_cast<UpstreamConn*>(s->data);
  if (nread < 0) {
    self->Close(nread == UV_EOF ? "connection closed by upstream" : uv_strerror(nread));
    return;
  }
  if (self->tls_ != nullptr) {
    if (!self->tls_->OnRead(static_cast<size_t>(nread), &self->in_, &self->out_.sealed())) {
      self->Close("upstream " + self->tls_->error());
      return;
    }
    if (self->tls_->established() && !self->ever_ready_) {
      self->ever_ready_ = true;
      self->last_error_.clear();
      uv_timer_stop(&self->timer_);
    }
    // Handshake messages to answer, or requests that waited for the handshake.
    if (!self->out_.empty()) self->server_->QueueFlush(self);
    if (self->tls_->closed() && self->in_.empty()) {
      self->Close("connection closed by upstream");
      return;
    }
  } else {
    self->in_.Commit(static_cast<size_t>(nread));
  }
  while (self->state_ != State::kClosed && !self->in_.empty()) {
    if (self->tunnel_ && self->inflight_.empty()) {
      // Everything owed a framed reply is answered: the rest is the tunnel's.
      std::string_view bytes = self->in_.view();
      self->in_.Consume(bytes.size());
      if (self->owner_ != nullptr) self->owner_->OnTunnelData(bytes);
      break;
    }
    size_t len = 0;
    std::string_view view = self->in_.view();
    protocol::FrameStatus st = self->framer_.Next(view, &len);
    if (st == protocol::FrameStatus::kNeedMore) break;
    if (st == protocol::FrameStatus::kError) {
      LOG_WARNING_F({{"upstream", self->pool_->address().text}, {"upstream_conn", self->id_}},
                    "protocol error from upstream: %s", self->framer_.error().c_str());
      self->Close("protocol error from upstream");
      return;
    }
    self->OnFrame(view.substr(0, len));
    self->in_.Consume(len);
    if (!self->close_when_idle_.empty() && self->inflight_.empty()) {
      self->Close(self->close_when_idle_);
      return;
    }
  }
  if (self->in_.empty()) self->in_.ShrinkIfIdle(kReadChunk * 4);
}

void UpstreamConn::OnFrame(std::string_view frame) {
  answered_ = true;
  if (owner_ != nullptr && owner_->OnPush(this, frame)) return;
  if (frame[0] == '>' && !protocol::IsSubscribeReplyPush(frame)) {
    // A push nobody can take (a connection without owner): it is no reply to any request.
    LOG_VERBOSE_F({{"upstream", pool_->address().text}, {"upstream_conn", id_}},
                  "upstream connection %llu: push dropped (no client)",
                  static_cast<unsigned long long>(id_));
    return;
  }
  if (inflight_.empty()) {
    LOG_WARNING_F({{"upstream", pool_->address().text}, {"upstream_conn", id_}},
                  "upstream connection %llu: reply without a request",
                  static_cast<unsigned long long>(id_));
    Close("unexpected reply from upstream");
    return;
  }
  Pending* slot = inflight_.front();
  if (!slot->request.empty() && frame[0] == '-') {
    const protocol::Redirect redirect = protocol::ParseRedirect(frame);
    if (redirect.kind != protocol::RedirectKind::kNone) {
      inflight_.pop_front();
      if (server_->router().Redirect(this, slot, redirect, frame)) return;
      inflight_.push_front(slot);
    }
  }
  if (slot->sink != nullptr) {
    inflight_.pop_front();
    return ClusterRouter::Deliver(slot, frame);
  }
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
  if (slot->client == nullptr) return OnInternalReply(slot, frame);
  // Pop before calling back: the client may close this connection from inside the call.
  inflight_.pop_front();
  if (!slot->client->OnUpstreamFrame(this, slot, frame)) inflight_.push_front(slot);
}

bool UpstreamConn::LogsInWithoutPassword() const {
  const ConnFlavor& flavor = server_->flavor(flavor_);
  if (flavor.client_user) return flavor.user.empty() && flavor.password.empty();
  return server_->options().upstream_password.empty();
}

void UpstreamConn::OnInternalReply(Pending* slot, std::string_view frame) {
  // The reply is read here and dropped (a client that left gets nothing).
  const bool is_error = !frame.empty() && frame[0] == '-';
  if ((slot->hook == Hook::kAuthUpstream || slot->hook == Hook::kHelloUpstream) && is_error) {
    const bool auth = slot->hook == Hook::kAuthUpstream;
    LOG_WARNING_F({{"upstream", pool_->address().text}, {"upstream_conn", id_}},
                  auth ? "upstream rejected the proxy's AUTH: %.*s"
                       : "upstream refused HELLO 3 (RESP3): %.*s",
                  static_cast<int>(frame.size() > 2 ? frame.size() - 2 : 0), frame.data());
    inflight_.pop_front();
    delete slot;
    Close(auth ? "upstream authentication failed" : "upstream does not speak RESP3");
    return;
  }
  if (slot->hook == Hook::kServerInfo && LogsInWithoutPassword()) {
    // Whether the upstream's default user needs a password (Server::upstream_login_required).
    server_->set_upstream_noauth(is_error && frame.substr(0, 8) == "-NOAUTH ");
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
    if (protocol::StringToInt64(frame.substr(1, frame.size() - 3), &id)) set_redis_client_id(id);
  }
  if (slot->hook == Hook::kProbe) pool_->OnProbeReply(frame);
  if (slot->hook == Hook::kClusterSlots) server_->router().OnSlotsReply(this, frame);
  if (slot->frames_left < 0) slot->frames_left = 1;
  // Only a subscribe-family reply may end early with an error; the replies of internal
  // requests are counted exactly.
  const bool early = is_error && slot->hook == Hook::kSubscribe;
  if (--slot->frames_left <= 0 || early) {
    inflight_.pop_front();
    delete slot;
  }
}

void UpstreamConn::set_owner(Client* c) {
  if (owner_ != nullptr && owner_ != c) PinRegistry::Clear(owner_->id());
  owner_ = c;
  PublishOwner();
}

void UpstreamConn::SyncName(std::string_view name) {
  // A sharding proxy has no CLIENT command (twemproxy closes the connection on it).
  if (name == upstream_name_ || !usable() || server_->sharding_proxy()) return;
  upstream_name_.assign(name);
  std::string request;
  protocol::AppendCommand(&request,
                          std::initializer_list<std::string_view>{"CLIENT", "SETNAME", name});
  Send(std::move(request), new Pending);
}

void UpstreamConn::set_redis_client_id(int64_t id) {
  redis_client_id_ = id;
  PublishOwner();
}

void UpstreamConn::PublishOwner() {
  if (owner_ == nullptr) return;
  PinRegistry::Set(owner_->id(), {local_address_, redis_client_id_});
  if (!local_address_.empty() || redis_client_id_ > 0) server_->WakeRedirectWaiters();
}

void UpstreamConn::CloseWhenIdle(const std::string& reason) {
  if (inflight_.empty()) return Close(reason);
  close_when_idle_ = reason;
}

bool UpstreamConn::plan_in_flight() const {
  for (const Pending* p : inflight_) {
    if (p->plan_step) return true;
  }
  return false;
}

void UpstreamConn::StartTunnel() {
  tunnel_ = true;
  dirty_ = true;
}

void UpstreamConn::PauseReading() {
  if (read_paused_) return;
  read_paused_ = true;
  if (reading_ && state_ == State::kReady) uv_read_stop(&sock_.stream);
}

void UpstreamConn::ResumeReading() {
  if (!read_paused_) return;
  read_paused_ = false;
  if (reading_ && state_ == State::kReady) {
    const int rc = uv_read_start(&sock_.stream, OnAlloc, OnRead);
    if (rc != 0) Close(uv_strerror(rc));
  }
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
    if (slot->sink != nullptr || slot->client == nullptr) {
      ClusterRouter::Deliver(slot, reply);
      continue;
    }
    // An error frame completes any slot, even one owed several frames.
    slot->client->OnUpstreamFrame(this, slot, reply);
  }
}

UpstreamRef::UpstreamRef(UpstreamConn* c) : conn(c), fate(c->fate()) {}

void UpstreamConn::Close(const std::string& reason) {
  if (state_ == State::kClosed) return;
  const bool was_ready = state_ == State::kReady;
  state_ = State::kClosed;
  last_error_ = reason;
  if (was_ready || !inflight_.empty()) {
    LOG_VERBOSE_F({{"upstream", pool_->address().text}, {"upstream_conn", id_}},
                  "upstream connection %llu closed: %s", static_cast<unsigned long long>(id_),
                  reason.c_str());
  }
  uv_timer_stop(&timer_);
  if (owner_ != nullptr) {
    Client* owner = owner_;
    owner_ = nullptr;
    PinRegistry::Clear(owner->id());
    owner->OnPinLost();
    server_->WakeRedirectWaiters();
  }
  // On a cluster, the node's slots cannot be served until the cluster fails over: Redis's own
  // word for that.
  std::string reply =
      server_->router().cluster()
          ? std::string(protocol::errors::kClusterDown)
          : protocol::errors::UpstreamUnavailable(HostOf(pool_->address()) + ": " + reason);
  fate_->closed = true;
  fate_->reply = reply;
  if (own_id_ != 0) OwnConnections::Global().Closed(own_id_);
  FailAll(reply);
  pool_->OnConnClosed(this);
  out_.Clear();
  uv_close(&sock_.handle, OnClose);
  uv_close(reinterpret_cast<uv_handle_t*>(&timer_), OnClose);
}

void UpstreamConn::OnClose(uv_handle_t* h) {
  auto* self = static_cast<UpstreamConn*>(h->data);
  if (--self->open_handles_ == 0) delete self;
}

}  // namespace bloomproxy::proxy
