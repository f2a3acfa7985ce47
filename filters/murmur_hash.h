// MurmurHash64A, Austin Appleby's 64-bit MurmurHash2 (public domain, smhasher
// src/MurmurHash2.cpp), the hash RedisBloom uses for bit positions:
//   a = MurmurHash64A(item, kBloomSeed), b = MurmurHash64A(item, a),
//   position i = (a + i * b) mod bits.
#pragma once

#include <cstdint>
#include <string_view>

namespace bloomproxy::filters {

inline constexpr uint64_t kBloomSeed = 0xc6a4a7935bd1e995ULL;

// Reads the input in little-endian 8-byte blocks, whatever the host's byte order, so positions
// agree with RedisBloom's on x86-64 and arm64 alike.
uint64_t MurmurHash64A(std::string_view data, uint64_t seed);

}  // namespace bloomproxy::filters
