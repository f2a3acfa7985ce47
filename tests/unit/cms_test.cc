// Count-min sketch maths against RedisBloom: MurmurHash2, cells, INITBYPROB's dimensions and the
// init checks, saturating cells, the wrapping counter and MERGE's overflow rules.
#include "filters/cms/cms.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "filters/common/murmur_hash.h"

namespace bloomproxy::filters {
namespace {

constexpr uint64_t kTwo63 = uint64_t{1} << 63;

uint32_t Hash(std::string_view s, uint32_t seed) {
  return MurmurHash2(s.data(), static_cast<int>(s.size()), seed);
}

// ---------------------------------------------------------------------------------------------
// MurmurHash2.

TEST(CmsHashTest, KnownValues) {
  // Provenance: computed with a Python transcription of Appleby's MurmurHash2 written from the
  // spec's description (m = 0x5bd1e995, r = 24, h = seed ^ len, little-endian blocks, tail
  // falling through), independently of this C++; the hash as a whole is also checked against
  // RedisBloom by cms_model_test, which reproduces every recorded QUERY/INCRBY reply.
  struct Known {
    std::string input;
    uint32_t seed;
    uint32_t hash;
  };
  const Known known[] = {
      {"", 0, 0x00000000},
      {"", 1, 0x5bd15e36},
      {"a", 0, 0x92685f5e},     // tail of 1
      {"ab", 0, 0x1aa14063},    // tail of 2
      {"abc", 0, 0x13577c9b},   // tail of 3
      {"abcd", 0, 0x26873021},  // one block, no tail
      {"hello", 0, 0xe56129cb},
      {"hello", 1, 0xa631918e},
      {"hello world", 0, 0x44a81419},
      {"The quick brown fox jumps over the lazy dog", 0, 0x212729d0},
      {std::string("\0", 1), 0, 0xe94e6ebd},
      {std::string("\0\0\0\0", 4), 7, 0x3f716198},
      {"\xff\xfe\xfd", 3, 0x142f5375},  // bytes >= 0x80 are unsigned
      {"a", 0xffffffff, 0x2a874496},
      {"\xc3\xbcn\xc3\xaf"
       "c\xc3\xb8"
       "d\xc3\xa9",
       2, 0x28ed9a46},  // "ünïcødé" in UTF-8
      {"x", 4, 0xefa17f6c},
  };
  for (const Known& k : known) {
    EXPECT_EQ(Hash(k.input, k.seed), k.hash) << k.input << " seed " << k.seed;
  }
}

TEST(CmsHashTest, SeedIsTheRowAndLengthIsMixedIn) {
  // Different rows hash differently; embedded NULs are part of the item.
  EXPECT_NE(Hash("item", 0), Hash("item", 1));
  EXPECT_NE(Hash(std::string_view("a\0", 2), 0), Hash("a", 0));
  EXPECT_NE(Hash("", 0), Hash(std::string_view("\0", 1), 0));
  // A negative length (never passed) reads nothing rather than running off.
  EXPECT_EQ(MurmurHash2("abc", -1, 0), MurmurHash2("", 0, 0xffffffff));
}

// ---------------------------------------------------------------------------------------------
// Cells.

TEST(CmsCellTest, RowMajorCells) {
  EXPECT_EQ(CmsCell(0, 10, 0), 0u);
  EXPECT_EQ(CmsCell(9, 10, 0), 9u);
  EXPECT_EQ(CmsCell(10, 10, 0), 0u);
  EXPECT_EQ(CmsCell(0xffffffff, 10, 2), 0xffffffffu % 10 + 20);
  EXPECT_EQ(CmsCell(123456, 1, 4), 4u);
  // A width above 2^32 keeps the hash as is.
  EXPECT_EQ(CmsCell(0xffffffff, uint64_t{1} << 40, 1), 0xffffffffu + (uint64_t{1} << 40));

  const std::vector<uint64_t> cells = CmsItemCells("hello", 20, 5);
  ASSERT_EQ(cells.size(), 5u);
  for (uint64_t row = 0; row < 5; ++row) {
    EXPECT_EQ(cells[row], Hash("hello", static_cast<uint32_t>(row)) % 20 + row * 20);
    EXPECT_EQ(cells[row], CmsItemCell("hello", 20, row));
    EXPECT_GE(cells[row], row * 20);
    EXPECT_LT(cells[row], (row + 1) * 20);
  }
  EXPECT_EQ(CmsItemCells("hello", 20, 5)[0], 0xe56129cbu % 20);
}

// ---------------------------------------------------------------------------------------------
// Dimensions.

struct Dims {
  uint64_t width;
  uint64_t depth;
};
Dims FromProb(double error, double prob) {
  Dims d{};
  CmsDimsFromProb(error, prob, &d.width, &d.depth);
  return d;
}

TEST(CmsDimsTest, SpecExamples) {
  // Every INITBYPROB example of the spec, and every one the recordings create.
  struct Example {
    double error;
    double prob;
    uint64_t width;
    uint64_t depth;
  };
  const Example examples[] = {
      {0.001, 0.01, 2000, 7}, {0.5, 0.5, 4, 1},           {0.2, 0.2, 10, 3},
      {0.1, 0.5, 20, 1},      {0.03125, 0.03125, 64, 5},  {0.9999, 0.9999, 3, 1},
      {0.01, 1e-9, 200, 30},  {1e-3, 1e-3, 2000, 10},     {0.25, 0.25, 8, 2},
      {0.01, 0.001, 200, 10}, {0.636845, 4.4e-12, 4, 38}, {0.911961, 0.57, 3, 1},
      {0.3693, 2e-07, 6, 23}, {0.95, 2.81065e-10, 3, 32}, {0.42892, 5.275e-12, 5, 38},
      {0.05, 0.02, 40, 6},    {0.2, 0.2, 10, 3},          {0.1, 0.1, 20, 4},
  };
  for (const Example& e : examples) {
    const Dims d = FromProb(e.error, e.prob);
    EXPECT_EQ(d.width, e.width) << e.error << " " << e.prob;
    EXPECT_EQ(d.depth, e.depth) << e.error << " " << e.prob;
  }
}

TEST(CmsDimsTest, FloatArithmetic) {
  // 1e-45 is a float denormal: float logs give 149 where doubles would give 150.
  EXPECT_EQ(FromProb(0.01, 1e-45).depth, 149u);
  // A probability that narrows to 0.0f: log10f = -inf, depth = +inf, which converts to 0.
  EXPECT_EQ(FromProb(0.01, 1e-46).depth, 0u);
  EXPECT_EQ(FromProb(0.01, 1e-300).depth, 0u);
  // One that narrows to 1.0f (derived from the formula, not recorded): log10f = 0, depth 0.
  EXPECT_EQ(FromProb(0.01, 0.99999999).depth, 0u);
  EXPECT_EQ(FromProb(0.01, 0.9999).depth, 1u);
}

TEST(CmsDimsTest, HugeWidths) {
  // Below 2^63: kept (and too big to allocate).
  EXPECT_EQ(FromProb(2.2e-19, 0.5).width, 9090909090909091840u);
  EXPECT_EQ(FromProb(5e-19, 0.5).width, 3999999999999999488u);
  EXPECT_EQ(FromProb(1e-17, 0.5).width, 200000000000000000u);
  // In [2^63, 2^64): kept as size_t, negative as long long.
  EXPECT_EQ(FromProb(2.1e-19, 0.5).width, 9523809523809523712u);
  EXPECT_GE(FromProb(2.1e-19, 0.5).width, kTwo63);
  // At or above 2^64, or infinite (a denormal error): 0.
  EXPECT_EQ(FromProb(1e-20, 0.5).width, 0u);
  EXPECT_EQ(FromProb(1e-300, 0.5).width, 0u);
  EXPECT_EQ(FromProb(5e-324, 0.5).width, 0u);
}

int64_t AsLongLong(uint64_t v) {
  return v >= kTwo63 ? static_cast<int64_t>(v - kTwo63) + INT64_MIN : static_cast<int64_t>(v);
}
CmsDimsCheck CheckProb(double error, double prob) {
  const Dims d = FromProb(error, prob);
  return CheckCmsDims(AsLongLong(d.width), AsLongLong(d.depth));
}

TEST(CmsDimsTest, InitChecksAsRecorded) {
  constexpr auto kOk = CmsDimsCheck::kOk;
  constexpr auto kInvalid = CmsDimsCheck::kInvalidInitArguments;
  constexpr auto kMemory = CmsDimsCheck::kInsufficientMemory;
  // The spec's INITBYDIM examples.
  EXPECT_EQ(CheckCmsDims(4294967296, 4294967296), kInvalid);
  EXPECT_EQ(CheckCmsDims(3037000500, 3037000500), kInvalid);
  EXPECT_EQ(CheckCmsDims(INT64_MAX, 2), kInvalid);
  EXPECT_EQ(CheckCmsDims(2147483648, 2147483648), kMemory);
  EXPECT_EQ(CheckCmsDims(INT64_MAX, 1), kMemory);
  EXPECT_EQ(CheckCmsDims(int64_t{1} << 40, int64_t{1} << 17), kMemory);
  EXPECT_EQ(CheckCmsDims(4611686018427387904, 1), kMemory);
  EXPECT_EQ(CheckCmsDims(1, 144115188075855872), kMemory);
  // The spec's INITBYPROB examples.
  EXPECT_EQ(CheckProb(2.1e-19, 0.5), kInvalid);
  EXPECT_EQ(CheckProb(1e-20, 0.5), kInvalid);
  EXPECT_EQ(CheckProb(1e-300, 0.5), kInvalid);
  EXPECT_EQ(CheckProb(0.01, 1e-46), kInvalid);
  EXPECT_EQ(CheckProb(0.1, 1e-300), kInvalid);
  EXPECT_EQ(CheckProb(2.2e-19, 0.5), kMemory);
  EXPECT_EQ(CheckProb(5e-19, 0.5), kMemory);
  EXPECT_EQ(CheckProb(1e-17, 0.5), kMemory);
  EXPECT_EQ(CheckProb(0.01, 1e-45), kOk);
  EXPECT_EQ(CheckProb(0.001, 0.01), kOk);
  // Sizes the recordings create.
  EXPECT_EQ(CheckCmsDims(1, 1), kOk);
  EXPECT_EQ(CheckCmsDims(250000, 8), kOk);
  EXPECT_EQ(CheckCmsDims(26245, 1), kOk);
  // Below 1 (INITBYDIM never gets here with those, INITBYPROB does).
  EXPECT_EQ(CheckCmsDims(0, 5), kInvalid);
  EXPECT_EQ(CheckCmsDims(5, 0), kInvalid);
  EXPECT_EQ(CheckCmsDims(-1, 5), kInvalid);
  EXPECT_EQ(CheckCmsDims(INT64_MIN, 1), kInvalid);
}

TEST(CmsDimsTest, MemoryBounds) {
  constexpr auto kOk = CmsDimsCheck::kOk;
  constexpr auto kMemory = CmsDimsCheck::kInsufficientMemory;
  // RedisBloom's own bound, cells > SIZE_MAX / 4, whatever the limit.
  constexpr int64_t kMaxCells = static_cast<int64_t>(SIZE_MAX / 4);  // 2^62 - 1
  EXPECT_EQ(CheckCmsDims(kMaxCells, 1, UINT64_MAX), kOk);
  EXPECT_EQ(CheckCmsDims(kMaxCells + 1, 1, UINT64_MAX), kMemory);
  // The configurable limit on 4 * width * depth bytes: inclusive.
  EXPECT_EQ(CheckCmsDims(1000, 5, 20000), kOk);
  EXPECT_EQ(CheckCmsDims(1001, 5, 20000), kMemory);
  EXPECT_EQ(CheckCmsDims(1, 1, 3), kMemory);
  // The default: 2^47 bytes = 2^45 cells.
  EXPECT_EQ(kCmsDefaultMaxBytes, uint64_t{1} << 47);
  EXPECT_EQ(CheckCmsDims(int64_t{1} << 45, 1), kOk);
  EXPECT_EQ(CheckCmsDims((int64_t{1} << 45) + 1, 1), kMemory);
  // Invalid arguments win over memory.
  EXPECT_EQ(CheckCmsDims(INT64_MAX, 2, 0), CmsDimsCheck::kInvalidInitArguments);
}

// ---------------------------------------------------------------------------------------------
// Counters.

TEST(CmsCounterTest, SaturatingAdd) {
  EXPECT_EQ(CmsSaturatingAdd(0, 0), 0u);
  EXPECT_EQ(CmsSaturatingAdd(0, 1), 1u);
  EXPECT_EQ(CmsSaturatingAdd(4294967200u, 1), 4294967201u);
  EXPECT_EQ(CmsSaturatingAdd(4294967201u, 94), 4294967295u);  // exactly the maximum
  EXPECT_EQ(CmsSaturatingAdd(4294967201u, 95), kCmsCellMax);  // wraps to 0 < 95
  EXPECT_EQ(CmsSaturatingAdd(kCmsCellMax, 0), kCmsCellMax);
  EXPECT_EQ(CmsSaturatingAdd(kCmsCellMax, 1), kCmsCellMax);
  EXPECT_EQ(CmsSaturatingAdd(0, 4294967295u), kCmsCellMax);
  // Increments of 2^32 and more saturate whatever the cell: their low 32 bits are below them.
  EXPECT_EQ(CmsSaturatingAdd(0, uint64_t{1} << 32), kCmsCellMax);
  EXPECT_EQ(CmsSaturatingAdd(3, (uint64_t{1} << 32) + 5), kCmsCellMax);
  EXPECT_EQ(CmsSaturatingAdd(0, 8589934592u), kCmsCellMax);
  EXPECT_EQ(CmsSaturatingAdd(7, uint64_t{INT64_MAX}), kCmsCellMax);
  // It is min(cell + v, UINT32_MAX) everywhere.
  for (uint64_t cell : {0ull, 1ull, 1000ull, 2147483648ull, 4294967294ull, 4294967295ull}) {
    for (uint64_t v : {0ull, 1ull, 2ull, 4294967295ull, 4294967296ull, 9223372036854775807ull}) {
      const uint64_t want = cell + v > 4294967295ull ? 4294967295ull : cell + v;
      EXPECT_EQ(CmsSaturatingAdd(static_cast<uint32_t>(cell), v), want) << cell << "+" << v;
    }
  }
}

TEST(CmsCounterTest, WrapsAndShowsSigned) {
  uint64_t counter = 0;
  counter = CmsCounterAdd(counter, INT64_MAX);
  EXPECT_EQ(CmsCounterShown(counter), INT64_MAX);
  counter = CmsCounterAdd(counter, INT64_MAX);
  EXPECT_EQ(CmsCounterShown(counter), -2);  // two INCRBYs of 2^63-1
  EXPECT_EQ(CmsCounterShown(kTwo63), INT64_MIN);
  EXPECT_EQ(CmsCounterShown(UINT64_MAX), -1);
  EXPECT_EQ(CmsCounterShown(0), 0);

  // The incrby_values recording: the count after each step.
  counter = 0;
  for (uint64_t v : {1ull, 0ull, 0ull, 4294967200ull, 1ull, 95ull, 1ull, 0ull}) {
    counter = CmsCounterAdd(counter, v);
  }
  EXPECT_EQ(CmsCounterShown(counter), 4294967298);
  for (uint64_t v : {4294967295ull, 4294967296ull, 5ull, 8589934592ull, 6ull}) {
    counter = CmsCounterAdd(counter, v);
  }
  EXPECT_EQ(CmsCounterShown(counter), 21474836492);
  counter = CmsCounterAdd(counter, 9223372036854775807ull);
  EXPECT_EQ(CmsCounterShown(counter), -9223372015379939317);
  counter = CmsCounterAdd(counter, 9223372036854775807ull);
  EXPECT_EQ(CmsCounterShown(counter), 21474836490);
  counter = CmsCounterAdd(counter, 9223372036854775000ull);
  EXPECT_EQ(CmsCounterShown(counter), -9223372015379940126);
}

TEST(CmsSketchTest, IncrByAndQuery) {
  CmsSketch s = NewCmsSketch(10, 5);
  ASSERT_EQ(s.cells.size(), 50u);
  EXPECT_EQ(CmsQuery(s, "x"), 0u);
  EXPECT_EQ(CmsIncrBy(&s, "x", 1), 1u);
  EXPECT_EQ(CmsIncrBy(&s, "x", 0), 1u);
  EXPECT_EQ(CmsIncrBy(&s, "never", 0), CmsQuery(s, "never"));
  // One cell per row, each in its row.
  int nonzero = 0;
  for (uint64_t row = 0; row < 5; ++row) {
    for (uint64_t col = 0; col < 10; ++col) nonzero += s.cells[row * 10 + col] != 0;
  }
  EXPECT_EQ(nonzero, 5);
  // A saturated item reports UINT32_MAX (the "INCRBY overflow" element), even for 0.
  EXPECT_EQ(CmsIncrBy(&s, "big", 4294967200u), 4294967200u);
  EXPECT_EQ(CmsIncrBy(&s, "big", 95), kCmsCellMax);
  EXPECT_EQ(CmsIncrBy(&s, "big", 0), kCmsCellMax);
  EXPECT_EQ(CmsQuery(s, "big"), kCmsCellMax);
  EXPECT_EQ(CmsQuery(s, "x"), 1u);
  EXPECT_EQ(s.counter, uint64_t{1} + 4294967200u + 95u);

  // Width 1: every item shares the row's only cell, so the minimum is the total.
  CmsSketch one = NewCmsSketch(1, 1);
  EXPECT_EQ(CmsIncrBy(&one, "a", 2), 2u);
  EXPECT_EQ(CmsIncrBy(&one, "b", 3), 5u);
  EXPECT_EQ(CmsQuery(one, "c"), 5u);
}

// ---------------------------------------------------------------------------------------------
// MERGE.

bool Cell(std::vector<uint32_t> values, std::vector<int64_t> weights, uint32_t* out = nullptr) {
  uint32_t v = 0;
  const bool ok = CmsMergeCell(values, weights, &v);
  if (out != nullptr) *out = v;
  return ok;
}

TEST(CmsMergeTest, CellSums) {
  uint32_t v = 0;
  EXPECT_TRUE(Cell({3}, {1}, &v));
  EXPECT_EQ(v, 3u);
  EXPECT_TRUE(Cell({3, 4, 5}, {9, 6, 9}, &v));
  EXPECT_EQ(v, 27u + 24u + 45u);
  EXPECT_TRUE(Cell({7, 7}, {0, 0}, &v));
  EXPECT_EQ(v, 0u);
  EXPECT_TRUE(Cell({15, 15}, {3, -2}, &v));  // merge_weights: wa twice, WEIGHTS 3 -2
  EXPECT_EQ(v, 15u);
  EXPECT_TRUE(Cell({2147483648u}, {1}, &v));
  EXPECT_EQ(v, 2147483648u);
  EXPECT_TRUE(Cell({kCmsCellMax}, {1}, &v));  // a saturated cell merges as is
  EXPECT_EQ(v, kCmsCellMax);
  // A partial sum may be negative; the total decides.
  EXPECT_TRUE(Cell({5, 10}, {-1, 1}, &v));
  EXPECT_EQ(v, 5u);
}

TEST(CmsMergeTest, CellOverflows) {
  // merge_overflow: above UINT32_MAX.
  EXPECT_FALSE(Cell({kCmsCellMax, kCmsCellMax}, {1, 1}));
  EXPECT_FALSE(Cell({2147483648u, 2147483648u}, {1, 1}));
  EXPECT_FALSE(Cell({2147483648u}, {2}));
  // merge_weights: below 0.
  EXPECT_FALSE(Cell({0, 5}, {1, -1}));
  EXPECT_FALSE(Cell({30, 4}, {1, -10}));
  // int64 overflow of a product, or of a partial sum even when the exact total would fit.
  EXPECT_FALSE(Cell({kCmsCellMax}, {INT64_MAX}));
  EXPECT_FALSE(Cell({2}, {INT64_MIN}));
  EXPECT_FALSE(Cell({1, 1, 1}, {INT64_MAX, 1, -INT64_MAX}));
  uint32_t v = 0;
  EXPECT_TRUE(Cell({1, 1, 1}, {INT64_MAX, -INT64_MAX, 1}, &v));  // same terms, other order
  EXPECT_EQ(v, 1u);
  EXPECT_TRUE(Cell({0}, {INT64_MIN}, &v));  // 0 * anything is 0
  EXPECT_EQ(v, 0u);
}

bool Counter(std::vector<uint64_t> counters, std::vector<int64_t> weights,
             uint64_t* out = nullptr) {
  uint64_t v = 0;
  const bool ok = CmsMergeCounter(counters, weights, &v);
  if (out != nullptr) *out = v;
  return ok;
}

TEST(CmsMergeTest, Counters) {
  uint64_t v = 0;
  EXPECT_TRUE(Counter({10, 20}, {2, 1}, &v));
  EXPECT_EQ(v, 40u);
  EXPECT_TRUE(Counter({4294967298u}, {1}, &v));
  EXPECT_EQ(v, 4294967298u);
  // merge_overflow: a counter above 2^63-1 (INFO shows -2) fails with weight 1, passes with 0.
  EXPECT_FALSE(Counter({UINT64_MAX - 1}, {1}));
  EXPECT_TRUE(Counter({UINT64_MAX - 1}, {0}, &v));
  EXPECT_EQ(v, 0u);
  EXPECT_FALSE(Counter({UINT64_MAX - 1}, {-1}));
  // 2^62 with weight 2 overflows int64; with 1, twice, the sum does.
  EXPECT_FALSE(Counter({uint64_t{1} << 62}, {2}));
  EXPECT_TRUE(Counter({uint64_t{1} << 62}, {1}, &v));
  EXPECT_EQ(v, uint64_t{1} << 62);
  EXPECT_FALSE(Counter({uint64_t{1} << 62, uint64_t{1} << 62}, {1, 1}));
  // Negative totals fail.
  EXPECT_FALSE(Counter({5, 3}, {1, -2}));
  // The exact product is what must fit: 2^63 * -1 = INT64_MIN does, and later sources may bring
  // the sum back to >= 0.
  EXPECT_FALSE(Counter({kTwo63}, {-1}));
  EXPECT_TRUE(Counter({kTwo63, uint64_t{1} << 62, uint64_t{1} << 62, uint64_t{1} << 62},
                      {-1, 1, 1, 1}, &v));
  EXPECT_EQ(v, uint64_t{1} << 62);
}

CmsSketch Filled(uint64_t width, uint64_t depth,
                 std::vector<std::pair<std::string, uint64_t>> adds) {
  CmsSketch s = NewCmsSketch(width, depth);
  for (const auto& [item, v] : adds) CmsIncrBy(&s, item, v);
  return s;
}

TEST(CmsMergeTest, WholeSketch) {
  const CmsSketch a = Filled(16, 5, {{"x", 11}, {"y", 6}});
  const CmsSketch b = Filled(16, 5, {{"z", 17}});
  CmsSketch dest = Filled(16, 5, {{"old", 9}});

  ASSERT_TRUE(CmsMerge({{&a, 1}, {&b, 2}}, &dest));
  EXPECT_EQ(dest.counter, 17u + 34u);
  EXPECT_EQ(CmsQuery(dest, "x"), 11u);
  EXPECT_EQ(CmsQuery(dest, "z"), 34u);
  EXPECT_EQ(CmsQuery(dest, "old"), 0u);  // replaced, not added to
  for (size_t j = 0; j < dest.cells.size(); ++j) {
    EXPECT_EQ(dest.cells[j], a.cells[j] + 2 * b.cells[j]);
  }

  // The destination as its own source: read before it is written.
  CmsSketch self = a;
  ASSERT_TRUE(CmsMerge({{&self, 1}, {&self, 2}, {&b, 1}}, &self));
  EXPECT_EQ(CmsQuery(self, "x"), 33u);
  EXPECT_EQ(CmsQuery(self, "z"), 17u);
  EXPECT_EQ(self.counter, 3 * 17u + 17u);

  // Weight 0 empties it.
  ASSERT_TRUE(CmsMerge({{&self, 0}}, &self));
  EXPECT_EQ(self.counter, 0u);
  EXPECT_EQ(CmsQuery(self, "x"), 0u);

  // A failure changes nothing: one cell out of range, or only the counter.
  CmsSketch sat = Filled(16, 5, {{"sat", 4294967295u}, {"small", 3}});
  const CmsSketch before = dest;
  EXPECT_FALSE(CmsMerge({{&sat, 1}, {&sat, 1}}, &dest));
  EXPECT_FALSE(CmsMerge({{&a, 1}, {&b, -1}}, &dest));
  CmsSketch wrapped = Filled(16, 5, {{"h", INT64_MAX}, {"h", INT64_MAX}});
  EXPECT_FALSE(CmsMerge({{&wrapped, 1}}, &dest));
  EXPECT_EQ(dest.cells, before.cells);
  EXPECT_EQ(dest.counter, before.counter);
  ASSERT_TRUE(CmsMerge({{&wrapped, 0}}, &dest));
  EXPECT_EQ(dest.counter, 0u);
}

}  // namespace
}  // namespace bloomproxy::filters
