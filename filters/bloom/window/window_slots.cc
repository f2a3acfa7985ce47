#include "filters/bloom/window/window_slots.h"

namespace bloomproxy::filters {
namespace {

// Floor and ceiling of a / b for b > 0 and any sign of a.
int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int64_t CeilDiv(int64_t a, int64_t b) { return -FloorDiv(-a, b); }

}  // namespace

int64_t SlotEnd(const WindowShape& w, int64_t e) {
  return CeilDiv(e * static_cast<int64_t>(w.window_ms), static_cast<int64_t>(w.slots) - 1);
}

int64_t SlotFor(const WindowShape& w, int64_t t, uint64_t lifetime) {
  // SlotEnd(e) = ceil(e·W / (g - 1)) >= n, for the integer n = t + L, exactly when
  // e·W / (g - 1) > n - 1: the least such e is floor((n - 1)·(g - 1) / W) + 1.
  const int64_t due = t + static_cast<int64_t>(lifetime);
  return FloorDiv((due - 1) * (static_cast<int64_t>(w.slots) - 1),
                  static_cast<int64_t>(w.window_ms)) +
         1;
}

SlotRange LiveSlots(const WindowShape& w, int64_t t_lo, int64_t t_hi) {
  SlotRange r;
  // Redis keeps a key through its expiry time itself (it drops it once the time is past), so
  // the oldest slot that may exist is the first with SlotEnd(e) >= t_lo.
  r.first = SlotFor(w, t_lo, 0);
  r.last = SlotFor(w, t_hi, w.window_ms);
  return r;
}

uint64_t SlotCapacity(uint64_t capacity, uint32_t slots) {
  const uint64_t share = slots - 1;
  return capacity / share + (capacity % share != 0 ? 1 : 0);
}

double SlotError(double error, uint32_t slots) { return error / slots; }

std::string SlotName(std::string_view prefix, std::string_view id, int64_t e) {
  std::string name(prefix);
  name += ":bf:";
  name += id;
  name += ":w";
  name += std::to_string(e);
  return name;
}

}  // namespace bloomproxy::filters
