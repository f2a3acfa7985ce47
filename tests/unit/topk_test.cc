// Hand-worked cases of the Top-K model (filters/topk/topk.h): the heap's sift-down and its tie
// rules, expulsions, count-0 entries, the decay-1 closed form against the step-by-step loop,
// uint32 wrapping, NUL cuts, the decay table, INFO's %.17g, and the decay's statistics under a
// seeded generator.
#include "filters/topk/topk.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "filters/common/murmur_hash.h"

namespace bloomproxy::filters {
namespace {

using namespace std::string_literals;  // NOLINT: items with NUL bytes

// A random source that must not be drawn: the test fails if it is.
const TopkRandom kNoRandom = [] {
  ADD_FAILURE() << "random source drawn";
  return 0.5;
};

// A heap whose slot i holds item "s<i>" with counts[i].
std::vector<TopkSlot> Heap(const std::vector<uint32_t>& counts) {
  std::vector<TopkSlot> heap;
  for (size_t i = 0; i < counts.size(); ++i) {
    heap.push_back(
        {TopkFingerprint("s" + std::to_string(i)), counts[i], true, "s" + std::to_string(i)});
  }
  return heap;
}

std::vector<std::string> Items(const std::vector<TopkSlot>& heap) {
  std::vector<std::string> out;
  for (const TopkSlot& s : heap) out.push_back(s.item);
  return out;
}

using Names = std::vector<std::string>;

// ---------------------------------------------------------------------------------------------
// Sift-down.

TEST(TopkSiftDown, EqualChildrenTheLeftOneMovesUpEvenWhenEqualToTheEntry) {
  std::vector<TopkSlot> heap = Heap({5, 5, 5});
  TopkSiftDown(&heap, 0);
  EXPECT_EQ(Items(heap), (Names{"s1", "s0", "s2"}));
}

TEST(TopkSiftDown, StrictlySmallerRightChildIsTaken) {
  std::vector<TopkSlot> heap = Heap({5, 3, 2});
  TopkSiftDown(&heap, 0);
  EXPECT_EQ(Items(heap), (Names{"s2", "s1", "s0"}));
}

TEST(TopkSiftDown, LargerChildrenStopAtOnce) {
  std::vector<TopkSlot> heap = Heap({4, 5, 6});
  TopkSiftDown(&heap, 0);
  EXPECT_EQ(Items(heap), (Names{"s0", "s1", "s2"}));
}

TEST(TopkSiftDown, BelowTheFirstLevelOnlyStrictlySmallerChildrenMove) {
  // s0 (4) swaps with s1 (2); then its smaller child s3 equals it (4): it stays at slot 1.
  std::vector<TopkSlot> heap = Heap({4, 2, 9, 4, 7});
  TopkSiftDown(&heap, 0);
  EXPECT_EQ(Items(heap), (Names{"s1", "s0", "s2", "s3", "s4"}));
  // With a strictly smaller grandchild it keeps going (ties between s3 and s4 go left).
  heap = Heap({5, 3, 3, 3, 3});
  TopkSiftDown(&heap, 0);
  EXPECT_EQ(Items(heap), (Names{"s1", "s3", "s2", "s0", "s4"}));
}

TEST(TopkSiftDown, LeavesAndTinyHeapsNeverMove) {
  std::vector<TopkSlot> heap = Heap({9, 1, 1, 1});
  TopkSiftDown(&heap, 2);  // (4 - 2) / 2 = 1 < 2: a leaf
  TopkSiftDown(&heap, 3);
  EXPECT_EQ(Items(heap), (Names{"s0", "s1", "s2", "s3"}));
  heap = Heap({9});
  TopkSiftDown(&heap, 0);
  EXPECT_EQ(Items(heap), (Names{"s0"}));
  // Slot 1 of four has one child, slot 3.
  heap = Heap({0, 9, 1, 1});
  TopkSiftDown(&heap, 1);
  EXPECT_EQ(Items(heap), (Names{"s0", "s3", "s2", "s1"}));
}

// ---------------------------------------------------------------------------------------------
// ADD / INCRBY through the heap.

// A decay-1 sketch of one row wide enough that the test's items have distinct buckets.
TopkSketch Wide(uint32_t k) { return NewTopkSketch({k, 1000, 1, 1.0}); }

TEST(TopkAdd, ExpelsSlotZeroAtEqualCounts) {
  TopkSketch s = Wide(1);
  ASSERT_NE(TopkBucketIndex("a", 1000, 0), TopkBucketIndex("b", 1000, 0));
  ASSERT_NE(TopkBucketIndex("c", 1000, 0), TopkBucketIndex("b", 1000, 0));
  ASSERT_NE(TopkBucketIndex("c", 1000, 0), TopkBucketIndex("a", 1000, 0));
  EXPECT_FALSE(TopkAdd(&s, "a", 1, kNoRandom).has_value());
  const TopkExpelled expelled = TopkAdd(&s, "b", 1, kNoRandom);  // best 1 >= heapMin 1
  ASSERT_TRUE(expelled.has_value());
  EXPECT_EQ(*expelled, "a");
  EXPECT_TRUE(TopkQuery(s, "b"));
  EXPECT_FALSE(TopkQuery(s, "a"));
  // Below heapMin nothing changes: "c" gets 1 < 5.
  TopkAdd(&s, "b", 4, kNoRandom);
  EXPECT_FALSE(TopkAdd(&s, "c", 1, kNoRandom).has_value());
  EXPECT_FALSE(TopkQuery(s, "c"));
  EXPECT_EQ(TopkCount(s, "c"), 1u);  // its bucket still counts it
}

TEST(TopkAdd, CountZeroEntriesAreQueriedButNotListedAndExpelledByName) {
  TopkSketch s = Wide(2);
  EXPECT_FALSE(TopkAdd(&s, "a", 0, kNoRandom).has_value());  // best 0 >= heapMin 0
  EXPECT_TRUE(TopkQuery(s, "a"));
  EXPECT_TRUE(TopkList(s).empty());
  EXPECT_EQ(TopkCount(s, "a"), 0u);
  // "a" sank to slot 1 (equal counts move one level), so "b" takes the empty slot 0 and
  // expels nothing, then sinks too: "a" is back at slot 0, and the next item expels it by name.
  EXPECT_FALSE(TopkAdd(&s, "b", 0, kNoRandom).has_value());
  EXPECT_EQ(s.heap[0].item, "a");
  const TopkExpelled expelled = TopkAdd(&s, "c", 1, kNoRandom);
  ASSERT_TRUE(expelled.has_value());
  EXPECT_EQ(*expelled, "a");
}

TEST(TopkAdd, HeapCountFollowsTheRowsEvenDownwards) {
  // One bucket shared by everything: decay 1, width 1, depth 1.
  TopkSketch s = NewTopkSketch({2, 1, 1, 1.0});
  TopkAdd(&s, "a", 5, kNoRandom);  // bucket {a, 5}
  TopkAdd(&s, "b", 3, kNoRandom);  // foreign: 5 - 3 = 2, b gets nothing (best 0 >= heapMin 0)
  EXPECT_EQ(s.buckets[0].count, 2u);
  TopkAdd(&s, "a", 1, kNoRandom);  // {a, 3}: a's slot goes from 5 down to 3
  const std::vector<TopkListEntry> list = TopkList(s);
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].item, "a");
  EXPECT_EQ(list[0].count, 3u);
  EXPECT_TRUE(TopkQuery(s, "b"));  // the count-0 entry b
}

TEST(TopkAdd, CountsWrapModTwoToTheThirtyTwo) {
  TopkSketch s = NewTopkSketch({2, 1, 1, 1.0});
  TopkAdd(&s, "a", 100000, kNoRandom);
  s.buckets[0].count = UINT32_MAX - 9;
  TopkAdd(&s, "a", 20, kNoRandom);  // wraps to 10
  EXPECT_EQ(s.buckets[0].count, 10u);
  EXPECT_EQ(TopkCount(s, "a"), 10u);
  ASSERT_EQ(TopkList(s).size(), 1u);
  EXPECT_EQ(TopkList(s)[0].count, 10u);
  TopkBucket b{TopkFingerprint("x"), UINT32_MAX};
  EXPECT_EQ(TopkUpdateBucket(&b, b.fp, 2, 0.9, MakeTopkDecayTable(0.9), kNoRandom), 1u);
}

TEST(TopkList, CutsItemsAtTheFirstNulAndKeepsHeapOrderOnTies) {
  TopkSketch s = NewTopkSketch({4, 1000, 3, 1.0});
  const std::string ab = "a\0b"s;
  const std::string ac = "a\0c"s;
  const std::string x = "\0x"s;
  TopkAdd(&s, ab, 3, kNoRandom);
  TopkAdd(&s, ac, 2, kNoRandom);
  TopkAdd(&s, x, 2, kNoRandom);
  const std::vector<TopkListEntry> list = TopkList(s);
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0].item, "a");
  EXPECT_EQ(list[0].count, 3u);
  // ac and x tie at 2: their order is their heap-array order.
  size_t ac_slot = *TopkFindInHeap(s, ac);
  size_t x_slot = *TopkFindInHeap(s, x);
  EXPECT_EQ(list[1].item, ac_slot < x_slot ? "a" : "");
  EXPECT_EQ(list[2].item, ac_slot < x_slot ? "" : "a");
  EXPECT_TRUE(TopkQuery(s, ab));
  EXPECT_FALSE(TopkQuery(s, "a"));  // QUERY and COUNT compare full bytes
  EXPECT_EQ(TopkCount(s, "a"), 0u);
  EXPECT_EQ(TopkReplyItem("abc"), "abc");
  EXPECT_EQ(TopkReplyItem(""), "");
}

// ---------------------------------------------------------------------------------------------
// Hashing.

TEST(TopkHash, FingerprintAndRowStart) {
  EXPECT_EQ(TopkFingerprint(""), 1250256608u);
  EXPECT_EQ(MurmurHash2("", 0, 0), 0u);
  EXPECT_EQ(TopkBucketIndex("", 8, 0), 0u);
  // Row 2 of width 2^31 starts at (uint32)(2 * 2^31) = 0.
  const uint32_t width = 2147483648u;
  EXPECT_EQ(TopkBucketIndex("a", width, 2), MurmurHash2("a", 1, 2) % width);
  EXPECT_EQ(TopkBucketIndex("a", 10, 3), 30 + MurmurHash2("a", 1, 3) % 10);
}

// ---------------------------------------------------------------------------------------------
// Decay.

TEST(TopkDecay, TableAndLargeCounts) {
  const TopkDecayTable t = MakeTopkDecayTable(0.9);
  EXPECT_EQ(t[0], 1.0);
  EXPECT_EQ(t[1], 0.9);
  EXPECT_EQ(t[2], std::pow(0.9, 2.0));
  EXPECT_EQ(t[255], std::pow(0.9, 255.0));
  EXPECT_EQ(TopkDecayProbability(t, 255), t[255]);
  EXPECT_EQ(TopkDecayProbability(t, 256), std::pow(t[255], 1.0) * t[1]);
  EXPECT_EQ(TopkDecayProbability(t, 510), std::pow(t[255], 2.0) * t[0]);
  EXPECT_EQ(TopkDecayProbability(t, 1000), std::pow(t[255], 3.0) * t[235]);
  const TopkDecayTable one = MakeTopkDecayTable(1.0);
  EXPECT_EQ(TopkDecayProbability(one, 4000000000u), 1.0);
  const TopkDecayTable tiny = MakeTopkDecayTable(1e-300);
  EXPECT_EQ(tiny[1], 1e-300);
  EXPECT_EQ(tiny[2], 0.0);
}

TEST(TopkDecay, ClosedFormOfDecayOneEqualsTheLoopWithEveryStepDecrementing) {
  const uint32_t me = TopkFingerprint("me");
  const uint32_t other = TopkFingerprint("other");
  const TopkDecayTable half = MakeTopkDecayTable(0.5);
  const TopkDecayTable one = MakeTopkDecayTable(1.0);
  int draws = 0;
  const TopkRandom always = [&draws] {
    ++draws;
    return 0.0;  // below any P > 0: every step decrements
  };
  for (uint32_t c = 1; c <= 20; ++c) {
    for (uint32_t n = 0; n <= 25; ++n) {
      TopkBucket closed{other, c};
      TopkBucket loop{other, c};
      draws = 0;
      const uint32_t a = TopkUpdateBucket(&closed, me, n, 1.0, one, kNoRandom);
      const uint32_t b = TopkUpdateBucket(&loop, me, n, 0.5, half, always);
      EXPECT_EQ(a, b) << c << " " << n;
      EXPECT_EQ(closed.fp, loop.fp) << c << " " << n;
      EXPECT_EQ(closed.count, loop.count) << c << " " << n;
      EXPECT_EQ(draws, static_cast<int>(std::min(n, c)));
      EXPECT_EQ(a, n >= c ? n - c + 1 : 0u);
    }
  }
}

TEST(TopkDecay, NoDrawForEmptyOwnOrZeroProbabilityBuckets) {
  const uint32_t me = TopkFingerprint("me");
  const TopkDecayTable t = MakeTopkDecayTable(0.9);
  TopkBucket empty{12345, 0};
  EXPECT_EQ(TopkUpdateBucket(&empty, me, 7, 0.9, t, kNoRandom), 7u);
  EXPECT_EQ(empty.fp, me);
  TopkBucket own{me, 3};
  EXPECT_EQ(TopkUpdateBucket(&own, me, 4, 0.9, t, kNoRandom), 7u);
  TopkBucket zero_n{12345, 0};
  EXPECT_EQ(TopkUpdateBucket(&zero_n, me, 0, 0.9, t, kNoRandom), 0u);
  EXPECT_EQ(zero_n.fp, me);  // fp stamped, still empty
  EXPECT_EQ(zero_n.count, 0u);
  // decay 1e-300: P(2) is exactly 0, so a bucket of count 2 never decrements.
  const TopkDecayTable tiny = MakeTopkDecayTable(1e-300);
  TopkBucket stuck{12345, 2};
  EXPECT_EQ(TopkUpdateBucket(&stuck, me, 100000, 1e-300, tiny, kNoRandom), 0u);
  EXPECT_EQ(stuck.count, 2u);
}

TEST(TopkDecay, ForeignBucketDecrementsWithProbabilityDecayToTheCount) {
  std::mt19937_64 gen(20240601);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const TopkRandom random = [&] { return uniform(gen); };
  const TopkDecayTable t = MakeTopkDecayTable(0.9);
  const uint32_t me = TopkFingerprint("me");
  constexpr int kTrials = 200000;
  for (uint32_t c : {1u, 5u, 20u}) {
    int decremented = 0;
    for (int i = 0; i < kTrials; ++i) {
      TopkBucket b{12345, c};
      TopkUpdateBucket(&b, me, 1, 0.9, t, random);
      decremented += b.fp == me || b.count < c;
    }
    const double p = std::pow(0.9, c);
    const double sd = std::sqrt(p * (1 - p) / kTrials);
    EXPECT_NEAR(static_cast<double>(decremented) / kTrials, p, 5 * sd) << "count " << c;
  }
  // A takeover of a count-1 bucket by n = 3 happens at the first successful step, with the
  // steps left: r = 3 with probability 0.9, r = 2 with 0.1 * 0.9, r = 1 with 0.01 * 0.9.
  int by_r[4] = {0, 0, 0, 0};
  for (int i = 0; i < kTrials; ++i) {
    TopkBucket b{12345, 1};
    ++by_r[TopkUpdateBucket(&b, me, 3, 0.9, t, random)];
  }
  EXPECT_NEAR(by_r[3] / static_cast<double>(kTrials), 0.9, 0.005);
  EXPECT_NEAR(by_r[2] / static_cast<double>(kTrials), 0.09, 0.005);
  EXPECT_NEAR(by_r[1] / static_cast<double>(kTrials), 0.009, 0.002);
  EXPECT_NEAR(by_r[0] / static_cast<double>(kTrials), 0.001, 0.0005);
}

// ---------------------------------------------------------------------------------------------
// INFO.

TEST(TopkInfo, DecayPrintedLikeRedisSevenPercentDotSeventeenG) {
  EXPECT_EQ(TopkFormatDecay(0.9), "0.90000000000000002");
  EXPECT_EQ(TopkFormatDecay(0.7), "0.69999999999999996");
  EXPECT_EQ(TopkFormatDecay(0.99), "0.98999999999999999");
  EXPECT_EQ(TopkFormatDecay(0.1), "0.10000000000000001");
  EXPECT_EQ(TopkFormatDecay(1.0), "1");
  EXPECT_EQ(TopkFormatDecay(0.5), "0.5");
  EXPECT_EQ(TopkFormatDecay(1e-300), "1e-300");
  EXPECT_EQ(TopkFormatDecay(0.123456789), "0.123456789");
}

}  // namespace
}  // namespace bloomproxy::filters
