// Routing in front of a sharding proxy (--upstream-kind sharding-proxy; protocol/sharding_proxy.h):
// commands it refuses are answered here with an error, so that no client's command makes it
// close a shared connection; commands Redis Cluster would split per slot are split per hash
// tag (the unit a sharding proxy places), so that each part has its keys on one server.
#include <string>

#include "protocol/command_keys.h"
#include "protocol/errors.h"
#include "protocol/key_slot.h"
#include "protocol/sharding_proxy.h"
#include "proxy/client/client.h"
#include "proxy/server/server.h"

namespace bloomproxy::proxy {

using protocol::Command;
using protocol::CommandInfo;
using protocol::Route;

bool Client::RefusedByShardingProxy(const Command& cmd, const Route& route) {
  if (!server_->sharding_proxy() || protocol::ShardingProxyForwards(cmd.args)) return false;
  ++server_->stats().sharding_proxy_refused;
  ReplyLocal(protocol::ShardingProxyRefusal(cmd.args));
  // A client that sends MULTI ... EXEC in one go (a pipelined transaction) must not see its
  // commands run one by one: they are refused until EXEC or DISCARD, as Redis aborts a
  // transaction with a rejected command.
  if (route.effect == protocol::Effect::kMulti) multi_refused_ = true;
  return true;
}

bool Client::RefusedInTransaction(const Command& cmd, const Route& route) {
  if (!multi_refused_) return false;
  switch (route.effect) {
    case protocol::Effect::kExec:
      multi_refused_ = false;
      ReplyLocal(protocol::errors::kExecAbort);
      return true;
    case protocol::Effect::kDiscard:
      multi_refused_ = false;
      ReplyLocal("+OK\r\n");
      return true;
    case protocol::Effect::kMulti:
      ReplyLocal(protocol::errors::kNestedMulti);
      return true;
    default:
      break;
  }
  ReplyLocal("-ERR bloomproxy: '" + protocol::ShownCommandName(cmd.args[0]) +
             "' not run: it follows a MULTI, and transactions are not supported behind a "
             "sharding proxy (upstream-kind sharding-proxy); EXEC or DISCARD ends it\r\n");
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
