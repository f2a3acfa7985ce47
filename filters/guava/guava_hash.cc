#include "filters/guava/guava_hash.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace bloomproxy::filters::guava {
namespace {

// ---------------------------------------------------------------------------------------------
// MurmurHash3_x64_128.

// The block is copied out first so that an unaligned item is never read through a wider type,
// and assembled byte by byte so that a big-endian host reads the same value as Guava.
uint64_t LoadLe64(const unsigned char* p) {
  unsigned char b[8];
  std::memcpy(b, p, sizeof b);
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | b[i];
  return v;
}

uint64_t Rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

uint64_t Fmix64(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  k ^= k >> 33;
  return k;
}

constexpr uint64_t kC1 = 0x87c37b91114253d5ULL;
constexpr uint64_t kC2 = 0x4cf5ad432745937fULL;

uint64_t MixK1(uint64_t k1) { return Rotl64(k1 * kC1, 31) * kC2; }
uint64_t MixK2(uint64_t k2) { return Rotl64(k2 * kC2, 33) * kC1; }

// ---------------------------------------------------------------------------------------------
// Java 17's UTF-8 decoding (java.lang.String.decodeUTF8_UTF16, the code behind
// `new String(bytes, UTF_8)`). How many bytes one U+FFFD replaces is Java's own rule (close to
// Unicode's "maximal subpart" practice, but an encoded surrogate is one U+FFFD for all three
// bytes), so its branches are followed one by one; the truncated cases at the end of the input
// are where Java `break`s out of its loop, i.e. the replacement swallows the rest.

constexpr uint32_t kReplacement = 0xFFFD;

struct Decoded {
  uint32_t code_point;  // kReplacement when malformed
  size_t length;        // bytes consumed
  bool malformed;
};

constexpr Decoded Malformed(size_t length) { return {kReplacement, length, true}; }

bool IsContinuation(uint8_t b) { return (b & 0xC0) == 0x80; }

// Java's isMalformed3_2: E0 followed by 80..9F is an overlong form.
bool BadSecondOf3(uint8_t b1, uint8_t b2) {
  return (b1 == 0xE0 && (b2 & 0xE0) == 0x80) || !IsContinuation(b2);
}

// Java's isMalformed4_2: F0 needs 90..BF (no overlongs), F4 needs 80..8F (<= U+10FFFF).
bool BadSecondOf4(uint8_t b1, uint8_t b2) {
  return (b1 == 0xF0 && (b2 < 0x90 || b2 > 0xBF)) || (b1 == 0xF4 && (b2 & 0xF0) != 0x80) ||
         !IsContinuation(b2);
}

Decoded Decode2(const uint8_t* p, size_t left) {
  if (left == 0) return Malformed(1);
  if (!IsContinuation(p[1])) return Malformed(1);
  return {(uint32_t{p[0]} & 0x1F) << 6 | (p[1] & 0x3F), 2, false};
}

Decoded Decode3(const uint8_t* p, size_t left) {
  if (left >= 2) {
    if (BadSecondOf3(p[0], p[1])) return Malformed(1);  // Java's malformed3() == 1
    if (!IsContinuation(p[2])) return Malformed(2);
    const uint32_t c = (uint32_t{p[0]} & 0x0F) << 12 | (p[1] & 0x3F) << 6 | (p[2] & 0x3F);
    // A surrogate encoded on its own is replaced whole, all three bytes by one U+FFFD.
    if (c >= 0xD800 && c <= 0xDFFF) return Malformed(3);
    return {c, 3, false};
  }
  if (left == 1 && BadSecondOf3(p[0], p[1])) return Malformed(1);
  return Malformed(1 + left);  // truncated at the end: one U+FFFD for the rest
}

Decoded Decode4(const uint8_t* p, size_t left) {
  if (left >= 3) {
    // Java decodes first and then asks malformed4() how much to skip; its first test covers
    // F5..F7, overlongs and > U+10FFFF, so checking it first is the same.
    if (p[0] > 0xF4 || BadSecondOf4(p[0], p[1])) return Malformed(1);
    if (!IsContinuation(p[2])) return Malformed(2);
    if (!IsContinuation(p[3])) return Malformed(3);
    const uint32_t uc =
        (uint32_t{p[0]} & 0x07) << 18 | (p[1] & 0x3F) << 12 | (p[2] & 0x3F) << 6 | (p[3] & 0x3F);
    return {uc, 4, false};
  }
  if (p[0] > 0xF4 || (left >= 1 && BadSecondOf4(p[0], p[1]))) return Malformed(1);
  if (left == 2 && !IsContinuation(p[2])) return Malformed(2);
  return Malformed(1 + left);  // truncated at the end: one U+FFFD for the rest
}

// One character of `in` at `pos` (pos < in.size()).
Decoded DecodeOne(std::string_view in, size_t pos) {
  const auto* p = reinterpret_cast<const uint8_t*>(in.data()) + pos;
  const size_t left = in.size() - pos - 1;  // bytes after the lead byte
  if (p[0] < 0x80) return {p[0], 1, false};
  if (p[0] >= 0xC2 && p[0] <= 0xDF) return Decode2(p, left);
  if ((p[0] & 0xF0) == 0xE0) return Decode3(p, left);
  if ((p[0] & 0xF8) == 0xF0) return Decode4(p, left);
  return Malformed(1);  // a stray continuation byte, C0, C1 or F8..FF
}

// The UTF-8 bytes of the Java string: well-formed runs are copied as they are (a valid item
// costs one copy), each malformed sequence becomes EF BF BD.
void Utf8Bytes(std::string_view item, std::string* out) {
  out->clear();
  size_t copied = 0;
  size_t pos = 0;
  while (pos < item.size()) {
    const Decoded d = DecodeOne(item, pos);
    if (d.malformed) {
      out->append(item.substr(copied, pos - copied));
      out->append("\xEF\xBF\xBD");
      copied = pos + d.length;
    }
    pos += d.length;
  }
  out->append(item.substr(copied));
}

void PutUnitLe(uint32_t unit, std::string* out) {
  out->push_back(static_cast<char>(unit & 0xFF));
  out->push_back(static_cast<char>(unit >> 8));
}

// The Java string's UTF-16 code units, 2 bytes little-endian each, as Guava's
// unencodedCharsFunnel feeds them (Hasher.putChar is little-endian).
void Utf16LeBytes(std::string_view item, std::string* out) {
  out->clear();
  out->reserve(item.size() * 2);
  size_t pos = 0;
  while (pos < item.size()) {
    const Decoded d = DecodeOne(item, pos);
    if (d.code_point < 0x10000) {
      PutUnitLe(d.code_point, out);
    } else {
      const uint32_t v = d.code_point - 0x10000;
      PutUnitLe(0xD800 | (v >> 10), out);
      PutUnitLe(0xDC00 | (v & 0x3FF), out);
    }
    pos += d.length;
  }
}

// The first of each run of ten decimal digits in the Basic Multilingual Plane: the chars for
// which Java 17's Character.digit(ch, 10) is 0 (Unicode 13's Nd zeros; the run's others are
// 1..9). Long.parseLong reads chars, so digits outside the BMP (surrogate pairs) are none.
constexpr uint16_t kDigitZeros[] = {0x0030, 0x0660, 0x06F0, 0x07C0, 0x0966, 0x09E6, 0x0A66, 0x0AE6,
                                    0x0B66, 0x0BE6, 0x0C66, 0x0CE6, 0x0D66, 0x0DE6, 0x0E50, 0x0ED0,
                                    0x0F20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80,
                                    0x1A90, 0x1B50, 0x1BB0, 0x1C40, 0x1C50, 0xA620, 0xA8D0, 0xA900,
                                    0xA9D0, 0xA9F0, 0xAA50, 0xABF0, 0xFF10};

// Character.digit(unit, 10), or -1.
int JavaDigit(uint16_t unit) {
  for (uint16_t zero : kDigitZeros) {
    if (unit >= zero && unit <= zero + 9) return unit - zero;
  }
  return -1;
}

// Long.parseLong(new String(item, UTF_8)) as 8 bytes little-endian, as Guava's longFunnel
// feeds it (Hasher.putLong). Like Java, any script's decimal digits count (U+0663 is 3).
bool Int64LeBytes(std::string_view item, std::string* out) {
  std::string units;  // the Java string, as UTF-16LE
  Utf16LeBytes(item, &units);
  const size_t n = units.size() / 2;
  auto unit = [&units](size_t i) {
    return static_cast<uint16_t>(static_cast<unsigned char>(units[2 * i]) |
                                 (static_cast<unsigned char>(units[2 * i + 1]) << 8));
  };
  size_t i = 0;
  const bool negative = n > 0 && unit(0) == '-';
  if (n > 0 && (unit(0) == '-' || unit(0) == '+')) i = 1;
  if (i == n) return false;  // "", "+", "-"
  // The magnitude is accumulated unsigned so that -2^63 fits without overflow.
  const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  uint64_t magnitude = 0;
  for (; i < n; ++i) {
    const int d = JavaDigit(unit(i));
    if (d < 0) return false;
    const uint64_t digit = static_cast<uint64_t>(d);
    if (magnitude > (limit - digit) / 10) return false;
    magnitude = magnitude * 10 + digit;
  }
  const uint64_t value = negative ? 0 - magnitude : magnitude;  // two's complement
  out->clear();
  for (int b = 0; b < 8; ++b) out->push_back(static_cast<char>((value >> (8 * b)) & 0xFF));
  return true;
}

// ---------------------------------------------------------------------------------------------
// Java's numeric conversions. The project compiles as ISO C++ (no -ffast-math; GCC does not
// contract to FMA in ISO mode), so each double operation below rounds as Java's does.
// std::log and std::log1p are not Java's, though: Math.log is HotSpot's own intrinsic and
// Math.log1p is fdlibm's, and either may differ from the C library in the last bit (about 1 in
// 1000 arguments). That moves a result only when it lies within one ulp of a rounding step,
// which against Java 17 / Guava 31.1 showed only for n above 10^16 or bit arrays above 10^15.

constexpr double kTwoTo63 = 9223372036854775808.0;

// Java's (long) cast of a double (JLS 5.1.3): toward zero, NaN -> 0, saturating.
int64_t JavaDoubleToLong(double x) {
  if (std::isnan(x)) return 0;
  if (x >= kTwoTo63) return std::numeric_limits<int64_t>::max();
  if (x <= -kTwoTo63) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(x);
}

// Java's (int) cast of a double: the same at 32 bits.
int32_t JavaDoubleToInt(double x) {
  if (std::isnan(x)) return 0;
  if (x >= 2147483648.0) return std::numeric_limits<int32_t>::max();
  if (x <= -2147483648.0) return std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(x);
}

// Math.round(double): the closest long, ties toward positive infinity, i.e. floor(x + 0.5)
// computed exactly (x - floor(x) is exact, unlike x + 0.5), NaN -> 0, saturating.
int64_t JavaRound(double x) {
  if (std::isnan(x)) return 0;
  if (x >= kTwoTo63) return std::numeric_limits<int64_t>::max();
  if (x < -kTwoTo63) return std::numeric_limits<int64_t>::min();
  const double floor = std::floor(x);
  // A fraction exists only below 2^52, so the + 1 cannot overflow.
  return static_cast<int64_t>(floor) + (x - floor >= 0.5 ? 1 : 0);
}

// -n * Math.log(p) / (Math.log(2) * Math.log(2)) before the cast. Java negates the long and
// then widens it; widening is symmetric in sign, so negating the double is the same.
double OptimalBitsDouble(uint64_t n, double p) {
  if (n == 0) n = 1;
  if (p == 0) p = std::numeric_limits<double>::denorm_min();  // Double.MIN_VALUE
  const double ln2 = std::log(2.0);
  return -static_cast<double>(n) * std::log(p) / (ln2 * ln2);
}

}  // namespace

Hash128 MurmurHash3_x64_128(std::string_view data, uint32_t seed) {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  const size_t len = data.size();
  uint64_t h1 = seed;
  uint64_t h2 = seed;

  for (size_t i = 0; i + 16 <= len; i += 16) {
    h1 ^= MixK1(LoadLe64(p + i));
    h1 = (Rotl64(h1, 27) + h2) * 5 + 0x52dce729;
    h2 ^= MixK2(LoadLe64(p + i + 8));
    h2 = (Rotl64(h2, 31) + h1) * 5 + 0x38495ab5;
  }

  // The tail: bytes 8..14 go to k2 and bytes 0..7 to k1, little-endian, as the reference's
  // fall-through switch does.
  const unsigned char* tail = p + (len & ~size_t{15});
  const size_t rest = len & 15;
  uint64_t k1 = 0;
  uint64_t k2 = 0;
  for (size_t i = rest; i > 8; --i) k2 = (k2 << 8) | tail[i - 1];
  for (size_t i = rest < 8 ? rest : 8; i > 0; --i) k1 = (k1 << 8) | tail[i - 1];
  if (rest > 8) h2 ^= MixK2(k2);
  if (rest > 0) h1 ^= MixK1(k1);

  h1 ^= len;
  h2 ^= len;
  h1 += h2;
  h2 += h1;
  h1 = Fmix64(h1);
  h2 = Fmix64(h2);
  h1 += h2;
  h2 += h1;
  return {h1, h2};
}

bool FunnelBytes(Funnel funnel, std::string_view item, std::string* out) {
  switch (funnel) {
    case Funnel::kUtf8:
      Utf8Bytes(item, out);
      return true;
    case Funnel::kUtf16Le:
      Utf16LeBytes(item, out);
      return true;
    case Funnel::kInt64Le:
      return Int64LeBytes(item, out);
  }
  return false;
}

int64_t OptimalNumOfBits(uint64_t n, double p) { return JavaDoubleToLong(OptimalBitsDouble(n, p)); }

int64_t OptimalNumOfBitsInt(uint64_t n, double p) {
  return JavaDoubleToInt(OptimalBitsDouble(n, p));
}

uint32_t OptimalNumOfHashFunctions(uint64_t n, int64_t m) {
  if (n == 0) n = 1;
  const double k = static_cast<double>(m) / static_cast<double>(n) * std::log(2.0);
  // Java's (int) of the long Math.round returns keeps the low 32 bits (two's complement).
  const auto low = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(JavaRound(k))));
  return low < 1 ? 1 : static_cast<uint32_t>(low);
}

uint64_t RoundedBitSize(int64_t num_bits) {
  // Guava refuses an empty bit array; 0 here lets the caller see that.
  if (num_bits <= 0) return 0;
  return (static_cast<uint64_t>(num_bits) + 63) / 64 * 64;
}

void Mitz64Indexes(Hash128 hash, uint32_t k, uint64_t m, uint64_t* out) {
  constexpr uint64_t kLongMax = (uint64_t{1} << 63) - 1;
  uint64_t combined = hash.h1;
  for (uint32_t i = 0; i < k; ++i) {
    // m == 0 cannot come from Guava (Java would throw on % 0); index 0 avoids dividing by zero.
    out[i] = m == 0 ? 0 : (combined & kLongMax) % m;
    combined += hash.h2;  // Java's long addition wraps, as unsigned addition does
  }
}

void Mitz32Indexes(Hash128 hash, uint32_t k, uint64_t m, uint64_t* out) {
  const auto hash1 = static_cast<uint32_t>(hash.h1);
  const auto hash2 = static_cast<uint32_t>(hash.h1 >> 32);
  for (uint32_t i = 0; i < k; ++i) {
    // Java's int arithmetic, done unsigned so that it wraps without undefined behaviour.
    uint32_t combined = hash1 + (i + 1) * hash2;
    if (combined & 0x80000000u) combined = ~combined;  // Guava flips a negative int
    out[i] = m == 0 ? 0 : combined % m;
  }
}

int64_t ApproximateElementCount(uint64_t bit_count, uint64_t bit_size, uint32_t k) {
  if (bit_size == 0) return 0;
  if (bit_count >= bit_size) return std::numeric_limits<int64_t>::max();
  const double fraction = static_cast<double>(bit_count) / static_cast<double>(bit_size);
  const double estimate =
      -std::log1p(-fraction) * static_cast<double>(bit_size) / static_cast<double>(k);
  // DoubleMath.roundToLong throws on NaN, infinity and values beyond a long; those (k == 0, or
  // a fraction that rounds to 1) saturate like the full filter. HALF_UP on a non-negative
  // value is std::round's half away from zero, which is exact.
  if (std::isnan(estimate)) return 0;
  if (estimate >= kTwoTo63) return std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(std::round(estimate));
}

}  // namespace bloomproxy::filters::guava
