// One event loop with its listeners, clients and upstream pool. Everything a loop touches is
// owned here, so more loops (one per thread) can later run side by side without sharing state.
#pragma once

#include <uv.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "conf/options.h"
#include "filters/bloom/bf_plan.h"
#include "filters/cms/cms_plan.h"
#include "filters/cuckoo/cf_plan.h"
#include "filters/tdigest/tdigest_scripts.h"
#include "filters/topk/topk_plan.h"
#include "protocol/reply_decoder.h"
#include "proxy/client/acl.h"
#include "proxy/client/local_latency.h"
#include "proxy/server/metrics.h"
#include "proxy/server/tls.h"
#include "proxy/sketch/batch.h"
#include "proxy/upstream/upstream.h"

namespace bloomproxy::proxy {

class AdminServer;
class Client;
class ClusterRouter;
class Sweep;
struct Pending;

// What the proxy learned about the upstream from INFO (for HELLO and INFO).
struct UpstreamInfo {
  std::string version = "7.0.0";
  std::string mode = "standalone";
  std::string role = "master";
};

// Read by the admin port on the first loop while their own loop counts: relaxed atomics
// (proxy/server/metrics.h), which cost what a plain increment does.
struct Stats {
  RelaxedCounter commands_processed = 0;
  RelaxedCounter connections_received = 0;
  RelaxedCounter rejected_connections = 0;
  RelaxedCounter upstream_errors = 0;
  RelaxedCounter sharding_proxy_refused = 0;  // commands a sharding proxy would refuse
  RelaxedCounter config_reloads_ok = 0;       // SIGHUP reloads that took effect
  RelaxedCounter config_reloads_error = 0;    // SIGHUP reloads refused (a file that does not load)
};

class Server {
 public:
  // `index` numbers the loops of a multi-threaded proxy (0 for the first).
  explicit Server(const conf::Options& options, int index = 0);
  ~Server();

  // Binds the listeners and starts the upstream pool. False (after logging why) on failure.
  bool Start();
  // Runs the loop until Shutdown() has finished. Returns the process exit code.
  int Run();
  // Stops accepting, lets in-flight replies finish (up to shutdown-timeout-ms), then stops.
  void Shutdown();

  uv_loop_t* loop() { return &loop_; }
  const conf::Options& options() const { return options_; }
  // The upstream nodes and which one serves a slot (one node unless --upstream-cluster).
  ClusterRouter& router() { return *router_; }
  Stats& stats() { return stats_; }
  // Per-command counters and the loop-turn clock (proxy/server/metrics.h); read by the admin port.
  LoopMetrics& metrics() { return metrics_; }
  LocalLatency& local_latency() { return local_latency_; }
  UpstreamInfo& upstream_info() { return upstream_info_; }
  protocol::ReplyDecoder& decoder() { return decoder_; }
  // Who checks AUTH now (auth-mode, auto resolved by conf::ResolvedAuthMode; a reload may
  // change it: it applies to the AUTHs that follow).
  bool upstream_auth() const {
    return conf::ResolvedAuthMode(options_) == conf::AuthMode::kUpstream;
  }
  // Whether the proxy asks clients for a password (the proxy checks AUTH, with requirepass).
  bool auth_required() const { return !upstream_auth() && !options_.requirepass.empty(); }
  // Whether a client that has not logged in must, because the upstream checks AUTH and the
  // upstream's default user needs a password the proxy's own login does not give (the INFO of a
  // password-less connection's handshake was answered -NOAUTH): such a client is answered as
  // Redis answers one before AUTH (Client::Authenticated).
  bool upstream_login_required() const { return upstream_noauth_ && upstream_auth(); }
  // What the handshake of a connection with no password learned (UpstreamConn).
  void set_upstream_noauth(bool noauth) { upstream_noauth_ = noauth; }
  // The flavor of a client that has not logged in: the proxy's own login, or with auth-mode
  // upstream none (the upstream's default user, as a new connection to it).
  uint16_t DefaultFlavor(protocol::Resp resp) {
    return options_.auth_mode == conf::AuthMode::kUpstream ? Flavor(resp, true) : Flavor(resp);
  }
  bool shutting_down() const { return shutting_down_; }
  uint64_t NowMs() const { return uv_now(const_cast<uv_loop_t*>(&loop_)); }
  uint64_t NextUpstreamId() { return ++upstream_ids_; }
  // The number of a connection flavor (proxy/upstream/upstream.h), added when new; and a flavor by
  // number. Flavor 0: RESP2 with the proxy's own credentials.
  uint16_t Flavor(protocol::Resp resp, bool client_user = false, std::string_view user = {},
                  std::string_view password = {});
  const ConnFlavor& flavor(uint16_t id) const { return flavors_[id]; }
  size_t client_count() const { return clients_.size(); }
  const std::unordered_map<uint64_t, Client*>& clients() const { return clients_; }
  // Clients whose CLIENT TRACKING ... REDIRECT waits for its target's connection to open
  // (Client::HoldConnectionForRedirects); woken when a pinned connection opens or closes.
  void WaitForRedirectTarget(uint64_t client_id) { redirect_waiters_.push_back(client_id); }
  void WakeRedirectWaiters();
  std::string ProxySection() const;
  // The upstream as configured (the seeds of a cluster), for logs and messages.
  std::string UpstreamText() const;
  // deny-command: refused commands (lower-case names).
  bool Denied(std::string_view lower_name) const {
    for (const std::string& d : options_.denied_commands) {
      if (d == lower_name) return true;
    }
    return false;
  }
  // The command rules of `user`; nullptr when the user may run every command.
  const CommandAcl* acl(std::string_view user) const { return acls_.Find(user); }
  // Whether clients see the one-node cluster (INFO's cluster_enabled:1, CLUSTER SLOTS and
  // friends answered here): always with a Redis Cluster upstream, else only with cluster-view.
  bool cluster_view() const;
  // BF.* emulation: on unless bf-mode is forward; CMS.*, CF.*, TOPK.* and TDIGEST.* the same
  // with cms-mode, cf-mode, topk-mode and tdigest-mode.
  bool bf_emulate() const { return options_.bf_mode == conf::BfMode::kEmulate; }
  bool cms_emulate() const { return options_.cms_mode == conf::BfMode::kEmulate; }
  bool cf_emulate() const { return options_.cf_mode == conf::BfMode::kEmulate; }
  bool topk_emulate() const { return options_.topk_mode == conf::BfMode::kEmulate; }
  bool tdigest_emulate() const { return options_.tdigest_mode == conf::BfMode::kEmulate; }
  // The sketch families the proxy answers itself.
  filters::SketchFamilies emulated() const {
    return (bf_emulate() ? filters::FamilyBit(filters::SketchFamily::kBloom) : 0) |
           (cms_emulate() ? filters::FamilyBit(filters::SketchFamily::kCms) : 0) |
           (cf_emulate() ? filters::FamilyBit(filters::SketchFamily::kCuckoo) : 0) |
           (topk_emulate() ? filters::FamilyBit(filters::SketchFamily::kTopk) : 0) |
           (tdigest_emulate() ? filters::FamilyBit(filters::SketchFamily::kTdigest) : 0);
  }
  bool emulates(filters::SketchFamily f) const { return (emulated() & filters::FamilyBit(f)) != 0; }
  // The TLS context of upstream connections; null without upstream-tls.
  const std::shared_ptr<TlsContext>& upstream_tls() const { return upstream_tls_; }
  // Whether the upstream is a sharding proxy (twemproxy, Codis): protocol/sharding_proxy.h.
  bool sharding_proxy() const {
    return bf_config_.upstream == protocol::UpstreamKind::kShardingProxy;
  }
  const filters::BfConfig& bf_config() const { return bf_config_; }
  filters::FilterCache& filter_cache() { return filter_cache_; }
  const filters::CmsConfig& cms_config() const { return cms_config_; }
  filters::CmsCache& cms_cache() { return cms_cache_; }
  const filters::CfConfig& cf_config() const { return cf_config_; }
  filters::CfCache& cf_cache() { return cf_cache_; }
  const filters::TopkConfig& topk_config() const { return topk_config_; }
  filters::TopkCache& topk_cache() { return topk_cache_; }
  const filters::TdigestConfig& tdigest_config() const { return tdigest_config_; }
  // A buffer for re-encoding a request; valid until the next call on this loop.
  std::string& scratch() { return scratch_; }

  // Queues a flush at the end of this loop turn (all replies of the turn leave together).
  void QueueFlush(Client* c);
  void QueueFlush(UpstreamConn* u);

  // Called by a client from its close callback.
  void OnClientClosed(Client* c);

  // `c`'s CLIENT PAUSE waits for writes on shared connections: c->RetryPause() is called every
  // millisecond until it stops asking.
  void WaitForSharedWrites(Client* c);

  // The batch of this loop turn for (kind, key, conn), created if there is none yet.
  SketchBatch* OpenBatch(BatchKind kind, std::string_view key, UpstreamConn* conn);

 private:
  static void OnConnection(uv_stream_t* listener, int status);
  static void OnCheck(uv_check_t* h);
  static void OnCron(uv_timer_t* t);
  static void OnUpstreamTimer(uv_timer_t* t);
  static void OnDrainTimer(uv_timer_t* t);
  static void OnShutdownTimeout(uv_timer_t* t);
  static void OnSignal(uv_signal_t* h, int signum);

  void Accept(uv_stream_t* listener, bool is_unix, bool tls);
  // Listens on `port` of the bind address (with SO_REUSEPORT under --threads); *listening says
  // the handle is open.
  bool ListenTcp(uv_tcp_t* listener, bool* listening, int port, const char* what);
  // tls_server.cc
  bool StartTls();                                   // the contexts, and the tls-port's listener
  static void OnSighup(uv_signal_t* h, int signum);  // calls Reload()
  // The TLS contexts `o` asks for (null where none); false and *error if a file does not load.
  static bool BuildContexts(const conf::Options& o, std::shared_ptr<TlsContext>* clients,
                            std::shared_ptr<TlsContext>* upstream, std::string* error);
  // reload.cc: loads the configuration again (conf/reload.h) and applies what changes live.
  void Reload();
  // proxy/sketch/batch.cc: this loop turn's batches go upstream, or wait for the one before them.
  void LaunchBatches();
  void LaunchBfBatch(std::unique_ptr<SketchBatch> batch);
  // A CMS or CF batch, which the next batch of its kind on its structure waits for.
  void LaunchHeldBatch(std::unique_ptr<SketchBatch> batch, std::string id);  // id: batch->Id()
  std::unique_ptr<filters::Plan> HeldBatchPlan(SketchBatch* batch);
  void BatchDone(std::string id);
  // A TOPK batch: one at a time per sketch, whatever its connection (topk_queues_).
  void QueueTopkBatch(std::unique_ptr<SketchBatch> batch);
  void LaunchTopkBatch(std::unique_ptr<SketchBatch> batch);
  void TopkBatchDone(const std::string& key);
  void MaybeFinishShutdown();

  conf::Options options_;
  std::vector<ConnFlavor> flavors_ = std::vector<ConnFlavor>(1);
  uint64_t closed_since_trim_ = 0;  // clients closed since the last malloc_trim (cron)
  uint64_t commands_at_cron_ = 0;   // commands_processed at the last cron
  uint64_t commands_at_trim_ = 0;   // and at the last malloc_trim
  AclTable acls_;  // compiled from options_.users (checked by main before any server starts)
  const int index_;
  uv_loop_t loop_;
  std::unique_ptr<Sweep> sweep_;  // the leftover sweep (proxy/sketch/sweep.h); first loop only
  std::unique_ptr<ClusterRouter> router_;
  Stats stats_;
  LoopMetrics metrics_;
  LocalLatency local_latency_;
  UpstreamInfo upstream_info_;
  bool upstream_noauth_ = false;  // set_upstream_noauth
  protocol::ReplyDecoder decoder_;

  uv_tcp_t tcp_listener_;
  uv_tcp_t tls_listener_;
  uv_pipe_t unix_listener_;
  bool tcp_listening_ = false;
  bool tls_listening_ = false;
  bool started_ = false;  // Start() succeeded
  bool unix_listening_ = false;
  uv_check_t check_;
  uv_prepare_t turn_start_;             // a new loop turn: metrics_.NewTurn()
  std::unique_ptr<AdminServer> admin_;  // admin-port, on the first loop only
  uv_timer_t cron_;
  uv_timer_t shutdown_timer_;
  uv_timer_t upstream_timer_;  // checks for stalled upstream requests
  uv_timer_t drain_timer_;     // CLIENT PAUSEs waiting for shared writes (WaitForSharedWrites)
  std::vector<Client*> drain_waiters_;
  uv_signal_t sigint_, sigterm_, sighup_;
  std::shared_ptr<TlsContext> client_tls_;    // what tls-port clients get (null: no TLS)
  std::shared_ptr<TlsContext> upstream_tls_;  // what upstream connections use (null: no TLS)

  std::unordered_map<uint64_t, Client*> clients_;
  std::vector<Client*> dirty_clients_;
  std::vector<uint64_t> redirect_waiters_;
  std::vector<UpstreamConn*> dirty_upstreams_;
  uint64_t upstream_ids_ = 0;
  uint64_t started_ms_ = 0;
  std::string scratch_;
  filters::BfConfig bf_config_;
  filters::FilterCache filter_cache_;
  filters::CmsConfig cms_config_;
  filters::CmsCache cms_cache_;
  filters::CfConfig cf_config_;
  filters::CfCache cf_cache_;
  filters::TopkConfig topk_config_;
  filters::TopkCache topk_cache_;
  filters::TopkStates topk_states_;
  filters::TdigestConfig tdigest_config_;
  std::vector<std::unique_ptr<SketchBatch>> batches_;  // open during this loop turn
  // CMS and CF batches upstream, by SketchBatch::Id(), and the batch waiting for each (or null).
  std::unordered_map<std::string, std::unique_ptr<SketchBatch>> held_batches_;
  // TOPK batches by sketch: present while one is upstream, with the batches waiting for it (at
  // most one per connection, in arrival order). Each reads the sketch and commits only if no
  // update came meanwhile (filters/topk/topk_update_plan.h): two of this proxy's batches on one
  // sketch at once, on its two connections, would make one of them read again.
  std::unordered_map<std::string, std::deque<std::unique_ptr<SketchBatch>>> topk_queues_;
  bool shutting_down_ = false;
  bool stopped_ = false;
};

}  // namespace bloomproxy::proxy
