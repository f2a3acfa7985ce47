// Guava's Bloom filter maths (com.google.common.hash.BloomFilter, Guava 31.1), as Java
// applications that keep a Guava filter's bits in a plain Redis string compute them:
// MurmurHash3_x64_128, the funnels that turn an item into the bytes hashed, the sizing
// formulas, the two strategies' bit indexes, and approximateElementCount. Pure; no sockets.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace bloomproxy::filters::guava {

// The 128-bit MurmurHash3_x64 of `data` (Austin Appleby, smhasher src/MurmurHash3.cpp). h1 and
// h2 are the two 64-bit halves: Guava's HashCode bytes are h1 then h2, each little-endian, so
// h1 is Guava's lowerEight / asLong() and h2 its upperEight. Blocks are read little-endian
// whatever the host's byte order.
struct Hash128 {
  uint64_t h1 = 0;
  uint64_t h2 = 0;
};
Hash128 MurmurHash3_x64_128(std::string_view data, uint32_t seed = 0);

// What bytes an item (a client's argument) is hashed as.
enum class Funnel : uint8_t {
  kUtf8,     // Funnels.stringFunnel(UTF_8): the UTF-8 bytes of the Java string
  kUtf16Le,  // Funnels.unencodedCharsFunnel(): each UTF-16 unit, 2 bytes little-endian
  kInt64Le,  // Funnels.longFunnel(): a decimal item as 8 bytes little-endian
};

// The bytes `item` hashes to under `funnel`, into *out (replaced). The item's bytes are read as
// Java's `new String(bytes, UTF_8)` reads them (a malformed sequence becomes U+FFFD, as Java
// replaces it), so that kUtf8 hashes valid UTF-8 as it is. kInt64Le takes Long.parseLong's
// syntax (an optional ASCII sign, then decimal digits of any script as Character.digit takes
// them, within 64 bits). False when the item is not accepted (kInt64Le only).
bool FunnelBytes(Funnel funnel, std::string_view item, std::string* out);

// Guava's optimalNumOfBits: (long)(-n * ln p / (ln 2)^2), n = 1 when 0, p = Double.MIN_VALUE
// when 0, with Java's saturating cast of a double to long.
int64_t OptimalNumOfBits(uint64_t n, double p);
// The same as Java's (int) cast (the copied "RedisBloomFilter" classes): saturates at 2^31-1.
int64_t OptimalNumOfBitsInt(uint64_t n, double p);
// Guava's optimalNumOfHashFunctions: max(1, (int)Math.round((double)m / n * ln 2)), n = 1
// when 0.
uint32_t OptimalNumOfHashFunctions(uint64_t n, int64_t m);
// Guava's bit array size for numBits bits: 64 * ceil(numBits / 64).
uint64_t RoundedBitSize(int64_t num_bits);

// MURMUR128_MITZ_64 (Guava's default strategy): index_i = ((h1 + i*h2) & Long.MAX_VALUE) mod
// m, i = 0..k-1, wrapping 64-bit arithmetic. Writes k indexes to out[0..k).
void Mitz64Indexes(Hash128 hash, uint32_t k, uint64_t m, uint64_t* out);
// MURMUR128_MITZ_32 (Guava's first strategy): with hash1 = (int)h1 and hash2 = (int)(h1 >>>
// 32), combined = hash1 + i*hash2 for i = 1..k (32-bit wrapping), ~combined when negative,
// index = combined mod m. Writes k indexes to out[0..k).
void Mitz32Indexes(Hash128 hash, uint32_t k, uint64_t m, uint64_t* out);

// Guava's approximateElementCount for `bit_count` bits set out of `bit_size`:
// DoubleMath.roundToLong(-Math.log1p(-bit_count / bit_size) * bit_size / k, HALF_UP). Where
// every bit is set (Guava throws), INT64_MAX.
int64_t ApproximateElementCount(uint64_t bit_count, uint64_t bit_size, uint32_t k);

}  // namespace bloomproxy::filters::guava
