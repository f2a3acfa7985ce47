// Routing in front of a sharding proxy (--upstream-kind sharding-proxy; protocol/sharding_proxy.h):
// commands it refuses are answered here with an error, so that no client's command makes it
// close a shared connection; commands Redis Cluster would split per slot are split per hash
// tag (the unit a sharding proxy places), so that each part has its keys on one server.
#include "protocol/command_keys.h"
#include "protocol/key_slot.h"
#include "protocol/sharding_proxy.h"
#include "proxy/client.h"
#include "proxy/server.h"

namespace bloomproxy::proxy {

using protocol::Command;
using protocol::CommandInfo;

bool Client::RefusedByShardingProxy(const Command& cmd) {
  if (!server_->sharding_proxy() || protocol::ShardingProxyForwards(cmd.args)) return false;
  ++server_->stats().sharding_proxy_refused;
  ReplyLocal(protocol::ShardingProxyRefusal(cmd.args));
  return true;
}

bool Client::KeysInSeveralTags(const Command& cmd, const CommandInfo* info) {
  key_positions_.clear();
  if (info == nullptr || !protocol::CommandKeys(*info, cmd.args, &key_positions_)) return false;
  bool has_tag = false;
  std::string_view first;
  for (size_t k = 0; k < key_positions_.size(); ++k) {
    const std::string_view tag = protocol::HashTag(cmd.args[key_positions_[k]], &has_tag);
    if (k == 0) {
      first = tag;
    } else if (tag != first) {
      return true;
    }
  }
  return false;
}

}  // namespace bloomproxy::proxy
