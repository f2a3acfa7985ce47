// CF.* commands: each is one script call on the filter's server (filters/cuckoo/cf_plan.h).
// CF.ADD / CF.ADDNX and CF.EXISTS / CF.MEXISTS of one loop turn on one filter join a batch: one
// call for all of them, in arrival order, each client getting its own command's reply; the next
// batch on the filter waits for the one upstream and grows meanwhile (proxy/sketch/batch.cc).
#include "filters/common/key_layout.h"
#include "filters/cuckoo/cf_args.h"
#include "filters/cuckoo/cf_plan.h"
#include "protocol/errors.h"
#include "protocol/key_slot.h"
#include "proxy/client/client.h"
#include "proxy/server/server.h"

namespace bloomproxy::proxy {

using filters::CfCommand;
using protocol::Command;

Client::Dispatched Client::HandleCfCommand(const Command& cmd) {
  filters::CfRequest request;
  const std::string error = filters::ParseCfRequest(cmd.args, &request);
  if (!error.empty()) {
    ReplyLocal(error);
    return Dispatched::kDone;
  }
  if (server_->sharding_proxy() && !filters::KeptWholeBehindShardingProxy(request.key)) {
    ReplyLocal(protocol::errors::kNotKeptWhole);
    return Dispatched::kDone;
  }
  switch (request.command) {
    case CfCommand::kAdd:
    case CfCommand::kAddNx:
      return JoinAnyBatch(BatchKind::kCfAdd, request.key, request.items, {}, /*multi=*/false,
                          /*nx=*/request.command == CfCommand::kAddNx);
    case CfCommand::kExists:
    case CfCommand::kMExists:
      return JoinAnyBatch(BatchKind::kCfExists, request.key, request.items, {},
                          /*multi=*/request.command == CfCommand::kMExists);
    default:
      return StartPlan(request.key, filters::MakeCfPlan(request, &server_->cf_config()),
                       request.Writes());
  }
}

bool Client::CfBatchKindOf(const Command& cmd, BatchKind* kind) const {
  CfCommand cf;
  if (!filters::LookupCfCommand(cmd.args[0], &cf)) return false;
  if (cf == CfCommand::kAdd || cf == CfCommand::kAddNx) {
    *kind = BatchKind::kCfAdd;
    return true;
  }
  if (cf == CfCommand::kExists || cf == CfCommand::kMExists) {
    *kind = BatchKind::kCfExists;
    return true;
  }
  return false;
}

}  // namespace bloomproxy::proxy
