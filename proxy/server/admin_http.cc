#include "proxy/server/admin_http.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include "protocol/key_slot.h"
#include "proxy/server/log.h"
#include "proxy/server/metrics.h"
#include "proxy/server/server.h"
#include "proxy/upstream/cluster_router.h"
#include "proxy/upstream/upstream.h"

#ifndef BLOOMPROXY_VERSION
#define BLOOMPROXY_VERSION "0.0.0"
#endif

namespace bloomproxy::proxy {

// ---------------------------------------------------------------------------------------------
// HTTP, as pure functions

namespace admin {
namespace {

bool IsTokenChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

const char* StatusText(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 431:
      return "Request Header Fields Too Large";
    case 503:
      return "Service Unavailable";
    default:
      return "Error";
  }
}

// The end of the head (past its blank line), or npos.
size_t HeadEnd(std::string_view in) {
  const size_t crlf = in.find("\r\n\r\n");
  const size_t lf = in.find("\n\n");
  const size_t a = crlf == std::string_view::npos ? crlf : crlf + 4;
  const size_t b = lf == std::string_view::npos ? lf : lf + 2;
  return std::min(a, b);
}

}  // namespace

HeadStatus ParseRequestHead(std::string_view in, RequestHead* head) {
  // A server should skip empty lines before the request line (RFC 9112, 2.2).
  while (!in.empty() && (in[0] == '\r' || in[0] == '\n')) in.remove_prefix(1);
  const size_t end = HeadEnd(in);
  if (end == std::string_view::npos) {
    return in.size() > kMaxHeadBytes ? HeadStatus::kTooLarge : HeadStatus::kNeedMore;
  }
  if (end > kMaxHeadBytes) return HeadStatus::kTooLarge;
  std::string_view line = in.substr(0, in.find('\n'));
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) return HeadStatus::kBad;
  head->method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  head->version = line.substr(sp2 + 1);
  if (head->method.empty() || !std::all_of(head->method.begin(), head->method.end(), IsTokenChar) ||
      (head->version != "HTTP/1.1" && head->version != "HTTP/1.0")) {
    return HeadStatus::kBad;
  }
  // The absolute form (a request through a proxy) names the path after the authority.
  for (std::string_view scheme : {"http://", "https://"}) {
    if (target.substr(0, scheme.size()) == scheme) {
      const size_t slash = target.find('/', scheme.size());
      target = slash == std::string_view::npos ? std::string_view("/") : target.substr(slash);
    }
  }
  if (target.empty() || (target[0] != '/' && target != "*")) return HeadStatus::kBad;
  head->path = target.substr(0, target.find_first_of("?#"));
  return HeadStatus::kComplete;
}

std::string SerializeResponse(const Response& r, bool head_only) {
  std::string out = "HTTP/1.1 " + std::to_string(r.status) + " " + StatusText(r.status) + "\r\n";
  out += "Content-Type: " + r.content_type + "\r\n";
  out += "Content-Length: " + std::to_string(r.body.size()) + "\r\n";
  out += "Cache-Control: no-store\r\n";
  out += r.extra_headers;
  out += "Connection: close\r\n\r\n";
  if (!head_only) out += r.body;
  return out;
}

Response Route(const RequestHead& head, const std::function<std::string()>& not_ready,
               const std::function<std::string()>& metrics) {
  Response r;
  if (head.method != "GET" && head.method != "HEAD") {
    r.status = 405;
    r.body = "method not allowed\n";
    r.extra_headers = "Allow: GET, HEAD\r\n";
  } else if (head.path == "/metrics") {
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    r.body = metrics();
  } else if (head.path == "/healthz") {
    r.body = "ok\n";
  } else if (head.path == "/readyz") {
    const std::string reason = not_ready();
    r.status = reason.empty() ? 200 : 503;
    r.body = reason.empty() ? "ok\n" : reason + "\n";
  } else {
    r.status = 404;
    r.body = "not found\n";
  }
  return r;
}

}  // namespace admin

// ---------------------------------------------------------------------------------------------
// What the proxy's state says

namespace {

std::vector<Server*> g_loops;  // AdminServer::SetLoops

uint64_t ResidentBytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long long size = 0, resident = 0;
  const int n = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  return n == 2 ? resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) : 0;
}

// Every pool the router has (cluster: masters and seeds), once each, by address.
std::vector<UpstreamPool*> Nodes(ClusterRouter& router) {
  std::vector<UpstreamPool*> nodes = router.cluster() ? router.pools() : router.masters();
  std::sort(nodes.begin(), nodes.end(), [](const UpstreamPool* a, const UpstreamPool* b) {
    return a->address().text < b->address().text;
  });
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  return nodes;
}

void AddCommands(const std::vector<Server*>& loops, MetricsSnapshot* s) {
  const size_t count = command_ids::Count();
  for (size_t id = 0; id < count; ++id) {
    MetricsSnapshot::Command c;
    for (Server* loop : loops) {
      const CommandCounters& k = loop->metrics().command(static_cast<uint16_t>(id));
      // Buckets first and calls from their sum: a scrape that races a Record() still shows
      // _count equal to the +Inf bucket.
      for (size_t b = 0; b < kDurationBuckets; ++b) c.buckets[b] += k.buckets[b].Get();
      c.errors += k.errors.Get();
      c.sum_ns += k.sum_ns.Get();
    }
    for (uint64_t n : c.buckets) c.calls += n;
    if (c.calls == 0) continue;
    c.errors = std::min(c.errors, c.calls);
    c.name = command_ids::Name(static_cast<uint16_t>(id));
    s->commands.push_back(c);
  }
}

}  // namespace

void AdminServer::SetLoops(std::vector<Server*> loops) { g_loops = std::move(loops); }

namespace {

// Why a pool has no connection the upstream answered on.
std::string DownReason(const UpstreamPool& pool) {
  if (pool.shared_count() > 0) return "connected, no reply yet";
  return pool.unavailable_reason();
}

}  // namespace

std::string AdminServer::NotReadyReason() const {
  if (server_->shutting_down()) return "draining: the proxy is shutting down";
  ClusterRouter& router = server_->router();
  if (!router.cluster()) {
    UpstreamPool* pool = router.masters().empty() ? nullptr : router.masters().front();
    if (pool == nullptr) return "no upstream";
    if (pool->answered_count() == 0) {
      return "upstream " + pool->address().text + " down: " + DownReason(*pool);
    }
    return "";
  }
  // Every slot needs a master that has answered on a shared connection.
  const UpstreamPool* checked = nullptr;
  for (int slot = 0; slot < static_cast<int>(protocol::kClusterSlots); ++slot) {
    UpstreamPool* pool = router.ForSlot(slot);
    if (pool == checked) continue;
    if (pool == nullptr) return "cluster slot " + std::to_string(slot) + " has no known master";
    if (pool->answered_count() == 0) {
      return "cluster master " + pool->address().text + " (slot " + std::to_string(slot) +
             ") down: " + DownReason(*pool);
    }
    checked = pool;
  }
  return "";
}

std::string AdminServer::MetricsText() const {
  const std::vector<Server*> loops = g_loops.empty() ? std::vector<Server*>{server_} : g_loops;
  const conf::Options& o = server_->options();
  ClusterRouter& router = server_->router();
  MetricsSnapshot s;
  s.version = BLOOMPROXY_VERSION;
  s.mode = router.cluster() ? "cluster" : "standalone";
  s.kind = o.upstream_kind;
  s.threads = static_cast<int>(loops.size());
  s.uptime_seconds = (server_->NowMs() - started_ms_) / 1000;
  s.maxclients = static_cast<uint64_t>(o.maxclients);
  for (Server* loop : loops) {
    Stats& st = loop->stats();
    s.connected_clients += loop->metrics().connected_clients.Get();
    s.upstream_requests += loop->metrics().upstream_requests.Get();
    s.connections_received += st.connections_received;
    s.rejected_connections += st.rejected_connections;
    s.commands_processed += st.commands_processed;
    s.upstream_errors += st.upstream_errors;
    s.sharding_proxy_refused += st.sharding_proxy_refused;
  }
  // Every loop takes SIGHUP and reloads on its own: the first loop's count is the process's.
  s.reloads_ok = server_->stats().config_reloads_ok;
  s.reloads_error = server_->stats().config_reloads_error;
  // Upstream state is the first loop's (its pools are read on their own thread: this one).
  for (UpstreamPool* pool : Nodes(router)) {
    s.upstreams.push_back({pool->address().text, pool->answered_count() > 0});
    s.upstream_connections += pool->shared_count();
    s.upstream_pinned_connections += pool->pinned_count();
    s.upstream_idle_pinned_connections += pool->idle_pinned_count();
  }
  if (router.cluster()) {
    s.cluster_masters = router.masters().size();
    for (const UpstreamPool* pool : router.masters())
      s.cluster_masters_up += pool->answered_count() > 0;
  }
  s.resident_memory_bytes = ResidentBytes();
  s.draining = server_->shutting_down();
  s.ready = NotReadyReason().empty();
  AddCommands(loops, &s);
  return FormatMetrics(s);
}

// ---------------------------------------------------------------------------------------------
// The listener and its connections

struct AdminServer::Conn {
  uv_tcp_t tcp;
  uv_write_t write_req;
  uv_shutdown_t shutdown_req;
  AdminServer* owner = nullptr;
  uint64_t accepted_ms = 0;
  bool responded = false;  // the response is written or being written: input is dropped
  bool closing = false;
  std::string in;
  std::string out;
  char buf[4096];
};

AdminServer::AdminServer(Server* server) : server_(server) {}

AdminServer::~AdminServer() = default;

bool AdminServer::Start() {
  const conf::Options& o = server_->options();
  uv_loop_t* loop = server_->loop();
  started_ms_ = server_->NowMs();
  uv_tcp_init(loop, &listener_);
  listener_.data = this;
  uv_timer_init(loop, &timer_);
  timer_.data = this;
  open_ = true;  // (Close() closes both handles from now on)
  sockaddr_storage addr{};
  int rc =
      o.admin_bind.find(':') != std::string::npos
          ? uv_ip6_addr(o.admin_bind.c_str(), o.admin_port, reinterpret_cast<sockaddr_in6*>(&addr))
          : uv_ip4_addr(o.admin_bind.c_str(), o.admin_port, reinterpret_cast<sockaddr_in*>(&addr));
  if (rc == 0) rc = uv_tcp_bind(&listener_, reinterpret_cast<sockaddr*>(&addr), 0);
  if (rc == 0) rc = uv_listen(reinterpret_cast<uv_stream_t*>(&listener_), 64, OnConnection);
  if (rc != 0) {
    LOG_WARNING("Failed listening on the admin port %s:%d, aborting: %s", o.admin_bind.c_str(),
                o.admin_port, uv_strerror(rc));
    return false;
  }
  uv_timer_start(&timer_, OnTimer, 500, 500);
  LOG_NOTICE("Admin port (/metrics, /healthz, /readyz) on %s:%d", o.admin_bind.c_str(),
             o.admin_port);
  return true;
}

void AdminServer::Close() {
  if (!open_) return;
  open_ = false;
  uv_close(reinterpret_cast<uv_handle_t*>(&listener_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&timer_), nullptr);
  std::vector<Conn*> conns = conns_;
  for (Conn* c : conns) CloseConn(c);
}

void AdminServer::OnConnection(uv_stream_t* listener, int status) {
  if (status != 0) return;
  static_cast<AdminServer*>(listener->data)->Accept();
}

void AdminServer::Accept() {
  auto* c = new Conn;
  c->owner = this;
  uv_tcp_init(server_->loop(), &c->tcp);
  c->tcp.data = c;
  auto* stream = reinterpret_cast<uv_stream_t*>(&c->tcp);
  if (uv_accept(reinterpret_cast<uv_stream_t*>(&listener_), stream) != 0) {
    uv_close(reinterpret_cast<uv_handle_t*>(&c->tcp),
             [](uv_handle_t* h) { delete static_cast<Conn*>(h->data); });
    return;
  }
  if (conns_.size() >= admin::kMaxConnections) {
    // Told why and closed at once: it never holds a place, so a flood of connections cannot
    // keep the probes out for longer than the ones already open take.
    admin::Response r;
    r.status = 503;
    r.body = "too many admin connections\n";
    const std::string bytes = admin::SerializeResponse(r, false);
    uv_buf_t buf =
        uv_buf_init(const_cast<char*>(bytes.data()), static_cast<unsigned>(bytes.size()));
    uv_try_write(stream, &buf, 1);
    uv_close(reinterpret_cast<uv_handle_t*>(&c->tcp),
             [](uv_handle_t* h) { delete static_cast<Conn*>(h->data); });
    return;
  }
  c->accepted_ms = server_->NowMs();
  conns_.push_back(c);
  const int rc = uv_read_start(
      stream,
      [](uv_handle_t* h, size_t, uv_buf_t* buf) {
        auto* conn = static_cast<Conn*>(h->data);
        *buf = uv_buf_init(conn->buf, sizeof(conn->buf));
      },
      [](uv_stream_t* s, ssize_t n, const uv_buf_t*) {
        auto* conn = static_cast<Conn*>(s->data);
        if (n < 0) return conn->owner->CloseConn(conn);  // EOF (after our FIN too) or error
        if (n == 0 || conn->responded) return;           // past the request: read and dropped
        conn->in.append(conn->buf, static_cast<size_t>(n));
        conn->owner->OnRequest(conn);
      });
  if (rc != 0) CloseConn(c);
}

void AdminServer::OnRequest(Conn* c) {
  admin::RequestHead head;
  admin::Response r;
  switch (admin::ParseRequestHead(c->in, &head)) {
    case admin::HeadStatus::kNeedMore:
      return;
    case admin::HeadStatus::kTooLarge:
      r.status = 431;
      r.body = "request head larger than " + std::to_string(admin::kMaxHeadBytes) + " bytes\n";
      return Send(c, admin::SerializeResponse(r, false));
    case admin::HeadStatus::kBad:
      r.status = 400;
      r.body = "bad request\n";
      return Send(c, admin::SerializeResponse(r, false));
    case admin::HeadStatus::kComplete:
      break;
  }
  r = admin::Route(
      head, [this] { return NotReadyReason(); }, [this] { return MetricsText(); });
  Send(c, admin::SerializeResponse(r, head.method == "HEAD"));
}

void AdminServer::Send(Conn* c, const std::string& bytes) {
  // One response per connection, then our FIN; the peer's EOF closes it. Closing at once
  // instead could reset the connection over input not read yet and lose the response.
  c->responded = true;
  c->in.clear();
  c->out = bytes;
  uv_buf_t buf = uv_buf_init(c->out.data(), static_cast<unsigned>(c->out.size()));
  auto* stream = reinterpret_cast<uv_stream_t*>(&c->tcp);
  c->write_req.data = c;
  const int rc = uv_write(&c->write_req, stream, &buf, 1, [](uv_write_t* req, int status) {
    auto* conn = static_cast<Conn*>(req->data);
    if (conn->closing) return;
    conn->shutdown_req.data = conn;
    if (status == 0) {
      status = uv_shutdown(&conn->shutdown_req, reinterpret_cast<uv_stream_t*>(&conn->tcp),
                           [](uv_shutdown_t* sreq, int st) {
                             auto* k = static_cast<Conn*>(sreq->data);
                             if (st != 0 && !k->closing) k->owner->CloseConn(k);
                           });
    }
    if (status != 0) conn->owner->CloseConn(conn);
  });
  if (rc != 0) CloseConn(c);
}

void AdminServer::CloseConn(Conn* c) {
  if (c->closing) return;
  c->closing = true;
  conns_.erase(std::remove(conns_.begin(), conns_.end(), c), conns_.end());
  uv_close(reinterpret_cast<uv_handle_t*>(&c->tcp),
           [](uv_handle_t* h) { delete static_cast<Conn*>(h->data); });
}

void AdminServer::OnTimer(uv_timer_t* t) {
  // A connection gets kTimeoutMs from accept for its request, our response and its close: a
  // slow or silent client cannot hold one of the kMaxConnections places for longer.
  auto* self = static_cast<AdminServer*>(t->data);
  const uint64_t now = self->server_->NowMs();
  std::vector<Conn*> late;
  for (Conn* c : self->conns_) {
    if (now - c->accepted_ms >= admin::kTimeoutMs) late.push_back(c);
  }
  for (Conn* c : late) self->CloseConn(c);
}

}  // namespace bloomproxy::proxy
