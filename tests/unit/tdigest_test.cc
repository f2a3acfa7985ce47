// filters/tdigest/tdigest.h on hand-worked digests: the add rule, the quicksort, compression,
// the reads' edge cases (empty digest, one observation, equal observations, tails), MERGE and
// the reply formatting of doubles.
#include "filters/tdigest/tdigest.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace bloomproxy::filters {
namespace {

Tdigest Digest(int64_t compression, const std::vector<double>& values) {
  Tdigest t = NewTdigest(compression);
  for (double v : values) EXPECT_TRUE(TdigestAddNode(&t, v, 1));
  return t;
}

TEST(TdigestTest, NewDigestIsEmptyWithTheLibraryBounds) {
  const Tdigest t = NewTdigest(100);
  EXPECT_EQ(TdigestCapacity(100), 610);
  EXPECT_EQ(TdigestMemoryUsage(100), 9840);
  EXPECT_EQ(TdigestCapacity(1), 16);
  EXPECT_EQ(t.min, DBL_MAX);
  EXPECT_EQ(t.max, -DBL_MAX);
  EXPECT_EQ(TdigestSize(t), 0);
  EXPECT_EQ(t.total_compressions, 0);
}

TEST(TdigestTest, EmptyDigestReads) {
  Tdigest t = NewTdigest(100);
  EXPECT_EQ(TdigestFormatDouble(TdigestMin(t)), "nan");
  EXPECT_EQ(TdigestFormatDouble(TdigestMax(t)), "nan");
  EXPECT_EQ(TdigestFormatDouble(TdigestQuantiles(&t, {0.5})[0]), "nan");
  EXPECT_EQ(TdigestFormatDouble(TdigestCdf(&t, 1)), "nan");
  EXPECT_EQ(TdigestFormatDouble(TdigestTrimmedMean(&t, 0, 1)), "nan");
  EXPECT_EQ(TdigestRanks(&t, {1}, false), std::vector<int64_t>{-2});
  EXPECT_EQ(TdigestRanks(&t, {1}, true), std::vector<int64_t>{-2});
  EXPECT_EQ(TdigestFormatDouble(TdigestByRanks(&t, {0}, false)[0]), "nan");
  EXPECT_EQ(t.total_compressions, 0);
}

// A digest holding one observation is sorted but never compressed.
TEST(TdigestTest, OneObservationIsNeverCompressed) {
  Tdigest t = Digest(100, {7});
  EXPECT_EQ(TdigestMin(t), 7);
  EXPECT_EQ(TdigestMax(t), 7);
  EXPECT_EQ(TdigestFormatDouble(TdigestQuantiles(&t, {0, 0.5, 1})[1]), "nan");
  EXPECT_EQ(TdigestFormatDouble(TdigestCdf(&t, 7)), "nan");
  EXPECT_EQ(TdigestFormatDouble(TdigestCdf(&t, 100)), "nan");  // even out of range
  EXPECT_EQ(TdigestFormatDouble(TdigestTrimmedMean(&t, 0, 1)), "nan");
  EXPECT_EQ(TdigestByRanks(&t, {0, 1, 5}, false), (std::vector<double>{7, INFINITY, INFINITY}));
  EXPECT_EQ(TdigestByRanks(&t, {0, 1}, true), (std::vector<double>{7, -INFINITY}));
  EXPECT_EQ(TdigestRanks(&t, {7, 6, 8}, false), (std::vector<int64_t>{INT64_MIN, -1, 1}));
  EXPECT_EQ(TdigestRanks(&t, {7, 6, 8}, true), (std::vector<int64_t>{INT64_MIN, 1, -1}));
  EXPECT_EQ(t.merged, 0u);
  EXPECT_EQ(TdigestUnmergedNodes(t), 1u);
  EXPECT_EQ(t.total_compressions, 0);
}

TEST(TdigestTest, TwoEqualObservations) {
  Tdigest t = Digest(100, {3, 3});
  EXPECT_EQ(TdigestQuantiles(&t, {0, 0.5, 1}), (std::vector<double>{3, 3, 3}));
  EXPECT_EQ(TdigestCdf(&t, 3), 0.5);
  EXPECT_EQ(TdigestRanks(&t, {3}, false), std::vector<int64_t>{1});
  EXPECT_EQ(t.total_compressions, 1);
}

// 1, 2, 3, 4 stay four centroids (z = 2 * 100 / (2 pi 4 log 4) > 1/4); the replies RedisBloom
// gives (arity_and_case in the recordings).
TEST(TdigestTest, FourSingletons) {
  Tdigest t = Digest(100, {1, 2, 3, 4});
  EXPECT_EQ(TdigestQuantiles(&t, {0.5}), std::vector<double>{3});
  EXPECT_EQ(t.merged, 4u);
  EXPECT_EQ(t.total_compressions, 1);
  EXPECT_EQ(TdigestCdf(&t, 2), 0.375);  // (1 + 1/2) / 4: a centroid hit exactly
  EXPECT_EQ(TdigestCdf(&t, 2.5), 0.5);  // between two singletons: (1 + 1) / 4
  EXPECT_EQ(TdigestCdf(&t, 0), 0);
  EXPECT_EQ(TdigestCdf(&t, 5), 1);
  EXPECT_EQ(TdigestTrimmedMean(&t, 0, 1), 2.5);
  EXPECT_EQ(TdigestTrimmedMean(&t, 0.25, 0.75), 2.5);  // lw = 1, hw = 3: centroids 2 and 3
  EXPECT_EQ(TdigestTrimmedMean(&t, 0, 0.5), 1.5);
  EXPECT_EQ(TdigestRanks(&t, {2}, false), std::vector<int64_t>{1});
  EXPECT_EQ(TdigestRanks(&t, {2}, true), std::vector<int64_t>{2});
  EXPECT_EQ(TdigestRanks(&t, {0, 9}, false), (std::vector<int64_t>{-1, 4}));
  EXPECT_EQ(TdigestRanks(&t, {0, 9}, true), (std::vector<int64_t>{4, -1}));
  EXPECT_EQ(TdigestByRanks(&t, {0, 1, 4}, false), (std::vector<double>{1, 2, INFINITY}));
  EXPECT_EQ(TdigestByRanks(&t, {0, 1, 4}, true), (std::vector<double>{4, 3, -INFINITY}));
  EXPECT_EQ(t.total_compressions, 1);  // later reads find nothing buffered
}

// With C = 1 the capacity is 16: the 16th add is the first to compress, and compression keeps
// the smallest and the largest node alone.
TEST(TdigestTest, FullBufferCompressesBeforeTheAdd) {
  Tdigest t = Digest(1, {});
  for (int i = 1; i <= 15; ++i) ASSERT_TRUE(TdigestAddNode(&t, 16 - i, 1));
  EXPECT_EQ(t.total_compressions, 0);
  EXPECT_EQ(TdigestUnmergedNodes(t), 15u);
  ASSERT_TRUE(TdigestAddNode(&t, 100, 1));
  EXPECT_EQ(t.total_compressions, 1);
  EXPECT_EQ(TdigestUnmergedNodes(t), 1u);
  EXPECT_EQ(t.merged_weight, 15);
  EXPECT_EQ(t.unmerged_weight, 1);
  ASSERT_GE(t.merged, 3u);
  EXPECT_LT(t.merged, 15u);
  EXPECT_EQ(t.nodes[0].mean, 1);
  EXPECT_EQ(t.nodes[0].weight, 1);
  EXPECT_EQ(t.nodes[t.merged - 1].mean, 15);
  EXPECT_EQ(t.nodes[t.merged - 1].weight, 1);
  int64_t sum = 0;
  for (size_t i = 0; i < t.merged; ++i) {
    sum += t.nodes[i].weight;
    if (i > 0) {
      EXPECT_LT(t.nodes[i - 1].mean, t.nodes[i].mean);
    }
  }
  EXPECT_EQ(sum, 15);
}

// C = 1 over 1, 2, 3, 4 (W = 4, norm = 1 / (2 pi 4 log 4) ~ 0.0287): node 1 stays alone (q0 = 0),
// 2 and 3 merge (z ~ 0.057 <= 3/16 on both sides) into mean 2 + (3-2)*1/2 = 2.5, and 4 stays
// alone (q2 = 1).
TEST(TdigestTest, CompressionMergesByHand) {
  Tdigest t = Digest(1, {4, 2, 3, 1});
  TdigestCompress(&t);
  ASSERT_EQ(t.merged, 3u);
  EXPECT_EQ(t.nodes[0].mean, 1);
  EXPECT_EQ(t.nodes[0].weight, 1);
  EXPECT_EQ(t.nodes[1].mean, 2.5);
  EXPECT_EQ(t.nodes[1].weight, 2);
  EXPECT_EQ(t.nodes[2].mean, 4);
  EXPECT_EQ(t.nodes[2].weight, 1);
  EXPECT_EQ(t.merged_weight, 4);
  EXPECT_EQ(t.unmerged_weight, 0);
  EXPECT_EQ(t.total_compressions, 1);
  TdigestCompress(&t);  // nothing buffered: not counted
  EXPECT_EQ(t.total_compressions, 1);
}

// The library's quicksort is not stable: equal means keep the order it leaves them in, with
// their weights. [(5,1) (5,2) (5,3)]: pivot slot 1 swapped to the end, nothing is smaller, the
// pivot swapped back to slot 0 -> [(5,2) (5,3) (5,1)]; no merge (z > 1/4 everywhere).
TEST(TdigestTest, QuicksortOrderOfEqualMeans) {
  Tdigest t = NewTdigest(100);
  ASSERT_TRUE(TdigestAddNode(&t, 5, 1));
  ASSERT_TRUE(TdigestAddNode(&t, 5, 2));
  ASSERT_TRUE(TdigestAddNode(&t, 5, 3));
  TdigestCompress(&t);
  ASSERT_EQ(t.merged, 3u);
  EXPECT_EQ(t.nodes[0].weight, 2);
  EXPECT_EQ(t.nodes[1].weight, 3);
  EXPECT_EQ(t.nodes[2].weight, 1);
  EXPECT_EQ(TdigestCdf(&t, 5), 0.5);  // the whole run of equal means
}

// A hand-made merged digest: min 0, centroids (2, w4) (5, w2) (8, w4), max 10, weight 10.
// Nothing is buffered, so no read changes it.
Tdigest ThreeCentroids() {
  Tdigest t = NewTdigest(100);
  t.nodes = {{2, 4}, {5, 2}, {8, 4}};
  t.merged = 3;
  t.merged_weight = 10;
  t.min = 0;
  t.max = 10;
  return t;
}

// Each branch of the quantile walk, worked by hand (index = q * 10, wsf starts at w0/2 = 2).
TEST(TdigestTest, QuantileWalkBranches) {
  Tdigest t = ThreeCentroids();
  // a. index < w0/2: min + ((index-1) / (w0/2-1)) * (mean0 - min); below index 1 it goes under
  // min (QUANTILE has no index < 1 rule).
  EXPECT_EQ(TdigestQuantiles(&t, {0.15, 0.1, 0.05}), (std::vector<double>{1, 0, -1}));
  // b. index > MW-1 -> max.
  EXPECT_EQ(TdigestQuantiles(&t, {0.95, 1}), (std::vector<double>{10, 10}));
  // c. MW - index <= wl/2: max - ((MW-index-1) / (wl/2-1)) * (max - ml).
  EXPECT_EQ(TdigestQuantiles(&t, {0.85, 0.8}), (std::vector<double>{9, 8}));
  // d. between centroids: weighted average of the two means.
  EXPECT_EQ(TdigestQuantiles(&t, {0.3, 0.5, 0.6}), (std::vector<double>{3, 5, 6}));
  // The BYRANK path returns min below index 1.
  EXPECT_EQ(TdigestQuantile(&t, 0.05), 0);
  EXPECT_EQ(TdigestQuantile(&t, 0.3), 3);
  EXPECT_TRUE(std::isnan(TdigestQuantile(&t, 1.5)));
  EXPECT_EQ(t.total_compressions, 0);
}

TEST(TdigestTest, CdfTailsAndCentroids) {
  Tdigest t = ThreeCentroids();
  EXPECT_EQ(TdigestCdf(&t, 0), 0.05);   // x == min: 0.5 / MW
  EXPECT_EQ(TdigestCdf(&t, 1), 0.15);   // left tail: (1 + (1/2) * (4/2 - 1)) / 10
  EXPECT_EQ(TdigestCdf(&t, 10), 0.95);  // x == max: 1 - 0.5 / MW
  EXPECT_EQ(TdigestCdf(&t, 9), 0.85);   // right tail
  EXPECT_EQ(TdigestCdf(&t, 5), 0.5);    // on a centroid: (4 + 2/2) / 10
  EXPECT_EQ(TdigestCdf(&t, 3), 0.3);    // between: (0 + 4/2 + (3 * 1) / 3) / 10
  // The last centroid's mean is not matched by the loop (it stops at n-2): 1 - 0.5 / MW.
  EXPECT_EQ(TdigestCdf(&t, 8), 0.95);
  EXPECT_EQ(TdigestCdf(&t, -1), 0);
  EXPECT_EQ(TdigestCdf(&t, 11), 1);
}

TEST(TdigestTest, TrimmedMeanCuts) {
  Tdigest t = ThreeCentroids();
  // lw = 1, hw = 9: 3 of the first centroid, all of the second, 3 of the third: 40 / 8.
  EXPECT_EQ(TdigestTrimmedMean(&t, 0.1, 0.9), 5);
  EXPECT_EQ(TdigestTrimmedMean(&t, 0, 1), 5);
  EXPECT_EQ(TdigestTrimmedMean(&t, 0, 0.4), 2);  // hw = 4: the first centroid only
}

// RANK rounds half down, REVRANK rounds p half away from zero before subtracting.
TEST(TdigestTest, RankRounding) {
  Tdigest t = ThreeCentroids();
  // cdf(1) * 10 = 1.5: RANK 1, REVRANK round(10 - round(1.5)) = 8.
  EXPECT_EQ(TdigestRanks(&t, {1, 3, 9}, false), (std::vector<int64_t>{1, 3, 8}));
  EXPECT_EQ(TdigestRanks(&t, {1, 3, 9}, true), (std::vector<int64_t>{8, 7, 1}));
  EXPECT_EQ(TdigestByRanks(&t, {3}, false), std::vector<double>{3});
  EXPECT_EQ(TdigestByRanks(&t, {3}, true), std::vector<double>{6});  // p = ((10-3)-1)/10
  EXPECT_EQ(TdigestByRanks(&t, {10}, false), std::vector<double>{INFINITY});
}

TEST(TdigestTest, AddKeepsStrictMinMax) {
  Tdigest a = Digest(100, {-0.0, 0.0});
  EXPECT_EQ(TdigestFormatDouble(TdigestMin(a)), "-0");
  EXPECT_EQ(TdigestFormatDouble(TdigestMax(a)), "-0");  // 0 > -0 is false
  Tdigest b = Digest(100, {0.0, -0.0});
  EXPECT_EQ(TdigestFormatDouble(TdigestMin(b)), "0");
  EXPECT_EQ(TdigestFormatDouble(TdigestMax(b)), "0");
}

TEST(TdigestTest, OverflowAddsNothing) {
  Tdigest t = NewTdigest(100);
  ASSERT_TRUE(TdigestAddNode(&t, 1, INT64_MAX - 1));
  ASSERT_TRUE(TdigestAddNode(&t, 2, 1));
  EXPECT_FALSE(TdigestAddNode(&t, 3, 1));
  EXPECT_EQ(t.max, 2);
  EXPECT_EQ(TdigestSize(t), INT64_MAX);
}

TEST(TdigestTest, ResetKeepsTheCompression) {
  Tdigest t = Digest(7, {1, 2, 3});
  TdigestCompress(&t);
  TdigestReset(&t);
  EXPECT_EQ(t.compression, 7);
  EXPECT_EQ(TdigestSize(t), 0);
  EXPECT_TRUE(t.nodes.empty());
  EXPECT_EQ(t.total_compressions, 0);
  EXPECT_EQ(t.min, DBL_MAX);
}

// MERGE d 2 a b into a new d: a's centroids end up merged, b's unmerged, one compression.
TEST(TdigestTest, MergeCompressesTheTargetBeforeEachSource) {
  Tdigest a = Digest(100, {1, 2, 3});
  Tdigest b = Digest(100, {10, 20});
  Tdigest t = NewTdigest(100);
  ASSERT_TRUE(TdigestMergeInto(&t, &a));
  ASSERT_TRUE(TdigestMergeInto(&t, &b));
  EXPECT_EQ(t.total_compressions, 1);
  EXPECT_EQ(t.merged, 3u);
  EXPECT_EQ(TdigestUnmergedNodes(t), 2u);
  EXPECT_EQ(a.total_compressions, 1);  // sources are compressed in place
  EXPECT_EQ(b.total_compressions, 1);
  EXPECT_EQ(t.min, 1);
  EXPECT_EQ(t.max, 20);
}

TEST(TdigestTest, MergeOverflowStopsAtTheNode) {
  Tdigest big = NewTdigest(100);
  ASSERT_TRUE(TdigestAddNode(&big, 1, int64_t{1} << 61));
  ASSERT_TRUE(TdigestAddNode(&big, 2, int64_t{1} << 61));
  Tdigest t = NewTdigest(100);
  ASSERT_TRUE(TdigestMergeInto(&t, &big));
  // 2^62 merged, then 2^61 fits and the second 2^61 would make 2^63.
  EXPECT_FALSE(TdigestMergeInto(&t, &big));
  EXPECT_EQ(t.merged_weight, int64_t{1} << 62);
  EXPECT_EQ(t.unmerged_weight, int64_t{1} << 61);
  EXPECT_EQ(TdigestUnmergedNodes(t), 1u);
}

// With C = 1 and huge weights a compression can merge nothing; an add that finds every slot
// still taken is refused (RedisBloom: "overflow detected", the recordings' huge_weights). Here
// the 16 slots of C = 1 hold 16 centroids, so the compression before the add has nothing to do.
TEST(TdigestTest, FullSlotsAfterCompressionRefuseTheAdd) {
  Tdigest t = NewTdigest(1);
  for (int i = 0; i < 16; ++i) t.nodes.push_back(TdigestNode{static_cast<double>(i), 1});
  t.merged = 16;
  t.merged_weight = 16;
  t.min = 0;
  t.max = 15;
  EXPECT_FALSE(TdigestAddNode(&t, 3, 1));
  EXPECT_EQ(TdigestSize(t), 16);
  EXPECT_EQ(t.total_compressions, 0);
}

TEST(TdigestTest, ToInt64AsX86) {
  EXPECT_EQ(TdigestToInt64(NAN), INT64_MIN);
  EXPECT_EQ(TdigestToInt64(1e19), INT64_MIN);
  EXPECT_EQ(TdigestToInt64(-1e19), INT64_MIN);
  EXPECT_EQ(TdigestToInt64(-3.7), -3);
  EXPECT_EQ(TdigestToInt64(9223372036854774784.0), 9223372036854774784);
}

TEST(TdigestTest, FormatsDoublesAsRedis) {
  EXPECT_EQ(TdigestFormatDouble(0.1), "0.10000000000000001");
  EXPECT_EQ(TdigestFormatDouble(3), "3");
  EXPECT_EQ(TdigestFormatDouble(-0.0), "-0");
  EXPECT_EQ(TdigestFormatDouble(1e308), "1e+308");
  EXPECT_EQ(TdigestFormatDouble(INFINITY), "inf");
  EXPECT_EQ(TdigestFormatDouble(-INFINITY), "-inf");
  EXPECT_EQ(TdigestFormatDouble(NAN), "nan");
  EXPECT_EQ(TdigestFormatDouble(-std::numeric_limits<double>::quiet_NaN()), "-nan");
  EXPECT_EQ(TdigestDoubleReply(0.1, false), "$19\r\n0.10000000000000001\r\n");
  EXPECT_EQ(TdigestDoubleReply(NAN, false), "$3\r\nnan\r\n");
  EXPECT_EQ(TdigestDoubleReply(-INFINITY, false), "$4\r\n-inf\r\n");
  EXPECT_EQ(TdigestDoubleReply(0.1, true), ",0.10000000000000001\r\n");
  EXPECT_EQ(TdigestDoubleReply(INFINITY, true), ",inf\r\n");
}

}  // namespace
}  // namespace bloomproxy::filters
