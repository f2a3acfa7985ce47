// The general rows of the option table (conf/directive.h), one declaration each (conf/rows.h);
// the TLS rows are in tls_directives.cc. The last argument of a row says whether a SIGHUP reload
// applies a changed value (kLive) or logs that it needs a restart (kRestart): listeners, the
// upstream's address and kind, the pools' sizes and the process's threads and log file are set
// up once at start.
#include <charconv>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "conf/directive.h"
#include "conf/loader.h"
#include "conf/rows.h"
#include "conf/values.h"
#include "filters/bloom/window/window_rules.h"
#include "filters/guava/bf_layout.h"

namespace bloomproxy::conf {
namespace {

using namespace rows;  // NOLINT: the table reads as declarations

// `timeout` is capped so that timeout * 1000 (milliseconds) still fits an int.
constexpr int64_t kMaxTimeoutSeconds = INT_MAX / 1000;

bool ApplyUser(const Directive&, const std::vector<std::string>& args, SourceState* state,
               std::string* error) {
  const std::string& name = args[0];
  if (name.empty()) {
    *error = "the user name is empty";
    return false;
  }
  if (name == "default") {
    *error = "use requirepass to set the password of user 'default'";
    return false;
  }
  for (const std::string& seen : state->users) {
    if (seen == name) {
      *error = "user " + Quote(name) + " is defined twice";
      return false;
    }
  }
  std::vector<std::string> rules;
  for (size_t i = 2; i < args.size(); ++i) {
    std::string rule = CanonicalCommandRule(args[i]);
    if (rule.size() < 2 || (rule[0] != '+' && rule[0] != '-')) {
      // Redis's ACL password rules (>pw, <pw, #hash, !hash) are never quoted: this line
      // is in Redis's ACL syntax, and what follows '>' is a password.
      const bool secret = !args[i].empty() && std::strchr("><#!", args[i][0]) != nullptr;
      *error = "unsupported rule " +
               (secret ? std::string("(a Redis ACL password rule, not shown; write: user NAME "
                                     "PASSWORD [RULE...])")
                       : Quote(args[i])) +
               " (expected +COMMAND, -COMMAND, +COMMAND|SUBCOMMAND, +@CATEGORY, -@CATEGORY, "
               "allcommands or nocommands)";
      return false;
    }
    rules.push_back(std::move(rule));
  }
  state->users.push_back(name);
  // A later source overrides an earlier one's user of the same name.
  for (User& user : state->options->users) {
    if (user.name == name) {
      user.password = args[1];
      user.rules = std::move(rules);
      return true;
    }
  }
  state->options->users.push_back(User{name, args[1], std::move(rules)});
  return true;
}

bool ApplyUnixSocketPerm(const Directive&, const std::vector<std::string>& a, SourceState* s,
                         std::string* e) {
  int perm = 0;
  const char* end = a[0].data() + a[0].size();
  auto [ptr, ec] = std::from_chars(a[0].data(), end, perm, 8);
  if (a[0].empty() || ec != std::errc() || ptr != end || perm < 0 || perm > 0777) {
    *e = Quote(a[0]) + " is not a valid octal permission (e.g. 700)";
    return false;
  }
  s->options->unixsocketperm = perm;
  return true;
}

std::string ShowOctal(const Directive&, const Options& o) {
  char buf[8];
  snprintf(buf, sizeof(buf), "%o", o.unixsocketperm);
  return std::string(buf);
}

bool ApplyUpstream(const Directive&, const std::vector<std::string>& a, SourceState* s,
                   std::string* e) {
  if (!ParseUpstream(a[0], e)) return false;
  s->options->upstream = a[0];
  return true;
}

bool ApplySeeds(const Directive&, const std::vector<std::string>& a, SourceState* s,
                std::string* e) {
  std::vector<std::string> seeds;
  if (!ParseSeeds(a[0], &seeds, e)) return false;
  s->options->upstream_cluster = std::move(seeds);
  return true;
}

std::string ShowSeeds(const Directive&, const Options& o) {
  return ShowString(JoinSeeds(o.upstream_cluster), "none");
}

bool ApplyPasswordFile(const Directive&, const std::vector<std::string>& a, SourceState* s,
                       std::string* e) {
  std::ifstream in(a[0]);
  std::string line;
  if (!in || !std::getline(in, line)) {
    *e = "cannot read " + Quote(a[0]);
    return false;
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  s->options->upstream_password_file = a[0];
  s->options->upstream_password = line;
  return true;
}

bool ApplyDenyCommand(const Directive&, const std::vector<std::string>& a, SourceState* s,
                      std::string*) {
  std::string name = a[0];
  for (char& c : name) c = ToLower(c);
  s->options->denied_commands.push_back(name);
  return true;
}

std::string ShowDenied(const Directive&, const Options& o) {
  return o.denied_commands.empty() ? "none" : "(set)";
}
std::string ShowUsers(const Directive&, const Options& o) {
  return o.users.empty() ? "none" : "(set)";
}

bool ApplyLogLevel(const Directive&, const std::vector<std::string>& a, SourceState* s,
                   std::string* e) {
  if (ParseLogLevel(a[0], &s->options->loglevel)) return true;
  *e = Quote(a[0]) + " is not a log level (debug, verbose, notice, warning)";
  return false;
}

bool ApplyBfLayout(const Directive&, const std::vector<std::string>& a, SourceState* s,
                   std::string* e) {
  filters::LayoutRule rule;
  *e = filters::ParseLayoutRule(a, &rule);
  if (!e->empty()) return false;
  s->options->bf_layouts.push_back(a);
  return true;
}

bool ApplyBfWindow(const Directive&, const std::vector<std::string>& a, SourceState* s,
                   std::string* e) {
  filters::WindowRule rule;
  *e = filters::ParseWindowRule(a, &rule);
  if (!e->empty()) return false;
  s->options->bf_windows.push_back(a);
  return true;
}

// A repeatable rule option's rules, "; " between them.
template <auto F>
std::string ShowRules(const Directive&, const Options& o) {
  const std::vector<std::vector<std::string>>& rules = o.*F;
  if (rules.empty()) return "none";
  std::string out;
  for (const std::vector<std::string>& rule : rules) {
    out += out.empty() ? "" : "; ";
    for (size_t i = 0; i < rule.size(); ++i) out += (i > 0 ? " " : "") + rule[i];
  }
  return out;
}

std::string ShowLogLevel(const Directive&, const Options& o) { return LogLevelName(o.loglevel); }

bool ParseSketchMode(const std::vector<std::string>& a, BfMode* mode, std::string* e) {
  if (EqualsIgnoreCase(a[0], "emulate")) {
    *mode = BfMode::kEmulate;
  } else if (EqualsIgnoreCase(a[0], "forward")) {
    *mode = BfMode::kForward;
  } else {
    *e = Quote(a[0]) + " is not a mode (emulate, forward)";
    return false;
  }
  return true;
}

bool ApplyBfMode(const Directive&, const std::vector<std::string>& a, SourceState* s,
                 std::string* e) {
  return ParseSketchMode(a, &s->options->bf_mode, e);
}

std::string ShowBfMode(const Directive&, const Options& o) {
  return o.bf_mode == BfMode::kEmulate ? "emulate" : "forward";
}

bool ApplyCmsMode(const Directive&, const std::vector<std::string>& a, SourceState* s,
                  std::string* e) {
  return ParseSketchMode(a, &s->options->cms_mode, e);
}

std::string ShowCmsMode(const Directive&, const Options& o) {
  return o.cms_mode == BfMode::kEmulate ? "emulate" : "forward";
}

bool ApplyCfMode(const Directive&, const std::vector<std::string>& a, SourceState* s,
                 std::string* e) {
  return ParseSketchMode(a, &s->options->cf_mode, e);
}

std::string ShowCfMode(const Directive&, const Options& o) {
  return o.cf_mode == BfMode::kEmulate ? "emulate" : "forward";
}

bool ApplyTopkMode(const Directive&, const std::vector<std::string>& a, SourceState* s,
                   std::string* e) {
  return ParseSketchMode(a, &s->options->topk_mode, e);
}

std::string ShowTopkMode(const Directive&, const Options& o) {
  return o.topk_mode == BfMode::kEmulate ? "emulate" : "forward";
}

bool ApplyTdigestMode(const Directive&, const std::vector<std::string>& a, SourceState* s,
                      std::string* e) {
  return ParseSketchMode(a, &s->options->tdigest_mode, e);
}

std::string ShowTdigestMode(const Directive&, const Options& o) {
  return o.tdigest_mode == BfMode::kEmulate ? "emulate" : "forward";
}

bool ApplyAuthMode(const Directive&, const std::vector<std::string>& a, SourceState* s,
                   std::string* e) {
  if (EqualsIgnoreCase(a[0], "auto")) {
    s->options->auth_mode = AuthMode::kAuto;
  } else if (EqualsIgnoreCase(a[0], "proxy")) {
    s->options->auth_mode = AuthMode::kProxy;
  } else if (EqualsIgnoreCase(a[0], "upstream")) {
    s->options->auth_mode = AuthMode::kUpstream;
  } else {
    *e = Quote(a[0]) + " is not an auth mode (auto, proxy, upstream)";
    return false;
  }
  return true;
}

std::string ShowAuthMode(const Directive&, const Options& o) {
  switch (o.auth_mode) {
    case AuthMode::kAuto:
      return "auto";
    case AuthMode::kProxy:
      return "proxy";
    case AuthMode::kUpstream:
      break;
  }
  return "upstream";
}

using O = Options;

}  // namespace

// clang-format off
const Directive kDirectives[] = {
    Address<&O::bind>("bind", "IPv4 or IPv6 address to listen on", "", kRestart),
    Port<&O::port>("port", "TCP port to listen on; 0 = no TCP listener", kRestart),
    String<&O::unixsocket>("unixsocket", "PATH", "Unix socket to listen on", "none", kRestart),
    Custom<&O::unixsocketperm>("unixsocketperm", 1, "OCTAL",
        "Unix socket permissions, e.g. 700; 0 = as created", ApplyUnixSocketPerm, ShowOctal,
        kRestart),
    Custom<&O::upstream>("upstream", 1, "ADDR", "Redis: HOST:PORT, [IPv6]:PORT or unix:/path",
        ApplyUpstream, ShowOrNone<&O::upstream>, kRestart),
    Custom<&O::upstream_cluster>("upstream-cluster", 1, "ADDRS",
        "Redis Cluster seeds: HOST:PORT[,HOST:PORT...]", ApplySeeds, ShowSeeds, kRestart),
    Word<&O::upstream_kind>("upstream-kind", "KIND", "redis, or sharding-proxy (twemproxy, Codis)",
        "redis|sharding-proxy", " is not an upstream kind (redis or sharding-proxy)", kRestart),
    Address<&O::announce_ip>("announce-ip", "address shown to cluster-aware clients", "bind",
        kRestart),
    Port<&O::announce_port>("announce-port", "port shown to cluster-aware clients; 0 = port",
        kRestart),
    // What clients were told about the topology must not change under them.
    YesNo<&O::cluster_view>("cluster-view",
        "one-node cluster view of a standalone upstream", kRestart),
    // The upstream's credentials and timeouts apply to connections opened after a reload.
    String<&O::upstream_user>("upstream-user", "NAME", "user the proxy AUTHs as upstream", "none",
        kLive),
    Secret<&O::upstream_password>("upstream-password", "password the proxy AUTHs with upstream",
        kLive),
    Custom<&O::upstream_password_file>("upstream-password-file", 1, "PATH",
        "file whose first line is the upstream password", ApplyPasswordFile,
        ShowOrNone<&O::upstream_password_file>, kLive),
    Custom<&O::denied_commands>("deny-command", 1, "NAME",
        "refuse this command (repeatable), e.g. FLUSHALL", ApplyDenyCommand, ShowDenied, kLive,
        true),
    Number<&O::upstream_connections, 1, 64>("upstream-connections", "N",
        "shared, multiplexed upstream connections (1..64)", kRestart),
    Number<&O::pinned_pool_size, 0, 10000>("pinned-pool-size", "N",
        "idle pinned upstream connections kept (0..10000)", kLive),
    Number<&O::connect_timeout_ms, 1>("connect-timeout-ms", "MS",
        "upstream connect timeout in milliseconds", kLive),
    Number<&O::reconnect_max_ms, 1>("reconnect-max-ms", "MS",
        "longest wait between upstream reconnect attempts", kLive),
    Number<&O::upstream_timeout_ms, 0>("upstream-timeout-ms", "MS",
        "fail stalled upstream requests; 0 = never", kLive),
    Secret<&O::requirepass>("requirepass", "clients' password for user 'default'", kLive),
    // Applies to the AUTHs that follow; clients keep the login they have, as in Redis.
    Custom<&O::auth_mode>("auth-mode", 1, "MODE",
        "who checks AUTH: auto, proxy or upstream", ApplyAuthMode,
        ShowAuthMode, kLive),
    Custom<&O::users>("user", -2, "NAME:PASS", "a user clients may AUTH as (repeatable)",
        ApplyUser, ShowUsers, kLive, true),
    Number<&O::maxclients, 1>("maxclients", "N", "most client connections at once", kLive),
    Number<&O::timeout, 0, kMaxTimeoutSeconds>("timeout", "SECS",
        "close a client idle this many seconds; 0 = never", kLive),
    Memory<&O::proto_max_bulk_len, kMb>("proto-max-bulk-len",
        "largest bulk argument accepted (>= 1mb)", kLive),
    Memory<&O::client_query_buffer_limit, kMb>("client-query-buffer-limit",
        "most unparsed request bytes per client (>= 1mb)", kLive),
    Memory<&O::client_output_pause, kMb>("client-output-pause",
        "stop reading a client with this much output", kLive),
    Memory<&O::client_output_limit_pubsub, kMb>("client-output-limit-pubsub",
        "disconnect a pub/sub client past this output", kLive),
    Custom<&O::loglevel>("loglevel", 1, "LEVEL", "debug, verbose, notice or warning",
        ApplyLogLevel, ShowLogLevel, kLive),
    String<&O::logfile>("logfile", "PATH", "file to log to; empty = stderr", "stderr", kRestart),
    Number<&O::threads, 1, 64>("threads", "N", "event loops (threads) accepting on the port (1..64)",
        kRestart),
    Word<&O::log_format>("log-format", "FORMAT", "text, or json (one JSON object per line)",
        "text|json", " is not a log format (text, json)", kLive),
    Port<&O::admin_port>("admin-port", "HTTP port of /metrics, /healthz, /readyz; 0 = off",
        kRestart),
    Address<&O::admin_bind>("admin-bind", "IPv4 or IPv6 address of the admin port", "", kRestart),
    Number<&O::shutdown_timeout_ms, 0>("shutdown-timeout-ms", "MS",
        "on shutdown, time left for in-flight requests", kLive),
    // Switching between emulating BF.* and forwarding them changes what existing filters are.
    Custom<&O::bf_mode>("bf-mode", 1, "MODE", "BF.*: emulate, or forward to RedisBloom",
        ApplyBfMode, ShowBfMode, kRestart),
    Custom<&O::cms_mode>("cms-mode", 1, "MODE", "CMS.*: emulate, or forward to RedisBloom",
        ApplyCmsMode, ShowCmsMode, kRestart),
    Custom<&O::cf_mode>("cf-mode", 1, "MODE", "CF.*: emulate, or forward to RedisBloom",
        ApplyCfMode, ShowCfMode, kRestart),
    Custom<&O::topk_mode>("topk-mode", 1, "MODE", "TOPK.*: emulate, or forward to RedisBloom",
        ApplyTopkMode, ShowTopkMode, kRestart),
    Custom<&O::tdigest_mode>("tdigest-mode", 1, "MODE",
        "TDIGEST.*: emulate, or forward to RedisBloom", ApplyTdigestMode, ShowTdigestMode,
        kRestart),
    // Filter defaults: filters created after a reload take the new values.
    Rate<&O::bf_error_rate>("bf-error-rate", "error rate of filters BF.ADD creates", kLive),
    Number<&O::bf_initial_capacity, 1, int64_t{1} << 30>("bf-initial-capacity", "N",
        "capacity of filters that BF.ADD creates", kLive),
    Number<&O::bf_expansion, 1, 32768>("bf-expansion", "N",
        "expansion of filters that BF.ADD creates (1..32768)", kLive),
    Memory<&O::bf_max_shard_bytes, 64, 512 * kMb>("bf-max-shard-bytes",
        "largest key of a sub-filter (>= 64)", kLive),
    Memory<&O::sketch_max_bytes, 1, int64_t{1} << 47>("sketch-max-bytes",
        "largest CMS or CF made (<= 2^47)", kLive),
    Custom<&O::bf_layouts>("bf-layout", -4, "RULE",
        "keys in a Java/Guava filter layout (repeatable)", ApplyBfLayout,
        ShowRules<&O::bf_layouts>, kLive, true),
    Custom<&O::bf_windows>("bf-window", -2, "RULE",
        "new filters forget after a window (repeatable)", ApplyBfWindow,
        ShowRules<&O::bf_windows>, kLive, true),
    // The leftover sweep (docs/leftovers.md).
    Number<&O::sweep_interval, 0, 86400>("sweep-interval", "SECS",
        "seconds between sweeps for leftover keys; 0 = off", kRestart),
    Number<&O::sweep_grace, 1, 86400>("sweep-grace", "SECS",
        "seconds a leftover waits before it is deleted", kRestart),
    Number<&O::sweep_rate, 10, 10000000>("sweep-rate", "N",
        "keys a sweep scans per second on each master", kRestart),
};
// clang-format on

const size_t kDirectiveCount = sizeof(kDirectives) / sizeof(kDirectives[0]);

const Directive* FindDirective(std::string_view name) {
  const Directive* found = nullptr;
  ForEachDirective([&](const Directive& d) {
    if (found == nullptr && EqualsIgnoreCase(name, d.name)) found = &d;
  });
  return found;
}

const char* LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kVerbose:
      return "verbose";
    case LogLevel::kNotice:
      return "notice";
    case LogLevel::kWarning:
      return "warning";
  }
  return "unknown";
}

}  // namespace bloomproxy::conf
