// bloomproxy's options: one plain struct with named defaults, loaded from a redis.conf-style
// file, then the environment, then command-line flags (later sources override earlier ones).
#pragma once

#include <cctype>
#include <cstdint>
#include <string>
#include <vector>

namespace bloomproxy::conf {

inline constexpr int kDefaultPort = 6380;
inline constexpr const char* kDefaultBind = "127.0.0.1";
inline constexpr int kDefaultMaxClients = 10000;
inline constexpr int kDefaultUpstreamConnections = 2;
inline constexpr int kDefaultPinnedPoolSize = 64;
inline constexpr int64_t kDefaultProtoMaxBulkLen = 512LL * 1024 * 1024;
inline constexpr int64_t kDefaultClientQueryBufferLimit = 1024LL * 1024 * 1024;
inline constexpr int kDefaultConnectTimeoutMs = 2000;
inline constexpr int kDefaultReconnectMaxMs = 500;
inline constexpr int kDefaultShutdownTimeoutMs = 5000;

inline constexpr double kDefaultBfErrorRate = 0.01;
inline constexpr int64_t kDefaultBfInitialCapacity = 100;
inline constexpr int kDefaultBfExpansion = 2;
// A filter's sub-filter larger than this is split over several keys. A Redis string of n bytes
// takes n + 10 bytes (sdshdr32 + NUL), n + 12 when Redis kept the argument's query buffer, so
// 64 MiB less 16 makes each full shard fit exactly one jemalloc size class (64 MiB) instead of
// being rounded up by 25 %, and stays far below Redis's 512 MB string limit.
inline constexpr int64_t kDefaultBfMaxShardBytes = 64LL * 1024 * 1024 - 16;
inline constexpr int64_t kDefaultSketchMaxBytes = int64_t{1} << 47;

enum class LogLevel { kDebug, kVerbose, kNotice, kWarning };

// What a SIGHUP reload does with an option whose value changed (conf/reload.h): applies it, or
// logs that it needs a restart and keeps the running value.
enum class Reload { kLive, kRestart };

// What the proxy does with BF.* commands (bf-mode), with CMS.* (cms-mode), with CF.* (cf-mode),
// with TOPK.* (topk-mode) and with TDIGEST.* (tdigest-mode).
enum class BfMode {
  kEmulate,  // answered by the proxy on plain Redis strings (the default)
  kForward,  // passed to the upstream unchanged (a server with the RedisBloom module)
};

// Who checks a client's AUTH and HELLO AUTH (auth-mode).
enum class AuthMode {
  // The default: the upstream (as kUpstream) while the proxy has no requirepass and no user of
  // its own and the upstream is a Redis server; else the proxy (as kProxy). A client that has not
  // logged in runs as the proxy's own upstream login (upstream-user/upstream-password).
  kAuto,
  kProxy,     // the proxy, against requirepass and its own users
  kUpstream,  // the upstream: the client's commands run as the user it logged in as upstream
};

// One user a client may AUTH as (directive `user NAME PASSWORD [RULE ...]`). `requirepass` is
// the password of the user "default", who may run every command.
// A command rule as User::rules holds it: lower case, with "allcommands" and "nocommands"
// written as "+@all" and "-@all".
inline std::string CanonicalCommandRule(std::string rule) {
  for (char& c : rule) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (rule == "allcommands") return "+@all";
  if (rule == "nocommands") return "-@all";
  return rule;
}

struct User {
  std::string name;
  std::string password;
  // The commands the user may run, as Redis ACL rules applied in order, lower case: "+@all",
  // "-@dangerous", "+get", "-flushall", "+config|get", "-config|set" ("allcommands" and
  // "nocommands" are stored as "+@all" and "-@all"). Empty: every command. With rules, the user
  // starts with no commands, as a new Redis ACL user does. Command and category names are
  // checked by the proxy, which knows the command table (proxy/client/acl.h).
  std::vector<std::string> rules;

  bool operator==(const User& o) const {
    return name == o.name && password == o.password && rules == o.rules;
  }
};

struct Options {
  // Listening.
  std::string bind = kDefaultBind;  // bind ADDR (IPv4 or IPv6 literal)
  int port = kDefaultPort;          // port N; 0 = no TCP listener
  std::string unixsocket;           // unixsocket PATH; empty = none
  int unixsocketperm = 0;           // unixsocketperm 700 (octal); 0 = leave as created

  // Upstream. "HOST:PORT", "[V6]:PORT" or "unix:/path". Empty = none configured (the README's
  // quick start then starts a local redis-server and passes its address).
  std::string upstream;
  // upstream-cluster HOST:PORT[,HOST:PORT...]: a Redis Cluster's seed nodes, instead of
  // `upstream` (the two exclude each other). The proxy reads the slot map from them.
  std::vector<std::string> upstream_cluster;
  // upstream-kind: what `upstream` is. "redis" (a Redis server) or "sharding-proxy" (twemproxy
  // or Codis in front of several Redis servers: only the commands both forward are sent, and a
  // filter's keys all share its name's hash tag; docs/sharding-proxy.md).
  std::string upstream_kind = "redis";
  // The address the proxy announces as the one node of the cluster it shows clients (CLUSTER
  // SLOTS, SHARDS, NODES); empty / 0: the listening address and port.
  std::string announce_ip;
  int announce_port = 0;
  // cluster-view yes|no: in front of a standalone upstream (or a sharding proxy), show clients
  // the one-node cluster anyway (INFO's cluster_enabled:1, CLUSTER SLOTS and friends answered
  // by the proxy). Off: clients see what the upstream is, a standalone Redis. A Redis Cluster
  // upstream (upstream-cluster) is always shown as the one-node cluster.
  bool cluster_view = false;
  std::string upstream_user;      // upstream-user; env BLOOMPROXY_UPSTREAM_USER
  std::string upstream_password;  // upstream-password; env BLOOMPROXY_UPSTREAM_PASSWORD
  // upstream-password-file: the password read from this file (its first line), so that it need
  // not be in the config, the environment or the process list.
  std::string upstream_password_file;
  int upstream_connections = kDefaultUpstreamConnections;  // shared, multiplexed connections
  int pinned_pool_size = kDefaultPinnedPoolSize;           // idle pinned connections kept for reuse
  int connect_timeout_ms = kDefaultConnectTimeoutMs;
  int reconnect_max_ms = kDefaultReconnectMaxMs;  // cap of the reconnect backoff
  // A shared upstream connection whose oldest request waits longer than this is closed (its
  // requests get errors) and replaced; 0 = never.
  int upstream_timeout_ms = 5000;

  // TLS towards the upstream (every node of a cluster, or the sharding proxy): docs/tls.md.
  bool upstream_tls = false;              // upstream-tls yes|no
  std::string upstream_tls_ca_cert_file;  // CA bundle; neither file nor dir: the system's
  std::string upstream_tls_ca_cert_dir;   // directory of hashed CA certificates
  std::string upstream_tls_cert_file;     // client certificate (tls-auth-clients yes upstream)
  std::string upstream_tls_key_file;      // its key
  std::string upstream_tls_server_name;   // SNI and the name verified; empty: the upstream host

  // TLS towards clients, with redis.conf's directive names.
  int tls_port = 0;  // 0: no TLS listener
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_key_file_pass;
  std::string tls_ca_cert_file;  // CA of client certificates
  std::string tls_ca_cert_dir;
  std::string tls_auth_clients = "yes";  // yes | no | optional, as Redis
  std::string tls_protocols;             // e.g. "TLSv1.2 TLSv1.3"; empty: both, as Redis
  std::string tls_ciphers;               // TLSv1.2 and below (OpenSSL cipher list)
  std::string tls_ciphersuites;          // TLSv1.3
  bool tls_prefer_server_ciphers = false;
  bool tls_session_caching = true;

  // Clients.
  std::string requirepass;               // requirepass; env BLOOMPROXY_REQUIREPASS
  AuthMode auth_mode = AuthMode::kAuto;  // who checks AUTH
  std::vector<User> users;               // user NAME PASSWORD (repeatable)
  // deny-command NAME (repeatable): commands the proxy refuses, answered like a command Redis
  // does not have (as redis.conf's rename-command NAME ""), e.g. FLUSHALL, CONFIG, DEBUG.
  std::vector<std::string> denied_commands;
  int maxclients = kDefaultMaxClients;
  int timeout = 0;  // seconds a client may idle before it is closed; 0 = never
  int64_t proto_max_bulk_len = kDefaultProtoMaxBulkLen;
  int64_t client_query_buffer_limit = kDefaultClientQueryBufferLimit;
  // Output buffers, as Redis's client-output-buffer-limit: a client whose unsent replies pass
  // client-output-pause stops being read from until they drain to half (so a client that does
  // not read cannot make the proxy buffer without bound); a pub/sub client whose unsent
  // messages pass client-output-limit-pubsub is disconnected (Redis's default hard limit).
  int64_t client_output_pause = 64LL * 1024 * 1024;
  int64_t client_output_limit_pubsub = 32LL * 1024 * 1024;

  // Bloom filters (BF.*).
  BfMode bf_mode = BfMode::kEmulate;
  BfMode cms_mode = BfMode::kEmulate;          // the same choice for CMS.*
  BfMode cf_mode = BfMode::kEmulate;           // for CF.*
  BfMode topk_mode = BfMode::kEmulate;         // for TOPK.*
  BfMode tdigest_mode = BfMode::kEmulate;      // and for TDIGEST.*
  double bf_error_rate = kDefaultBfErrorRate;  // BF.ADD/INSERT on a new key
  int64_t bf_initial_capacity = kDefaultBfInitialCapacity;
  int bf_expansion = kDefaultBfExpansion;
  int64_t bf_max_shard_bytes = kDefaultBfMaxShardBytes;
  // The largest count-min sketch (bytes of cells) or cuckoo filter (bytes of slots) the proxy
  // makes; past it RedisBloom's allocation-failure replies (filters/cms/cms.h, cuckoo/cuckoo.h).
  int64_t sketch_max_bytes = kDefaultSketchMaxBytes;
  // bf-layout PATTERN LAYOUT CAPACITY ERROR_RATE [options] (repeatable): keys that are filters
  // in a Java application's layout (filters/guava/bf_layout.h), each rule's arguments as given.
  std::vector<std::vector<std::string>> bf_layouts;
  // bf-window PATTERN WINDOW_MS [SLOTS g] [ERROR e] [CAPACITY n] (repeatable): names whose
  // filters BF.ADD/MADD/INSERT create windowed (filters/bloom/window/window_rules.h), each
  // rule's arguments as given.
  std::vector<std::vector<std::string>> bf_windows;

  // The leftover sweep (proxy/sketch/sweep.h, docs/leftovers.md): every sweep-interval seconds (0 =
  // off) one proxy per upstream scans it for filters' and sketches' internal keys that no
  // structure owns, sweep-rate keys a second per master, and deletes those still unowned
  // sweep-grace seconds after it first saw them.
  int sweep_interval = 60;
  int sweep_grace = 60;
  int sweep_rate = 10000;

  // Process.
  LogLevel loglevel = LogLevel::kNotice;
  std::string logfile;              // empty = stderr
  std::string log_format = "text";  // log-format text|json

  // Admin HTTP port (/metrics, /healthz, /readyz); 0 = off.
  int admin_port = 0;
  std::string admin_bind = "127.0.0.1";
  int shutdown_timeout_ms = kDefaultShutdownTimeoutMs;
  // Event loops, one per thread, all accepting on the TCP port (SO_REUSEPORT).
  int threads = 1;

  // Where the options came from (for INFO and error messages).
  std::string config_file;
  // The command line after the program name, kept so that a reload (conf/reload.h) reads the
  // same file and applies the same flags again.
  std::vector<std::string> command_line;
};

// Who checks AUTH under `o`: kProxy or kUpstream (auth-mode auto resolved). auto is the
// upstream's unless the proxy has a password or users of its own, or the upstream is a sharding
// proxy (twemproxy and Codis have no users; twemproxy closes the connection on HELLO) or a Redis
// Cluster (a client's login would need connections of its own to every node: not done yet).
inline AuthMode ResolvedAuthMode(const Options& o) {
  if (o.auth_mode != AuthMode::kAuto) return o.auth_mode;
  const bool own = !o.requirepass.empty() || !o.users.empty();
  const bool sharded = o.upstream_kind == "sharding-proxy" || !o.upstream_cluster.empty();
  return own || sharded ? AuthMode::kProxy : AuthMode::kUpstream;
}

}  // namespace bloomproxy::conf
