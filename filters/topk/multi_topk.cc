// QueueTopkCommand (filters/common/multi_command.h): a TOPK command inside MULTI is queued as the
// very call it makes outside one (topk_scripts.h), sent with EVAL (a NOSCRIPT inside EXEC could
// not be sent again) and without hashes (the proxy cannot know the sketch's depth before EXEC
// runs: the script hashes the items itself), and its answer in EXEC's array becomes its reply
// through the same code (topk_replies.h). Every TOPK command is one atomic script either way.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "filters/common/multi_command.h"
#include "filters/common/sketch_commands.h"
#include "filters/topk/topk_replies.h"
#include "filters/topk/topk_scripts.h"

namespace bloomproxy::filters {
namespace {

class QueuedTopk : public QueuedSketch {
 public:
  QueuedTopk(const TopkRequest& request, std::string error, const TopkConfig& config)
      : command_(request.command), error_(std::move(error)), with_count_(request.with_count) {
    std::vector<TopkUpdate> updates;
    if (command_ == TopkCommand::kAdd) {
      for (std::string_view item : request.items) updates.push_back({item, 1});
    }
    for (const TopkIncrement& inc : request.increments) updates.push_back({inc.item, inc.n});
    items_ = request.items.size();
    TopkCall call;
    switch (command_) {
      case TopkCommand::kReserve: {
        const bool refused = !error_.empty() || !TopkFits(request.params, config);
        if (error_.empty() && refused) error_ = std::string(kTopkErrInsufficientMemory);
        call = TopkReserveCall(request.params, refused, config);
        break;
      }
      case TopkCommand::kAdd:
      case TopkCommand::kIncrBy:
        member_ = {updates.size(), command_ == TopkCommand::kAdd ? updates.size() : request.pairs,
                   command_ == TopkCommand::kAdd ? std::string() : error_};
        call = TopkAddCall(updates, {updates.size()}, nullptr);
        break;
      default:
        call = TopkReadCall(command_, request.items, nullptr);
        break;
    }
    AppendTopkCall(&request_, request.key, call, /*body=*/true, config.upstream);
  }

  std::string Reply(std::string_view answer, protocol::ReplyDecoder* decoder) const override {
    if (command_ == TopkCommand::kReserve) return TopkReserveReply(error_, answer);
    protocol::ReplyPtr decoded;
    if (answer.empty() || answer[0] != '-') decoded = decoder->Decode(answer);
    if (command_ == TopkCommand::kAdd || command_ == TopkCommand::kIncrBy) {
      return TopkAddReplies(answer, decoded.get(), {member_})[0];
    }
    // The read reply needs only the command, the number of items and WITHCOUNT.
    TopkRequest request;
    request.command = command_;
    request.with_count = with_count_;
    request.items.assign(items_, std::string_view());
    return TopkReadReply(request, answer, decoded.get());
  }

 private:
  TopkCommand command_;
  std::string error_;
  bool with_count_;
  size_t items_ = 0;
  TopkAddMember member_;
};

}  // namespace

std::unique_ptr<QueuedSketch> QueueTopkCommand(const std::vector<std::string_view>& args,
                                               const TopkConfig& config, std::string* refusal) {
  TopkRequest request;
  std::string error = ParseTopkRequest(args, &request);
  if (!error.empty() && request.error_order == TopkErrorOrder::kNow) {
    return QueueRefused(args, std::move(error), refusal);
  }
  return std::make_unique<QueuedTopk>(request, std::move(error), config);
}

}  // namespace bloomproxy::filters
