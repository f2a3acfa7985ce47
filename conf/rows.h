// Typed rows of the option table (internal to conf/): a row is a declaration, e.g.
//
//   Number<&Options::maxclients, 1>("maxclients", "N", "most client connections at once", kLive)
//
// names the Options field, the accepted range, the flag's argument and help, and whether a reload
// applies a change. The parse, show, compare and copy functions are instantiated from the member
// pointer, so a row needs no code of its own; rows that do something unusual (user,
// upstream-password-file, ...) pass their own functions to Custom().
#pragma once

#include <sys/socket.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "conf/directive.h"
#include "conf/values.h"

namespace bloomproxy::conf::rows {

inline constexpr Reload kLive = Reload::kLive;
inline constexpr Reload kRestart = Reload::kRestart;

// The type of the field a member pointer names.
template <auto F>
using FieldOf = std::remove_reference_t<decltype(std::declval<Options&>().*F)>;

// Comparing and copying the fields `F...` (a reload keeps a restart-only row's running value).
template <auto... F>
inline constexpr FieldOps kFields = {
    [](const Options& a, const Options& b) { return ((a.*F == b.*F) && ...); },
    [](const Options& from, Options* to) { ((to->*F = from.*F), ...); }};

inline bool ParseYesNo(const std::string& s, bool* out, std::string* error) {
  if (EqualsIgnoreCase(s, "yes")) {
    *out = true;
  } else if (EqualsIgnoreCase(s, "no")) {
    *out = false;
  } else {
    *error = Quote(s) + " is not yes or no";
    return false;
  }
  return true;
}

// --- Parsers, one per kind of value. The row's own parameters are template arguments or the
// row's `text` / `error`.

template <auto F, int64_t kMin, int64_t kMax>
bool ApplyNumber(const Directive&, const std::vector<std::string>& a, SourceState* s,
                 std::string* e) {
  int64_t v = 0;
  if (!ParseInt(a[0], kMin, kMax, &v, e)) return false;
  s->options->*F = static_cast<FieldOf<F>>(v);
  return true;
}

template <auto F>
bool ApplyPort(const Directive&, const std::vector<std::string>& a, SourceState* s,
               std::string* e) {
  if (ParsePort(a[0], 0, &(s->options->*F))) return true;
  *e = Quote(a[0]) + " is not a valid port";
  return false;
}

template <auto F>
bool ApplyAddress(const Directive&, const std::vector<std::string>& a, SourceState* s,
                  std::string* e) {
  if (!IsIpLiteral(a[0], AF_INET) && !IsIpLiteral(a[0], AF_INET6)) {
    *e = Quote(a[0]) + " is not an IPv4 or IPv6 address";
    return false;
  }
  s->options->*F = a[0];
  return true;
}

template <auto F>
bool ApplyString(const Directive&, const std::vector<std::string>& a, SourceState* s,
                 std::string*) {
  s->options->*F = a[0];
  return true;
}

// At most kMax (INT64_MAX: no maximum beyond what fits).
template <auto F, int64_t kMin, int64_t kMax>
bool ApplyMemory(const Directive&, const std::vector<std::string>& a, SourceState* s,
                 std::string* e) {
  int64_t v = 0;
  if (!ParseMemory(a[0], kMin, &v, e)) return false;
  if (kMax != INT64_MAX && !CheckAtMost(a[0], v, kMax, e)) return false;
  s->options->*F = v;
  return true;
}

template <auto F>
bool ApplyRate(const Directive&, const std::vector<std::string>& a, SourceState* s,
               std::string* e) {
  return ParseRate(a[0], &(s->options->*F), e);
}

template <auto F>
bool ApplyYesNo(const Directive&, const std::vector<std::string>& a, SourceState* s,
                std::string* e) {
  return ParseYesNo(a[0], &(s->options->*F), e);
}

// One of the words row.text lists ("a|b|c"), stored as listed; kAnyCase: matched in any case.
template <auto F, bool kAnyCase>
bool ApplyWord(const Directive& row, const std::vector<std::string>& a, SourceState* s,
               std::string* e) {
  std::string_view words = row.text;
  while (!words.empty()) {
    const size_t bar = std::min(words.find('|'), words.size());
    const std::string_view word = words.substr(0, bar);
    if (kAnyCase ? EqualsIgnoreCase(a[0], word) : a[0] == word) {
      s->options->*F = std::string(word);
      return true;
    }
    words.remove_prefix(std::min(bar + 1, words.size()));
  }
  *e = Quote(a[0]) + row.error;
  return false;
}

// --- Showing a value (for --help's defaults and --test-conf).

template <auto F>
std::string ShowNumber(const Directive&, const Options& o) {
  return std::to_string(o.*F);
}
template <auto F>
std::string ShowText(const Directive& row, const Options& o) {
  return ShowString(o.*F, row.text != nullptr ? row.text : "");
}
template <auto F>
std::string ShowOrNone(const Directive&, const Options& o) {
  return ShowString(o.*F, "none");
}
template <auto F>
std::string ShowAsIs(const Directive&, const Options& o) {
  return o.*F;
}
template <auto F>
std::string ShowHidden(const Directive&, const Options& o) {
  return ShowSecret(o.*F);
}
template <auto F>
std::string ShowSize(const Directive&, const Options& o) {
  return ShowMemory(o.*F);
}
template <auto F>
std::string ShowRate(const Directive&, const Options& o) {
  return ShowDouble(o.*F);
}
template <auto F>
std::string ShowYesNo(const Directive&, const Options& o) {
  return o.*F ? "yes" : "no";
}

// --- The rows.

// An integer in [kMin, kMax]; kMax INT_MAX reads "must be at least kMin" in errors.
template <auto F, int64_t kMin, int64_t kMax = INT_MAX>
constexpr Directive Number(const char* name, const char* arg, const char* help, Reload r) {
  return {name, 1, arg, help, &ApplyNumber<F, kMin, kMax>, &ShowNumber<F>, &kFields<F>, r};
}
// A TCP port, 0..65535.
template <auto F>
constexpr Directive Port(const char* name, const char* help, Reload r) {
  return {name, 1, "N", help, &ApplyPort<F>, &ShowNumber<F>, &kFields<F>, r};
}
// An IPv4 or IPv6 literal; shown as `if_empty` while unset.
template <auto F>
constexpr Directive Address(const char* name, const char* help, const char* if_empty, Reload r) {
  return {name, 1, "ADDR", help, &ApplyAddress<F>, &ShowText<F>, &kFields<F>, r, if_empty};
}
// Any string; shown as `if_empty` while empty.
template <auto F>
constexpr Directive String(const char* name, const char* arg, const char* help,
                           const char* if_empty, Reload r) {
  return {name, 1, arg, help, &ApplyString<F>, &ShowText<F>, &kFields<F>, r, if_empty};
}
// A password: shown as "(set)" or "none", never itself.
template <auto F>
constexpr Directive Secret(const char* name, const char* help, Reload r) {
  return {name, 1, "PASS", help, &ApplyString<F>, &ShowHidden<F>, &kFields<F>, r};
}
// A memory size ("64mb") of at least kMin bytes, at most kMax.
template <auto F, int64_t kMin, int64_t kMax = INT64_MAX>
constexpr Directive Memory(const char* name, const char* help, Reload r) {
  return {name, 1, "SIZE", help, &ApplyMemory<F, kMin, kMax>, &ShowSize<F>, &kFields<F>, r};
}
// A false-positive rate in (0, 1).
template <auto F>
constexpr Directive Rate(const char* name, const char* help, Reload r) {
  return {name, 1, "RATE", help, &ApplyRate<F>, &ShowRate<F>, &kFields<F>, r};
}
template <auto F>
constexpr Directive YesNo(const char* name, const char* help, Reload r) {
  return {name, 1, "yes|no", help, &ApplyYesNo<F>, &ShowYesNo<F>, &kFields<F>, r};
}
// One of `words` ("a|b|c"); anything else: "'value'" + `error`.
template <auto F, bool kAnyCase = false>
constexpr Directive Word(const char* name, const char* arg, const char* help, const char* words,
                         const char* error, Reload r) {
  return {name, 1, arg, help, &ApplyWord<F, kAnyCase>, &ShowAsIs<F>, &kFields<F>, r, words, error};
}
// A row with its own parse and show functions, comparing the fields `F...` on reload.
template <auto... F>
constexpr Directive Custom(const char* name, int argc, const char* arg, const char* help,
                           ApplyFn apply, ShowFn show, Reload r, bool repeatable = false) {
  return {name, argc, arg, help, apply, show, &kFields<F...>, r, nullptr, nullptr, repeatable};
}

}  // namespace bloomproxy::conf::rows
