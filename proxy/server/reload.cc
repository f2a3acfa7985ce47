// SIGHUP: the configuration is loaded again (conf/reload.h: the same file, environment and flags
// as at start) and what can change without a restart takes effect, without closing connections:
// users and their rules, requirepass, auth-mode (for the AUTHs that follow), deny-command,
// limits and timeouts, log level and format, the BF.* defaults for new filters, the upstream's
// credentials for new connections, and the TLS contexts (rebuilt from their files whether or
// not their paths changed, so that renewed certificates are picked up). An option that needs a
// restart (listeners, upstream, threads...) is logged and keeps its running value. A configuration
// that does not load, validate, compile (users' rules) or whose TLS files do not load changes
// nothing: one warning line says why.
//
// With --threads N every loop has its own SIGHUP watcher (libuv signals every loop watching the
// signal) and reloads its own state from its own copy of the options, reading the file itself.
// Each loop logs its one result line (so that the log shows when every loop has the new
// configuration, e.g. the new certificates) and counts its own outcome in its Stats; the
// process's count is loop 0's (what /metrics shows), and the per-option lines come from loop 0
// only, so a SIGHUP is never counted or detailed N times. A file edited again while the loops
// read it can leave them with different versions until the next SIGHUP; their result lines say
// so.
#include <sys/resource.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "conf/reload.h"
#include "proxy/client/client.h"
#include "proxy/server/log.h"
#include "proxy/server/server.h"

namespace bloomproxy::proxy {
namespace {

// Room for clients under RLIMIT_NOFILE, as main's AdjustOpenFilesLimit leaves it (a listener
// and log reserve, the shared upstream connections): a reload cannot raise maxclients past what
// the process can open, nor keep reporting the start-up reduction as a change.
void FitMaxClients(const conf::Options& running, conf::ReloadResult* r) {
  constexpr rlim_t kReserved = 32;
  conf::Options& o = r->options;
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return;
  const rlim_t reserved = kReserved + static_cast<rlim_t>(o.upstream_connections * o.threads);
  const rlim_t room = limit.rlim_cur > reserved ? limit.rlim_cur - reserved : 1;
  if (static_cast<rlim_t>(o.maxclients) <= room) return;
  o.maxclients = static_cast<int>(room);
  if (o.maxclients == running.maxclients) {
    auto& changes = r->changes;
    changes.erase(std::remove_if(changes.begin(), changes.end(),
                                 [](const conf::OptionChange& c) {
                                   return std::string_view(c.name) == "maxclients";
                                 }),
                  changes.end());
  }
}

std::string Joined(const std::vector<std::string>& errors) {
  std::string out;
  for (const std::string& e : errors) out += (out.empty() ? "" : "; ") + e;
  return out;
}

// Logs each changed option (when `details`); returns how many need a restart.
size_t LogChanges(const std::vector<conf::OptionChange>& changes, const conf::Options& now,
                  bool details) {
  size_t restart = 0;
  for (const conf::OptionChange& change : changes) {
    const bool live = change.reload == conf::Reload::kLive;
    restart += live ? 0 : 1;
    if (!details) continue;
    if (live) {
      LOG_NOTICE("Configuration reload: %s is now %s", change.name,
                 conf::ShowOption(change.name, now).c_str());
    } else {
      LOG_WARNING("%s changed in the config file: needs a restart (the running value is kept)",
                  change.name);
    }
  }
  return restart;
}

}  // namespace

void Server::Reload() {
  const bool details = index_ == 0;  // per-option lines: once per SIGHUP
  std::string loop;
  if (options_.threads > 1) {
    loop = "event loop " + std::to_string(index_ + 1) + " of " + std::to_string(options_.threads);
  }
  if (shutting_down_) {
    LOG_NOTICE("Received SIGHUP while shutting down: configuration not reloaded");
    return;
  }
  conf::ReloadResult r = conf::ReloadOptions(options_);
  AclTable acls;
  std::shared_ptr<TlsContext> client_tls, upstream_tls;
  std::string tls_error;
  if (r.errors.empty()) {
    FitMaxClients(options_, &r);
    acls.Compile(r.options, &r.errors);  // command names in users' rules
  }
  const bool tls_failed =
      r.errors.empty() && !BuildContexts(r.options, &client_tls, &upstream_tls, &tls_error);
  if (tls_failed) r.errors.push_back(tls_error);
  if (!r.errors.empty()) {
    ++stats_.config_reloads_error;
    LOG_WARNING("%s failed%s%s: %s; keeping the current configuration",
                tls_failed ? "TLS reload" : "Configuration reload", loop.empty() ? "" : " in ",
                loop.c_str(), Joined(r.errors).c_str());
    return;
  }

  const bool upstream_timer_changed = r.options.upstream_timeout_ms != options_.upstream_timeout_ms;
  options_ = std::move(r.options);
  acls_ = std::move(acls);
  // Clients hold a pointer into the ACL table just replaced. A client whose user is gone is
  // closed, as Redis's ACL DELUSER does: it must not keep a login that no longer exists.
  // A client logged in upstream (auth-mode upstream, or auto) keeps its login whatever the
  // reload changed (auth-mode included): its user is the upstream's, which applies its ACL.
  std::vector<Client*> orphans;
  for (const auto& [id, c] : clients_) {
    if (flavor(c->flavor_).client_user) continue;
    const bool known = c->user_ == "default" ||
                       std::any_of(options_.users.begin(), options_.users.end(),
                                   [c = c](const conf::User& u) { return u.name == c->user_; });
    c->acl_ = acls_.Find(c->user_);
    if (!known) orphans.push_back(c);
  }
  for (Client* c : orphans) {
    LOG_NOTICE("Closing client id=%llu: user '%s' was removed by the reload",
               static_cast<unsigned long long>(c->id()), c->user_.c_str());
    c->Close();
  }
  bf_config_.defaults.error_rate = options_.bf_error_rate;
  bf_config_.defaults.capacity = static_cast<uint64_t>(options_.bf_initial_capacity);
  bf_config_.defaults.expansion = static_cast<uint32_t>(options_.bf_expansion);
  bf_config_.max_shard_bytes = static_cast<uint64_t>(options_.bf_max_shard_bytes);
  cms_config_.max_part_bytes = bf_config_.max_shard_bytes;
  cf_config_.max_shard_bytes = bf_config_.max_shard_bytes;
  cms_config_.max_bytes = static_cast<uint64_t>(options_.sketch_max_bytes);
  cf_config_.max_bytes = static_cast<uint64_t>(options_.sketch_max_bytes);
  topk_config_.max_shard_bytes = bf_config_.max_shard_bytes;
  topk_config_.max_bytes = static_cast<uint64_t>(options_.sketch_max_bytes);
  tdigest_config_.max_bytes = static_cast<uint64_t>(options_.sketch_max_bytes);
  bf_config_.layouts = filters::LayoutRules::FromArgs(options_.bf_layouts);
  bf_config_.windows = filters::WindowRules::FromArgs(options_.bf_windows);
  client_tls_ = std::move(client_tls);
  upstream_tls_ = std::move(upstream_tls);
  if (upstream_timer_changed) {
    uv_timer_stop(&upstream_timer_);
    if (options_.upstream_timeout_ms > 0) {
      const uint64_t every = std::clamp<uint64_t>(options_.upstream_timeout_ms / 10, 10, 1000);
      uv_timer_start(&upstream_timer_, OnUpstreamTimer, every, every);
    }
  }
  ++stats_.config_reloads_ok;
  // Process-wide (level, format, the secrets lines mask); every loop sets the same values.
  ApplyLogOptions(options_);

  const size_t restart = LogChanges(r.changes, options_, details);
  LOG_NOTICE("Received SIGHUP: configuration reloaded (%zu changed, %zu needing a restart%s%s); %s",
             r.changes.size() - restart, restart, loop.empty() ? "" : "; ", loop.c_str(),
             client_tls_ != nullptr || upstream_tls_ != nullptr
                 ? "TLS configuration reloaded"
                 : "no TLS configured, nothing to reload");
}

}  // namespace bloomproxy::proxy
