#include "filters/common/multi_command.h"

#include <utility>

namespace bloomproxy::filters {

KnownReply::KnownReply(std::string reply) : reply_(std::move(reply)) {
  request_ = "*1\r\n$4\r\nPING\r\n";
}

std::string KnownReply::Reply(std::string_view answer, protocol::ReplyDecoder*) const {
  // An error in PING's place (its transaction was not run as queued) is the reply as it is.
  if (!answer.empty() && answer[0] == '-') return std::string(answer);
  return reply_;
}

}  // namespace bloomproxy::filters
