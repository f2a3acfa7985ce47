// Decodes one complete upstream reply into hiredis's redisReply tree, for the few replies whose
// content the proxy reads (INFO, pub/sub counts, handshake answers). Forwarded replies are never
// decoded: see protocol/reply_framer.h.
#pragma once

#include <hiredis/hiredis.h>

#include <memory>
#include <string_view>

namespace bloomproxy::protocol {

struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

class ReplyDecoder {
 public:
  ReplyDecoder();
  ~ReplyDecoder();
  ReplyDecoder(const ReplyDecoder&) = delete;
  ReplyDecoder& operator=(const ReplyDecoder&) = delete;

  // `frame` must be exactly one complete reply (as framed by ReplyFramer). Returns null when
  // hiredis cannot decode it (too deep, or malformed); the decoder stays usable. A RESP3 reply
  // is decoded as its RESP2 form (protocol/resp3.h).
  ReplyPtr Decode(std::string_view frame);

 private:
  // hiredis's reading of `frame`; null (and a fresh reader) when it refuses it.
  ReplyPtr Read(std::string_view frame);

  redisReader* reader_;
};

// Shorthands for pub/sub and handshake checks on a decoded reply.
inline std::string_view ReplyString(const redisReply* r) {
  return r ? std::string_view(r->str, r->len) : std::string_view();
}

}  // namespace bloomproxy::protocol
