#include "filters/cuckoo/cuckoo.h"

#include <algorithm>
#include <cstring>

#include "filters/common/murmur_hash.h"

namespace bloomproxy::filters {
namespace {

void PutLe(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t GetLe(std::string_view s, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) {
    v = (v << 8) | static_cast<unsigned char>(s[at + static_cast<size_t>(i)]);
  }
  return v;
}

// The buckets of the sub-filter after one of n buckets: n * expansion, or 0 past 64 bits.
uint64_t NextSubfilterBuckets(uint64_t n, uint64_t expansion) {
  if (expansion != 0 && n > UINT64_MAX / expansion) return 0;
  return n * expansion;
}

}  // namespace

CfItemHash CfHash(std::string_view item) { return CfItemHash{MurmurHash64A(item, 0)}; }

uint64_t CfNextPow2(uint64_t x) {
  // RedisBloom's getNextN2: 0 - 1 wraps, and every bit set then wraps back to 0.
  x--;
  for (int shift = 1; shift <= 32; shift <<= 1) x |= x >> shift;
  return x + 1;
}

uint64_t CfNumBuckets(uint64_t capacity, uint64_t bucket_size) {
  const uint64_t n = CfNextPow2(capacity / bucket_size);
  return n == 0 ? 1 : n;
}

uint64_t CfRoundExpansion(uint64_t e) { return CfNextPow2(e); }

uint64_t CfHeader::SubfilterBuckets(uint64_t i) const {
  // Expansion 0 and 1 in constant time (a LOADCHUNK header may have 65535 sub-filters); any
  // other expansion passes 64 bits within 64 steps.
  if (i == 0 || expansion == 1) return num_buckets;
  uint64_t n = num_buckets;
  for (uint64_t k = 0; k < i && n != 0; ++k) n = NextSubfilterBuckets(n, expansion);
  return n;
}

uint64_t CfHeader::InfoSize() const {
  // sizeof(CuckooFilter) = 40 and sizeof(SubCF) = 16 on x86-64. One pass over the sub-filters.
  uint64_t size = 40 + 16 * num_filters;
  uint64_t n = num_buckets;
  for (uint64_t i = 0; i < num_filters; ++i) {
    size += n * bucket_size;
    n = NextSubfilterBuckets(n, expansion);
  }
  return size;
}

std::string EncodeCfHeader(const CfHeader& h) {
  std::string out;
  out.reserve(kCfHeaderBytes);
  PutLe(&out, h.num_items, 8);
  PutLe(&out, h.num_buckets, 8);
  PutLe(&out, h.num_deletes, 8);
  PutLe(&out, h.num_filters, 8);
  PutLe(&out, h.bucket_size, 2);
  PutLe(&out, h.max_iterations, 2);
  PutLe(&out, h.expansion, 2);
  return out;
}

CfHeaderVerdict DecodeCfHeader(std::string_view data, uint64_t max_bytes, CfHeader* out) {
  max_bytes = std::min(max_bytes, kCfMaxBytes);
  if (data.size() != kCfHeaderBytes) return CfHeaderVerdict::kInvalidHeader;
  CfHeader h;
  h.num_items = GetLe(data, 0, 8);
  h.num_buckets = GetLe(data, 8, 8);
  h.num_deletes = GetLe(data, 16, 8);
  // RedisBloom keeps numFilters in a uint16_t: 65537 is 1, 65536 is 0.
  h.num_filters = GetLe(data, 24, 8) & 0xffff;
  h.bucket_size = GetLe(data, 32, 2);
  h.max_iterations = GetLe(data, 34, 2);
  h.expansion = GetLe(data, 36, 2);
  const bool pow2 = h.num_buckets != 0 && (h.num_buckets & (h.num_buckets - 1)) == 0;
  if (h.num_filters == 0 || h.bucket_size == 0 || h.bucket_size > 255 || h.max_iterations == 0 ||
      h.expansion > 32768 || (h.expansion == 0 && h.num_filters > 1) || !pow2 ||
      h.num_buckets > kCfMaxBuckets) {
    return CfHeaderVerdict::kCannotCreate;
  }
  // One pass: each sub-filter's buckets from the one before (65535 sub-filters is a header
  // RedisBloom accepts).
  uint64_t total = 0;
  uint64_t n = h.num_buckets;
  for (uint64_t i = 0; i < h.num_filters; ++i) {
    if (n == 0 || n >= max_bytes / h.bucket_size) return CfHeaderVerdict::kCannotCreate;
    total += n * h.bucket_size;
    if (total >= max_bytes) return CfHeaderVerdict::kCannotCreate;
    n = NextSubfilterBuckets(n, h.expansion);
  }
  *out = h;
  return CfHeaderVerdict::kOk;
}

uint64_t CfShardBytes(uint64_t bucket_size, uint64_t max_shard_bytes) {
  return std::max(bucket_size, max_shard_bytes / bucket_size * bucket_size);
}

std::string CfDebugText(const CfHeader& h) {
  return "bktsize:" + std::to_string(h.bucket_size) + " buckets:" + std::to_string(h.num_buckets) +
         " items:" + std::to_string(h.num_items) + " deletes:" + std::to_string(h.num_deletes) +
         " filters:" + std::to_string(h.num_filters) +
         " max_iterations:" + std::to_string(h.max_iterations) +
         " expansion:" + std::to_string(h.expansion);
}

}  // namespace bloomproxy::filters
