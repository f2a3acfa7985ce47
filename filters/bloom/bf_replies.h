// Replies made of a filter's metadata and its links' counts: BF.CARD, BF.INFO (whole or one
// field), BF.DEBUG and the header BF.SCANDUMP answers to iterator 0, byte for byte as
// RedisBloom's. Shared by the BF plan (bf_plan_read.cc), BF.* inside MULTI (multi_bf.cc) and, for
// BF.DEBUG's lines, the Guava layouts (guava_requests.cc). Pure; no sockets.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

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

// One link as BF.DEBUG shows it (RedisBloom's BFDebug_RedisCommand).
struct DebugLink {
  uint64_t bytes = 0;
  uint64_t bits = 0;  // the modulus: RedisBloom shows 1 << n2 when its bits are 0
  uint32_t hashes = 0;
  uint32_t hashwidth = 64;  // 64: 64-bit hashes (kOptHash64), else 32
  uint64_t capacity = 0;
  uint64_t size = 0;  // the items counted in this link
  double ratio = 0;   // its error rate
};

// "bytes:144 bits:1152 hashes:8 hashwidth:64 capacity:100 size:100 ratio:0.005": RedisBloom's
// format, "...capacity:%u size:%lu ratio:%g", so a capacity of 2^32 or more shows its low 32
// bits, as RedisBloom's printf of its 64-bit capacity with %u does.
std::string DebugLinkText(const DebugLink& link);

// BF.DEBUG's reply: an array of the bulk "size:<total>" and each link's DebugLinkText.
std::string DebugReply(uint64_t total, const std::vector<DebugLink>& links);

// The reply to `req` (CARD, INFO, DEBUG or SCANDUMP 0) for `meta`, whose counts are set.
CountsProblem CountsReply(const BfRequest& req, const FilterMeta& meta, std::string* reply);

}  // namespace bloomproxy::filters
