// Guava's Bloom filter maths against known values: SMHasher's verification of
// MurmurHash3_x64_128, Guava's Murmur3Hash128Test vectors, and values printed by Java 17 and
// Guava 31.1 themselves (String decoding of malformed UTF-8, Long.parseLong, hashes through
// Guava's funnels, the sizing formulas, approximateElementCount, and the bits a real
// BloomFilter sets). The index maths is also checked against a re-derivation in 128-bit
// arithmetic for hashes with the top bit set and moduli near 2^32 and 2^40.
#include "filters/guava/guava_hash.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace bloomproxy::filters::guava {
namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

std::string Bytes(std::initializer_list<int> bytes) {
  std::string s;
  for (int b : bytes) s.push_back(static_cast<char>(b));
  return s;
}

// "E2 82 AC" -> the three bytes.
std::string FromHex(std::string_view hex) {
  std::string s;
  for (size_t i = 0; i + 1 < hex.size(); i += 3) {
    s.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return s;
}

std::string Utf16Le(const std::vector<uint16_t>& units) {
  std::string s;
  for (uint16_t u : units) {
    s.push_back(static_cast<char>(u & 0xFF));
    s.push_back(static_cast<char>(u >> 8));
  }
  return s;
}

std::string Funneled(Funnel funnel, std::string_view item) {
  std::string out = "stale";
  EXPECT_TRUE(FunnelBytes(funnel, item, &out)) << item;
  return out;
}

Hash128 GuavaHash(Funnel funnel, std::string_view item) {
  return MurmurHash3_x64_128(Funneled(funnel, item));
}

void ExpectHash(Hash128 actual, uint64_t h1, uint64_t h2, std::string_view what) {
  EXPECT_EQ(actual.h1, h1) << what;
  EXPECT_EQ(actual.h2, h2) << what;
}

// ---------------------------------------------------------------------------------------------
// MurmurHash3_x64_128.

// SMHasher's VerificationTest: keys {0}, {0,1}, ... of lengths 0..255 hashed with seed
// 256 - length, the 256 results (h1 then h2, little-endian) hashed with seed 0; the first four
// bytes of that, little-endian, are MurmurHash3_x64_128's published verification value.
TEST(MurmurHash3Test, SmhasherVerificationValue) {
  std::string key;
  std::string hashes;
  for (int len = 0; len < 256; ++len) {
    const Hash128 h = MurmurHash3_x64_128(key, 256 - len);
    for (int b = 0; b < 8; ++b) hashes.push_back(static_cast<char>(h.h1 >> (8 * b)));
    for (int b = 0; b < 8; ++b) hashes.push_back(static_cast<char>(h.h2 >> (8 * b)));
    key.push_back(static_cast<char>(len));
  }
  const Hash128 final_hash = MurmurHash3_x64_128(hashes, 0);
  EXPECT_EQ(static_cast<uint32_t>(final_hash.h1), 0x6384BA69u);
}

// guava-tests Murmur3Hash128Test.testKnownValues (expected1 = h1, expected2 = h2).
TEST(MurmurHash3Test, GuavaKnownValues) {
  ExpectHash(MurmurHash3_x64_128("hell", 0), 0x629942693e10f867, 0x92db0b82baeb5347, "hell");
  ExpectHash(MurmurHash3_x64_128("hello", 1), 0xa78ddff5adae8d10, 0x128900ef20900135, "hello");
  ExpectHash(MurmurHash3_x64_128("hello ", 2), 0x8a486b23f422e826, 0xf962a2c58947765f, "hello ");
  ExpectHash(MurmurHash3_x64_128("hello w", 3), 0x2ea59f466f6bed8c, 0xc610990acc428a17, "w");
  ExpectHash(MurmurHash3_x64_128("hello wo", 4), 0x79f6305a386c572c, 0x46305aed3483b94e, "wo");
  ExpectHash(MurmurHash3_x64_128("hello wor", 5), 0xc2219d213ec1f1b5, 0xa1d8e2e0a52785bd, "wor");
  ExpectHash(MurmurHash3_x64_128("The quick brown fox jumps over the lazy dog", 0),
             0xe34bbc7bbc071b6c, 0x7a433ca9c49a9347, "dog");
  ExpectHash(MurmurHash3_x64_128("The quick brown fox jumps over the lazy cog", 0),
             0x658ca970ff85269a, 0x43fee3eaa68e5c3e, "cog");
}

// From Guava 31.1 (Hashing.murmur3_128(seed).hashBytes): a tail with both k1 and k2, a
// one-byte tail after a block, and the empty input.
TEST(MurmurHash3Test, ValuesFromGuava) {
  ExpectHash(MurmurHash3_x64_128("hello", 42), 0xc4b8b3c960af6f08, 0x2334b875b0efbc7a, "42");
  ExpectHash(MurmurHash3_x64_128("0123456789abcdefg"), 0x8e32612daa45f9de, 0x0800f4c206c372ee,
             "17 bytes");
  ExpectHash(MurmurHash3_x64_128("0123456789abcdef0123456789abcde"), 0x9afbac977e4daf00,
             0x89fe4cda7efd8251, "31 bytes");
  ExpectHash(MurmurHash3_x64_128(""), 0, 0, "empty");
}

// Blocks are read byte by byte: the same bytes at any alignment hash the same (the sanitizer
// build would also flag a misaligned wide load).
TEST(MurmurHash3Test, UnalignedInput) {
  const std::string text = "0123456789abcdefghijklmnopqrstuvwxyz!";
  const Hash128 expected = MurmurHash3_x64_128(text, 7);
  for (size_t offset = 0; offset < 16; ++offset) {
    std::string buffer(offset, 'x');
    buffer += text;
    const Hash128 h = MurmurHash3_x64_128(std::string_view(buffer).substr(offset), 7);
    EXPECT_EQ(h.h1, expected.h1) << offset;
    EXPECT_EQ(h.h2, expected.h2) << offset;
  }
}

// ---------------------------------------------------------------------------------------------
// Funnels: Java's decoding of the item bytes.

struct DecodeCase {
  const char* bytes;            // hex
  std::vector<uint16_t> units;  // the Java String's chars
  const char* utf8;             // its getBytes(UTF_8), hex
};

// Printed by Java 17: new String(bytes, StandardCharsets.UTF_8), then its chars and
// getBytes(UTF_8). How many bytes one U+FFFD replaces is Java's own rule.
const std::vector<DecodeCase>& JavaDecodeCases() {
  static const std::vector<DecodeCase> cases = {
      {"", {}, ""},
      {"41", {0x41}, "41"},
      {"C3 A9", {0xE9}, "C3 A9"},
      {"E2 82 AC", {0x20AC}, "E2 82 AC"},
      {"F0 9F 98 80", {0xD83D, 0xDE00}, "F0 9F 98 80"},
      {"C2 80 DF BF EF BF BF F0 90 80 80",
       {0x80, 0x7FF, 0xFFFF, 0xD800, 0xDC00},
       "C2 80 DF BF EF BF BF F0 90 80 80"},
      {"F4 8F BF BF", {0xDBFF, 0xDFFF}, "F4 8F BF BF"},
      {"ED 9F BF", {0xD7FF}, "ED 9F BF"},
      {"E0 A0 80", {0x800}, "E0 A0 80"},
      // Lone continuation bytes, C0/C1, F5..FF: one U+FFFD per byte.
      {"80", {0xFFFD}, "EF BF BD"},
      {"BF 41", {0xFFFD, 0x41}, "EF BF BD 41"},
      {"C0 80", {0xFFFD, 0xFFFD}, "EF BF BD EF BF BD"},
      {"C1 BF", {0xFFFD, 0xFFFD}, "EF BF BD EF BF BD"},
      {"FF", {0xFFFD}, "EF BF BD"},
      {"F5 80 80 80", {0xFFFD, 0xFFFD, 0xFFFD, 0xFFFD}, "EF BF BD EF BF BD EF BF BD EF BF BD"},
      {"F8 88 80 80 80",
       {0xFFFD, 0xFFFD, 0xFFFD, 0xFFFD, 0xFFFD},
       "EF BF BD EF BF BD EF BF BD EF BF BD EF BF BD"},
      // Overlongs and > U+10FFFF: the lead byte alone is replaced, then each continuation.
      {"E0 80 80", {0xFFFD, 0xFFFD, 0xFFFD}, "EF BF BD EF BF BD EF BF BD"},
      {"E0 9F BF", {0xFFFD, 0xFFFD, 0xFFFD}, "EF BF BD EF BF BD EF BF BD"},
      {"E0 80", {0xFFFD, 0xFFFD}, "EF BF BD EF BF BD"},
      {"E0 9F 41", {0xFFFD, 0xFFFD, 0x41}, "EF BF BD EF BF BD 41"},
      {"F0 80 80 80", {0xFFFD, 0xFFFD, 0xFFFD, 0xFFFD}, "EF BF BD EF BF BD EF BF BD EF BF BD"},
      {"F0 8F BF", {0xFFFD, 0xFFFD, 0xFFFD}, "EF BF BD EF BF BD EF BF BD"},
      {"F4 90 80 80", {0xFFFD, 0xFFFD, 0xFFFD, 0xFFFD}, "EF BF BD EF BF BD EF BF BD EF BF BD"},
      {"F4 90", {0xFFFD, 0xFFFD}, "EF BF BD EF BF BD"},
      // A surrogate encoded on its own: one U+FFFD for all three bytes.
      {"ED A0 80", {0xFFFD}, "EF BF BD"},
      {"ED BF BF", {0xFFFD}, "EF BF BD"},
      {"ED A0", {0xFFFD}, "EF BF BD"},
      {"ED A0 41", {0xFFFD, 0x41}, "EF BF BD 41"},
      // Truncated sequences: at the end one U+FFFD takes the rest; in the middle the valid
      // prefix is one U+FFFD and decoding resumes at the byte that broke it.
      {"C3", {0xFFFD}, "EF BF BD"},
      {"C3 41", {0xFFFD, 0x41}, "EF BF BD 41"},
      {"E2 82", {0xFFFD}, "EF BF BD"},
      {"E2 82 41", {0xFFFD, 0x41}, "EF BF BD 41"},
      {"E2 41 42", {0xFFFD, 0x41, 0x42}, "EF BF BD 41 42"},
      {"E2 82 E2 82 AC", {0xFFFD, 0x20AC}, "EF BF BD E2 82 AC"},
      {"F0", {0xFFFD}, "EF BF BD"},
      {"F0 9F", {0xFFFD}, "EF BF BD"},
      {"F0 9F 98", {0xFFFD}, "EF BF BD"},
      {"F0 9F 41", {0xFFFD, 0x41}, "EF BF BD 41"},
      {"F0 9F 98 41", {0xFFFD, 0x41}, "EF BF BD 41"},
      {"F0 9F 98 F0 9F 98 80", {0xFFFD, 0xD83D, 0xDE00}, "EF BF BD F0 9F 98 80"},
      {"41 F0 9F 98 80 E2 82 42",
       {0x41, 0xD83D, 0xDE00, 0xFFFD, 0x42},
       "41 F0 9F 98 80 EF BF BD 42"},
  };
  return cases;
}

TEST(FunnelTest, Utf8AsJavaDecodesAndReencodes) {
  for (const DecodeCase& c : JavaDecodeCases()) {
    EXPECT_EQ(Funneled(Funnel::kUtf8, FromHex(c.bytes)), FromHex(c.utf8)) << c.bytes;
  }
}

TEST(FunnelTest, Utf16LeIsTheJavaStringsChars) {
  for (const DecodeCase& c : JavaDecodeCases()) {
    EXPECT_EQ(Funneled(Funnel::kUtf16Le, FromHex(c.bytes)), Utf16Le(c.units)) << c.bytes;
  }
  // U+1F600 is the surrogate pair D83D DE00, each unit little-endian.
  EXPECT_EQ(Funneled(Funnel::kUtf16Le, "\xF0\x9F\x98\x80"), Bytes({0x3D, 0xD8, 0x00, 0xDE}));
  EXPECT_EQ(Funneled(Funnel::kUtf16Le, "Ab"), Bytes({'A', 0, 'b', 0}));
  EXPECT_EQ(Funneled(Funnel::kUtf16Le, ""), "");
}

// Well-formed UTF-8 of every length is hashed as it is; every byte value is covered.
TEST(FunnelTest, ValidUtf8IsCopiedAsIs) {
  std::string all_ascii;
  for (int c = 0; c < 0x80; ++c) all_ascii.push_back(static_cast<char>(c));
  const std::string mixed =
      "plain \xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\xEF\xBB\xBF\xF4\x8F\xBF\xBF";
  for (const std::string& s : {std::string(), all_ascii, mixed}) {
    EXPECT_EQ(Funneled(Funnel::kUtf8, s), s);
  }
}

// The result replaces *out, whatever was there.
TEST(FunnelTest, OutputIsReplaced) {
  std::string out = "previous";
  ASSERT_TRUE(FunnelBytes(Funnel::kUtf8, "", &out));
  EXPECT_EQ(out, "");
  out = "previous";
  ASSERT_TRUE(FunnelBytes(Funnel::kInt64Le, "1", &out));
  EXPECT_EQ(out, Bytes({1, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(FunnelTest, Int64LeAcceptsParseLongSyntax) {
  const std::string zero(8, '\0');
  EXPECT_EQ(Funneled(Funnel::kInt64Le, "0"), zero);
  EXPECT_EQ(Funneled(Funnel::kInt64Le, "-0"), zero);
  EXPECT_EQ(Funneled(Funnel::kInt64Le, "-1"), std::string(8, '\xFF'));
  EXPECT_EQ(Funneled(Funnel::kInt64Le, "1"), Bytes({1, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(Funneled(Funnel::kInt64Le, "+7"), Bytes({7, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(Funneled(Funnel::kInt64Le, "007"), Bytes({7, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(Funneled(Funnel::kInt64Le, "258"), Bytes({2, 1, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(Funneled(Funnel::kInt64Le, "-9223372036854775808"), Bytes({0, 0, 0, 0, 0, 0, 0, 0x80}));
  EXPECT_EQ(Funneled(Funnel::kInt64Le, "9223372036854775807"),
            Bytes({0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F}));
  EXPECT_EQ(Funneled(Funnel::kInt64Le, "00000000000000000000009223372036854775807"),
            Bytes({0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F}));
}

// Each of these makes Java 17's Long.parseLong throw NumberFormatException.
TEST(FunnelTest, Int64LeRejectsWhatParseLongRejects) {
  for (const char* item :
       {"", "-", "+", "1.5", " 1", "1 ", "9223372036854775808", "-9223372036854775809",
        "18446744073709551616", "0x10", "+-1", "--1", "12a", "1e3"}) {
    std::string out;
    EXPECT_FALSE(FunnelBytes(Funnel::kInt64Le, item, &out)) << item;
  }
  // A digit outside the BMP is a surrogate pair to Java, no digit (U+1D7CE MATHEMATICAL BOLD
  // DIGIT ZERO); malformed UTF-8 is U+FFFD.
  std::string out;
  EXPECT_FALSE(FunnelBytes(Funnel::kInt64Le, "\xF0\x9D\x9F\x8E", &out));
  EXPECT_FALSE(FunnelBytes(Funnel::kInt64Le, "1\xFF", &out));
  EXPECT_FALSE(FunnelBytes(Funnel::kInt64Le, "\xEF\xBC\x8B1", &out));  // U+FF0B FULLWIDTH PLUS
}

// Java's Character.digit takes every script's decimal digits in the BMP (Long.parseLong in
// Java 17: "\u0663" is 3, "\uFF11\uFF12" is 12, "+\u0663" is 3).
TEST(FunnelTest, Int64LeTakesEveryScriptsDigitsAsJavaDoes) {
  EXPECT_EQ(Funneled(Funnel::kInt64Le, "\xD9\xA3"), Bytes({3, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(Funneled(Funnel::kInt64Le, "\xEF\xBC\x91\xEF\xBC\x92"),
            Bytes({12, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(Funneled(Funnel::kInt64Le, "+\xD9\xA3"), Bytes({3, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(Funneled(Funnel::kInt64Le, "-\xE0\xA5\xA7\xE0\xA5\xA6"),  // Devanagari 10
            Bytes({0xF6, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}));
  // The last run of the table (U+ABF0..U+ABF9 MEETEI MAYEK) and a char just past one (U+066A).
  EXPECT_EQ(Funneled(Funnel::kInt64Le, "\xEA\xAF\xB9"), Bytes({9, 0, 0, 0, 0, 0, 0, 0}));
  std::string out;
  EXPECT_FALSE(FunnelBytes(Funnel::kInt64Le, "\xD9\xAA", &out));
}

// Hashing.murmur3_128().hashObject(item, funnel) from Guava 31.1 on Java 17; for the last
// case the item is the Java String new String({61 ED A0 80 62 C3}, UTF_8).
TEST(FunnelTest, HashesThroughGuavasFunnels) {
  const Funnel utf8 = Funnel::kUtf8;
  const Funnel utf16 = Funnel::kUtf16Le;
  ExpectHash(GuavaHash(utf8, "hello"), 0xcbd8a7b341bd9b02, 0x5b1e906a48ae1d19, "utf8 hello");
  ExpectHash(GuavaHash(utf16, "hello"), 0xee2ee18fe1bfd387, 0x7b927262d8c336c4, "u16 hello");
  const char* accented = "h\xC3\xA9llo w\xC3\xB6rld";
  ExpectHash(GuavaHash(utf8, accented), 0x6b757453f10a333b, 0x4432d052f7788963, "utf8 accents");
  ExpectHash(GuavaHash(utf16, accented), 0xac52e053dbcf9ddd, 0xf7ba1bdc9fc6794b, "u16 accents");
  ExpectHash(GuavaHash(utf8, "\xE2\x82\xAC"), 0x59e3303a2fdd9555, 0x4f9d8bb3e4bc3164, "utf8 euro");
  ExpectHash(GuavaHash(utf16, "\xE2\x82\xAC"), 0xcc86643a97a9d31a, 0x8d7459824d8b4c99, "u16 euro");
  const char* emoji = "\xF0\x9F\x98\x80";
  ExpectHash(GuavaHash(utf8, emoji), 0x156db15587e0545c, 0x292e083fcfe104ba, "utf8 emoji");
  ExpectHash(GuavaHash(utf16, emoji), 0xcd5b53f58d406562, 0x8b1b0688d78fefc9, "u16 emoji");
  ExpectHash(GuavaHash(utf8, ""), 0, 0, "utf8 empty");
  ExpectHash(GuavaHash(utf16, ""), 0, 0, "u16 empty");
  const std::string bad = FromHex("61 ED A0 80 62 C3");
  ExpectHash(GuavaHash(utf8, bad), 0xe19af631a4779530, 0x64b4e4158db3451e, "utf8 malformed");
  ExpectHash(GuavaHash(utf16, bad), 0x3541d78d16d4178b, 0xa5e236fe565fbd8c, "u16 malformed");
}

// Funnels.longFunnel() from Guava 31.1.
TEST(FunnelTest, HashesThroughGuavasLongFunnel) {
  const Funnel f = Funnel::kInt64Le;
  ExpectHash(GuavaHash(f, "0"), 0x28df63b7cc57c3cb, 0xf2557dfcc4e8fe52, "0");
  ExpectHash(GuavaHash(f, "1"), 0x004403b7fb05c44a, 0x3d8acdb4d36d9c06, "1");
  ExpectHash(GuavaHash(f, "-1"), 0xa0e4b27a1abaed73, 0x692112c96b4a46af, "-1");
  ExpectHash(GuavaHash(f, "42"), 0xb6acc39989d27df8, 0x24b917fb96f22f80, "42");
  ExpectHash(GuavaHash(f, "-9223372036854775808"), 0x01159dfeb4593227, 0x8bdef8b0ec4fe0b6, "min");
  ExpectHash(GuavaHash(f, "9223372036854775807"), 0x6c76ebcbdad669d4, 0x7dfb92c0a9003d9e, "max");
}

// ---------------------------------------------------------------------------------------------
// Sizing, as BloomFilter.create computes it (values from Guava 31.1 on Java 17).

TEST(SizingTest, GuavaValues) {
  EXPECT_EQ(OptimalNumOfBits(1000000, 0.03), 7298440);
  EXPECT_EQ(OptimalNumOfHashFunctions(1000000, 7298440), 5u);
  EXPECT_EQ(RoundedBitSize(7298440), 7298496u);
  EXPECT_EQ(OptimalNumOfBits(100, 0.01), 958);
  EXPECT_EQ(RoundedBitSize(958), 960u);
  EXPECT_EQ(OptimalNumOfHashFunctions(100, 958), 7u);
  EXPECT_EQ(OptimalNumOfBits(1000, 0.001), 14377);
  EXPECT_EQ(OptimalNumOfHashFunctions(1000, 14377), 10u);
  EXPECT_EQ(OptimalNumOfBits(100000, 1e-5), 2396264);
  EXPECT_EQ(OptimalNumOfHashFunctions(100000, 2396264), 17u);
  EXPECT_EQ(OptimalNumOfBits(1000000000, 0.01), 9585058377);
  EXPECT_EQ(OptimalNumOfHashFunctions(1000000000, 9585058377), 7u);
  EXPECT_EQ(OptimalNumOfBits(uint64_t{1} << 40, 0.5), 1586259972792);
}

TEST(SizingTest, ZeroInsertionsAreOne) {
  EXPECT_EQ(OptimalNumOfBits(0, 0.03), OptimalNumOfBits(1, 0.03));
  EXPECT_EQ(OptimalNumOfBits(1, 0.03), 7);
  EXPECT_EQ(OptimalNumOfBits(0, 0.01), 9);
  EXPECT_EQ(OptimalNumOfHashFunctions(0, 9), 6u);
  EXPECT_EQ(OptimalNumOfHashFunctions(1, 7), 5u);
  EXPECT_EQ(OptimalNumOfBitsInt(0, 0.01), 9);
}

TEST(SizingTest, EdgeProbabilitiesAndCasts) {
  // p == 0 is Double.MIN_VALUE; p close to 1 truncates to 0 bits (Guava then refuses).
  EXPECT_EQ(OptimalNumOfBits(1, 0.0), 1549);
  EXPECT_EQ(OptimalNumOfHashFunctions(1, 1549), 1074u);
  EXPECT_EQ(OptimalNumOfBits(1, 0.9), 0);
  EXPECT_EQ(OptimalNumOfBits(1, 0.5), 1);
  EXPECT_EQ(RoundedBitSize(0), 0u);
  EXPECT_EQ(RoundedBitSize(1), 64u);
  EXPECT_EQ(RoundedBitSize(64), 64u);
  EXPECT_EQ(RoundedBitSize(65), 128u);
  // The long cast saturates; so does the int cast of the copied classes.
  EXPECT_EQ(OptimalNumOfBits(uint64_t{kInt64Max}, 0.01), kInt64Max);
  EXPECT_EQ(RoundedBitSize(kInt64Max), uint64_t{1} << 63);
  EXPECT_EQ(OptimalNumOfBitsInt(1000000000, 0.01), 2147483647);
  EXPECT_EQ(OptimalNumOfBitsInt(10000000000, 0.01), 2147483647);
  EXPECT_EQ(OptimalNumOfHashFunctions(1000000000, 2147483647), 1u);
  EXPECT_EQ(OptimalNumOfBitsInt(1000000, 0.03), 7298440);
  EXPECT_EQ(OptimalNumOfBitsInt(100, 0.01), 958);
}

// Math.round's long is cast to int, which keeps its low 32 bits (values from Guava 31.1).
TEST(SizingTest, HashFunctionCountWrapsLikeJavasIntCast) {
  EXPECT_EQ(OptimalNumOfHashFunctions(1, 100), 69u);
  EXPECT_EQ(OptimalNumOfHashFunctions(3, 100), 23u);
  EXPECT_EQ(OptimalNumOfHashFunctions(2, 5), 2u);  // 1.733 rounds to 2
  EXPECT_EQ(OptimalNumOfHashFunctions(10, 1), 1u);
  EXPECT_EQ(OptimalNumOfHashFunctions(1, 0), 1u);
  EXPECT_EQ(OptimalNumOfHashFunctions(1, -5), 1u);
  EXPECT_EQ(OptimalNumOfHashFunctions(1, 3098164008), 2147483647u);
  EXPECT_EQ(OptimalNumOfHashFunctions(1, 3098164009), 1u);  // 2^31 -> INT_MIN
  EXPECT_EQ(OptimalNumOfHashFunctions(1, 6196328026), 5u);  // 2^32 + 5
  EXPECT_EQ(OptimalNumOfHashFunctions(1, 6196328030), 8u);
  EXPECT_EQ(OptimalNumOfHashFunctions(1, int64_t{1} << 40), 1914173394u);
  EXPECT_EQ(OptimalNumOfHashFunctions(1, kInt64Max), 1u);  // Math.round saturates, (int) -1
  // m * ln 2 = 2287385695847819.5 exactly: Math.round takes the tie up, then (int) wraps.
  EXPECT_EQ(OptimalNumOfHashFunctions(1, 3300000000000000), 2078115212u);
  EXPECT_EQ(OptimalNumOfHashFunctions(1, 3300000000000003), 2078115214u);
}

// ---------------------------------------------------------------------------------------------
// Bit indexes.

std::vector<uint64_t> Mitz64(Hash128 h, uint32_t k, uint64_t m) {
  std::vector<uint64_t> out(k);
  Mitz64Indexes(h, k, m, out.data());
  return out;
}

std::vector<uint64_t> Mitz32(Hash128 h, uint32_t k, uint64_t m) {
  std::vector<uint64_t> out(k);
  Mitz32Indexes(h, k, m, out.data());
  return out;
}

TEST(IndexTest, Mitz64HandComputed) {
  // -1 as h2 steps down from h1; the top bit of h1 is masked off.
  EXPECT_EQ(Mitz64({0x8000000000000005, 0xFFFFFFFFFFFFFFFF}, 3, 7),
            (std::vector<uint64_t>{5, 4, 3}));
  // Long.MAX_VALUE % 10 = 7, then the sum wraps to Long.MIN_VALUE, masked to 0.
  EXPECT_EQ(Mitz64({0x7FFFFFFFFFFFFFFF, 1}, 2, 10), (std::vector<uint64_t>{7, 0}));
  EXPECT_EQ(Mitz64({100, 50}, 4, 1000), (std::vector<uint64_t>{100, 150, 200, 250}));
}

TEST(IndexTest, Mitz32HandComputed) {
  // hash1 = (int)0xFFFFFFFF = -1, hash2 = 1: -1 + i.
  EXPECT_EQ(Mitz32({0x00000001FFFFFFFF, 0}, 3, 100), (std::vector<uint64_t>{0, 1, 2}));
  // hash1 = INT_MIN, hash2 = 2: INT_MIN + 2i is negative and flipped to 2^31 - 1 - 2i.
  EXPECT_EQ(Mitz32({0x0000000280000000, 0}, 2, 1000), (std::vector<uint64_t>{645, 643}));
  // hash1 = hash2 = 2^31 - 1: 2 * hash2 wraps to -2, flipped to 1; 3 * (2^31 - 1) wraps to
  // 2^31 - 3. h2 plays no part.
  EXPECT_EQ(Mitz32({0x7FFFFFFF7FFFFFFF, 0xDEADBEEF}, 2, 4294967295),
            (std::vector<uint64_t>{1, 2147483645}));
}

// index_i = ((h1 + i*h2) mod 2^64 & Long.MAX_VALUE) mod m, computed here in 128 bits without
// the implementation's running sum.
uint64_t Mitz64Reference(Hash128 h, uint32_t i, uint64_t m) {
  const unsigned __int128 sum =
      static_cast<unsigned __int128>(h.h1) + static_cast<unsigned __int128>(i) * h.h2;
  const auto combined = static_cast<uint64_t>(sum) & ~(uint64_t{1} << 63);
  return combined % m;
}

// Java's int arithmetic carried out in 64 bits, wrapped into [-2^31, 2^31) by hand.
uint64_t Mitz32Reference(Hash128 h, uint32_t i, uint64_t m) {
  auto to_int = [](int64_t v) {
    v %= int64_t{1} << 32;
    if (v < 0) v += int64_t{1} << 32;
    return v >= (int64_t{1} << 31) ? v - (int64_t{1} << 32) : v;
  };
  const int64_t hash1 = to_int(static_cast<int64_t>(h.h1 & 0xFFFFFFFF));
  const int64_t hash2 = to_int(static_cast<int64_t>(h.h1 >> 32));
  int64_t combined = to_int(hash1 + to_int(int64_t{i} * hash2));
  if (combined < 0) combined = -combined - 1;  // ~x
  return static_cast<uint64_t>(combined) % m;
}

TEST(IndexTest, MatchesIndependentDerivation) {
  std::mt19937_64 rng(20240601);
  const uint64_t two32 = uint64_t{1} << 32;
  const uint64_t two40 = uint64_t{1} << 40;
  const std::vector<uint64_t> moduli = {1,         2,         64,         960,
                                        7298496,   two32 - 1, two32,      two32 + 64,
                                        two40 - 1, two40,     two40 + 64, (uint64_t{1} << 62) + 3};
  for (int round = 0; round < 2000; ++round) {
    Hash128 h{rng(), rng()};
    if (round % 4 == 0) h.h1 |= uint64_t{1} << 63;  // negative as a Java long
    if (round % 4 == 1) h.h2 |= uint64_t{1} << 63;
    if (round % 8 == 2) h.h1 |= uint64_t{1} << 31;  // negative (int) h1
    const uint64_t m = moduli[round % moduli.size()];
    for (uint32_t k : {1u, 7u, 30u}) {
      const std::vector<uint64_t> got64 = Mitz64(h, k, m);
      const std::vector<uint64_t> got32 = Mitz32(h, k, m);
      for (uint32_t i = 0; i < k; ++i) {
        ASSERT_EQ(got64[i], Mitz64Reference(h, i, m)) << round << " " << k << " " << i;
        ASSERT_EQ(got32[i], Mitz32Reference(h, i + 1, m)) << round << " " << k << " " << i;
        ASSERT_LT(got64[i], m);
        ASSERT_LT(got32[i], m);
      }
    }
  }
}

std::set<uint64_t> SetBits(Funnel funnel, std::string_view item, uint64_t n, double p,
                           bool mitz32) {
  const int64_t num_bits = OptimalNumOfBits(n, p);
  const uint32_t k = OptimalNumOfHashFunctions(n, num_bits);
  const uint64_t m = RoundedBitSize(num_bits);
  const Hash128 h = GuavaHash(funnel, item);
  const std::vector<uint64_t> indexes = mitz32 ? Mitz32(h, k, m) : Mitz64(h, k, m);
  return std::set<uint64_t>(indexes.begin(), indexes.end());
}

// The bits a real Guava 31.1 BloomFilter.create(funnel, n, p[, strategy]) sets for one put(),
// read back from writeTo().
TEST(IndexTest, BitsSetByGuava) {
  using Bits = std::set<uint64_t>;
  const std::string emoji_item = "\xC3\xA9\xF0\x9F\x98\x80";  // "é😀"
  EXPECT_EQ(SetBits(Funnel::kUtf8, "hello", 1000, 0.01, false),
            (Bits{898, 1638, 3405, 5912, 6964, 8731, 9471}));
  EXPECT_EQ(SetBits(Funnel::kUtf8, "hello", 1000, 0.01, true),
            (Bits{2455, 4196, 4276, 6017, 7064, 7758, 8885}));
  EXPECT_EQ(SetBits(Funnel::kUtf16Le, emoji_item, 100, 0.03, false), (Bits{15, 85, 147, 279, 721}));
  EXPECT_EQ(SetBits(Funnel::kUtf16Le, emoji_item, 100, 0.03, true),
            (Bits{117, 137, 250, 251, 384}));
  EXPECT_EQ(SetBits(Funnel::kInt64Le, "-12345", 0, 0.01, false), (Bits{3, 7, 11, 33, 37, 41}));
  EXPECT_EQ(SetBits(Funnel::kInt64Le, "-12345", 0, 0.01, true), (Bits{22, 24, 35, 37, 43, 45}));
}

TEST(IndexTest, ZeroModulusDoesNotDivide) {
  EXPECT_EQ(Mitz64({1, 2}, 2, 0), (std::vector<uint64_t>{0, 0}));
  EXPECT_EQ(Mitz32({1, 2}, 2, 0), (std::vector<uint64_t>{0, 0}));
}

// ---------------------------------------------------------------------------------------------
// approximateElementCount (values from Guava 31.1 on Java 17).

TEST(ApproximateElementCountTest, GuavaValues) {
  // BloomFilter.create(stringFunnel(UTF_8), 1000, 0.01) after put("item0".."item499").
  EXPECT_EQ(ApproximateElementCount(2912, 9600, 7), 496);
  EXPECT_EQ(ApproximateElementCount(0, 9600, 7), 0);
  EXPECT_EQ(ApproximateElementCount(1, 64, 1), 1);
  EXPECT_EQ(ApproximateElementCount(32, 64, 1), 44);
  EXPECT_EQ(ApproximateElementCount(63, 64, 1), 266);
  EXPECT_EQ(ApproximateElementCount(100, 1000, 3), 35);
  EXPECT_EQ(ApproximateElementCount(5000, 9600, 7), 1009);
  EXPECT_EQ(ApproximateElementCount(3, 64, 2), 2);  // 1.536 rounds to 2
  // Exact ties (1560828742839370.5 and ...72.5): HALF_UP rounds away from zero.
  EXPECT_EQ(ApproximateElementCount(1125899932243533, 2251799813697593, 1), 1560828742839371);
  EXPECT_EQ(ApproximateElementCount(1125899932243534, 2251799813697593, 1), 1560828742839373);
}

TEST(ApproximateElementCountTest, FullFilterIsInt64Max) {
  EXPECT_EQ(ApproximateElementCount(64, 64, 1), kInt64Max);
  EXPECT_EQ(ApproximateElementCount(9600, 9600, 7), kInt64Max);
  EXPECT_EQ(ApproximateElementCount(9601, 9600, 7), kInt64Max);
  EXPECT_EQ(ApproximateElementCount(0, 0, 7), 0);
}

}  // namespace
}  // namespace bloomproxy::filters::guava
