// The option table's rows (internal to conf/): one row per setting, shared by the config file,
// the flags, the environment, Usage(), --test-conf and reload. The general rows are in
// loader.cc, the TLS rows in tls_directives.cc; conf/rows.h builds the typed rows.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "conf/loader.h"
#include "conf/options.h"

namespace bloomproxy::conf {

struct Directive;

// State of one source (a file, the environment, or the command line) while its directives are
// applied.
struct SourceState {
  Options* options;
  std::vector<std::string> users;                // user names this source has defined so far
  std::vector<OptionSource>* sources = nullptr;  // where each applied row is noted; may be null
};

using ApplyFn = bool (*)(const Directive& row, const std::vector<std::string>& args,
                         SourceState* state, std::string* error);
using ShowFn = std::string (*)(const Directive& row, const Options& options);

// The value (or values) a row sets, as a reload compares and keeps them.
struct FieldOps {
  bool (*same)(const Options& a, const Options& b);
  void (*copy)(const Options& from, Options* to);  // the row's fields of `from` into *to
};

struct Directive {
  const char* name;
  int argc;              // arguments after the name, in the config file; -n: at least n
  const char* arg_help;  // the flag's argument, for Usage()
  const char* help;      // one line, for Usage()
  ApplyFn apply;
  ShowFn show;  // the value in *options, for "(default ...)" of Usage() and --test-conf
  const FieldOps* fields;
  Reload reload;  // whether a SIGHUP reload applies a changed value (conf/reload.h)
  // Typed rows' parameters (conf/rows.h): what an empty string shows as, or the accepted
  // words "a|b|c"; and the error after the quoted value ("is not a log format (text, json)").
  const char* text = nullptr;
  const char* error = nullptr;
  bool repeatable = false;  // each occurrence adds (user, deny-command)
};

// The general rows (loader.cc) and the TLS rows (client side with redis.conf's names, and the
// upstream side).
extern const Directive kDirectives[];
extern const size_t kDirectiveCount;
extern const Directive kTlsDirectives[];
extern const size_t kTlsDirectiveCount;

// The row named `name` (any case), or nullptr.
const Directive* FindDirective(std::string_view name);
// Calls fn(row) for every row, general rows first, in table order.
template <typename Fn>
void ForEachDirective(Fn&& fn) {
  for (size_t i = 0; i < kDirectiveCount; ++i) fn(kDirectives[i]);
  for (size_t i = 0; i < kTlsDirectiveCount; ++i) fn(kTlsDirectives[i]);
}

// "" when a row takes `args` arguments, else "wrong number of arguments for 'NAME' (...)".
std::string ArgCountError(const Directive& row, size_t args);
// Notes in state->sources that `row` was set at `where`.
void NoteSource(SourceState* state, const Directive& row, std::string where);
// Applies every BLOOMPROXY_ variable (environment.cc; LoadOptions describes the rules).
void ApplyEnvironment(const GetEnvFn& getenv_fn, const EnvNamesFn& env_names, SourceState* state,
                      std::vector<std::string>* errors);

// The TLS settings' own checks (a port without a certificate, a certificate without its key).
void ValidateTls(const Options& options, std::vector<std::string>* errors);

}  // namespace bloomproxy::conf
