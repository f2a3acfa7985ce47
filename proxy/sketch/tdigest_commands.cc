// TDIGEST.* commands: each is one script call on the digest's server (filters/tdigest/
// tdigest_plan.h). TDIGEST.ADD commands of one loop turn on one digest join a batch: one call
// for all of them, in arrival order, each client getting its own command's reply; the next batch
// on the digest and connection waits for the one upstream and grows meanwhile
// (proxy/sketch/batch.cc). MERGE's digests must all be on one server.
#include <string_view>
#include <vector>

#include "filters/tdigest/tdigest_args.h"
#include "filters/tdigest/tdigest_plan.h"
#include "proxy/client/client.h"
#include "proxy/server/server.h"

namespace bloomproxy::proxy {

using filters::TdigestCommand;
using protocol::Command;

namespace {

constexpr std::string_view kNotOneServer =
    "-ERR bloomproxy: behind a sharding proxy TDIGEST.MERGE needs the destination and every "
    "source under one {hash tag}, so that they are on one server\r\n";

}  // namespace

Client::Dispatched Client::HandleTdigestCommand(const Command& cmd) {
  filters::TdigestRequest request;
  const std::string error = filters::ParseTdigestRequest(cmd.args, &request);
  if (!error.empty() && request.error_order == filters::TdigestErrorOrder::kNow) {
    ReplyLocal(error);
    return Dispatched::kDone;
  }
  // Every key a script touches is in its digest's slot (filters/common/key_layout.h).
  if (!OnOneServer(request.key, request.sources, kNotOneServer)) return Dispatched::kDone;
  if (error.empty() && request.command == TdigestCommand::kAdd) {
    return JoinAnyBatch(BatchKind::kTdigestAdd, request.key,
                        std::vector<std::string_view>(cmd.args.begin() + 2, cmd.args.end()), {},
                        /*multi=*/false);
  }
  // Every TDIGEST script may write (reads compress the digest), so each waits out CLIENT PAUSE
  // WRITE as any script does.
  return StartPlan(request.key,
                   filters::MakeTdigestPlan(request, error, &server_->tdigest_config()),
                   /*writes=*/true);
}

bool Client::TdigestBatchKindOf(const Command& cmd, BatchKind* kind) const {
  TdigestCommand command;
  if (!filters::LookupTdigestCommand(cmd.args[0], &command) || command != TdigestCommand::kAdd) {
    return false;
  }
  // Only a command that joins one (HandleTdigestCommand): no argument error.
  filters::TdigestRequest request;
  if (!filters::ParseTdigestRequest(cmd.args, &request).empty()) return false;
  *kind = BatchKind::kTdigestAdd;
  return true;
}

}  // namespace bloomproxy::proxy
