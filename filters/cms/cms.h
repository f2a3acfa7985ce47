// Count-min sketch maths, exactly as RedisBloom computes it (src/cms.c, src/rm_cms.c), so that a
// sketch kept by bloomproxy in plain Redis strings has the same cells, the same estimates and the
// same errors as a RedisBloom sketch built by the same commands. Pure functions; no sockets.
//
// The sketch (Cormode & Muthukrishnan, "An Improved Data Stream Summary: The Count-Min Sketch
// and its Applications", 2005) is width*depth uint32 cells, row-major, plus a 64-bit counter of
// all increments:
//
//   cell index:  0 .. width-1 | width .. 2*width-1 | ... | (depth-1)*width .. depth*width-1
//                   row 0     |       row 1        | ... |          row depth-1
//
// Hashing: row i of item s uses cell (MurmurHash2(s, len(s), seed = i) % width) + i * width.
// Dimensions from CMS.INITBYPROB (error e, probability p), with RedisBloom's mixed precision:
//   width = (size_t) ceil(2.0 / e)                                   (double)
//   depth = (size_t) ceil(log10f((float) p) / log10f(0.5f))          (float logs and division)
// Counters: a cell saturates at 4294967295 (UINT32_MAX); the counter wraps mod 2^64 and is shown
// as a signed 64-bit integer. MERGE computes weighted sums in int64 and refuses, rather than
// saturates, any sum that overflows or leaves [0, UINT32_MAX].
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace bloomproxy::filters {

inline constexpr uint32_t kCmsCellMax = UINT32_MAX;

// The largest sketch, in bytes of cells (4 * width * depth), that CMS.INITBY* accepts before
// answering "CMS: Insufficient memory to create the key" (see CheckCmsDims). 2^47 bytes is the
// whole user address space of an x86-64 or arm64 process with 48-bit virtual addresses:
// RedisBloom's calloc of that much fails on any such host, so at and above it the proxy's answer
// is the one RedisBloom gives everywhere. Below it RedisBloom's answer depends on the server's
// memory and overcommit policy; a caller that knows its upstream's capacity passes a smaller
// limit.
inline constexpr uint64_t kCmsDefaultMaxBytes = uint64_t{1} << 47;

// ---------------------------------------------------------------------------------------------
// Hashing.

// The cell of row `row` for an item whose row hash is `hash`: (hash % width) + row * width.
// width >= 1.
inline uint64_t CmsCell(uint32_t hash, uint64_t width, uint64_t row) {
  return hash % width + row * width;
}

// The cell of `item` in row `row` (MurmurHash2 seeded with the row number).
uint64_t CmsItemCell(std::string_view item, uint64_t width, uint64_t row);

// The `depth` cells of `item`, row 0 first. width, depth >= 1.
std::vector<uint64_t> CmsItemCells(std::string_view item, uint64_t width, uint64_t depth);

// ---------------------------------------------------------------------------------------------
// Dimensions.

// CMS.INITBYPROB's dimensions for an error in (0, 1) and a probability in (0, 1), computed with
// RedisBloom's arithmetic, float parts included. A double at or above 2^64, or an infinite one,
// converts to 0, as the x86-64 code RedisBloom is compiled to does (for example an error of
// 1e-20, or a probability that is 0 as a float such as 1e-46); CheckCmsDims then rejects it.
// Probabilities that round to 1.0f (0.99999999) give depth 0 the same way.
void CmsDimsFromProb(double error, double prob, uint64_t* width, uint64_t* depth);

enum class CmsDimsCheck {
  kOk,
  kInvalidInitArguments,  // "CMS: invalid init arguments"
  kInsufficientMemory,    // "CMS: Insufficient memory to create the key"
};

// RedisBloom's checks after parsing, in its order, on width and depth read as long long (a
// CmsDimsFromProb result >= 2^63 is negative then):
//   1. width < 1 || depth < 1 || width > LLONG_MAX / depth      -> invalid init arguments
//   2. width * depth > SIZE_MAX / 4 (RedisBloom's own bound)     -> insufficient memory
//   3. 4 * width * depth > max_bytes (stands for RedisBloom's failed calloc; see
//      kCmsDefaultMaxBytes)                                      -> insufficient memory
// With the default limit every example the spec records comes out as recorded: 2147483648^2,
// 9223372036854775807x1 and 4611686018427387904x1 by rule 2; 2^40x2^17, 1x2^57 and error 1e-17
// or 5e-19 (2^57 cells and more) by rule 3.
CmsDimsCheck CheckCmsDims(int64_t width, int64_t depth, uint64_t max_bytes = kCmsDefaultMaxBytes);

// ---------------------------------------------------------------------------------------------
// Counters.

// CMS.INCRBY's update of one cell: RedisBloom stores (uint32)(cell + v) and, when that is below
// v (compared in 64 bits), UINT32_MAX instead. That is exactly min(cell + v, UINT32_MAX) for any
// v up to 2^64-1 (INCRBY's v is at most 2^63-1): any v >= 2^32 saturates.
inline uint32_t CmsSaturatingAdd(uint32_t cell, uint64_t v) {
  const uint32_t sum = static_cast<uint32_t>(cell + v);
  return sum < v ? kCmsCellMax : sum;
}

// The counter after adding v: wraps mod 2^64, never saturates.
inline uint64_t CmsCounterAdd(uint64_t counter, uint64_t v) { return counter + v; }

// The counter as CMS.INFO shows it (a long long): two increments of 2^63-1 show as -2.
inline int64_t CmsCounterShown(uint64_t counter) {
  return counter > static_cast<uint64_t>(INT64_MAX)
             ? -static_cast<int64_t>(~counter) - 1  // two's complement, without relying on
             : static_cast<int64_t>(counter);       // the implementation-defined cast
}

// An in-memory sketch: what the model test keeps, and what a plan can fold replies into.
struct CmsSketch {
  uint64_t width = 0;
  uint64_t depth = 0;
  uint64_t counter = 0;
  std::vector<uint32_t> cells;  // width * depth, row-major
};

// A new all-zero sketch (width * depth cells must fit in memory: callers check dims first).
CmsSketch NewCmsSketch(uint64_t width, uint64_t depth);

// CMS.INCRBY of one pair: updates the item's cells and the counter, returns the minimum of its
// cells after the update (UINT32_MAX means the reply element is "CMS: INCRBY overflow").
uint32_t CmsIncrBy(CmsSketch* sketch, std::string_view item, uint64_t v);

// CMS.QUERY of one item: the minimum of its cells.
uint32_t CmsQuery(const CmsSketch& sketch, std::string_view item);

// ---------------------------------------------------------------------------------------------
// MERGE.

// The weighted sum of one cell over the sources, RedisBloom's per-cell overflow check: each
// value * weight and each partial sum in int64 with overflow detection (partial sums may be
// negative), then the total must lie in [0, UINT32_MAX]. False means "CMS: MERGE overflow".
// values and weights have the same length.
bool CmsMergeCell(const std::vector<uint32_t>& values, const std::vector<int64_t>& weights,
                  uint32_t* out);

// The weighted sum of the counters: each counter (uint64) * weight computed exactly and required
// to fit in int64, partial sums in int64 with overflow detection, and a total >= 0. A counter
// above 2^63-1 therefore fails with any weight other than 0 (and -1 when it is exactly 2^63 gives
// -2^63, which later sources may bring back up). False means "CMS: MERGE overflow".
bool CmsMergeCounter(const std::vector<uint64_t>& counters, const std::vector<int64_t>& weights,
                     uint64_t* out);

// One source of a merge: its sketch and weight. The sketch must have dest's dimensions (the
// caller checked "width/depth is not equal"); it may be dest itself.
struct CmsMergeSource {
  const CmsSketch* sketch = nullptr;
  int64_t weight = 1;
};

// CMS.MERGE's computation: every cell and the counter as above. On success *out gets the merged
// cells and counter (width and depth from the first source) and true is returned; on any
// overflow nothing is written and false is returned. `sources` is not empty.
bool CmsMerge(const std::vector<CmsMergeSource>& sources, CmsSketch* out);

}  // namespace bloomproxy::filters
