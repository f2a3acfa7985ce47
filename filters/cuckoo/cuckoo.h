// Cuckoo-filter maths, exactly as RedisBloom computes it (src/cuckoo.c, src/cf.c), so that a
// filter kept by bloomproxy in plain Redis strings has the same slots, the same replies and the
// same SCANDUMP bytes as a RedisBloom filter built by the same commands. Pure functions; no
// sockets. (The data-dependent steps, insertion with its kicks, deletion and compaction, run in
// Redis as scripts: filters/cuckoo/*.lua.)
//
// The filter (Fan, Andersen, Kaminsky, Mitzenmacher, "Cuckoo Filter: Practically Better Than
// Bloom", CoNEXT 2014) as RedisBloom scales it: sub-filters 0 .. nf-1, sub-filter i of
// nb * expansion^i buckets of bs one-byte slots; a slot holds a fingerprint 1..255, 0 is empty.
//
//   h  = MurmurHash64A(item, seed 0)        fp = h % 255 + 1
//   h1 = h                                  h2 = h XOR (fp * 0x5bd1e995)       (64-bit)
//   an item's buckets in a sub-filter of n buckets: h1 % n and h2 % n
//   the other bucket of bucket b for fp:    (b XOR fp * 0x5bd1e995) % n
//
// The dump header (CF.SCANDUMP 0, CF.LOADCHUNK 1), 38 bytes, packed little-endian:
//
//   0          8            16           24           32     34     36     38
//   ┌──────────┬────────────┬────────────┬────────────┬──────┬──────┬──────┐
//   │ numItems │ numBuckets │ numDeletes │ numFilters │ bs   │ mi   │ exp  │
//   │ u64      │ u64        │ u64        │ u64        │ u16  │ u16  │ u16  │
//   └──────────┴────────────┴────────────┴────────────┴──────┴──────┴──────┘
//
// and then the sub-filters' slots, oldest first, no padding.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace bloomproxy::filters {

// RedisBloom's module configuration (cf-initial-size, cf-bucket-size, cf-max-iterations,
// cf-expansion-factor, cf-max-expansions) and limits.
inline constexpr uint64_t kCfDefaultCapacity = 1024;
inline constexpr uint64_t kCfDefaultBucketSize = 2;
inline constexpr uint64_t kCfDefaultMaxIterations = 20;
inline constexpr uint64_t kCfDefaultExpansion = 1;
inline constexpr uint64_t kCfMaxExpansions = 32;  // sub-filters past which writes are refused
inline constexpr uint64_t kCfMaxCapacity = uint64_t{1} << 30;
inline constexpr uint64_t kCfMaxBuckets = (uint64_t{1} << 56) - 1;
inline constexpr uint64_t kCfMaxChunk = 16 * 1024 * 1024;  // SCANDUMP's largest chunk
inline constexpr size_t kCfHeaderBytes = 38;

// No filter reaches this many bytes of slots: RedisBloom's callocs of that much fail on any host
// whose processes have 48-bit virtual addresses (the same bound as kCmsDefaultMaxBytes), so the
// proxy answers RedisBloom's allocation failures ("Couldn't create filter!", "ERR Insufficient
// memory", -1 in CF.INSERT) instead of asking Redis for it. Below it, every bucket index and byte
// offset is exact in the scripts' Lua doubles (filters/cuckoo/cf_layout.lua's MAX_BYTES).
inline constexpr uint64_t kCfMaxBytes = uint64_t{1} << 47;

// An item's hash, as the scripts take it: two 32-bit halves of MurmurHash64A(item, 0).
struct CfItemHash {
  uint64_t h = 0;
  uint32_t hi() const { return static_cast<uint32_t>(h >> 32); }
  uint32_t lo() const { return static_cast<uint32_t>(h); }
  uint8_t fingerprint() const { return static_cast<uint8_t>(h % 255 + 1); }
  // The item's second hash, h XOR (fp * 0x5bd1e995).
  uint64_t h2() const { return h ^ (uint64_t{fingerprint()} * 0x5bd1e995); }
};
CfItemHash CfHash(std::string_view item);

// The smallest power of two >= x (RedisBloom's getNextN2; 0 stays 0).
uint64_t CfNextPow2(uint64_t x);
// Sub-filter 0's buckets for a capacity: nextpow2(capacity / bucket_size), at least 1.
uint64_t CfNumBuckets(uint64_t capacity, uint64_t bucket_size);
// The expansion as stored: nextpow2(e), 0 kept as 0 (non-scaling).
uint64_t CfRoundExpansion(uint64_t e);

// A filter's shape and counters: its dump header, and what CF.INFO and CF.DEBUG show.
struct CfHeader {
  uint64_t num_items = 0;
  uint64_t num_buckets = 0;
  uint64_t num_deletes = 0;
  uint64_t num_filters = 0;
  uint64_t bucket_size = 0;
  uint64_t max_iterations = 0;
  uint64_t expansion = 0;

  // Buckets of sub-filter i (nb * expansion^i); 0 when that does not fit 64 bits.
  uint64_t SubfilterBuckets(uint64_t i) const;
  // CF.INFO's Size: RedisBloom's struct sizes on x86-64 plus every sub-filter's slots.
  uint64_t InfoSize() const;
};

std::string EncodeCfHeader(const CfHeader& h);

// What CF.LOADCHUNK makes of a header chunk.
enum class CfHeaderVerdict {
  kOk,
  kInvalidHeader,  // not 38 bytes: "Invalid header"
  kCannotCreate,   // a filter RedisBloom refuses or cannot allocate: "Couldn't create filter!"
};
// Decodes and checks a header as RedisBloom does: numFilters truncated to 16 bits and >= 1,
// bucket size 1..255, max iterations >= 1, expansion <= 32768 (0 only with one sub-filter),
// numBuckets a power of two in [1, 2^56 - 1], and all its sub-filters below `max_bytes` (at most
// kCfMaxBytes): RedisBloom could not allocate more.
CfHeaderVerdict DecodeCfHeader(std::string_view data, uint64_t max_bytes, CfHeader* out);

// The bytes of each data key of a filter of bucket size `bucket_size` (bf-max-shard-bytes
// rounded down to whole buckets, so that no bucket spans two keys; at least one bucket).
uint64_t CfShardBytes(uint64_t bucket_size, uint64_t max_shard_bytes);

// CF.DEBUG's text: "bktsize:2 buckets:512 items:1 deletes:0 filters:1 max_iterations:20
// expansion:1" (items and deletes unsigned).
std::string CfDebugText(const CfHeader& h);

}  // namespace bloomproxy::filters
