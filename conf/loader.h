// Loading bloomproxy's Options: defaults, then a redis.conf-style file, then the environment,
// then command-line flags. Every directive of the file is also a flag (`--port 6380` or
// `--port=6380`) and an environment variable (BLOOMPROXY_PORT=6380), so any setting can come
// from any of these places.
//
// Nothing here throws or exits: every problem is collected as one line of text so the caller
// can print them all at once and stop.
#pragma once

#include <cstdlib>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "conf/options.h"

namespace bloomproxy::conf {

// Where a value came from: the row's name, and "--port", "env BLOOMPROXY_PORT" or
// "path/to/file.conf:3".
struct OptionSource {
  const char* name;
  std::string where;
};

struct LoadResult {
  Options options;
  // Every problem found, each a complete message, e.g.
  //   "bloomproxy.conf:12: unknown directive 'prot'"
  //   "--port: '70000' is not a valid port"
  // Messages never contain a password.
  std::vector<std::string> errors;
  bool help = false;       // --help/-h given
  bool version = false;    // --version/-v given
  bool test_conf = false;  // --test-conf given
  // The options not at their default, in the order they were set: the source that set a value
  // last (every source of a repeatable option such as `user`).
  std::vector<OptionSource> sources;
};

using GetEnvFn = std::function<const char*(const char*)>;
// The names of the environment's variables that start with "BLOOMPROXY_".
using EnvNamesFn = std::function<std::vector<std::string>()>;

// The BLOOMPROXY_ names in the process's environment.
std::vector<std::string> EnvironmentNames();
// The environment variable of option `name`: "bf-error-rate" -> "BLOOMPROXY_BF_ERROR_RATE".
std::string EnvironmentName(std::string_view name);

// Loads the options. argv[0] is the program name. Precedence, lowest first: defaults < config
// file (--config FILE, or a lone positional FILE argument like redis-server) < environment <
// flags. All errors are collected, never stopping at the first. Validate() runs at the end
// unless --help or --version was given. options.command_line keeps argv[1..] (for reload).
//
// Environment: BLOOMPROXY_<NAME> (EnvironmentName) sets option NAME. An empty variable counts
// as unset, so that a template passing an undefined variable through
// (`BLOOMPROXY_REQUIREPASS=${PASS}`) cannot silently remove a password. The value is taken
// whole, as the flag's value (`--tls-protocols "TLSv1.2 TLSv1.3"`), except for options with
// several arguments (BLOOMPROXY_USER="NAME PASSWORD [RULE...]"), which are split like a
// config-file line (quotes, escapes). A repeatable option (user, deny-command) takes one
// occurrence from the environment, added to the file's. A BLOOMPROXY_ variable that names no
// option is an error ("unknown option in environment: BLOOMPROXY_X"), except the names the
// project's scripts use for other things (kEnvironmentNotOptions).
LoadResult LoadOptions(
    int argc, const char* const* argv,
    const GetEnvFn& getenv_fn = [](const char* n) { return std::getenv(n); },
    const EnvNamesFn& env_names = EnvironmentNames);

// BLOOMPROXY_ variables that are not options: the test and build scripts' (the binary to test,
// its extra arguments, the fuzz and test switches, the version baked into a build).
inline constexpr const char* kEnvironmentNotOptions[] = {"BLOOMPROXY_BIN", "BLOOMPROXY_ARGS",
                                                         "BLOOMPROXY_FUZZ", "BLOOMPROXY_TESTS",
                                                         "BLOOMPROXY_VERSION"};

// What --test-conf prints for a configuration without errors: "configuration OK", then each
// option not at its default with its value (passwords shown as "(set)") and where it came
// from, one per line.
std::string TestConfReport(const LoadResult& loaded);

// Parses config-file text into *options (which keeps what the text does not set), appending
// one "source_name:line: message" error per bad line to *errors. Lines are split like Redis's
// sdssplitargs ("double quotes" with \n \r \t \b \a \\ \" \xHH escapes, 'single quotes' with
// \'); blank lines and lines starting with '#' are ignored; directive names are
// case-insensitive. A `user` repeated within the text is an error; one that an earlier source
// defined is replaced.
void ParseConfigText(std::string_view text, std::string_view source_name, Options* options,
                     std::vector<std::string>* errors);

// Cross-field checks on fully loaded options (e.g. no listener at all: port 0 and no
// unixsocket; no upstream), appending one message per problem to *errors. Single values are
// range-checked when parsed, not here.
void Validate(const Options& options, std::vector<std::string>* errors);

// The --help text: usage line, then every flag with its argument, meaning and default, one per
// line.
std::string Usage();

// "debug", "verbose", "notice" or "warning".
const char* LogLevelName(LogLevel level);

}  // namespace bloomproxy::conf
