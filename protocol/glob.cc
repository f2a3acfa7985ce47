#include "protocol/glob.h"

#include <cstddef>
#include <utility>

namespace bloomproxy::protocol {
namespace {

// Whether byte `c` is in the set that starts at pattern[*i] (just after '['); *i is left on
// the set's closing ']' (or on its last byte when the pattern ends first, as Redis does).
bool InSet(std::string_view pattern, size_t* i, unsigned char c) {
  size_t p = *i;
  const bool negate = p < pattern.size() && pattern[p] == '^';
  if (negate) ++p;
  bool match = false;
  for (; p < pattern.size() && pattern[p] != ']'; ++p) {
    if (pattern[p] == '\\' && p + 1 < pattern.size()) {
      ++p;
      match = match || static_cast<unsigned char>(pattern[p]) == c;
    } else if (p + 2 < pattern.size() && pattern[p + 1] == '-') {
      unsigned char lo = static_cast<unsigned char>(pattern[p]);
      unsigned char hi = static_cast<unsigned char>(pattern[p + 2]);
      if (lo > hi) std::swap(lo, hi);
      match = match || (c >= lo && c <= hi);
      p += 2;
    } else {
      match = match || static_cast<unsigned char>(pattern[p]) == c;
    }
  }
  // An unterminated set: Redis steps back onto its last byte.
  *i = p < pattern.size() ? p : pattern.size() - 1;
  return negate ? !match : match;
}

}  // namespace

bool GlobMatch(std::string_view pattern, std::string_view subject) {
  size_t i = 0;  // in pattern
  size_t s = 0;  // in subject
  while (i < pattern.size() && s < subject.size()) {
    switch (pattern[i]) {
      case '*': {
        while (i + 1 < pattern.size() && pattern[i + 1] == '*') ++i;
        if (i + 1 == pattern.size()) return true;
        for (size_t from = s; from < subject.size(); ++from) {
          if (GlobMatch(pattern.substr(i + 1), subject.substr(from))) return true;
        }
        return false;
      }
      case '?':
        ++s;
        break;
      case '[': {
        ++i;
        if (!InSet(pattern, &i, static_cast<unsigned char>(subject[s]))) return false;
        ++s;
        break;
      }
      case '\\':
        if (i + 1 < pattern.size()) ++i;
        [[fallthrough]];
      default:
        if (pattern[i] != subject[s]) return false;
        ++s;
        break;
    }
    ++i;
  }
  // The subject is used up: only stars may be left of the pattern.
  while (i < pattern.size() && pattern[i] == '*') ++i;
  return i == pattern.size() && s == subject.size();
}

}  // namespace bloomproxy::protocol
