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

    std::string at = std::string(source_name) + ":" + std::to_string(line_number);
    std::string where = at + ": ";
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
    if (std::string count = ArgCountError(*directive, args.size() - 1); !count.empty()) {
      errors->push_back(where + count);
      continue;
    }
    args.erase(args.begin());
    std::string error;
    if (directive->apply(*directive, args, state, &error)) {
      NoteSource(state, *directive, std::move(at));
    } else {
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
  if (std::string_view(d.name) == "user") {
    // NAME:PASSWORD, split at the first ':' (a password may contain ':'). The value is never
    // echoed: it holds a password.
    size_t colon = flag.value.find(':');
    if (colon == std::string::npos) {
      errors->push_back(prefix + "expected " + d.arg_help);
      return;
    }
    args = {flag.value.substr(0, colon), flag.value.substr(colon + 1)};
  } else if (d.argc < 0) {
    // Several arguments in one value (bf-layout, bf-window): split like a config-file line.
    if (!SplitArgs(flag.value, &args)) {
      errors->push_back(prefix + "unbalanced quotes");
      return;
    }
    if (std::string count = ArgCountError(d, args.size()); !count.empty()) {
      errors->push_back(prefix + count);
      return;
    }
  } else {
    args = {flag.value};
  }
  std::string error;
  if (d.apply(d, args, state, &error)) {
    NoteSource(state, d, std::string("--") + d.name);
  } else {
    errors->push_back(prefix + error);
  }
}

void LoadFile(const std::string& path, SourceState* state, std::vector<std::string>* errors) {
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
  ParseText(text.str(), path, state, errors);
}

bool IsLoopbackOrWildcard(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1" || host == "0.0.0.0" ||
         host == "::";
}

}  // namespace

std::string ArgCountError(const Directive& d, size_t args) {
  const int given = static_cast<int>(args);
  if (d.argc >= 0 ? given == d.argc : given >= -d.argc) return "";
  return std::string("wrong number of arguments for '") + d.name + "' (expected " +
         (d.argc < 0 ? "at least " : "") + std::to_string(std::abs(d.argc)) + ", got " +
         std::to_string(given) + ")";
}

void NoteSource(SourceState* state, const Directive& d, std::string where) {
  if (state->sources == nullptr) return;
  if (!d.repeatable) {
    // Only the source that set the value last is shown.
    for (auto it = state->sources->begin(); it != state->sources->end(); ++it) {
      if (it->name == d.name) {
        state->sources->erase(it);
        break;
      }
    }
  }
  state->sources->push_back(OptionSource{d.name, std::move(where)});
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

LoadResult LoadOptions(int argc, const char* const* argv, const GetEnvFn& getenv_fn,
                       const EnvNamesFn& env_names) {
  LoadResult result;
  std::vector<std::string>& errors = result.errors;
  for (int i = 1; i < argc; ++i) {
    result.options.command_line.emplace_back(argv[i] != nullptr ? argv[i] : "");
  }

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

  // Pass 2: the config file; pass 3: the environment; pass 4: the flags, in order (a repeated
  // flag: the last one wins, except `user`). Each source is its own SourceState: a `user` that
  // an earlier source defined is replaced.
  if (have_config) {
    result.options.config_file = config_path;
    SourceState file_state{&result.options, {}, &result.sources};
    LoadFile(config_path, &file_state, &errors);
  }
  SourceState env_state{&result.options, {}, &result.sources};
  ApplyEnvironment(getenv_fn, env_names, &env_state, &errors);
  SourceState flag_state{&result.options, {}, &result.sources};
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
      "Environment: every option is also BLOOMPROXY_<NAME>, the name in upper case with '-'\n"
      "as '_', e.g. BLOOMPROXY_BF_ERROR_RATE=0.05; the value is the flag's (BLOOMPROXY_USER:\n"
      "the file's `NAME PASSWORD [RULE...]`); empty counts as unset. BLOOMPROXY_REQUIREPASS,\n"
      "BLOOMPROXY_UPSTREAM_USER and BLOOMPROXY_UPSTREAM_PASSWORD keep secrets out of the\n"
      "process list. --test-conf shows where each value came from; SIGHUP reloads the file.\n"
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
         std::string(d.help) + " (default " + d.show(d, defaults) + ")");
  };
  ForEachDirective(directive);
  line("--test-conf", "check the configuration, print errors, exit");
  line("-h, --help", "print this help and exit");
  line("-v, --version", "print the version and exit");
  return out;
}

}  // namespace bloomproxy::conf

namespace bloomproxy::conf {

std::string TestConfReport(const LoadResult& loaded) {
  std::string out = "bloomproxy: configuration OK\n";
  if (loaded.sources.empty()) return out + "bloomproxy: every option at its default\n";
  out += "bloomproxy: options not at their default (value, then where it was set):\n";
  // One line per option, in the table's order; a repeatable option lists each of its sources.
  ForEachDirective([&](const Directive& d) {
    std::string where;
    for (const OptionSource& s : loaded.sources) {
      if (std::string_view(s.name) == d.name) where += (where.empty() ? "" : ", ") + s.where;
    }
    if (!where.empty())
      out += "  " + std::string(d.name) + " " + d.show(d, loaded.options) + " (" + where + ")\n";
  });
  return out;
}

}  // namespace bloomproxy::conf
