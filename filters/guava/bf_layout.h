// bf-layout rules: keys whose names match a pattern are Bloom filters in a layout another
// program writes (Guava's bits in a plain Redis string), with the parameters the rule gives,
// and no metadata in Redis. The rule as configured, its sizing, and the rule a key follows.
// Pure; the plans that serve such keys are in filters/guava/guava_plan.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "filters/guava/guava_hash.h"

namespace bloomproxy::filters {

enum class GuavaLayout : uint8_t {
  kGuava,           // Guava's BloomFilter (MURMUR128_MITZ_64), bit array rounded to 64 bits
  kGuavaUnrounded,  // the same hashes modulo the unrounded (int) bit count (Jedis/Codis copies)
  kGuavaMitz32,     // Guava's first strategy, MURMUR128_MITZ_32, on the rounded bit array
  // MURMUR128_MITZ_32 modulo the unrounded (int) bit count: the widely copied
  // "BloomFilterHelper" class (Guava's Hashing.murmur3_128() with its own int offsets).
  kGuavaMitz32Unrounded,
};

// One rule: `bf-layout PATTERN LAYOUT CAPACITY ERROR_RATE [funnel F] [expanding CURSOR_KEY]`.
struct LayoutRule {
  std::string pattern;  // Redis glob syntax (protocol/glob.h)
  GuavaLayout layout = GuavaLayout::kGuava;
  uint64_t capacity = 0;  // Guava's expectedInsertions, as configured (0 counts as 1)
  double error_rate = 0;
  guava::Funnel funnel = guava::Funnel::kUtf8;
  // Expanding filters (data keys NAME-0 .. NAME-c, c in the cursor key): the cursor key, where
  // "%s" stands for the filter's name; empty when the filter is the key itself.
  std::string cursor_key;
  std::string text;  // the rule as configured, for messages and --test-conf

  // Derived from the above by ParseLayoutRule.
  uint64_t bits = 0;  // the modulus: every data key holds this many bits
  uint32_t k = 0;     // hash functions

  bool expanding() const { return !cursor_key.empty(); }
  // Guava's expectedInsertions: the capacity, 1 when 0.
  uint64_t n() const { return capacity == 0 ? 1 : capacity; }
  // The cursor key of filter `name` (expanding rules).
  std::string CursorKey(std::string_view name) const;
  // Data key `index` of filter `name` (expanding rules): "NAME-index".
  static std::string DataKey(std::string_view name, int64_t index);
  // The bit indexes of an item's bytes (FunnelBytes' output): k of them, appended to *out.
  void Indexes(std::string_view bytes, std::vector<uint64_t>* out) const;
};

// Parses a rule's arguments (PATTERN LAYOUT CAPACITY ERROR_RATE [options]) into *rule. Returns
// "" or what is wrong, e.g. "'guava2' is not a layout (guava, ...)".
std::string ParseLayoutRule(const std::vector<std::string>& args, LayoutRule* rule);

// The configured rules, tried in order.
class LayoutRules {
 public:
  LayoutRules() = default;
  explicit LayoutRules(std::vector<LayoutRule> rules) : rules_(std::move(rules)) {
    for (const LayoutRule& rule : rules_) has_expanding_ = has_expanding_ || rule.expanding();
  }
  // The rules of the bf-layout options, each as its arguments (checked when the options were
  // loaded: a rule that does not parse is left out).
  static LayoutRules FromArgs(const std::vector<std::vector<std::string>>& args);
  // The first rule whose pattern matches `key`, or null.
  const LayoutRule* Match(std::string_view key) const;
  bool empty() const { return rules_.empty(); }
  // Whether a rule is expanding (whose names key commands must know).
  bool has_expanding() const { return has_expanding_; }

 private:
  std::vector<LayoutRule> rules_;
  bool has_expanding_ = false;
};

}  // namespace bloomproxy::filters
