// Options from the environment: BLOOMPROXY_<NAME> for every row of the table (the rules are in
// loader.h, above LoadOptions).
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "conf/config_text.h"
#include "conf/directive.h"
#include "conf/loader.h"
#include "conf/values.h"

extern char** environ;

namespace bloomproxy::conf {
namespace {

constexpr std::string_view kPrefix = "BLOOMPROXY_";

bool IsNotAnOption(std::string_view name) {
  for (const char* other : kEnvironmentNotOptions) {
    if (name == other) return true;
  }
  return false;
}

// Applies one variable's value to `row`; false (with *errors extended) when it is refused.
void ApplyVariable(const Directive& row, const std::string& var, const char* value,
                   SourceState* state, std::vector<std::string>* errors) {
  const std::string prefix = var + ": ";
  std::vector<std::string> args;
  if (row.argc == 1) {
    // Taken whole, as a flag's value: a password may hold quotes and spaces.
    args = {value};
  } else {
    // Several arguments (user, bf-layout, bf-window): split like the config-file line.
    if (!SplitArgs(value, &args)) {
      errors->push_back(prefix + "unbalanced quotes");
      return;
    }
    if (std::string count = ArgCountError(row, args.size()); !count.empty()) {
      errors->push_back(prefix + count);
      return;
    }
  }
  std::string error;
  if (row.apply(row, args, state, &error)) {
    NoteSource(state, row, "env " + var);
  } else {
    errors->push_back(prefix + error);
  }
}

}  // namespace

std::string EnvironmentName(std::string_view name) {
  std::string out(kPrefix);
  for (char c : name) out.push_back(c == '-' ? '_' : static_cast<char>(std::toupper(c)));
  return out;
}

std::vector<std::string> EnvironmentNames() {
  std::vector<std::string> names;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    if (entry.compare(0, kPrefix.size(), kPrefix) != 0) continue;
    names.emplace_back(entry.substr(0, entry.find('=')));
  }
  return names;
}

void ApplyEnvironment(const GetEnvFn& getenv_fn, const EnvNamesFn& env_names, SourceState* state,
                      std::vector<std::string>* errors) {
  ForEachDirective([&](const Directive& row) {
    const std::string var = EnvironmentName(row.name);
    const char* value = getenv_fn(var.c_str());
    // Empty counts as unset, so that a template passing an undefined variable through
    // (`BLOOMPROXY_REQUIREPASS=${PASS}`) cannot silently remove a password.
    if (value != nullptr && value[0] != '\0') ApplyVariable(row, var, value, state, errors);
  });
  // A misspelt variable would otherwise be ignored without a word.
  for (const std::string& var : env_names()) {
    if (IsNotAnOption(var)) continue;
    bool known = false;
    ForEachDirective(
        [&](const Directive& row) { known = known || EnvironmentName(row.name) == var; });
    if (!known) errors->push_back("unknown option in environment: " + var);
  }
}

}  // namespace bloomproxy::conf
