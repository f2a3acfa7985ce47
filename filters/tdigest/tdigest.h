// RedisBloom's t-digest (TDIGEST.*) as a pure in-memory reference model: the library pinned by
// RedisBloom (RedisBloom/t-digest-c at 5b89d70, src/tdigest.c) and the command-level maths of
// src/rm_tdigest.c, to the last bit of every double; RedisBloom's recorded replies in
// tests/fixtures/tdigest/ are the judge (tests/unit/tdigest_model_test.cc replays them).
//
// Bit-exactness needs IEEE binary64, round-to-nearest, the same operation order as the C
// library, no FMA contraction (this folder is compiled with -ffp-contract=off), no -ffast-math,
// glibc's log, and int64 weights. A NaN produced by arithmetic (inf - inf, 0/0) is negative on
// x86-64 and prints "-nan"; the NaN the library returns as a constant prints "nan".
#pragma once

#include <cfloat>
#include <cstdint>
#include <string>
#include <vector>

namespace bloomproxy::filters {

// Default compression of TDIGEST.CREATE without COMPRESSION.
inline constexpr int64_t kTdigestDefaultCompression = 100;
// Above this (compared as doubles) RedisBloom refuses to allocate a digest: CREATE replies
// "allocation failed", MERGE "allocation of destination digest failed".
inline constexpr double kTdigestMaxCompression = 384307168202282315.0;

struct TdigestNode {
  double mean = 0;
  int64_t weight = 0;
};

struct Tdigest {
  int64_t compression = kTdigestDefaultCompression;
  double min = DBL_MAX;
  double max = -DBL_MAX;
  // nodes[0, merged) are the centroids sorted by mean, nodes[merged, size) the buffer in arrival
  // order (the library's M and U are merged and nodes.size() - merged).
  std::vector<TdigestNode> nodes;
  size_t merged = 0;
  int64_t merged_weight = 0;
  int64_t unmerged_weight = 0;
  int64_t total_compressions = 0;
};

// 6*C + 10 node slots.
int64_t TdigestCapacity(int64_t compression);
// INFO's "Memory usage": 80 + 16 * capacity.
int64_t TdigestMemoryUsage(int64_t compression);

Tdigest NewTdigest(int64_t compression);
// TDIGEST.RESET: everything but the compression.
void TdigestReset(Tdigest* t);
// Observations: merged + unmerged weight.
int64_t TdigestSize(const Tdigest& t);
size_t TdigestUnmergedNodes(const Tdigest& t);

// td_compress: sorts all nodes with the library's quicksort and merges neighbours. No-op when
// nothing is buffered; a digest of total weight <= 1 is sorted but never merged.
void TdigestCompress(Tdigest* t);
// Adds one node (TDIGEST.ADD: weight 1; MERGE: a centroid). Compresses first when the buffer is
// full. False (nothing added, "overflow detected") when the slots are still full after that
// compression (it merged nothing: huge weights with C = 1 do it, the recordings' huge_weights),
// or when the weights would pass INT64_MAX.
bool TdigestAddNode(Tdigest* t, double mean, int64_t weight);
// td_merge(into, from): compresses both in place, then adds every node of `from`. False on the
// first overflow (the nodes before it stay added).
bool TdigestMergeInto(Tdigest* into, Tdigest* from);

// MIN / MAX: NaN when empty. No compression.
double TdigestMin(const Tdigest& t);
double TdigestMax(const Tdigest& t);
// td_quantile of every q (each in [0,1]; TDIGEST.QUANTILE). Compresses.
std::vector<double> TdigestQuantiles(Tdigest* t, const std::vector<double>& qs);
// td_quantile(p) (the BYRANK path). Compresses.
double TdigestQuantile(Tdigest* t, double p);
// td_cdf(x). Compresses.
double TdigestCdf(Tdigest* t, double x);
// td_trimmed_mean(lo, hi). Compresses.
double TdigestTrimmedMean(Tdigest* t, double lo, double hi);
// TDIGEST.RANK / REVRANK of every value (size, min and max read once, before any compression).
std::vector<int64_t> TdigestRanks(Tdigest* t, const std::vector<double>& values, bool reverse);
// TDIGEST.BYRANK / BYREVRANK of every rank (>= 0).
std::vector<double> TdigestByRanks(Tdigest* t, const std::vector<int64_t>& ranks, bool reverse);

// C's (long long) cast of a double as x86-64 does it: NaN and out of range give INT64_MIN.
int64_t TdigestToInt64(double d);

// A double as Redis replies it: "%.17g" (glibc), "inf", "-inf", "nan", "-nan" (NaN keeps its
// sign).
std::string TdigestFormatDouble(double d);
// The reply frame of a double: a bulk string in RESP2, a double frame (",...\r\n") in RESP3.
std::string TdigestDoubleReply(double d, bool resp3);

}  // namespace bloomproxy::filters
