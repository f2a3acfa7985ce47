#include "conf/loader.h"

#include <arpa/inet.h>
#include <sys/un.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "conf/config_text.h"
#include "conf/directive.h"
#include "conf/values.h"

namespace bloomproxy::conf {
namespace {

// `timeout` is capped so that timeout * 1000 (milliseconds) still fits an int.
constexpr int64_t kMaxTimeoutSeconds = INT_MAX / 1000;

constexpr const char* kEnvUpstreamUser = "BLOOMPROXY_UPSTREAM_USER";
constexpr const char* kEnvUpstreamPassword = "BLOOMPROXY_UPSTREAM_PASSWORD";
constexpr const char* kEnvRequirepass = "BLOOMPROXY_REQUIREPASS";

// ---------------------------------------------------------------------------------------------
// The directive table: one row per setting, shared by the config file, the flags and Usage().

bool ApplyUser(const std::vector<std::string>& args, SourceState* state, std::string* error) {
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
      *error = "unsupported rule " + Quote(args[i]) +
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

// Captureless lambdas keep each directive's parsing next to its name.
const Directive kDirectives[] = {
    {"bind", 1, "ADDR", "IPv4 or IPv6 address to listen on",
     [](const std::vector<std::string>& a, SourceState* s, std::string* e) {
       if (!IsIpLiteral(a[0], AF_INET) && !IsIpLiteral(a[0], AF_INET6)) {
         *e = Quote(a[0]) + " is not an IPv4 or IPv6 address";
         return false;
       }
       s->options->bind = a[0];
       return true;
     },
     [](const Options& o) { return o.bind; }},
    {"port", 1, "N", "TCP port to listen on; 0 = no TCP listener",
     [](const std::vector<std::string>& a, SourceState* s, std::string* e) {
       if (!ParsePort(a[0], 0, &s->options->port)) {
         *e = Quote(a[0]) + " is not a valid port";
         return false;
       }
       return true;
     },
     [](const Options& o) { return std::to_string(o.port); }},
    {"unixsocket", 1, "PATH", "Unix socket to listen on",
     [](const std::vector<std::string>& a, SourceState* s, std::string*) {
       s->options->unixsocket = a[0];
       return true;
     },
     [](const Options& o) { return ShowString(o.unixsocket, "none"); }},
    {"unixsocketperm", 1, "OCTAL", "Unix socket permissions, e.g. 700; 0 = as created",
     [](const std::vector<std::string>& a, SourceState* s, std::string* e) {
       int perm = 0;
       const char* end = a[0].data() + a[0].size();
       auto [ptr, ec] = std::from_chars(a[0].data(), end, perm, 8);
       if (a[0].empty() || ec != std::errc() || ptr != end || perm < 0 || perm > 0777) {
         *e = Quote(a[0]) + " is not a valid octal permission (e.g. 700)";
         return false;
       }
       s->options->unixsocketperm = perm;
       return true;
     },
     [](const Options& o) {
       char buf[8];
       snprintf(buf, sizeof(buf), "%o", o.unixsocketperm);
       return std::string(buf);
     }},
    {"upstream", 1, "ADDR", "Redis: HOST:PORT, [IPv6]:PORT or unix:/path",
     [](const std::vector<std::string>& a, SourceState* s, std::string* e) {
       if (!ParseUpstream(a[0], e)) return false;
       s->options->upstream = a[0];
       return true;
     },
     [](const Options& o) { return ShowString(o.upstream, "none"); }},
    {"upstream-cluster", 1, "ADDRS", "Redis Cluster seeds: HOST:PORT[,HOST:PORT...]",
     [](const std::vector<std::string>& a, SourceState* s, std::string* e) {
       std::vector<std::string> seeds;
       if (!ParseSeeds(a[0], &seeds, e)) return false;
       s->options->upstream_cluster = std::move(seeds);
       return true;
     },
     [](const Options& o) { return ShowString(JoinSeeds(o.upstream_cluster), "none"); }},
    {"upstream-kind", 1, "KIND", "redis, or sharding-proxy (twemproxy, Codis)",
     [](const std::vector<std::string>& a, SourceState* s, std::string* e) {
       if (a[0] != "redis" && a[0] != "sharding-proxy") {
         *e = Quote(a[0]) + " is not an upstream kind (redis or sharding-proxy)";
         return false;
       }
       s->options->upstream_kind = a[0];
       return true;
     },
     [](const Options& o) { return o.upstream_kind; }},
    {"announce-ip", 1, "ADDR", "address shown to cluster-aware clients",
     [](const std::vector<std::string>& a, SourceState* s, std::string* e) {
       if (!IsIpLiteral(a[0], AF_INET) && !IsIpLiteral(a[0], AF_INET6)) {
         *e = Quote(a[0]) + " is not an IPv4 or IPv6 address";
         return false;
       }
       s->options->announce_ip = a[0];
       return true;
     },
     [](const Options& o) { return ShowString(o.announce_ip, "bind"); }},
    {"announce-port", 1, "N", "port shown to cluster-aware clients; 0 = port",
     [](const std::vector<std::string>& a, SourceState* s, std::string* e) {
       if (!ParsePort(a[0], 0, &s->options->announce_port)) {
         *e = Quote(a[0]) + " is not a valid port";
         return false;
       }
       return true;
     },
     [](const Options& o) { return std::to_string(o.announce_port); }},
    {"upstream-user", 1, "NAME", "user the proxy AUTHs as upstream",
     [](const std::vector<std::string>& a, SourceState* s, std::string*) {
       s->options->upstream_user = a[0];
       return true;
     },
     [](const Options& o) { return ShowString(o.upstream_user, "none"); }},
    {"upstream-password", 1, "PASS", "password the proxy AUTHs with upstream",
     [](const std::vector<std::string>& a, SourceState* s, std::string*) {
       s->options->upstream_password = a[0];
       return true;
     },
     [](const Options& o) { return ShowSecret(o.upstream_password); }},
    {"upstream-password-file", 1, "PATH", "file whose first line is the upstream password",
     [](const std::vector<std::string>& a, SourceState* s, std::string* e) {
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
     },
     [](const Options& o) { return ShowString(o.upstream_password_file, "none"); }},
    {"deny-command", 1, "NAME", "refuse this command (repeatable), e.g. FLUSHALL",
     [](const std::vector<std::string>& a, SourceState* s, std::string*) {
       std::string name = a[0];
       for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
       s->options->denied_commands.push_back(name);
       return true;
     },
     [](const Options& o) { return std::string(o.denied_commands.empty() ? "none" : "(set)"); }},
    {"upstream-connections", 1, "N", "shared, multiplexed upstream connections (1..64)",
     [](const std::vector<std::string>& a, SourceState* s, std::string* e) {
       return ParseIntField(a[0], 1, 64, &s->options->upstream_connections, e);
     },
     [](const Options& o) { return std::to_string(o.upstream_connections); }},
    {"pinned-pool-size", 1, "N", "idle pinned upstream connections kept (0..10000)",
     [](const std::vector<std::string>& a, SourceState* s, std::string* e) {
       return ParseIntField(a[0], 0, 10000, &s->options->pinned_pool_size, e);
     },
     [](const Options& o) { return std::to_string(o.pinned_pool_size); }},
    {"connect-timeout-ms", 1, "MS", "upstream connect timeout in milliseconds",
     [](const std::vector<std::string>& a, SourceState* s, std::string* e) {
       return ParseIntField(a[0], 1, INT_MAX, &s->options->connect_timeout_ms, e);
     },
     [](const Options& o) { return std::to_string(o.connect_timeout_ms); }},
    {"reconnect-max-ms", 1, "MS", "longest wait between upstream reconnect attempts",
     [](const std::vector<std::string>& a, SourceState* s, std::string* e) {
       return ParseIntField(a[0], 1, INT_MAX, &s->options->reconnect_max_ms, e);
     },
     [](const Options& o) { return std::to_string(o.reconnect_max_ms); }},
    {"upstream-timeout-ms", 1, "MS", "fail stalled upstream requests; 0 = never",
     [](const std::vector<std::string>& a, SourceState* s, std::string* e) {
       return ParseIntField(a[0], 0, INT_MAX, &s->options->upstream_timeout_ms, e);
     },
     [](const Options& o) { return std::to_string(o.upstream_timeout_ms); }},
    {"requirepass", 1, "PASS", "clients' password for user 'default'",
     [](const std::vector<std::string>& a, SourceState* s, std::string*) {
       s->options->requirepass = a[0];
       return true;
     },
     [](const Options& o) { return ShowSecret(o.requirepass); }},
    {"user", -2, "NAME:PASS", "a user clients may AUTH as (repeatable)", ApplyUser,
     [](const Options& o) { return std::string(o.users.empty() ? "none" : "(set)"); }},
    {"maxclients", 1, "N", "most client connections at once",
     [](const std::vector<std::string>& a, SourceState* s, std::string* e) {
       return ParseIntField(a[0], 1, INT_MAX, &s->options->maxclients, e);
     },
     [](const Options& o) { return std::to_string(o.maxclients); }},
    {"timeout", 1, "SECS", "close a client idle this many seconds; 0 = never",
     [](const std::vector<std::string>& a, SourceState* s, std::string* e) {
       return ParseIntField(a[0], 0, kMaxTimeoutSeconds, &s->options->timeout, e);
     },
     [](const Options& o) { return std::to_string(o.timeout); }},
    {"proto-max-bulk-len", 1, "SIZE", "largest bulk argument accepted (>= 1mb)",
     [](const std::vector<std::string>& a, SourceState* s, std::string* e) {
       return ParseMemory(a[0], kMb, &s->options->proto_max_bulk_len, e);
     },
     [](const Options& o) { return ShowMemory(o.proto_max_bulk_len); }},
    {"client-query-buffer-limit", 1, "SIZE", "most unparsed request bytes per client (>= 1mb)",
     [](const std::vector<std::string>& a, SourceState* s, std::string* e) {
       return ParseMemory(a[0], kMb, &s->options->client_query_buffer_limit, e);
     },
     [](const Options& o) { return ShowMemory(o.client_query_buffer_limit); }},
    {"client-output-pause", 1, "SIZE", "stop reading a client with this much output",
     [](const std::vector<std::string>& a, SourceState* s, std::string* e) {
       return ParseMemory(a[0], kMb, &s->options->client_output_pause, e);
     },
     [](const Options& o) { return ShowMemory(o.client_output_pause); }},
    {"client-output-limit-pubsub", 1, "SIZE", "disconnect a pub/sub client past this output",
     [](const std::vector<std::string>& a, SourceState* s, std::string* e) {
       return ParseMemory(a[0], kMb, &s->options->client_output_limit_pubsub, e);
     },
     [](const Options& o) { return ShowMemory(o.client_output_limit_pubsub); }},
    {"loglevel", 1, "LEVEL", "debug, verbose, notice or warning",
     [](const std::vector<std::string>& a, SourceState* s, std::string* e) {
       if (!ParseLogLevel(a[0], &s->options->loglevel)) {
         *e = Quote(a[0]) + " is not a log level (debug, verbose, notice, warning)";
         return false;
       }
       return true;
     },
     [](const Options& o) { return std::string(LogLevelName(o.loglevel)); }},
    {"logfile", 1, "PATH", "file to log to; empty = stderr",
     [](const std::vector<std::string>& a, SourceState* s, std::string*) {
       s->options->logfile = a[0];
       return true;
     },
     [](const Options& o) { return ShowString(o.logfile, "stderr"); }},
    {"threads", 1, "N", "event loops (threads) accepting on the port (1..64)",
     [](const std::vector<std::string>& a, SourceState* s, std::string* e) {
       return ParseIntField(a[0], 1, 64, &s->options->threads, e);
     },
     [](const Options& o) { return std::to_string(o.threads); }},
    {"shutdown-timeout-ms", 1, "MS", "on shutdown, time left for in-flight requests",
     [](const std::vector<std::string>& a, SourceState* s, std::string* e) {
       return ParseIntField(a[0], 0, INT_MAX, &s->options->shutdown_timeout_ms, e);
     },
     [](const Options& o) { return std::to_string(o.shutdown_timeout_ms); }},
    {"bf-mode", 1, "MODE", "BF.*: emulate, or forward to RedisBloom",
     [](const std::vector<std::string>& a, SourceState* s, std::string* e) {
       if (EqualsIgnoreCase(a[0], "emulate")) {
         s->options->bf_mode = BfMode::kEmulate;
       } else if (EqualsIgnoreCase(a[0], "forward")) {
         s->options->bf_mode = BfMode::kForward;
       } else {
         *e = Quote(a[0]) + " is not a mode (emulate, forward)";
         return false;
       }
       return true;
     },
     [](const Options& o) {
       return std::string(o.bf_mode == BfMode::kEmulate ? "emulate" : "forward");
     }},
    {"bf-error-rate", 1, "RATE", "error rate of filters BF.ADD creates",
     [](const std::vector<std::string>& a, SourceState* s, std::string* e) {
       return ParseRate(a[0], &s->options->bf_error_rate, e);
     },
     [](const Options& o) { return ShowDouble(o.bf_error_rate); }},
    {"bf-initial-capacity", 1, "N", "capacity of filters that BF.ADD creates",
     [](const std::vector<std::string>& a, SourceState* s, std::string* e) {
       return ParseInt(a[0], 1, int64_t{1} << 30, &s->options->bf_initial_capacity, e);
     },
     [](const Options& o) { return std::to_string(o.bf_initial_capacity); }},
    {"bf-expansion", 1, "N", "expansion of filters that BF.ADD creates (1..32768)",
     [](const std::vector<std::string>& a, SourceState* s, std::string* e) {
       return ParseIntField(a[0], 1, 32768, &s->options->bf_expansion, e);
     },
     [](const Options& o) { return std::to_string(o.bf_expansion); }},
    {"bf-max-shard-bytes", 1, "SIZE", "largest key of a sub-filter (>= 64)",
     [](const std::vector<std::string>& a, SourceState* s, std::string* e) {
       return ParseMemory(a[0], 64, &s->options->bf_max_shard_bytes, e) &&
              CheckAtMost(a[0], s->options->bf_max_shard_bytes, 512LL * kMb, e);
     },
     [](const Options& o) { return ShowMemory(o.bf_max_shard_bytes); }},
};

const Directive* FindDirective(std::string_view name) {
  for (const Directive& d : kDirectives) {
    if (EqualsIgnoreCase(name, d.name)) return &d;
  }
  for (size_t i = 0; i < kTlsDirectiveCount; ++i) {
    if (EqualsIgnoreCase(name, kTlsDirectives[i].name)) return &kTlsDirectives[i];
  }
  return nullptr;
}

void ParseText(std::string_view text, std::string_view source_name, SourceState* state,
               std::vector<std::string>* errors) {
  std::vector<std::string> args;
  size_t line_number = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t newline = text.find('\n', pos);
    if (newline == std::string_view::npos) newline = text.size();
    std::string_view line = Trim(text.substr(pos, newline - pos));
    pos = newline + 1;
    ++line_number;
    if (line.empty() || line.front() == '#') continue;

    std::string where = std::string(source_name) + ":" + std::to_string(line_number) + ": ";
    if (!SplitArgs(line, &args)) {
      errors->push_back(where + "unbalanced quotes");
      continue;
    }
    if (args.empty()) continue;
    const Directive* directive = FindDirective(args[0]);
    if (directive == nullptr) {
      errors->push_back(where + "unknown directive " + Quote(args[0]));
      continue;
    }
    int given = static_cast<int>(args.size()) - 1;
    if (directive->argc >= 0 ? given != directive->argc : given < -directive->argc) {
      errors->push_back(where + "wrong number of arguments for '" + directive->name +
                        "' (expected " + (directive->argc < 0 ? "at least " : "") +
                        std::to_string(std::abs(directive->argc)) + ", got " +
                        std::to_string(given) + ")");
      continue;
    }
    args.erase(args.begin());
    std::string error;
    if (!directive->apply(args, state, &error)) {
      errors->push_back(where + directive->name + ": " + error);
    }
  }
}

// One `--name value` of the command line, applied after the file and the environment.
struct Flag {
  const Directive* directive;
  std::string value;
};

void ApplyFlag(const Flag& flag, SourceState* state, std::vector<std::string>* errors) {
  const Directive& d = *flag.directive;
  std::string prefix = std::string("--") + d.name + ": ";
  std::vector<std::string> args;
  if (d.argc == -2) {
    // Only `user`: NAME:PASSWORD, split at the first ':' (a password may contain ':'). The
    // value is never echoed: it holds a password.
    size_t colon = flag.value.find(':');
    if (colon == std::string::npos) {
      errors->push_back(prefix + "expected " + d.arg_help);
      return;
    }
    args = {flag.value.substr(0, colon), flag.value.substr(colon + 1)};
  } else {
    args = {flag.value};
  }
  std::string error;
  if (!d.apply(args, state, &error)) errors->push_back(prefix + error);
}

void LoadFile(const std::string& path, Options* options, std::vector<std::string>* errors) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    errors->push_back("cannot open config file " + Quote(path) + ": " + std::strerror(errno));
    return;
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    errors->push_back("cannot read config file " + Quote(path) + ": " + std::strerror(errno));
    return;
  }
  ParseConfigText(text.str(), path, options, errors);
}

bool IsLoopbackOrWildcard(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1" || host == "0.0.0.0" ||
         host == "::";
}

}  // namespace

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

void ParseConfigText(std::string_view text, std::string_view source_name, Options* options,
                     std::vector<std::string>* errors) {
  SourceState state{options, {}};
  ParseText(text, source_name, &state, errors);
}

void Validate(const Options& options, std::vector<std::string>* errors) {
  if (options.port == 0 && options.unixsocket.empty() && options.tls_port == 0) {
    errors->push_back("no listener: port and tls-port are 0 and unixsocket is not set");
  }
  if (options.unixsocket.size() > kMaxUnixPathLength) {
    errors->push_back("unixsocket: path longer than " + std::to_string(kMaxUnixPathLength) +
                      " bytes");
  }
  if (!options.upstream.empty() && !options.upstream_cluster.empty()) {
    errors->push_back(
        "upstream and upstream-cluster exclude each other: set one (--upstream HOST:PORT for "
        "one Redis, --upstream-cluster HOST:PORT,... for a Redis Cluster)");
  } else if (!options.upstream_cluster.empty()) {
    // Checked when parsed.
  } else if (options.upstream.empty()) {
    errors->push_back(
        "no upstream: set 'upstream' in the config file or pass --upstream "
        "(HOST:PORT, [IPv6]:PORT or unix:/path), or --upstream-cluster for a Redis Cluster");
  } else if (options.upstream.compare(0, 5, "unix:") == 0) {
    if (!options.unixsocket.empty() && options.upstream.substr(5) == options.unixsocket) {
      errors->push_back("upstream is the proxy's own unixsocket");
    }
  } else if (options.port != 0) {
    // Catch the obvious loop: the proxy forwarding to itself.
    size_t colon = options.upstream.rfind(':');
    std::string host = options.upstream.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
    int port = 0;
    if (ParsePort(std::string_view(options.upstream).substr(colon + 1), 1, &port) &&
        port == options.port &&
        (host == options.bind ||
         (IsLoopbackOrWildcard(host) && IsLoopbackOrWildcard(options.bind)))) {
      errors->push_back("upstream " + Quote(options.upstream) +
                        " is the proxy's own listening address");
    }
  }
  if (!options.upstream_user.empty() && options.upstream_password.empty()) {
    errors->push_back("upstream-user is set but upstream-password is not");
  }
  if (options.upstream_kind == "sharding-proxy") {
    if (!options.upstream_cluster.empty()) {
      errors->push_back(
          "upstream-kind sharding-proxy and upstream-cluster exclude each other: a sharding "
          "proxy (twemproxy, Codis) is given with --upstream HOST:PORT");
    }
    if (!options.upstream_user.empty()) {
      errors->push_back(
          "upstream-user is not supported with upstream-kind sharding-proxy: twemproxy and "
          "Codis take AUTH with a password only (set upstream-password alone)");
    }
  }
  ValidateTls(options, errors);
  if (options.proto_max_bulk_len > options.client_query_buffer_limit) {
    errors->push_back("proto-max-bulk-len (" + ShowMemory(options.proto_max_bulk_len) +
                      ") exceeds client-query-buffer-limit (" +
                      ShowMemory(options.client_query_buffer_limit) +
                      "): such a bulk could never be received");
  }
}

LoadResult LoadOptions(int argc, const char* const* argv,
                       const std::function<const char*(const char*)>& getenv_fn) {
  LoadResult result;
  std::vector<std::string>& errors = result.errors;

  // Pass 1: read the command line, keeping the settings to apply them last.
  std::vector<Flag> flags;
  std::string config_path;
  bool have_config = false;
  bool options_ended = false;  // after "--", every argument is positional
  auto set_config = [&](const std::string& path) {
    if (have_config) {
      errors.push_back("more than one config file given (" + Quote(config_path) + " and " +
                       Quote(path) + ")");
      return;
    }
    have_config = true;
    config_path = path;
  };
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i] != nullptr ? argv[i] : "";
    if (options_ended || arg.empty() || arg[0] != '-' || arg == "-") {
      set_config(std::string(arg));
      continue;
    }
    if (arg == "--") {
      options_ended = true;
      continue;
    }
    if (arg == "-h") {
      result.help = true;
      continue;
    }
    if (arg == "-v") {
      result.version = true;
      continue;
    }
    if (arg.size() < 3 || arg[1] != '-') {
      errors.push_back("unknown option " + Quote(arg));
      continue;
    }
    std::string_view name = arg.substr(2);
    std::optional<std::string> inline_value;
    if (size_t eq = name.find('='); eq != std::string_view::npos) {
      inline_value = std::string(name.substr(eq + 1));
      name = name.substr(0, eq);
    }
    std::string flag_name = "--" + std::string(name);

    // Flags without a value.
    bool* switch_flag = EqualsIgnoreCase(name, "help")        ? &result.help
                        : EqualsIgnoreCase(name, "version")   ? &result.version
                        : EqualsIgnoreCase(name, "test-conf") ? &result.test_conf
                                                              : nullptr;
    if (switch_flag != nullptr) {
      if (inline_value) {
        errors.push_back(flag_name + ": takes no value");
      } else {
        *switch_flag = true;
      }
      continue;
    }

    const Directive* directive = FindDirective(name);
    bool is_config = EqualsIgnoreCase(name, "config");
    if (directive == nullptr && !is_config) {
      errors.push_back("unknown option " + Quote(flag_name));
      // A misspelt `--requirepas secret` most likely has a value: skip it, so that it is not
      // taken for a config file name (and echoed in "cannot open config file 'secret'").
      if (!inline_value && i + 1 < argc && argv[i + 1] != nullptr && argv[i + 1][0] != '-') ++i;
      continue;
    }
    std::string value;
    if (inline_value) {
      value = std::move(*inline_value);
    } else if (i + 1 < argc && argv[i + 1] != nullptr) {
      value = argv[++i];
    } else {
      errors.push_back(flag_name + ": missing value");
      continue;
    }
    if (is_config) {
      set_config(value);
    } else {
      flags.push_back(Flag{directive, std::move(value)});
    }
  }

  // Pass 2: the config file.
  if (have_config) {
    result.options.config_file = config_path;
    LoadFile(config_path, &result.options, &errors);
  }

  // Pass 3: the environment. Empty counts as unset, so that a template passing an undefined
  // variable through (`BLOOMPROXY_REQUIREPASS=${PASS}`) cannot silently remove a password.
  auto env = [&getenv_fn](const char* name, std::string* field) {
    const char* value = getenv_fn(name);
    if (value != nullptr && value[0] != '\0') *field = value;
  };
  env(kEnvUpstreamUser, &result.options.upstream_user);
  env(kEnvUpstreamPassword, &result.options.upstream_password);
  env(kEnvRequirepass, &result.options.requirepass);

  // Pass 4: the flags, in order (a repeated flag: the last one wins, except `user`).
  SourceState flag_state{&result.options, {}};
  for (const Flag& flag : flags) ApplyFlag(flag, &flag_state, &errors);

  if (!result.help && !result.version) Validate(result.options, &errors);
  return result;
}

std::string Usage() {
  const Options defaults;
  std::string out =
      "Usage: bloomproxy [CONFIG_FILE] [--config FILE] [--name value | --name=value]...\n"
      "\n"
      "A Redis-protocol proxy. Every option below is also a config-file directive (the name\n"
      "without \"--\"; `user NAME PASSWORD` in a file). Precedence: defaults < config file <\n"
      "environment < flags. Sizes take units: k=1000, kb=1024, m, mb, g, gb (any case).\n"
      "Environment: BLOOMPROXY_UPSTREAM_USER, BLOOMPROXY_UPSTREAM_PASSWORD and\n"
      "BLOOMPROXY_REQUIREPASS set --upstream-user, --upstream-password and --requirepass\n"
      "(secrets need not appear in the process list).\n"
      "\n";
  auto line = [&out](const std::string& flag, const std::string& help) {
    // Help starts in column 37: the longest flag, "--client-query-buffer-limit SIZE", fits.
    std::string left = "  " + flag + " ";
    if (left.size() < 37) left.resize(37, ' ');
    out += left + help + "\n";
  };
  line("--config FILE", "config file to read (or FILE alone, like redis-server)");
  auto directive = [&](const Directive& d) {
    line(std::string("--") + d.name + " " + d.arg_help,
         std::string(d.help) + " (default " + d.show(defaults) + ")");
  };
  for (const Directive& d : kDirectives) directive(d);
  for (size_t i = 0; i < kTlsDirectiveCount; ++i) directive(kTlsDirectives[i]);
  line("--test-conf", "check the configuration, print errors, exit");
  line("-h, --help", "print this help and exit");
  line("-v, --version", "print the version and exit");
  return out;
}

}  // namespace bloomproxy::conf
