#include "filters/cms/cms.h"

#include <climits>
#include <cmath>
#include <utility>

#include "filters/common/murmur_hash.h"

namespace bloomproxy::filters {
namespace {

// C's conversion of a double to size_t as x86-64 code does it: truncation below 2^64, and 0 for
// anything at or above 2^64 or infinite (the 64-bit cvttsd2si gives its "indefinite" value
// there, which the unsigned conversion sequence turns into 0). In C++ that conversion is
// undefined, so the out-of-range case is spelled out. Callers never pass NaN or a negative value
// below -1 (a ceil of a negative zero or of a value in (-1, 0] truncates to 0).
uint64_t DoubleToSizeT(double x) {
  constexpr double kTwo64 = 18446744073709551616.0;
  if (!(x < kTwo64)) return 0;
  if (!(x > -1.0)) return 0;
  return static_cast<uint64_t>(x);
}

}  // namespace

uint64_t CmsItemCell(std::string_view item, uint64_t width, uint64_t row) {
  // RedisBloom passes the row (a size_t) as the unsigned int seed and the length as an int.
  const uint32_t hash =
      MurmurHash2(item.data(), static_cast<int>(item.size()), static_cast<uint32_t>(row));
  return CmsCell(hash, width, row);
}

std::vector<uint64_t> CmsItemCells(std::string_view item, uint64_t width, uint64_t depth) {
  std::vector<uint64_t> cells;
  cells.reserve(depth);
  for (uint64_t row = 0; row < depth; ++row) cells.push_back(CmsItemCell(item, width, row));
  return cells;
}

void CmsDimsFromProb(double error, double prob, uint64_t* width, uint64_t* depth) {
  // width: double division and ceil.
  *width = DoubleToSizeT(std::ceil(2.0 / error));
  // depth: RedisBloom calls log10f on the probability (narrowed to float) and on the double
  // literal 0.5, divides the two floats as a float and only then widens for ceil. The float
  // steps matter: a probability of 1e-45 (a float denormal) gives 149 where doubles give 150,
  // and one that narrows to 0.0f gives -inf / negative = +inf, hence depth 0.
  const float numerator = std::log10(static_cast<float>(prob));
  const float denominator = std::log10(0.5f);
  const float quotient = numerator / denominator;
  *depth = DoubleToSizeT(std::ceil(static_cast<double>(quotient)));
}

CmsDimsCheck CheckCmsDims(int64_t width, int64_t depth, uint64_t max_bytes) {
  if (width < 1 || depth < 1 || width > LLONG_MAX / depth) {
    return CmsDimsCheck::kInvalidInitArguments;
  }
  // width * depth <= LLONG_MAX here, so the products below cannot wrap.
  const uint64_t cells = static_cast<uint64_t>(width) * static_cast<uint64_t>(depth);
  if (cells > SIZE_MAX / sizeof(uint32_t)) return CmsDimsCheck::kInsufficientMemory;
  if (cells * sizeof(uint32_t) > max_bytes) return CmsDimsCheck::kInsufficientMemory;
  return CmsDimsCheck::kOk;
}

CmsSketch NewCmsSketch(uint64_t width, uint64_t depth) {
  CmsSketch sketch;
  sketch.width = width;
  sketch.depth = depth;
  sketch.cells.assign(width * depth, 0);
  return sketch;
}

uint32_t CmsIncrBy(CmsSketch* sketch, std::string_view item, uint64_t v) {
  uint32_t min = kCmsCellMax;
  for (uint64_t row = 0; row < sketch->depth; ++row) {
    uint32_t& cell = sketch->cells[CmsItemCell(item, sketch->width, row)];
    cell = CmsSaturatingAdd(cell, v);
    if (cell < min) min = cell;
  }
  sketch->counter = CmsCounterAdd(sketch->counter, v);
  return min;
}

uint32_t CmsQuery(const CmsSketch& sketch, std::string_view item) {
  uint32_t min = kCmsCellMax;
  for (uint64_t row = 0; row < sketch.depth; ++row) {
    const uint32_t cell = sketch.cells[CmsItemCell(item, sketch.width, row)];
    if (cell < min) min = cell;
  }
  return min;
}

bool CmsMergeCell(const std::vector<uint32_t>& values, const std::vector<int64_t>& weights,
                  uint32_t* out) {
  int64_t total = 0;
  for (size_t k = 0; k < values.size(); ++k) {
    int64_t product = 0;
    // A partial sum may go negative (a negative weight first); only the total is bounded.
    if (__builtin_mul_overflow(static_cast<int64_t>(values[k]), weights[k], &product) ||
        __builtin_add_overflow(total, product, &total)) {
      return false;
    }
  }
  if (total < 0 || total > static_cast<int64_t>(kCmsCellMax)) return false;
  *out = static_cast<uint32_t>(total);
  return true;
}

bool CmsMergeCounter(const std::vector<uint64_t>& counters, const std::vector<int64_t>& weights,
                     uint64_t* out) {
  int64_t total = 0;
  for (size_t k = 0; k < counters.size(); ++k) {
    int64_t product = 0;
    // RedisBloom multiplies the size_t counter by the long long weight with
    // __builtin_mul_overflow into an int64: the exact product must fit, whatever the operand
    // types, which the builtin checks the same way here.
    if (__builtin_mul_overflow(counters[k], weights[k], &product) ||
        __builtin_add_overflow(total, product, &total)) {
      return false;
    }
  }
  if (total < 0) return false;
  *out = static_cast<uint64_t>(total);
  return true;
}

bool CmsMerge(const std::vector<CmsMergeSource>& sources, CmsSketch* out) {
  const CmsSketch& first = *sources.front().sketch;
  const size_t cells = first.cells.size();
  std::vector<int64_t> weights;
  std::vector<uint64_t> counters;
  for (const CmsMergeSource& s : sources) {
    weights.push_back(s.weight);
    counters.push_back(s.sketch->counter);
  }
  // Everything is computed before anything is written, so a failure changes nothing and a
  // destination that is also a source is read whole before it is replaced.
  std::vector<uint32_t> merged(cells);
  std::vector<uint32_t> values(sources.size());
  for (size_t j = 0; j < cells; ++j) {
    for (size_t k = 0; k < sources.size(); ++k) values[k] = sources[k].sketch->cells[j];
    if (!CmsMergeCell(values, weights, &merged[j])) return false;
  }
  uint64_t counter = 0;
  if (!CmsMergeCounter(counters, weights, &counter)) return false;
  out->width = first.width;
  out->depth = first.depth;
  out->counter = counter;
  out->cells = std::move(merged);
  return true;
}

}  // namespace bloomproxy::filters
