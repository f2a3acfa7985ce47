// The arithmetic of a windowed filter's slots and of the upstream's clock
// (filters/bloom/window/window_slots.h, window_clock.h), against hand-worked cases and the
// spec's guarantees checked over many times.
#include <gtest/gtest.h>

#include <cstdint>

#include "filters/bloom/window/window_clock.h"
#include "filters/bloom/window/window_slots.h"

namespace bloomproxy::filters {
namespace {

TEST(WindowSlots, HandWorked) {
  const WindowShape w{3000, 3};  // s = 1500 ms
  EXPECT_EQ(SlotEnd(w, 2), 3000);
  EXPECT_EQ(SlotEnd(w, 3), 4500);
  EXPECT_EQ(SlotFor(w, 0, 3000), 2);     // expires at 3000: slot (1500, 3000]
  EXPECT_EQ(SlotFor(w, 1, 3000), 3);     // 3001: slot (3000, 4500]
  EXPECT_EQ(SlotFor(w, 1500, 3000), 3);  // 4500 exactly: still slot 3
  EXPECT_EQ(SlotFor(w, 1500, 1000), 2);  // a TTL of 1 s: 2500
  const SlotRange live = LiveSlots(w, 1501, 1501);
  EXPECT_EQ(live.first, 2);  // slot 1 ended at 1500
  EXPECT_EQ(live.last, 4);   // 1501 + 3000 > 4500
}

TEST(WindowSlots, UnevenSlotLength) {
  const WindowShape w{1000, 4};  // s = 333.33 ms: ends at 334, 667, 1000, 1334
  EXPECT_EQ(SlotEnd(w, 1), 334);
  EXPECT_EQ(SlotEnd(w, 2), 667);
  EXPECT_EQ(SlotEnd(w, 3), 1000);
  EXPECT_EQ(SlotFor(w, 0, 334), 1);  // slot 1 ends at 334 (333.33 rounded up): still in it
  EXPECT_EQ(SlotFor(w, 0, 335), 2);
  EXPECT_EQ(SlotFor(w, 0, 333), 1);
}

// Guarantees 1 to 3 over every time in a few windows, for several shapes and lifetimes.
TEST(WindowSlots, Guarantees) {
  for (const WindowShape w : {WindowShape{2000, 2}, WindowShape{3000, 3}, WindowShape{2000, 5},
                              WindowShape{1000, 7}, WindowShape{86400000, 64}}) {
    const int64_t s_ceil = (static_cast<int64_t>(w.window_ms) + w.slots - 2) / (w.slots - 1);
    const int64_t base = 1'790'000'000'000;  // a Unix time in ms
    for (int64_t t = base; t < base + 3 * 2000; t += 7) {
      for (uint64_t life : {uint64_t{1}, w.window_ms / 3 + 1, w.window_ms}) {
        const int64_t e = SlotFor(w, t, life);
        // 1: alive through t + L; 2: gone one slot after (to the ms, when s is no integer).
        EXPECT_GE(SlotEnd(w, e), t + static_cast<int64_t>(life));
        EXPECT_LE(SlotEnd(w, e), t + static_cast<int64_t>(life) + s_ceil);
        if (w.window_ms % (w.slots - 1) == 0) {
          EXPECT_LT(SlotEnd(w, e), t + static_cast<int64_t>(life) + s_ceil);
        }
        // A lookup at any time until t + L reads that slot.
        for (int64_t u : {t, t + static_cast<int64_t>(life)}) {
          const SlotRange live = LiveSlots(w, u, u);
          EXPECT_GE(e, live.first);
          EXPECT_LE(e, live.last);
        }
      }
      // 3: at most g slots live at once (g + 1 at the ms a slot ends: Redis drops it after).
      const SlotRange live = LiveSlots(w, t, t);
      EXPECT_LE(live.size(), static_cast<int64_t>(w.slots) + (SlotEnd(w, live.first) == t));
    }
  }
}

TEST(WindowSlots, SlotSizing) {
  EXPECT_EQ(SlotCapacity(1000, 3), 500u);
  EXPECT_EQ(SlotCapacity(1001, 3), 501u);
  EXPECT_EQ(SlotCapacity(1, 64), 1u);
  EXPECT_DOUBLE_EQ(SlotError(0.01, 4), 0.0025);
  EXPECT_EQ(SlotName("{users}", "0123456789abcdef", 42), "{users}:bf:0123456789abcdef:w42");
}

TEST(WindowClock, BracketHoldsTheUpstreamTime) {
  // The upstream read 1,000,000.000500 s when the local clock was between 10.000 and 10.002 s.
  FilterMeta::ClockSample sample{true, 10'000'000, 10'002'000, 1'000'000'000'500};
  const ClockBracket b = BracketAt(sample, 10'002'000);
  // Now (local 10.002) the upstream is between 1,000,000.000500 and .002500.
  EXPECT_EQ(b.lo_ms, 1'000'000'000);
  EXPECT_EQ(b.hi_ms, 1'000'000'003);
  // 5 s later: 5 s more, widened by 1000 ppm of it (5 ms) each way.
  const ClockBracket later = BracketAt(sample, 15'002'000);
  EXPECT_EQ(later.lo_ms, 1'000'004'995);
  EXPECT_EQ(later.hi_ms, 1'000'005'008);
  EXPECT_TRUE(ClockUsable(sample, 15'002'000));
  EXPECT_FALSE(ClockUsable(sample, 10'002'000 + kClockMaxAgeUs));
  EXPECT_FALSE(ClockUsable(FilterMeta::ClockSample{}, 10'002'000));
}

TEST(WindowClock, Rounding) {
  EXPECT_EQ(CeilMs(1'000), 1);
  EXPECT_EQ(CeilMs(1'001), 2);
  EXPECT_EQ(FloorMs(1'999), 1);
  EXPECT_EQ(FloorMs(-1), -1);
  EXPECT_EQ(CeilMs(-1), 0);
}

}  // namespace
}  // namespace bloomproxy::filters
