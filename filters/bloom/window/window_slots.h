// A windowed filter's slots (docs/windowed-filters.md): window W ms, g slots, slot length
// s = W / (g - 1). Slot e holds the items due in (SlotEnd(e - 1), SlotEnd(e)] on the upstream's
// clock, and its keys carry PEXPIREAT SlotEnd(e), so Redis drops a slot when it ends. Times are
// Unix milliseconds on the upstream's clock. Pure arithmetic, in integers (no rounding drift).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace bloomproxy::filters {

struct WindowShape {
  uint64_t window_ms = 0;  // W > 0
  uint32_t slots = 0;      // g >= 2
};

// The end of slot e: ceil(e·W / (g - 1)) ms, the PEXPIREAT of its keys.
int64_t SlotEnd(const WindowShape& w, int64_t e);

// The slot of an item added at `t` with lifetime `lifetime` (0 < lifetime <= W): the first e
// with SlotEnd(e) >= t + lifetime, so the item outlives its lifetime by less than one slot.
int64_t SlotFor(const WindowShape& w, int64_t t, uint64_t lifetime);

// The slots a lookup reads when the upstream's time is somewhere in [t_lo, t_hi]: every slot
// that may still exist (SlotEnd(e) >= t_lo: Redis drops a key once its time is past) and that
// an add may have written (e <= SlotFor(t_hi, W)). With t_lo == t_hi that is at most g slots
// when a slot is 1 ms or longer.
struct SlotRange {
  int64_t first = 0;
  int64_t last = -1;  // inclusive; empty when last < first
  int64_t size() const { return last < first ? 0 : last - first + 1; }
};
SlotRange LiveSlots(const WindowShape& w, int64_t t_lo, int64_t t_hi);

// Each slot is a filter sized for its share of the window's items at its share of the error:
// capacity ceil(capacity / (g - 1)) at error / g, so a lookup over g slots has a false
// positive rate <= error (1 - (1 - error/g)^g <= error).
uint64_t SlotCapacity(uint64_t capacity, uint32_t slots);
double SlotError(double error, uint32_t slots);

// The name of slot e of the windowed filter whose data-key prefix is `prefix` and id `id`:
// "<prefix>:bf:<id>:w<e>", an internal key (protocol/internal_keys.h) in the name's slot.
std::string SlotName(std::string_view prefix, std::string_view id, int64_t e);

}  // namespace bloomproxy::filters
