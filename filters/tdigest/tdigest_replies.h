// Script answers (tdigest_*.lua) to RedisBloom's replies, in RESP2 (a RESP3 client's reply is
// rewritten from it: filters/common/sketch_resp3.h). An answer is a status (what the name holds,
// or how a write went) or, for reads, the digest's header and the results as 8-byte doubles; see
// each script's header comment. Pure; no sockets.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "filters/tdigest/tdigest_args.h"
#include "protocol/reply_decoder.h"

namespace bloomproxy::filters {

// The digest's fields as its data key's 56-byte header holds them (tdigest_layout.lua).
struct TdigestHeader {
  double compression = 0;
  double min = 0;
  double max = 0;
  uint32_t merged = 0;
  uint32_t unmerged = 0;
  int64_t merged_weight = 0;
  int64_t unmerged_weight = 0;
  int64_t total_compressions = 0;
};

// False when `bytes` is not a header.
bool ParseTdigestHeader(std::string_view bytes, TdigestHeader* out);

// CREATE: `error` is the argument error RedisBloom gives when the name is free (empty: none).
std::string TdigestCreateReply(const std::string& error, std::string_view answer,
                               const redisReply* decoded);
// A command whose argument error `error` RedisBloom gives after its key check (tdigest_read.lua's
// "check"): the key's error first, else `error`. MERGE's destination may be missing.
std::string TdigestCheckReply(TdigestCommand command, const std::string& error,
                              std::string_view answer, const redisReply* decoded);
// RESET: +OK, or what the name holds.
std::string TdigestResetReply(std::string_view answer, const redisReply* decoded);
// ADD commands of one call: one reply per command (`commands` of them), or, when the answer is
// a failure they all share, an empty vector and that failure in *shared.
std::vector<std::string> TdigestAddReplies(std::string_view answer, const redisReply* decoded,
                                           size_t commands, std::string* shared);
// MIN, MAX, INFO and the reads that take arguments.
std::string TdigestReadReply(const TdigestRequest& request, std::string_view answer,
                             const redisReply* decoded);
// MERGE.
std::string TdigestMergeReply(std::string_view answer, const redisReply* decoded);

}  // namespace bloomproxy::filters
