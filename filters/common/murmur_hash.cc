#include "filters/common/murmur_hash.h"

namespace bloomproxy::filters {

uint64_t MurmurHash64A(std::string_view data, uint64_t seed) {
  constexpr uint64_t m = 0xc6a4a7935bd1e995ULL;
  constexpr int r = 47;
  const size_t len = data.size();
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  uint64_t h = seed ^ (len * m);

  const size_t blocks = len / 8;
  for (size_t i = 0; i < blocks; ++i, p += 8) {
    uint64_t k = 0;
    for (int b = 7; b >= 0; --b) k = (k << 8) | p[b];
    k *= m;
    k ^= k >> r;
    k *= m;
    h ^= k;
    h *= m;
  }
  // The tail falls through from the highest byte down, as in the reference switch.
  switch (len & 7) {
    case 7:
      h ^= uint64_t{p[6]} << 48;
      [[fallthrough]];
    case 6:
      h ^= uint64_t{p[5]} << 40;
      [[fallthrough]];
    case 5:
      h ^= uint64_t{p[4]} << 32;
      [[fallthrough]];
    case 4:
      h ^= uint64_t{p[3]} << 24;
      [[fallthrough]];
    case 3:
      h ^= uint64_t{p[2]} << 16;
      [[fallthrough]];
    case 2:
      h ^= uint64_t{p[1]} << 8;
      [[fallthrough]];
    case 1:
      h ^= uint64_t{p[0]};
      h *= m;
  }
  h ^= h >> r;
  h *= m;
  h ^= h >> r;
  return h;
}

uint32_t MurmurHash2(const void* key, int len, uint32_t seed) {
  constexpr uint32_t m = 0x5bd1e995;
  constexpr int r = 24;
  const auto* p = static_cast<const unsigned char*>(key);
  // The reference mixes the int length into the seed as unsigned.
  uint32_t h = seed ^ static_cast<uint32_t>(len);

  int remaining = len;
  for (; remaining >= 4; remaining -= 4, p += 4) {
    uint32_t k =
        uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
    k *= m;
    k ^= k >> r;
    k *= m;
    h *= m;
    h ^= k;
  }
  switch (remaining) {
    case 3:
      h ^= uint32_t{p[2]} << 16;
      [[fallthrough]];
    case 2:
      h ^= uint32_t{p[1]} << 8;
      [[fallthrough]];
    case 1:
      h ^= uint32_t{p[0]};
      h *= m;
  }
  h ^= h >> 13;
  h *= m;
  h ^= h >> 15;
  return h;
}

}  // namespace bloomproxy::filters
