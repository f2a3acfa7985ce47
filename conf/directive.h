// The option table's rows (internal to conf/): one row per setting, shared by the config file,
// the flags and Usage(). The general rows are in loader.cc, the TLS rows in tls_directives.cc.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "conf/options.h"

namespace bloomproxy::conf {

// State of one source (a file, or the command line) while its directives are applied.
struct SourceState {
  Options* options;
  std::vector<std::string> users;  // user names this source has defined so far
};

using ApplyFn = bool (*)(const std::vector<std::string>& args, SourceState* state,
                         std::string* error);
using ShowFn = std::string (*)(const Options& options);

struct Directive {
  const char* name;
  int argc;              // arguments after the name, in the config file; -n: at least n
  const char* arg_help;  // the flag's argument, for Usage()
  const char* help;      // one line, for Usage()
  ApplyFn apply;
  ShowFn show;  // the value in *options, for the "(default ...)" of Usage()
};

// The TLS rows (client side with redis.conf's names, and the upstream side).
extern const Directive kTlsDirectives[];
extern const size_t kTlsDirectiveCount;

// The TLS settings' own checks (a port without a certificate, a certificate without its key).
void ValidateTls(const Options& options, std::vector<std::string>* errors);

}  // namespace bloomproxy::conf
