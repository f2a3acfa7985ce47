// bf-layout rules (filters/guava/bf_layout.h): Redis's glob patterns, the rule's parsing and
// sizing, the expanding filters' key names, and which rule a key follows.
#include "filters/guava/bf_layout.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "protocol/glob.h"

namespace bloomproxy::filters {
namespace {

using protocol::GlobMatch;

TEST(GlobTest, MatchesAsRedisKeysDoes) {
  EXPECT_TRUE(GlobMatch("*", ""));
  EXPECT_TRUE(GlobMatch("*", "anything"));
  EXPECT_TRUE(GlobMatch("users:*", "users:"));
  EXPECT_TRUE(GlobMatch("users:*", "users:42"));
  EXPECT_FALSE(GlobMatch("users:*", "user:42"));
  EXPECT_TRUE(GlobMatch("a*b*c", "aXXbYYc"));
  EXPECT_FALSE(GlobMatch("a*b*c", "aXXbYY"));
  EXPECT_TRUE(GlobMatch("**x", "x"));
  EXPECT_TRUE(GlobMatch("h?llo", "hello"));
  EXPECT_FALSE(GlobMatch("h?llo", "hllo"));
  EXPECT_FALSE(GlobMatch("*?", ""));
  EXPECT_TRUE(GlobMatch("h[ae]llo", "hallo"));
  EXPECT_FALSE(GlobMatch("h[ae]llo", "hillo"));
  EXPECT_TRUE(GlobMatch("h[^e]llo", "hallo"));
  EXPECT_FALSE(GlobMatch("h[^e]llo", "hello"));
  EXPECT_TRUE(GlobMatch("h[a-c]llo", "hbllo"));
  EXPECT_TRUE(GlobMatch("h[c-a]llo", "hbllo"));  // a reversed range counts as its swap
  EXPECT_FALSE(GlobMatch("h[a-c]llo", "hdllo"));
  EXPECT_TRUE(GlobMatch("[\\]]", "]"));
  EXPECT_TRUE(GlobMatch("\\*", "*"));
  EXPECT_FALSE(GlobMatch("\\*", "a"));
  EXPECT_TRUE(GlobMatch("a\\?", "a?"));
  EXPECT_FALSE(GlobMatch("a\\?", "ab"));
  EXPECT_TRUE(GlobMatch("[abc", "c"));  // unterminated: the set ends at the pattern's end
  EXPECT_TRUE(GlobMatch("bloom{*}", "bloom{x}"));
  // Binary-safe, case-sensitive.
  EXPECT_TRUE(GlobMatch(std::string("a?b", 3), std::string("a\0b", 3)));
  EXPECT_TRUE(GlobMatch(std::string("a\0*", 3), std::string("a\0zz", 4)));
  EXPECT_FALSE(GlobMatch("Users:*", "users:1"));
}

LayoutRule Parse(const std::vector<std::string>& args) {
  LayoutRule rule;
  const std::string error = ParseLayoutRule(args, &rule);
  EXPECT_EQ(error, "");
  return rule;
}

TEST(LayoutRuleTest, SizesAsEachLayoutsJavaCodeDoes) {
  // Guava: numBits 958 for 100 items at 1%, a bit array of 15 longs, k = round(9.58 ln 2) = 7.
  LayoutRule g = Parse({"k:*", "guava", "100", "0.01"});
  EXPECT_EQ(g.bits, 960u);
  EXPECT_EQ(g.k, 7u);
  EXPECT_EQ(g.funnel, guava::Funnel::kUtf8);
  EXPECT_FALSE(g.expanding());
  EXPECT_EQ(g.text, "k:* guava 100 0.01");
  // The Jedis/Codis copies: the modulus is the unrounded (int) bit count.
  LayoutRule u = Parse({"k:*", "guava-unrounded", "100", "0.01"});
  EXPECT_EQ(u.bits, 958u);
  EXPECT_EQ(u.k, 7u);
  LayoutRule m = Parse({"k:*", "GUAVA-MITZ32", "1000000", "0.03", "FUNNEL", "int64le"});
  EXPECT_EQ(m.layout, GuavaLayout::kGuavaMitz32);
  EXPECT_EQ(m.bits, 7298496u);  // numBits 7298440, rounded up to 64
  EXPECT_EQ(m.k, 5u);
  EXPECT_EQ(m.funnel, guava::Funnel::kInt64Le);
  // Capacity 0 is Guava's 1: numBits (long)9.585 = 9, k = round(9 ln 2) = 6.
  LayoutRule zero = Parse({"k:*", "guava", "0", "0.01"});
  EXPECT_EQ(zero.bits, 64u);
  EXPECT_EQ(zero.k, 6u);
}

TEST(LayoutRuleTest, ExpandingNamesItsKeys) {
  LayoutRule e =
      Parse({"b:*", "guava", "10", "0.1", "expanding", "%s:cursor", "funnel", "utf16le"});
  EXPECT_TRUE(e.expanding());
  EXPECT_EQ(e.funnel, guava::Funnel::kUtf16Le);
  EXPECT_EQ(e.CursorKey("b:{x}"), "b:{x}:cursor");
  EXPECT_EQ(LayoutRule::DataKey("b:{x}", 0), "b:{x}-0");
  EXPECT_EQ(LayoutRule::DataKey("b:{x}", 12), "b:{x}-12");
  LayoutRule fixed = Parse({"b", "guava", "10", "0.1", "expanding", "bloom-cursor"});
  EXPECT_EQ(fixed.CursorKey("b"), "bloom-cursor");
  LayoutRule twice = Parse({"b:*", "guava", "10", "0.1", "expanding", "%s/%s"});
  EXPECT_EQ(twice.CursorKey("n"), "n/n");
}

TEST(LayoutRuleTest, IndexesAreKPerItemBelowTheModulus) {
  for (const char* layout : {"guava", "guava-unrounded", "guava-mitz32"}) {
    LayoutRule r = Parse({"k", layout, "1000", "0.001"});
    std::vector<uint64_t> indexes = {42};
    r.Indexes("hello", &indexes);
    r.Indexes("", &indexes);
    ASSERT_EQ(indexes.size(), 1 + 2 * r.k) << layout;
    EXPECT_EQ(indexes[0], 42u);  // appended
    for (size_t i = 1; i < indexes.size(); ++i) EXPECT_LT(indexes[i], r.bits) << layout;
    // The item's indexes are the strategy's over MurmurHash3_x64_128 of its bytes.
    std::vector<uint64_t> expected(r.k);
    const guava::Hash128 h = guava::MurmurHash3_x64_128("hello");
    if (r.layout == GuavaLayout::kGuavaMitz32) {
      guava::Mitz32Indexes(h, r.k, r.bits, expected.data());
    } else {
      guava::Mitz64Indexes(h, r.k, r.bits, expected.data());
    }
    EXPECT_EQ(std::vector<uint64_t>(indexes.begin() + 1, indexes.begin() + 1 + r.k), expected);
  }
}

TEST(LayoutRulesTest, TheFirstMatchingRuleDecides) {
  LayoutRules rules = LayoutRules::FromArgs({{"users:vip:*", "guava-unrounded", "10", "0.1"},
                                             {"users:*", "guava", "10", "0.1"},
                                             {"bad", "nolayout", "1", "0.1"}});
  ASSERT_NE(rules.Match("users:vip:1"), nullptr);
  EXPECT_EQ(rules.Match("users:vip:1")->layout, GuavaLayout::kGuavaUnrounded);
  ASSERT_NE(rules.Match("users:1"), nullptr);
  EXPECT_EQ(rules.Match("users:1")->layout, GuavaLayout::kGuava);
  EXPECT_EQ(rules.Match("bad"), nullptr);  // a rule that does not parse is left out
  EXPECT_EQ(rules.Match("other"), nullptr);
  EXPECT_TRUE(LayoutRules().empty());
  EXPECT_EQ(LayoutRules().Match("users:1"), nullptr);
}

}  // namespace
}  // namespace bloomproxy::filters
