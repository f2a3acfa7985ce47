// Austin Appleby's MurmurHash2 family (public domain, smhasher src/MurmurHash2.cpp), as
// RedisBloom uses it:
// - MurmurHash64A (64-bit) for Bloom filter bit positions:
//     a = MurmurHash64A(item, kBloomSeed), b = MurmurHash64A(item, a),
//     position i = (a + i * b) mod bits.
// - MurmurHash2 (32-bit) for count-min sketch cells, seeded with the row number
//   (see filters/cms/cms.h).
#pragma once

#include <cstdint>
#include <string_view>

namespace bloomproxy::filters {

inline constexpr uint64_t kBloomSeed = 0xc6a4a7935bd1e995ULL;

// Reads the input in little-endian 8-byte blocks, whatever the host's byte order, so positions
// agree with RedisBloom's on x86-64 and arm64 alike.
uint64_t MurmurHash64A(std::string_view data, uint64_t seed);

// The 32-bit MurmurHash2: m = 0x5bd1e995, r = 24, h = seed ^ len. Like RedisBloom's copy it takes
// the length as an int (Redis caps an argument at 512 MB, so a real item always fits), and like
// MurmurHash64A above it reads 4-byte blocks as little-endian whatever the host's byte order.
uint32_t MurmurHash2(const void* key, int len, uint32_t seed);

}  // namespace bloomproxy::filters
