#include "filters/common/multi_command.h"

#include "filters/common/sketch_commands.h"

#include <utility>

namespace bloomproxy::filters {

KnownReply::KnownReply(std::string reply) : reply_(std::move(reply)) {
  request_ = "*1\r\n$4\r\nPING\r\n";
}

std::unique_ptr<QueuedSketch> QueueRefused(const std::vector<std::string_view>& args,
                                           std::string error, std::string* refusal) {
  if (!SketchArityOk(args[0], args.size())) {
    *refusal = std::move(error);
    return nullptr;
  }
  return std::make_unique<KnownReply>(std::move(error));
}

std::string KnownReply::Reply(std::string_view answer, protocol::ReplyDecoder*) const {
  // An error in PING's place (its transaction was not run as queued) is the reply as it is.
  if (!answer.empty() && answer[0] == '-') return std::string(answer);
  return reply_;
}

}  // namespace bloomproxy::filters
