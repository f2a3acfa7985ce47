// TOPK.* commands: each is one script call on the sketch's server (filters/topk/topk_plan.h).
// TOPK.ADD and TOPK.INCRBY of one loop turn on one sketch join a batch: one call for all of them,
// in arrival order, each client getting its own command's reply; the next batch on the sketch
// waits for the one upstream and grows meanwhile (proxy/sketch/batch.cc).
#include <cstdint>
#include <vector>

#include "filters/common/key_layout.h"
#include "filters/topk/topk_args.h"
#include "filters/topk/topk_plan.h"
#include "protocol/errors.h"
#include "proxy/client/client.h"
#include "proxy/server/server.h"

namespace bloomproxy::proxy {

using filters::TopkCommand;
using protocol::Command;

Client::Dispatched Client::HandleTopkCommand(const Command& cmd) {
  filters::TopkRequest request;
  const std::string error = filters::ParseTopkRequest(cmd.args, &request);
  if (!error.empty() && request.error_order == filters::TopkErrorOrder::kNow) {
    ReplyLocal(error);
    return Dispatched::kDone;
  }
  if (server_->sharding_proxy() && !filters::KeptWholeBehindShardingProxy(request.key)) {
    ReplyLocal(protocol::errors::kNotKeptWhole);
    return Dispatched::kDone;
  }
  if (error.empty() && request.command == TopkCommand::kAdd) {
    return JoinAnyBatch(BatchKind::kTopkAdd, request.key, request.items,
                        std::vector<uint64_t>(request.items.size(), 1), /*multi=*/true);
  }
  if (error.empty() && request.command == TopkCommand::kIncrBy) {
    std::vector<std::string_view> items;
    std::vector<uint64_t> increments;
    for (const filters::TopkIncrement& inc : request.increments) {
      items.push_back(inc.item);
      increments.push_back(inc.n);
    }
    return JoinAnyBatch(BatchKind::kTopkAdd, request.key, items, increments, /*multi=*/true);
  }
  const bool writes = request.command == TopkCommand::kReserve ||
                      request.command == TopkCommand::kAdd ||
                      request.command == TopkCommand::kIncrBy;
  return StartPlan(
      request.key,
      filters::MakeTopkPlan(request, error, &server_->topk_cache(), &server_->topk_config()),
      writes);
}

bool Client::TopkBatchKindOf(const Command& cmd, BatchKind* kind) const {
  TopkCommand command;
  if (!filters::LookupTopkCommand(cmd.args[0], &command)) return false;
  if (command != TopkCommand::kAdd && command != TopkCommand::kIncrBy) return false;
  // Only a command that joins one (HandleTopkCommand): no argument error.
  filters::TopkRequest request;
  if (!filters::ParseTopkRequest(cmd.args, &request).empty()) return false;
  *kind = BatchKind::kTopkAdd;
  return true;
}

}  // namespace bloomproxy::proxy
