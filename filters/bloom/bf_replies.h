// Replies made of a filter's metadata and its links' counts: BF.CARD, BF.INFO (whole or one
// field) and the header BF.SCANDUMP answers to iterator 0, byte for byte as RedisBloom's. Shared
// by the BF plan (bf_plan_read.cc) and BF.* inside MULTI (multi_bf.cc). Pure; no sockets.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "filters/bloom/bf_args.h"
#include "filters/bloom/bf_meta.h"

namespace bloomproxy::filters {

// RedisBloom's errors about the key's state, for every BF plan (bloomproxy's own filters and the
// Java layouts').
inline constexpr std::string_view kNotFound = "-ERR not found\r\n";
inline constexpr std::string_view kItemExists = "-ERR item exists\r\n";

// Why no reply can be made: the numbers do not fit RedisBloom's replies (a damaged filter).
enum class CountsProblem {
  kNone,
  kCounts,  // the links' counts add up to more than 2^63 - 1
  kSizes,   // their capacities or sizes do
};

// BF.INFO's reply (whole, or the one field `field`) from its five values; expansion < 0 is a
// non-scaling filter's nil.
std::string InfoReply(InfoField field, int64_t capacity, int64_t size, int64_t filters,
                      int64_t items, int64_t expansion);

// The reply to `req` (CARD, INFO or SCANDUMP 0) for `meta`, whose counts are set.
CountsProblem CountsReply(const BfRequest& req, const FilterMeta& meta, std::string* reply);

}  // namespace bloomproxy::filters
