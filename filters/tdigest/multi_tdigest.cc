// QueueTdigestCommand (filters/common/multi_command.h): a TDIGEST command inside MULTI is queued
// as the very call it makes outside one (tdigest_scripts.h), sent with EVAL (a NOSCRIPT inside
// EXEC could not be sent again), and its answer in EXEC's array becomes its reply through the
// same code (tdigest_replies.h). Every TDIGEST command is one atomic script either way.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "filters/common/multi_command.h"
#include "filters/common/sketch_commands.h"
#include "filters/tdigest/tdigest_replies.h"
#include "filters/tdigest/tdigest_scripts.h"

namespace bloomproxy::filters {
namespace {

class QueuedTdigest : public QueuedSketch {
 public:
  QueuedTdigest(const TdigestRequest& request, std::string error, const TdigestConfig& config)
      : request_copy_(request), error_(std::move(error)) {
    const TdigestRequest& r = request;
    if (r.command == TdigestCommand::kCreate) {
      if (error_.empty() && r.compression > TdigestMaxCompression(config)) {
        error_ = std::string(kTdigestErrAllocation);
      }
      AppendTdigestCall(&request_, r.key, TdigestCreateCall(r.compression, !error_.empty()),
                        /*body=*/true, config.upstream);
    } else if (!error_.empty()) {
      AppendTdigestCall(&request_, r.key, TdigestCheckCall(), true, config.upstream);
    } else if (r.command == TdigestCommand::kMerge) {
      AppendTdigestMerge(&request_, r, config, true);
    } else if (r.command == TdigestCommand::kReset) {
      AppendTdigestCall(&request_, r.key, TdigestResetCall(), true, config.upstream);
    } else if (r.command == TdigestCommand::kAdd) {
      AppendTdigestCall(&request_, r.key, TdigestAddCall(r.values, {r.values.size()}), true,
                        config.upstream);
    } else {
      AppendTdigestCall(&request_, r.key, TdigestReadCall(r), true, config.upstream);
    }
    // The reply needs only the command and the number of its arguments: no views kept.
    request_copy_.key = {};
    request_copy_.sources.clear();
  }

  std::string Reply(std::string_view answer, protocol::ReplyDecoder* decoder) const override {
    protocol::ReplyPtr decoded;
    if (answer.empty() || answer[0] != '-') decoded = decoder->Decode(answer);
    const TdigestRequest& r = request_copy_;
    if (r.command == TdigestCommand::kCreate) {
      return TdigestCreateReply(error_, answer, decoded.get());
    }
    if (!error_.empty()) return TdigestCheckReply(r.command, error_, answer, decoded.get());
    switch (r.command) {
      case TdigestCommand::kMerge:
        return TdigestMergeReply(answer, decoded.get());
      case TdigestCommand::kReset:
        return TdigestResetReply(answer, decoded.get());
      case TdigestCommand::kAdd: {
        std::string shared;
        std::vector<std::string> replies = TdigestAddReplies(answer, decoded.get(), 1, &shared);
        return replies.empty() ? shared : replies[0];
      }
      default:
        return TdigestReadReply(r, answer, decoded.get());
    }
  }

 private:
  TdigestRequest request_copy_;
  std::string error_;
};

}  // namespace

std::unique_ptr<QueuedSketch> QueueTdigestCommand(const std::vector<std::string_view>& args,
                                                  const TdigestConfig& config,
                                                  std::string* refusal) {
  TdigestRequest request;
  std::string error = ParseTdigestRequest(args, &request);
  if (!error.empty() && request.error_order == TdigestErrorOrder::kNow) {
    return QueueRefused(args, std::move(error), refusal);
  }
  return std::make_unique<QueuedTdigest>(request, std::move(error), config);
}

}  // namespace bloomproxy::filters
