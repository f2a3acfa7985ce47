#include "proxy/server/server.h"

#include <malloc.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "conf/loader.h"
#include "protocol/errors.h"
#include "protocol/key_slot.h"
#include "proxy/client/client.h"
#include "proxy/server/admin_http.h"
#include "proxy/server/log.h"
#include "proxy/sketch/plan_runner.h"
#include "proxy/sketch/sweep.h"
#include "proxy/upstream/cluster_router.h"

#ifndef BLOOMPROXY_VERSION
#define BLOOMPROXY_VERSION "0.0.0"
#endif

namespace bloomproxy::proxy {
namespace {

constexpr int kBacklog = 511;
constexpr uint64_t kCronMs = 1000;
// Clients closed since the last malloc_trim after which the cron trims again.
constexpr uint64_t kTrimAfterClosed = 256;
// A client quiet for this long gives its buffers back (Redis's clientsCron does the same).
constexpr uint64_t kIdleReleaseMs = 2000;

}  // namespace

Server::Server(const conf::Options& options, int index) : options_(options), index_(index) {
  std::vector<std::string> acl_errors;
  acls_.Compile(options_, &acl_errors);
  uv_loop_init(&loop_);
  bf_config_.defaults.error_rate = options.bf_error_rate;
  bf_config_.defaults.capacity = static_cast<uint64_t>(options.bf_initial_capacity);
  bf_config_.defaults.expansion = static_cast<uint32_t>(options.bf_expansion);
  bf_config_.max_shard_bytes = static_cast<uint64_t>(options.bf_max_shard_bytes);
  cms_config_.max_part_bytes = bf_config_.max_shard_bytes;
  cf_config_.max_shard_bytes = bf_config_.max_shard_bytes;
  cms_config_.max_bytes = static_cast<uint64_t>(options.sketch_max_bytes);
  cf_config_.max_bytes = static_cast<uint64_t>(options.sketch_max_bytes);
  topk_config_.max_shard_bytes = bf_config_.max_shard_bytes;
  topk_config_.max_bytes = static_cast<uint64_t>(options.sketch_max_bytes);
  tdigest_config_.max_bytes = static_cast<uint64_t>(options.sketch_max_bytes);
  bf_config_.layouts = filters::LayoutRules::FromArgs(options.bf_layouts);
  bf_config_.windows = filters::WindowRules::FromArgs(options.bf_windows);
  if (options.upstream_kind == "sharding-proxy") {
    bf_config_.upstream = protocol::UpstreamKind::kShardingProxy;
    cms_config_.upstream = protocol::UpstreamKind::kShardingProxy;
    cf_config_.upstream = protocol::UpstreamKind::kShardingProxy;
    topk_config_.upstream = protocol::UpstreamKind::kShardingProxy;
    tdigest_config_.upstream = protocol::UpstreamKind::kShardingProxy;
  }
  bf_config_.cluster = !options.upstream_cluster.empty();
  router_ = std::make_unique<ClusterRouter>(this);
}

Server::~Server() {
  // Run() closed every handle; this only releases the loop.
  uv_loop_close(&loop_);
}

bool Server::Start() {
  started_ms_ = uv_now(&loop_);

  if (options_.port != 0 && !ListenTcp(&tcp_listener_, &tcp_listening_, options_.port, "tcp")) {
    return false;
  }
  if (!StartTls()) return false;
  if (!options_.unixsocket.empty() && index_ == 0) {
    // A Unix socket cannot be shared by port reuse: the first loop serves it.
    uv_pipe_init(&loop_, &unix_listener_, 0);
    unix_listener_.data = this;
    unix_listening_ = true;
    unlink(options_.unixsocket.c_str());  // a stale socket file from an earlier run
    int rc = uv_pipe_bind(&unix_listener_, options_.unixsocket.c_str());
    if (rc == 0) {
      rc = uv_listen(reinterpret_cast<uv_stream_t*>(&unix_listener_), kBacklog,
                     [](uv_stream_t* l, int status) {
                       static_cast<Server*>(l->data)->Accept(l, true, false);
                       (void)status;
                     });
    }
    if (rc == 0 && options_.unixsocketperm != 0) {
      chmod(options_.unixsocket.c_str(), static_cast<mode_t>(options_.unixsocketperm));
    }
    if (rc != 0) {
      LOG_WARNING("Failed opening Unix socket %s: %s", options_.unixsocket.c_str(),
                  uv_strerror(rc));
      return false;
    }
  }

  uv_check_init(&loop_, &check_);
  check_.data = this;
  uv_check_start(&check_, OnCheck);
  // Before the loop waits for I/O: the next command timings read the clock again.
  uv_prepare_init(&loop_, &turn_start_);
  turn_start_.data = this;
  uv_prepare_start(&turn_start_,
                   [](uv_prepare_t* h) { static_cast<Server*>(h->data)->metrics_.NewTurn(); });
  uv_timer_init(&loop_, &cron_);
  cron_.data = this;
  uv_timer_start(&cron_, OnCron, kCronMs, kCronMs);
  uv_timer_init(&loop_, &shutdown_timer_);
  shutdown_timer_.data = this;
  uv_timer_init(&loop_, &upstream_timer_);
  upstream_timer_.data = this;
  uv_timer_init(&loop_, &drain_timer_);
  drain_timer_.data = this;
  if (options_.upstream_timeout_ms > 0) {
    const uint64_t every = std::clamp<uint64_t>(options_.upstream_timeout_ms / 10, 10, 1000);
    uv_timer_start(&upstream_timer_, OnUpstreamTimer, every, every);
  }
  uv_signal_init(&loop_, &sigint_);
  uv_signal_init(&loop_, &sigterm_);
  sigint_.data = sigterm_.data = this;
  uv_signal_start(&sigint_, OnSignal, SIGINT);
  uv_signal_start(&sigterm_, OnSignal, SIGTERM);
  uv_signal_init(&loop_, &sighup_);
  sighup_.data = this;
  uv_signal_start(&sighup_, OnSighup, SIGHUP);

  if (index_ == 0 && options_.admin_port != 0) {
    admin_ = std::make_unique<AdminServer>(this);
    if (!admin_->Start()) return false;
  }
  std::string error;
  if (!router_->Start(&error)) {
    LOG_WARNING_F({{"upstream", UpstreamText()}}, "Bad upstream %s", error.c_str());
    return false;
  }
  if (options_.port != 0) {
    LOG_NOTICE_F({{"upstream", UpstreamText()}},
                 "bloomproxy %s ready to accept connections on %s:%d, upstream %s%s",
                 BLOOMPROXY_VERSION, options_.bind.c_str(), options_.port,
                 router_->cluster() ? "cluster " : "", UpstreamText().c_str());
  }
  if (!options_.unixsocket.empty()) {
    LOG_NOTICE_F({{"upstream", UpstreamText()}}, "bloomproxy ready to accept connections at %s",
                 options_.unixsocket.c_str());
  }
  if (index_ == 0 && Sweep::Wanted(*this)) {
    sweep_ = std::make_unique<Sweep>(this);
    sweep_->Start();
  }
  started_ = true;
  return true;
}

bool Server::ListenTcp(uv_tcp_t* listener, bool* listening, int port, const char* what) {
  uv_tcp_init(&loop_, listener);
  listener->data = this;
  *listening = true;  // (open: Shutdown closes it)
  sockaddr_storage addr{};
  int rc = options_.bind.find(':') != std::string::npos
               ? uv_ip6_addr(options_.bind.c_str(), port, reinterpret_cast<sockaddr_in6*>(&addr))
               : uv_ip4_addr(options_.bind.c_str(), port, reinterpret_cast<sockaddr_in*>(&addr));
  if (rc == 0 && options_.threads > 1) {
    // Several loops accept on one port: each binds its own socket with SO_REUSEPORT and the
    // kernel spreads the connections over them.
    const int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0) {
      rc = uv_translate_sys_error(errno);
      if (fd >= 0) close(fd);
    } else {
      rc = uv_tcp_open(listener, fd);
    }
  }
  if (rc == 0) rc = uv_tcp_bind(listener, reinterpret_cast<sockaddr*>(&addr), 0);
  if (rc == 0) {
    rc = uv_listen(
        reinterpret_cast<uv_stream_t*>(listener), kBacklog, [](uv_stream_t* l, int status) {
          auto* self = static_cast<Server*>(l->data);
          self->Accept(l, false, l == reinterpret_cast<uv_stream_t*>(&self->tls_listener_));
          (void)status;
        });
  }
  if (rc != 0) {
    LOG_WARNING("Failed listening on port %d (%s), aborting: %s:%d: %s", port, what,
                options_.bind.c_str(), port, uv_strerror(rc));
    return false;
  }
  return true;
}

int Server::Run() {
  // After a failed Start() nothing is served: what it opened (a listener) is only closed.
  if (started_) uv_run(&loop_, UV_RUN_DEFAULT);
  // Anything still open (a listener after a failed start, say) is closed so the loop can end.
  uv_walk(
      &loop_,
      [](uv_handle_t* h, void*) {
        if (!uv_is_closing(h)) uv_close(h, nullptr);
      },
      nullptr);
  uv_run(&loop_, UV_RUN_DEFAULT);
  return 0;
}

void Server::Accept(uv_stream_t* listener, bool is_unix, bool tls) {
  // Client ids are unique across the process's loops, as CLIENT ID promises.
  static std::atomic<uint64_t> next_client_id{0};
  auto* c = new Client(this, ++next_client_id, is_unix);
  if (uv_accept(listener, c->stream()) != 0) {
    uv_close(c->handle(), [](uv_handle_t* h) { delete static_cast<Client*>(h->data); });
    return;
  }
  ++stats_.connections_received;
  clients_.emplace(c->id(), c);
  if (tls) c->UseTls(client_tls_);
  if (shutting_down_ || clients_.size() > static_cast<size_t>(options_.maxclients)) {
    // As Redis: the connection is accepted, told why, and closed (a TLS client is only
    // closed: no plaintext goes to it).
    ++stats_.rejected_connections;
    if (!tls) {
      uv_buf_t buf = uv_buf_init(const_cast<char*>(protocol::errors::kMaxClients.data()),
                                 static_cast<unsigned>(protocol::errors::kMaxClients.size()));
      uv_try_write(c->stream(), &buf, 1);
    }
    c->Close();
    return;
  }
  c->Start();
}

void Server::OnClientClosed(Client* c) {
  clients_.erase(c->id());
  drain_waiters_.erase(std::remove(drain_waiters_.begin(), drain_waiters_.end(), c),
                       drain_waiters_.end());
  ++closed_since_trim_;
  dirty_clients_.erase(std::remove(dirty_clients_.begin(), dirty_clients_.end(), c),
                       dirty_clients_.end());
  delete c;
  if (shutting_down_) MaybeFinishShutdown();
}

uint16_t Server::Flavor(protocol::Resp resp, bool client_user, std::string_view user,
                        std::string_view password) {
  for (size_t i = 0; i < flavors_.size(); ++i) {
    const ConnFlavor& f = flavors_[i];
    if (f.resp == resp && f.client_user == client_user &&
        (!client_user || (f.user == user && f.password == password))) {
      return static_cast<uint16_t>(i);
    }
  }
  ConnFlavor f;
  f.resp = resp;
  f.client_user = client_user;
  if (client_user) {
    f.user.assign(user);
    f.password.assign(password);
  }
  flavors_.push_back(std::move(f));
  return static_cast<uint16_t>(flavors_.size() - 1);
}

void Server::QueueFlush(Client* c) { dirty_clients_.push_back(c); }

void Server::QueueFlush(UpstreamConn* u) {
  if (u->flush_queued_) return;
  u->flush_queued_ = true;
  dirty_upstreams_.push_back(u);
}

void Server::OnCheck(uv_check_t* h) {
  // End of a loop turn: the BF batches it gathered go upstream, then every request and reply
  // produced in it leaves, batched.
  auto* self = static_cast<Server*>(h->data);
  if (!self->batches_.empty()) self->LaunchBatches();
  while (!self->dirty_upstreams_.empty() || !self->dirty_clients_.empty()) {
    std::vector<UpstreamConn*> ups;
    ups.swap(self->dirty_upstreams_);
    for (UpstreamConn* u : ups) u->Flush();
    std::vector<Client*> cs;
    cs.swap(self->dirty_clients_);
    for (Client* c : cs) c->Flush();
  }
}

void Server::OnCron(uv_timer_t* t) {
  auto* self = static_cast<Server*>(t->data);
  const int timeout = self->options_.timeout;
  const uint64_t now = self->NowMs();
  std::vector<Client*> idle, slow_tls;
  for (const auto& [id, c] : self->clients_) {
    const uint64_t idle_ms = now - c->last_interaction_ms();
    if (idle_ms >= kIdleReleaseMs) c->ReleaseIdleMemory();
    if (c->TlsHandshakeOverdue(now)) slow_tls.push_back(c);
    if (timeout > 0 && !c->closing() && !c->ExemptFromTimeout() &&
        idle_ms > static_cast<uint64_t>(timeout) * 1000) {
      idle.push_back(c);
    }
  }
  for (Client* c : idle) {
    LOG_VERBOSE_F({{"client_id", c->id()}}, "Closing idle client id=%llu",
                  static_cast<unsigned long long>(c->id()));
    c->Close();
  }
  for (Client* c : slow_tls) {
    LOG_VERBOSE_F({{"client_id", c->id()}}, "Closing client id=%llu: no TLS handshake within 5 s",
                  static_cast<unsigned long long>(c->id()));
    c->Close();
  }
  // Give freed memory back to the system. glibc keeps it otherwise: after waves of connections,
  // or a burst of big batches (their plans, requests and replies), RSS settles several times
  // above what the proxy still uses. Once after such a wave, and once when the proxy turns
  // quiet (no command for a whole cron period after some work): at most once a second.
  const uint64_t commands = self->stats_.commands_processed;
  const bool quiet = commands == self->commands_at_cron_ && commands != self->commands_at_trim_;
  self->commands_at_cron_ = commands;
  if (self->closed_since_trim_ >= kTrimAfterClosed || quiet) {
    self->closed_since_trim_ = 0;
    self->commands_at_trim_ = commands;
    malloc_trim(0);
  }
}

void Server::OnUpstreamTimer(uv_timer_t* t) {
  auto* self = static_cast<Server*>(t->data);
  for (UpstreamPool* pool : self->router_->pools()) {
    pool->CheckTimeouts(self->NowMs(), static_cast<uint64_t>(self->options_.upstream_timeout_ms));
  }
}

void Server::WaitForSharedWrites(Client* c) {
  if (std::find(drain_waiters_.begin(), drain_waiters_.end(), c) == drain_waiters_.end()) {
    drain_waiters_.push_back(c);
  }
  if (!uv_is_active(reinterpret_cast<uv_handle_t*>(&drain_timer_))) {
    uv_timer_start(&drain_timer_, OnDrainTimer, 1, 1);
  }
}

void Server::OnDrainTimer(uv_timer_t* t) {
  auto* self = static_cast<Server*>(t->data);
  std::vector<Client*> waiting;
  waiting.swap(self->drain_waiters_);
  for (Client* c : waiting) c->RetryPause();  // may ask again (WaitForSharedWrites)
  if (self->drain_waiters_.empty()) uv_timer_stop(t);
}

void Server::OnSignal(uv_signal_t* h, int signum) {
  auto* self = static_cast<Server*>(h->data);
  if (self->shutting_down_) {
    LOG_WARNING("Received %s again: closing every connection now", strsignal(signum));
    std::vector<Client*> all;
    for (const auto& [id, c] : self->clients_) all.push_back(c);
    for (Client* c : all) c->Close();
    return;
  }
  LOG_NOTICE("Received %s, finishing in-flight replies and shutting down",
             signum == SIGINT ? "SIGINT" : "SIGTERM");
  self->Shutdown();
}

void Server::Shutdown() {
  if (shutting_down_) return;
  shutting_down_ = true;
  if (tcp_listening_) uv_close(reinterpret_cast<uv_handle_t*>(&tcp_listener_), nullptr);
  if (tls_listening_) uv_close(reinterpret_cast<uv_handle_t*>(&tls_listener_), nullptr);
  tls_listening_ = false;
  if (unix_listening_) {
    uv_close(reinterpret_cast<uv_handle_t*>(&unix_listener_), nullptr);
    unlink(options_.unixsocket.c_str());
  }
  tcp_listening_ = unix_listening_ = false;
  std::vector<Client*> all;
  for (const auto& [id, c] : clients_) all.push_back(c);
  for (Client* c : all) c->CloseWhenDrained();
  uv_timer_start(&shutdown_timer_, OnShutdownTimeout,
                 static_cast<uint64_t>(std::max(0, options_.shutdown_timeout_ms)), 0);
  MaybeFinishShutdown();
}

void Server::OnShutdownTimeout(uv_timer_t* t) {
  auto* self = static_cast<Server*>(t->data);
  LOG_WARNING("Shutdown timeout: closing %zu clients with replies still pending",
              self->clients_.size());
  std::vector<Client*> all;
  for (const auto& [id, c] : self->clients_) all.push_back(c);
  for (Client* c : all) c->Close();
}

void Server::MaybeFinishShutdown() {
  if (stopped_ || !clients_.empty()) return;
  stopped_ = true;
  if (sweep_ != nullptr) sweep_->Stop();
  router_->CloseAll();
  uv_close(reinterpret_cast<uv_handle_t*>(&check_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&turn_start_), nullptr);
  if (admin_ != nullptr) admin_->Close();  // open until now: probes saw 503 while draining
  uv_close(reinterpret_cast<uv_handle_t*>(&cron_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&shutdown_timer_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&upstream_timer_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&drain_timer_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&sigint_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&sigterm_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&sighup_), nullptr);
  LOG_NOTICE("bloomproxy is now ready to exit, bye bye...");
}

bool Server::cluster_view() const { return router_->cluster() || options_.cluster_view; }

std::string Server::UpstreamText() const {
  if (!router_->cluster()) return options_.upstream;
  std::string seeds;
  for (const std::string& seed : options_.upstream_cluster)
    seeds += (seeds.empty() ? "" : ",") + seed;
  return seeds;
}

std::string Server::ProxySection() const {
  const uint64_t now = uv_now(const_cast<uv_loop_t*>(&loop_));
  std::string s = "# Proxy\r\n";
  auto field = [&s](const char* name, const std::string& value) {
    s += name;
    s += ':';
    s += value;
    s += "\r\n";
  };
  field("proxy_version", BLOOMPROXY_VERSION);
  field("process_id", std::to_string(getpid()));
  field("tcp_port", std::to_string(options_.port));
  field("uptime_in_seconds", std::to_string((now - started_ms_) / 1000));
  field("connected_clients", std::to_string(clients_.size()));
  field("maxclients", std::to_string(options_.maxclients));
  size_t shared = 0, pinned = 0, idle = 0, masters_up = 0;
  for (const UpstreamPool* pool : router_->pools()) {
    shared += pool->shared_count();
    pinned += pool->pinned_count();
    idle += pool->idle_pinned_count();
  }
  for (const UpstreamPool* pool : router_->masters()) masters_up += pool->shared_count() > 0;
  field("upstream", UpstreamText());
  field("upstream_mode", router_->cluster() ? "cluster" : "standalone");
  field("upstream_kind", options_.upstream_kind);
  if (router_->cluster()) {
    field("upstream_cluster_masters", std::to_string(router_->masters().size()));
    field("upstream_cluster_masters_up", std::to_string(masters_up));
  }
  field("upstream_status", shared > 0 ? "up" : "down");
  field("upstream_connections", std::to_string(shared));
  field("upstream_pinned_connections", std::to_string(pinned));
  field("upstream_idle_pinned_connections", std::to_string(idle));
  field("total_connections_received", std::to_string(stats_.connections_received));
  field("total_commands_processed", std::to_string(stats_.commands_processed));
  field("rejected_connections", std::to_string(stats_.rejected_connections));
  field("upstream_connection_errors", std::to_string(stats_.upstream_errors));
  if (sharding_proxy()) {
    field("sharding_proxy_refused_commands", std::to_string(stats_.sharding_proxy_refused));
  }
  return s;
}

void Server::WakeRedirectWaiters() {
  if (redirect_waiters_.empty()) return;
  std::vector<uint64_t> waiters;
  waiters.swap(redirect_waiters_);
  for (uint64_t id : waiters) {
    auto it = clients_.find(id);
    if (it != clients_.end()) it->second->ResumeRedirect();
  }
}

}  // namespace bloomproxy::proxy
