#include "conf/reload.h"

#include "conf/directive.h"

namespace bloomproxy::conf {

ReloadResult ReloadOptions(const Options& running, const GetEnvFn& getenv_fn,
                           const EnvNamesFn& env_names) {
  std::vector<const char*> argv = {"bloomproxy"};
  for (const std::string& arg : running.command_line) argv.push_back(arg.c_str());
  argv.push_back(nullptr);
  LoadResult loaded =
      LoadOptions(static_cast<int>(argv.size() - 1), argv.data(), getenv_fn, env_names);

  ReloadResult result;
  result.errors = std::move(loaded.errors);
  if (!result.errors.empty()) return result;
  result.options = std::move(loaded.options);
  ForEachDirective([&](const Directive& d) {
    if (d.fields->same(running, result.options)) return;
    result.changes.push_back(OptionChange{d.name, d.reload});
    if (d.reload == Reload::kRestart) d.fields->copy(running, &result.options);
  });
  // Live values next to kept ones could disagree (say, a kept port and a new upstream that is
  // that port): the mix is checked as a whole.
  Validate(result.options, &result.errors);
  if (!result.errors.empty()) {
    result.changes.clear();
    result.options = Options();
  }
  return result;
}

std::string ShowOption(std::string_view name, const Options& options) {
  const Directive* d = FindDirective(name);
  return d == nullptr ? "" : d->show(*d, options);
}

}  // namespace bloomproxy::conf
