#include "filters/bloom/bloom.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "filters/common/murmur_hash.h"

namespace bloomproxy::filters {
namespace {

// The constants RedisBloom's bloom.c uses, to the digit: results must agree with its doubles,
// including where the maths is exact but the floating point is not (ln 2 * bpe for an error of
// 0.125 comes out a hair above 3, so k = 4).
constexpr double kLn2Squared = 0.480453013918201;
constexpr double kLn2 = 0.693147180559945;
// RedisBloom's ERROR_TIGHTENING_RATIO: each new link gets half the error of the one before.
constexpr double kTighteningRatio = 0.5;
// BF.RESERVE/BF.INSERT accept any error rate in (0, 1) but size the chain as if it were at most
// this (RedisBloom caps the requested rate, not each link's).
constexpr double kErrorRateCap = 0.25;
// bits0 is clamped here so that bytes * 8 cannot overflow; no real link comes near it.
constexpr uint64_t kMaxBits = uint64_t{1} << 62;

constexpr size_t kHeaderFixedSize = 8 + 4 + 4 + 4;
constexpr size_t kHeaderLinkSize = 8 + 8 + 8 + 8 + 8 + 4 + 8 + 1;

constexpr uint32_t kKnownOptions = kOptNoRound | kOptRawBits | kOptHash64 | kOptNoScaling;

// Little-endian field writers/readers, independent of the host's byte order.
void PutU64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutU32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutF64(std::string* out, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  PutU64(out, bits);
}

class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  uint64_t U64() { return Le(8); }
  uint32_t U32() { return static_cast<uint32_t>(Le(4)); }
  uint8_t U8() { return static_cast<uint8_t>(Le(1)); }
  double F64() {
    const uint64_t bits = U64();
    double v;
    std::memcpy(&v, &bits, sizeof v);
    return v;
  }

 private:
  // Callers check the total length first, so reads never run past the end.
  uint64_t Le(int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) {
      v |= uint64_t{static_cast<unsigned char>(data_[pos_ + i])} << (8 * i);
    }
    pos_ += n;
    return v;
  }
  std::string_view data_;
  size_t pos_ = 0;
};

uint64_t SaturatingMul(uint64_t a, uint64_t b) {
  if (a != 0 && b > std::numeric_limits<uint64_t>::max() / a) {
    return std::numeric_limits<uint64_t>::max();
  }
  return a * b;
}

// RedisBloom's link check (bloom_validate_integrity): what a link must satisfy to be loaded.
bool ValidLink(const LinkParams& p) {
  // !(x > 0 && x < 1) also rejects NaN, which RedisBloom's "<= 0 || >= 1" would let through.
  if (!(p.error > 0 && p.error < 1)) return false;
  if (p.n2 > 63) return false;
  if (p.n2 != 0 && p.bits < (uint64_t{1} << p.n2)) return false;
  if (p.bits == 0) return false;
  if (p.bytes > std::numeric_limits<uint64_t>::max() / 8 || p.bits != p.bytes * 8) return false;
  // k = (int)ceil(ln 2 * bpe); a NaN or huge bpe cannot match any k (and must not reach the
  // integer conversion, which would be undefined).
  const double k = std::ceil(kLn2 * p.bpe);
  if (!(k >= 0 && k <= static_cast<double>(std::numeric_limits<uint32_t>::max()))) return false;
  return p.k == static_cast<uint32_t>(k);
}

}  // namespace

// bloom.c bloom_init with BLOOM_OPT_NOROUND:
//   bpe   = -(ln e / ln(2)^2)
//   bits0 = (uint64)(C * bpe), at least 1
//   bytes = ceil(bits0 / 64) * 8, bits = bytes * 8
//   k     = (int)ceil(ln 2 * bpe)
LinkParams SizeLink(uint64_t capacity, double error) {
  LinkParams p;
  p.capacity = capacity;
  p.error = error;
  double bpe = -(std::log(error) / kLn2Squared);
  if (bpe < 0) bpe = -bpe;  // as calc_bpe does, though e < 1 never gives a negative bpe
  p.bpe = bpe;

  // Casting an out-of-range or NaN double to an integer is undefined, so absurd inputs (an error
  // of 0, a capacity of 2^64) are clamped; such a link could never be stored anyway.
  const double want = static_cast<double>(capacity) * bpe;
  uint64_t bits0 = 0;
  if (want >= static_cast<double>(kMaxBits)) {
    bits0 = kMaxBits;
  } else if (want >= 1) {
    bits0 = static_cast<uint64_t>(want);
  }
  if (bits0 == 0) bits0 = 1;
  p.bytes = (bits0 % 64 != 0) ? (bits0 / 64 + 1) * 8 : bits0 / 8;
  p.bits = p.bytes * 8;
  const double k = std::ceil(kLn2 * bpe);
  if (k >= static_cast<double>(std::numeric_limits<uint32_t>::max())) {
    p.k = std::numeric_limits<uint32_t>::max();
  } else if (k >= 0) {
    p.k = static_cast<uint32_t>(k);
  }
  p.n2 = 0;
  return p;
}

// Scalable Bloom filters (Almeida et al. 2007) as sb.c builds them: link i has capacity
// C * expansion^i and error E * r * 0.5^i, where r = 0.5 for a scaling chain (so that the sum of
// all links' errors, E * (0.5 + 0.25 + ...), stays below E) and r = 1 for a non-scaling one.
// Each link's error is the previous one's times 0.5, which is exact in binary floating point, so
// the ldexp below equals RedisBloom's repeated multiplication.
LinkParams ChainLink(double error, uint64_t capacity, uint32_t expansion, bool nonscaling,
                     size_t index) {
  const double capped = error > kErrorRateCap ? kErrorRateCap : error;
  const double first = nonscaling ? capped : capped * kTighteningRatio;
  const double link_error = std::ldexp(first, -static_cast<int>(index > 2000 ? 2000 : index));
  uint64_t link_capacity = capacity;
  for (size_t i = 0; i < index; ++i) {
    const uint64_t next = SaturatingMul(link_capacity, expansion);
    if (next == link_capacity) break;  // saturated, or an expansion of 1 (or 0 reached 0)
    link_capacity = next;
  }
  return SizeLink(link_capacity, link_error);
}

// Kirsch & Mitzenmacher double hashing: two MurmurHash64A values, the second seeded with the
// first (RedisBloom's bloom_calc_hash64).
ItemHash HashItem(std::string_view item) {
  ItemHash h;
  h.a = MurmurHash64A(item, kBloomSeed);
  h.b = MurmurHash64A(item, h.a);
  return h;
}

std::string EncodeDumpHeader(const DumpHeader& header) {
  std::string out;
  out.reserve(kHeaderFixedSize + kHeaderLinkSize * header.links.size());
  PutU64(&out, header.total_items);
  PutU32(&out, static_cast<uint32_t>(header.links.size()));
  PutU32(&out, header.options);
  PutU32(&out, header.expansion);
  for (const DumpLink& link : header.links) {
    PutU64(&out, link.params.bytes);
    PutU64(&out, link.params.bits);
    PutU64(&out, link.items);
    PutF64(&out, link.params.error);
    PutF64(&out, link.params.bpe);
    PutU32(&out, link.params.k);
    PutU64(&out, link.params.capacity);
    out.push_back(static_cast<char>(link.params.n2));
  }
  return out;
}

// sb.c SB_NewChainFromHeader + SB_ValidateIntegrity + bloom.c bloom_validate_integrity.
bool DecodeDumpHeader(std::string_view data, DumpHeader* out) {
  if (data.size() < kHeaderFixedSize) return false;
  Reader r(data);
  DumpHeader h;
  h.total_items = r.U64();
  const uint32_t n = r.U32();
  h.options = r.U32();
  h.expansion = r.U32();
  if (n == 0) return false;
  // 53 * n cannot overflow 64 bits for a 32-bit n.
  if (data.size() != kHeaderFixedSize + kHeaderLinkSize * static_cast<uint64_t>(n)) return false;

  h.links.resize(n);
  uint64_t total = 0;
  for (DumpLink& link : h.links) {
    link.params.bytes = r.U64();
    link.params.bits = r.U64();
    link.items = r.U64();
    link.params.error = r.F64();
    link.params.bpe = r.F64();
    link.params.k = r.U32();
    link.params.capacity = r.U64();
    link.params.n2 = r.U8();
    if (!ValidLink(link.params)) return false;
    if (link.items > std::numeric_limits<uint64_t>::max() - total) return false;
    total += link.items;
  }
  if ((h.options & ~kKnownOptions) != 0) return false;
  if (total != h.total_items) return false;
  *out = std::move(h);
  return true;
}

// sb.c getLinkPos + SBChain_GetEncodedChunk: iterator it (>= 1) addresses byte it - 1 of the
// links laid end to end; a chunk never crosses into the next link.
ChunkPos LocateDumpChunk(const std::vector<uint64_t>& link_bytes, int64_t iter,
                         uint64_t max_chunk) {
  ChunkPos pos;
  if (iter < 1) {
    pos.end = true;
    return pos;
  }
  uint64_t at = static_cast<uint64_t>(iter) - 1;
  for (size_t i = 0; i < link_bytes.size(); ++i) {
    if (at < link_bytes[i]) {
      pos.link = i;
      pos.offset = at;
      const uint64_t remaining = link_bytes[i] - at;
      pos.length = remaining < max_chunk ? remaining : max_chunk;
      return pos;
    }
    at -= link_bytes[i];
  }
  pos.end = true;
  return pos;
}

// sb.c SBChain_LoadEncodedChunk: the data SCANDUMP returned with iterator `iter` started at
// iter - len - 1; it must lie within one link.
bool LocateLoadChunk(const std::vector<uint64_t>& link_bytes, int64_t iter, uint64_t data_len,
                     size_t* link, uint64_t* offset) {
  if (iter <= 0) return false;
  const uint64_t it = static_cast<uint64_t>(iter);
  if (it <= data_len) return false;  // start would be before byte 0
  const ChunkPos pos = LocateDumpChunk(link_bytes, static_cast<int64_t>(it - data_len));
  if (pos.end) return false;
  if (data_len > link_bytes[pos.link] - pos.offset) return false;
  *link = pos.link;
  *offset = pos.offset;
  return true;
}

}  // namespace bloomproxy::filters
