#include "filters/common/lua_script.h"

#include "protocol/encoder.h"

namespace bloomproxy::filters {

void AppendStructureScript(std::string* out, const LuaScript& script, bool read_only, bool body,
                           protocol::UpstreamKind upstream, std::string_view name,
                           std::string_view marker, std::string_view prefix,
                           const std::vector<std::string>& argv) {
  const bool ro = read_only && upstream != protocol::UpstreamKind::kShardingProxy;
  std::vector<std::string_view> args;
  args.reserve(6 + argv.size());
  if (body) {
    args.push_back(ro ? "EVAL_RO" : "EVAL");
    args.push_back(script.body);
  } else {
    args.push_back(ro ? "EVALSHA_RO" : "EVALSHA");
    args.push_back(script.sha1);
  }
  args.insert(args.end(), {"1", name, marker, prefix});
  for (const std::string& a : argv) args.push_back(a);
  protocol::AppendCommand(out, args);
}

}  // namespace bloomproxy::filters
