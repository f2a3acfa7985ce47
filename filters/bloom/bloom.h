// Bloom-filter maths, exactly as RedisBloom computes it, so that a filter kept by bloomproxy in
// plain Redis strings has the same bits, the same false positives and the same SCANDUMP bytes as
// a RedisBloom filter built by the same commands. Pure functions; no sockets.
//
// Sizing (per sub-filter, capacity C, error e; RedisBloom's bloom.c with NOROUND):
//   bpe   = -(ln e / ln(2)^2)
//   bits0 = (uint64)(C * bpe), 1 if that is 0
//   bytes = ceil(bits0 / 64) * 8, bits = bytes * 8   (the modulus)
//   k     = ceil(ln(2) * bpe)
// Hashing (Kirsch & Mitzenmacher double hashing, "Less hashing, same performance", 2006):
//   a = MurmurHash64A(item, 0xc6a4a7935bd1e995), b = MurmurHash64A(item, a)
//   position i = (a + i * b) mod bits, for 0 <= i < k
// Scaling (Almeida et al., "Scalable Bloom Filters", 2007): sub-filter i has capacity
// C * expansion^i and error E * 0.5^(i+1) (a non-scaling filter's only one has error E).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace bloomproxy::filters {

inline constexpr double kDefaultErrorRate = 0.01;
inline constexpr uint64_t kDefaultCapacity = 100;
inline constexpr uint32_t kDefaultExpansion = 2;
inline constexpr uint64_t kMaxCapacity = 1ULL << 30;  // BF.RESERVE's upper bound
inline constexpr uint32_t kMaxExpansion = 32768;
// The largest SCANDUMP data chunk (RedisBloom's MAX_SCANDUMP_SIZE).
inline constexpr uint64_t kMaxDumpChunk = 16 * 1024 * 1024;

// RedisBloom's chain option bits, as stored in the dump header.
enum BloomOption : uint32_t {
  kOptNoRound = 1,    // modulus is bytes*8, not a power of two
  kOptRawBits = 2,    // size given in bits
  kOptHash64 = 4,     // 64-bit MurmurHash64A (always set by BF.* here)
  kOptNoScaling = 8,  // NONSCALING
};
inline constexpr uint32_t kOptionsScaling = kOptNoRound | kOptHash64;                     // 5
inline constexpr uint32_t kOptionsNonScaling = kOptNoRound | kOptHash64 | kOptNoScaling;  // 13

// One sub-filter ("link") of a chain: its geometry, as RedisBloom's dump header lists it.
struct LinkParams {
  uint64_t bytes = 0;     // size of its bit array in bytes (a multiple of 8)
  uint64_t bits = 0;      // the modulus of bit positions (bytes * 8)
  uint64_t capacity = 0;  // items it takes before the chain scales
  double error = 0;       // its own error rate
  double bpe = 0;         // bits per entry
  uint32_t k = 0;         // hash functions
  uint8_t n2 = 0;         // 0 (power-of-two modulus 2^n2 only for very old dumps)
};

// Sizes one sub-filter of `capacity` items at `error`.
LinkParams SizeLink(uint64_t capacity, double error);

// Sub-filter `index` (0 = first) of a chain reserved with error `error`, capacity `capacity`,
// expansion `expansion`; `nonscaling` chains have a single link at the full error.
LinkParams ChainLink(double error, uint64_t capacity, uint32_t expansion, bool nonscaling,
                     size_t index);

// The two 64-bit hashes of an item.
struct ItemHash {
  uint64_t a = 0;
  uint64_t b = 0;
};
ItemHash HashItem(std::string_view item);

// Bit position i (0 <= i < k) of an item in a link whose modulus is `bits`.
inline uint64_t BitPosition(const ItemHash& h, uint32_t i, uint64_t bits) {
  return (h.a + static_cast<uint64_t>(i) * h.b) % bits;
}

// RedisBloom tests bit `pos` as byte[pos >> 3] & (1 << (pos & 7)) (least significant bit
// first); Redis's SETBIT/GETBIT/BITFIELD number bits most significant first. This maps a
// RedisBloom position to the Redis bit offset that touches the same bit of the same byte, so
// the Redis string's bytes equal RedisBloom's in-memory bytes.
inline uint64_t RedisBitOffset(uint64_t pos) { return (pos & ~uint64_t{7}) | (7 - (pos & 7)); }

// RedisBloom's dump header (SCANDUMP iterator 0 / LOADCHUNK iterator 1), little-endian:
//
//   +------------+-----------+-----------+------------+
//   | u64 total  | u32 links | u32 opts  | u32 expan. |   20 bytes
//   +------------+-----------+-----------+------------+
//   then per link, 53 bytes:
//   +-----------+----------+-----------+-----------+---------+---------+--------------+--------+
//   | u64 bytes | u64 bits | u64 items | f64 error | f64 bpe | u32 k   | u64 capacity | u8 n2  |
//   +-----------+----------+-----------+-----------+---------+---------+--------------+--------+
struct DumpLink {
  LinkParams params;
  uint64_t items = 0;
};
struct DumpHeader {
  uint64_t total_items = 0;
  uint32_t options = kOptionsScaling;
  uint32_t expansion = kDefaultExpansion;
  std::vector<DumpLink> links;
};
std::string EncodeDumpHeader(const DumpHeader& header);
// Parses and validates a header as RedisBloom's LOADCHUNK does: exact length, at least one link,
// no unknown option bits, total = sum of link items, each error in (0, 1), n2 <= 63,
// bits = bytes * 8, k = ceil(ln 2 * bpe). False when any check fails ("received bad data").
bool DecodeDumpHeader(std::string_view data, DumpHeader* out);

// Where SCANDUMP iterator `iter` (>= 1) reads, given each link's size in bytes: the link, the
// offset in it, and the chunk length (at most `max_chunk`, never past the link's end). `end` is
// true past the last byte (SCANDUMP then replies [0, ""]).
struct ChunkPos {
  bool end = false;
  size_t link = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
};
ChunkPos LocateDumpChunk(const std::vector<uint64_t>& link_bytes, int64_t iter,
                         uint64_t max_chunk = kMaxDumpChunk);

// Where LOADCHUNK writes `data_len` bytes that SCANDUMP returned with iterator `iter`
// (start = iter - data_len - 1 in the concatenation of the links). False ("invalid offset - no
// link found") when the start is not inside a link or the data runs past that link's end.
bool LocateLoadChunk(const std::vector<uint64_t>& link_bytes, int64_t iter, uint64_t data_len,
                     size_t* link, uint64_t* offset);

}  // namespace bloomproxy::filters
