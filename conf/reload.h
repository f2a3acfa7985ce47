// Reloading the configuration (SIGHUP): the config file the proxy started with is read again,
// the environment and the original command-line flags applied on top (the same precedence as
// at start), and the result compared with the running options, option by option.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "conf/loader.h"
#include "conf/options.h"

namespace bloomproxy::conf {

struct OptionChange {
  const char* name;  // the option's name, e.g. "maxclients"
  Reload reload;     // kLive: applied; kRestart: needs a restart, the running value is kept
};

struct ReloadResult {
  // Non-empty: the new configuration does not load or validate, and nothing may change. Each a
  // complete message, as LoadResult's; never a password.
  std::vector<std::string> errors;
  // The options to run with: every live option as loaded now, every restart-only option as it
  // runs (`running`'s value). Empty when errors is not.
  Options options;
  // The options whose loaded value differs from the running one, in the table's order.
  std::vector<OptionChange> changes;
};

// Loads the configuration again from running.command_line (which names the file) and compares
// it with `running`. Which options change live is each row's `reload` field (conf/directives.cc,
// conf/tls_directives.cc). Checks that need the proxy (users' command rules, TLS files) are the
// caller's: run them on result.options before applying it.
ReloadResult ReloadOptions(
    const Options& running,
    const GetEnvFn& getenv_fn = [](const char* n) { return std::getenv(n); },
    const EnvNamesFn& env_names = EnvironmentNames);

// Option `name`'s value in `options` as --help shows it (passwords as "(set)"); "" for a name
// that is not an option.
std::string ShowOption(std::string_view name, const Options& options);

}  // namespace bloomproxy::conf
