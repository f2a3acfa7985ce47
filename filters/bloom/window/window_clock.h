// What a proxy knows of the upstream's clock, for a windowed filter's slots
// (docs/windowed-filters.md, "The upstream's clock"). A sample is one TIME read on the filter's
// server, with the local monotonic times before the request and after its reply: the upstream's
// time then was between those two instants. From a sample, the upstream's time at any later
// local instant lies in a bracket that widens with the local clock's possible drift. Pure: the
// local time is given.
#pragma once

#include <cstdint>

#include "filters/bloom/bf_meta.h"

namespace bloomproxy::filters {

struct ClockBracket {
  int64_t lo_ms = 0;  // the upstream's time is at least this (Unix ms)
  int64_t hi_ms = 0;  // ... and at most this
};

// How far two clocks may drift apart per unit of time: 1000 ppm, ten times what NTP allows.
inline constexpr int64_t kDriftPerMillion = 1000;
// A sample older than this is read again before the bracket is used (it is 10 ms wide by then).
inline constexpr int64_t kClockMaxAgeUs = 10'000'000;

// The bracket at local monotonic time `now_us` (>= sample.read_us) from `sample` (known).
ClockBracket BracketAt(const FilterMeta::ClockSample& sample, int64_t now_us);

// Whether `sample` may be used at `now_us`: known and younger than kClockMaxAgeUs.
bool ClockUsable(const FilterMeta::ClockSample& sample, int64_t now_us);

// The upstream's time of a TIME reply "*2 $sec $usec" in Unix µs; false if it is not one.
bool ParseTimeReply(const redisReply* r, int64_t* upstream_us);

// Unix ms, rounded up: the least ms not before the instant (an add's time, for its slot).
inline int64_t CeilMs(int64_t us) { return us >= 0 ? (us + 999) / 1000 : -((-us) / 1000); }
// Unix ms, rounded down.
inline int64_t FloorMs(int64_t us) { return us >= 0 ? us / 1000 : -((-us + 999) / 1000); }

}  // namespace bloomproxy::filters
