#include "filters/common/module_args.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

namespace bloomproxy::filters {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const char x = (a[i] >= 'a' && a[i] <= 'z') ? static_cast<char>(a[i] - 32) : a[i];
    const char y = (b[i] >= 'a' && b[i] <= 'z') ? static_cast<char>(b[i] - 32) : b[i];
    if (x != y) return false;
  }
  return true;
}

bool ParseLongLong(std::string_view s, int64_t* out) {
  if (s.empty() || s.size() >= 21) return false;
  if (s.size() == 1 && s[0] == '0') {
    *out = 0;
    return true;
  }
  size_t i = 0;
  bool negative = false;
  if (s[0] == '-') {
    negative = true;
    if (++i == s.size()) return false;
  }
  if (s[i] < '1' || s[i] > '9') return false;
  uint64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    const uint64_t digit = static_cast<uint64_t>(s[i] - '0');
    if (v > (std::numeric_limits<uint64_t>::max() - digit) / 10) return false;
    v = v * 10 + digit;
  }
  constexpr uint64_t kMaxPositive = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (negative) {
    if (v > kMaxPositive + 1) return false;
    *out = v == kMaxPositive + 1 ? std::numeric_limits<int64_t>::min() : -static_cast<int64_t>(v);
  } else {
    if (v > kMaxPositive) return false;
    *out = static_cast<int64_t>(v);
  }
  return true;
}

bool ParseDouble(std::string_view s, double* out) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) return false;
  const std::string copy(s);  // strtod needs the terminating NUL
  char* end = nullptr;
  errno = 0;
  const double d = std::strtod(copy.c_str(), &end);
  if (static_cast<size_t>(end - copy.c_str()) != copy.size()) return false;
  if (errno == ERANGE && (d == HUGE_VAL || d == -HUGE_VAL || std::fpclassify(d) == FP_ZERO)) {
    return false;
  }
  if (std::isnan(d)) return false;
  *out = d;
  return true;
}

}  // namespace bloomproxy::filters
