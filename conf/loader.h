// Loading bloomproxy's Options: defaults, then a redis.conf-style file, then the environment,
// then command-line flags. Every directive of the file is also a flag (`--port 6380` or
// `--port=6380`), so any setting can come from either place.
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
};

// Loads the options. argv[0] is the program name. Precedence, lowest first: defaults < config
// file (--config FILE, or a lone positional FILE argument like redis-server) < environment
// (BLOOMPROXY_UPSTREAM_USER, BLOOMPROXY_UPSTREAM_PASSWORD, BLOOMPROXY_REQUIREPASS; an empty
// variable counts as unset) < flags. All errors are collected, never stopping at the first.
// Validate() runs at the end unless --help or --version was given.
LoadResult LoadOptions(
    int argc, const char* const* argv,
    const std::function<const char*(const char*)>& getenv_fn = [](const char* n) {
      return std::getenv(n);
    });

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
