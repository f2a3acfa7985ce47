#include "protocol/reply_decoder.h"

#include <string>

#include "protocol/resp3.h"

namespace bloomproxy::protocol {

ReplyDecoder::ReplyDecoder() : reader_(redisReaderCreate()) {}

ReplyDecoder::~ReplyDecoder() { redisReaderFree(reader_); }

ReplyPtr ReplyDecoder::Decode(std::string_view frame) {
  if (reader_ == nullptr) return nullptr;
  // A reply from a RESP3 connection is read as the RESP2 reply Redis would have sent.
  std::string resp2;
  if (Resp3ToResp2(frame, &resp2)) frame = resp2;
  void* reply = nullptr;
  if (redisReaderFeed(reader_, frame.data(), frame.size()) != REDIS_OK ||
      redisReaderGetReply(reader_, &reply) != REDIS_OK || reply == nullptr) {
    // A reader in the error state stays there; start a fresh one for the next frame.
    redisReaderFree(reader_);
    reader_ = redisReaderCreate();
    if (reply != nullptr) freeReplyObject(reply);
    return nullptr;
  }
  return ReplyPtr(static_cast<redisReply*>(reply));
}

}  // namespace bloomproxy::protocol
