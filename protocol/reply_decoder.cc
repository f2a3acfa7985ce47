#include "protocol/reply_decoder.h"

#include <string>

#include "protocol/resp3.h"

namespace bloomproxy::protocol {

ReplyDecoder::ReplyDecoder() : reader_(redisReaderCreate()) {}

ReplyDecoder::~ReplyDecoder() { redisReaderFree(reader_); }

ReplyPtr ReplyDecoder::Decode(std::string_view frame) {
  if (reader_ == nullptr) return nullptr;
  // RESP2 is read as it is, never scanned for RESP3 first: hiredis 0.14 refuses any RESP3 type,
  // and only then is the reply (from a RESP3 connection) read as the RESP2 reply Redis would
  // have sent. A reply that starts with a RESP3 type goes there at once.
  if (frame.empty() || !IsResp3Type(frame[0])) {
    if (ReplyPtr r = Read(frame)) return r;
  }
  std::string resp2;
  if (!Resp3ToResp2(frame, &resp2)) return nullptr;
  return Read(resp2);
}

ReplyPtr ReplyDecoder::Read(std::string_view frame) {
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
