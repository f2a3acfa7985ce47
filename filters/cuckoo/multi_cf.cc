// QueueCfCommand (filters/common/multi_command.h): a CF command inside MULTI is queued as the very
// call it makes outside one (cf_scripts.h), sent with EVAL (a NOSCRIPT inside EXEC could not be
// sent again), and its answer in EXEC's array becomes its reply through the same code
// (cf_replies.h). Every CF command is one atomic script either way, so a transaction adds
// nothing to learn: the script reads what the keys hold when EXEC runs it.
#include <memory>
#include <string>
#include <utility>

#include "filters/common/multi_command.h"
#include "filters/common/sketch_commands.h"
#include "filters/cuckoo/cf_replies.h"
#include "filters/cuckoo/cf_scripts.h"
#include "protocol/encoder.h"

namespace bloomproxy::filters {
namespace {

class QueuedCf : public QueuedSketch {
 public:
  QueuedCf(const CfRequest& request, const CfConfig& config)
      : key_(request.key),
        data_(request.data),
        items_(request.items.begin(), request.items.end()),
        request_copy_(request) {
    request_copy_.key = key_;
    request_copy_.data = data_;
    request_copy_.items.assign(items_.begin(), items_.end());
    AppendCfCall(&request_, key_, CfCallFor(request_copy_, config), /*body=*/true, config.upstream);
  }

  std::string Reply(std::string_view answer, protocol::ReplyDecoder* decoder) const override {
    protocol::ReplyPtr decoded;
    if (answer.empty() || answer[0] != '-') decoded = decoder->Decode(answer);
    return CfReply(request_copy_, answer, decoded.get());
  }

 private:
  std::string key_;
  std::string data_;
  std::vector<std::string> items_;
  CfRequest request_copy_;  // its views point into the strings above
};

}  // namespace

std::unique_ptr<QueuedSketch> QueueCfCommand(const std::vector<std::string_view>& args,
                                             const CfConfig& config, std::string* refusal) {
  CfRequest request;
  std::string error = ParseCfRequest(args, &request);
  if (!error.empty()) {
    return QueueRefused(args, std::move(error), refusal);
  }
  return std::make_unique<QueuedCf>(request, config);
}

}  // namespace bloomproxy::filters
