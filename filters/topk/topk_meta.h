// What a proxy keeps of a Top-K sketch it has seen: its id and depth, learnt from the fields every
// TOPK script answers, so that the next command sends each item's fingerprint and row hashes
// (worked out here in C++) instead of having the script hash it in Lua (fifteen times slower,
// on the server every proxy shares). Nothing is trusted: the script uses the hashes only when
// the sketch's id is the one the proxy sent, and hashes the items itself otherwise, so a stale
// entry costs server time, never a wrong answer or a second round trip. Pure; no sockets.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "filters/common/meta_cache.h"
#include "protocol/reply_decoder.h"

namespace bloomproxy::filters {

struct TopkMeta {
  std::string id;
  uint32_t k = 0;
  uint32_t width = 0;
  uint32_t depth = 0;
  std::string decay;  // as stored: "%.17g"
};

using TopkCache = MetaCache<TopkMeta>;

// From the fields a script answered, {id, k, width, depth, decay}; null when they do not parse.
std::shared_ptr<TopkMeta> TopkMetaFromFields(const redisReply* r);

}  // namespace bloomproxy::filters
