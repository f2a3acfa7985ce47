#include "filters/guava/bf_layout.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <utility>

#include "filters/common/module_args.h"
#include "protocol/glob.h"

namespace bloomproxy::filters {
namespace {

std::string Quote(std::string_view s) { return "'" + std::string(s) + "'"; }

bool ParseLayout(std::string_view s, GuavaLayout* out) {
  if (EqualsIgnoreCase(s, "guava")) {
    *out = GuavaLayout::kGuava;
  } else if (EqualsIgnoreCase(s, "guava-unrounded")) {
    *out = GuavaLayout::kGuavaUnrounded;
  } else if (EqualsIgnoreCase(s, "guava-mitz32")) {
    *out = GuavaLayout::kGuavaMitz32;
  } else if (EqualsIgnoreCase(s, "guava-mitz32-unrounded")) {
    *out = GuavaLayout::kGuavaMitz32Unrounded;
  } else {
    return false;
  }
  return true;
}

bool ParseFunnel(std::string_view s, guava::Funnel* out) {
  if (EqualsIgnoreCase(s, "utf8")) {
    *out = guava::Funnel::kUtf8;
  } else if (EqualsIgnoreCase(s, "utf16le")) {
    *out = guava::Funnel::kUtf16Le;
  } else if (EqualsIgnoreCase(s, "int64le")) {
    *out = guava::Funnel::kInt64Le;
  } else {
    return false;
  }
  return true;
}

// CAPACITY: a Java long >= 0 (Guava's expectedInsertions).
bool ParseCapacity(const std::string& s, uint64_t* out) {
  if (s.empty() || s[0] < '0' || s[0] > '9') return false;
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || v > static_cast<unsigned long long>(INT64_MAX)) return false;
  *out = v;
  return true;
}

bool ParseRate(const std::string& s, double* out) {
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || *end != '\0' || !(v > 0 && v < 1)) return false;
  *out = v;
  return true;
}

// The modulus and k, as the layout's Java code derives them; "" or why there is no filter.
std::string Size(LayoutRule* rule) {
  const uint64_t n = rule->n();
  const bool rounded =
      rule->layout == GuavaLayout::kGuava || rule->layout == GuavaLayout::kGuavaMitz32;
  const int64_t num_bits = rounded ? guava::OptimalNumOfBits(n, rule->error_rate)
                                   : guava::OptimalNumOfBitsInt(n, rule->error_rate);
  if (num_bits <= 0) return "capacity and error rate give a filter of 0 bits";
  // Guava keeps the bits in a long[] (at most 2^31 - 1 longs).
  if (rounded && (num_bits - 1) / 64 + 1 > INT_MAX) return "the filter is too large for Guava";
  rule->bits = rounded ? guava::RoundedBitSize(num_bits) : static_cast<uint64_t>(num_bits);
  rule->k = guava::OptimalNumOfHashFunctions(n, num_bits);
  return "";
}

}  // namespace

std::string LayoutRule::CursorKey(std::string_view name) const {
  std::string out;
  for (size_t i = 0; i < cursor_key.size(); ++i) {
    if (cursor_key.compare(i, 2, "%s") == 0) {
      out.append(name);
      ++i;
    } else {
      out.push_back(cursor_key[i]);
    }
  }
  return out;
}

std::string LayoutRule::DataKey(std::string_view name, int64_t index) {
  return std::string(name) + "-" + std::to_string(index);
}

void LayoutRule::Indexes(std::string_view bytes, std::vector<uint64_t>* out) const {
  const guava::Hash128 hash = guava::MurmurHash3_x64_128(bytes);
  const size_t at = out->size();
  out->resize(at + k);
  if (layout == GuavaLayout::kGuavaMitz32 || layout == GuavaLayout::kGuavaMitz32Unrounded) {
    guava::Mitz32Indexes(hash, k, bits, out->data() + at);
  } else {
    guava::Mitz64Indexes(hash, k, bits, out->data() + at);
  }
}

std::string ParseLayoutRule(const std::vector<std::string>& args, LayoutRule* rule) {
  if (args.size() < 4) return "needs PATTERN LAYOUT CAPACITY ERROR_RATE [options]";
  LayoutRule r;
  r.pattern = args[0];
  if (!ParseLayout(args[1], &r.layout)) {
    return Quote(args[1]) +
           " is not a layout (guava, guava-unrounded, guava-mitz32, "
           "guava-mitz32-unrounded)";
  }
  if (!ParseCapacity(args[2], &r.capacity)) {
    return Quote(args[2]) + " is not a capacity (an integer >= 0)";
  }
  if (!ParseRate(args[3], &r.error_rate)) {
    return Quote(args[3]) + " is not an error rate (between 0 and 1, exclusive)";
  }
  for (size_t i = 4; i < args.size(); i += 2) {
    if (i + 1 == args.size()) return "option " + Quote(args[i]) + " has no value";
    if (EqualsIgnoreCase(args[i], "funnel")) {
      if (!ParseFunnel(args[i + 1], &r.funnel)) {
        return Quote(args[i + 1]) + " is not a funnel (utf8, utf16le, int64le)";
      }
    } else if (EqualsIgnoreCase(args[i], "expanding")) {
      if (args[i + 1].empty()) return "the cursor key of 'expanding' is empty";
      r.cursor_key = args[i + 1];
    } else {
      return Quote(args[i]) + " is not an option (funnel, expanding)";
    }
  }
  if (std::string error = Size(&r); !error.empty()) return error;
  for (size_t i = 0; i < args.size(); ++i) r.text += (i > 0 ? " " : "") + args[i];
  *rule = std::move(r);
  return "";
}

LayoutRules LayoutRules::FromArgs(const std::vector<std::vector<std::string>>& args) {
  std::vector<LayoutRule> rules;
  for (const std::vector<std::string>& rule_args : args) {
    LayoutRule rule;
    if (ParseLayoutRule(rule_args, &rule).empty()) rules.push_back(std::move(rule));
  }
  return LayoutRules(std::move(rules));
}

const LayoutRule* LayoutRules::Match(std::string_view key) const {
  for (const LayoutRule& rule : rules_) {
    if (protocol::GlobMatch(rule.pattern, key)) return &rule;
  }
  return nullptr;
}

}  // namespace bloomproxy::filters
