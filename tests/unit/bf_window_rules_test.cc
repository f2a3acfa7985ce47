// bf-window rules (filters/bloom/window/window_rules.h): parsing a rule, which rule a key and a
// command follow, and the request a command parses to under the rules.
#include "filters/bloom/window/window_rules.h"

#include <gtest/gtest.h>

#include <list>
#include <string>
#include <utility>
#include <vector>

namespace bloomproxy::filters {
namespace {

WindowRule MustParseRule(const std::vector<std::string>& args) {
  WindowRule rule;
  EXPECT_EQ(ParseWindowRule(args, &rule), "");
  return rule;
}

std::string RuleError(const std::vector<std::string>& args) {
  WindowRule rule;
  rule.window_ms = 77;
  const std::string error = ParseWindowRule(args, &rule);
  EXPECT_EQ(rule.window_ms, 77u) << "a bad rule leaves *rule alone";
  return error;
}

TEST(WindowRuleTest, Parses) {
  WindowRule r = MustParseRule({"dedup:*", "86400000"});
  EXPECT_EQ(r.pattern, "dedup:*");
  EXPECT_EQ(r.window_ms, 86400000u);
  EXPECT_EQ(r.slots, 0u);
  EXPECT_EQ(r.error_rate, 0);
  EXPECT_EQ(r.capacity, 0u);
  EXPECT_EQ(r.text, "dedup:* 86400000");

  r = MustParseRule({"s:*", "3000", "SLOTS", "5", "error", "0.001", "Capacity", "1000000"});
  EXPECT_EQ(r.window_ms, 3000u);
  EXPECT_EQ(r.slots, 5u);
  EXPECT_EQ(r.error_rate, 0.001);
  EXPECT_EQ(r.capacity, 1000000u);
  EXPECT_EQ(r.text, "s:* 3000 SLOTS 5 error 0.001 Capacity 1000000");

  // Any order; the limits themselves.
  r = MustParseRule({"*", std::to_string(kMaxWindowMs), "capacity", "1073741824", "slots", "64"});
  EXPECT_EQ(r.window_ms, kMaxWindowMs);
  EXPECT_EQ(r.capacity, 1073741824u);
  EXPECT_EQ(r.slots, 64u);
  EXPECT_EQ(MustParseRule({"*", "1", "slots", "2", "capacity", "1"}).slots, 2u);
}

TEST(WindowRuleTest, Errors) {
  const std::string kWindow = " is not a window (milliseconds, 1..316224000000)";
  EXPECT_EQ(RuleError({"k:*"}), "needs PATTERN WINDOW_MS [SLOTS g] [ERROR e] [CAPACITY n]");
  for (const char* bad : {"0", "-1", "x", "", "1.5", "+5", "05", "1e3", "316224000001"}) {
    EXPECT_EQ(RuleError({"k:*", bad}), "'" + std::string(bad) + "'" + kWindow) << bad;
  }
  for (const char* bad : {"0", "1", "65", "x", "-2"}) {
    EXPECT_EQ(RuleError({"k:*", "10", "slots", bad}),
              "'" + std::string(bad) + "' is not a slot count (2..64)")
        << bad;
  }
  for (const char* bad : {"0", "1", "2", "x", "nan", "-0.1"}) {
    EXPECT_EQ(RuleError({"k:*", "10", "error", bad}),
              "'" + std::string(bad) + "' is not an error rate (between 0 and 1, exclusive)")
        << bad;
  }
  for (const char* bad : {"0", "-1", "1073741825", "x", "1.5"}) {
    EXPECT_EQ(RuleError({"k:*", "10", "capacity", bad}),
              "'" + std::string(bad) + "' is not a capacity (1..1073741824)")
        << bad;
  }
  EXPECT_EQ(RuleError({"k:*", "10", "slots"}), "option 'slots' has no value");
  EXPECT_EQ(RuleError({"k:*", "10", "slots", "3", "ERROR"}), "option 'ERROR' has no value");
  EXPECT_EQ(RuleError({"k:*", "10", "ttl", "5"}),
            "'ttl' is not an option (slots, error, capacity)");
  EXPECT_EQ(RuleError({"k:*", "10", "window", "5"}),
            "'window' is not an option (slots, error, capacity)");
  EXPECT_EQ(RuleError({"k:*", "10", "slots", "3", "Slots", "4"}), "option 'Slots' is given twice");
}

TEST(WindowRulesTest, FirstMatchWins) {
  const WindowRules rules = WindowRules::FromArgs({
      {"dedup:{a}*", "1000", "slots", "2"},
      {"dedup:*", "2000"},
      {"bad:*", "0"},  // refused when loaded; left out here
      {"*:seen", "3000"},
  });
  EXPECT_FALSE(rules.empty());
  ASSERT_NE(rules.Match("dedup:{a}x"), nullptr);
  EXPECT_EQ(rules.Match("dedup:{a}x")->window_ms, 1000u);
  EXPECT_EQ(rules.Match("dedup:x")->window_ms, 2000u);
  EXPECT_EQ(rules.Match("dedup:")->window_ms, 2000u);
  EXPECT_EQ(rules.Match("users:seen")->window_ms, 3000u);
  EXPECT_EQ(rules.Match("dedup:seen")->window_ms, 2000u);
  EXPECT_EQ(rules.Match("bad:x"), nullptr);
  EXPECT_EQ(rules.Match("Dedup:x"), nullptr);  // Redis's glob is case-sensitive
  EXPECT_EQ(rules.Match(""), nullptr);
  // Redis's glob syntax, as bf-layout's: classes and escapes.
  const WindowRules glob = WindowRules::FromArgs({{"k[0-9]?\\*", "5"}});
  EXPECT_NE(glob.Match("k1x*"), nullptr);
  EXPECT_EQ(glob.Match("k1xy"), nullptr);
  EXPECT_EQ(glob.Match("kax*"), nullptr);
  EXPECT_TRUE(WindowRules::FromArgs({}).empty());
  EXPECT_EQ(WindowRules().Match("anything"), nullptr);
}

// ---------------------------------------------------------------------------------------------
// Commands under the rules.

class WindowedParseTest : public ::testing::Test {
 protected:
  WindowRules rules_ = WindowRules::FromArgs({
      {"w:*", "60000", "slots", "4", "error", "0.001", "capacity", "5000"},
      {"bare:*", "1000"},
  });
  BfDefaults defaults_{0.02, 300, 4};

  BfRequest Parse(std::vector<std::string> args) {
    keep_.push_back(std::move(args));
    std::vector<std::string_view> views(keep_.back().begin(), keep_.back().end());
    BfRequest req;
    EXPECT_EQ(ParseBfRequestWithWindows(views, defaults_, rules_, &req), "") << keep_.back()[0];
    return req;
  }
  std::string ErrorOf(const std::vector<std::string>& args) {
    std::vector<std::string_view> views(args.begin(), args.end());
    BfRequest req;
    return ParseBfRequestWithWindows(views, defaults_, rules_, &req);
  }

 private:
  std::list<std::vector<std::string>> keep_;
};

TEST_F(WindowedParseTest, AddAndMAddTakeTheWholeRule) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"BF.ADD", "w:1", "a"}, {"bf.madd", "w:1", "a", "b"}}) {
    const BfRequest r = Parse(args);
    EXPECT_EQ(r.window_ms, 60000u) << args[0];
    EXPECT_EQ(r.slots, 4u);
    EXPECT_EQ(r.error_rate, 0.001);
    EXPECT_EQ(r.capacity, 5000u);
    EXPECT_EQ(r.expansion, 4u);  // the configured one: a rule has none
    EXPECT_EQ(r.ttl_ms, 0u);
    EXPECT_EQ(r.items.front(), "a");
  }
  // A rule without SLOTS, ERROR and CAPACITY: the window, the slots' default, the defaults.
  const BfRequest r = Parse({"BF.ADD", "bare:1", "a"});
  EXPECT_EQ(r.window_ms, 1000u);
  EXPECT_EQ(r.slots, 0u);
  EXPECT_EQ(r.error_rate, 0.02);
  EXPECT_EQ(r.capacity, 300u);
}

// The proxy batches one loop turn's adds to a name into one BF.MADD request built from the
// defaults: with ApplyWindowRule it is the request the parse gives.
TEST_F(WindowedParseTest, BuiltAddsMatchParsedOnes) {
  for (const char* key : {"w:1", "bare:1", "other"}) {
    const BfRequest parsed = Parse({"BF.MADD", key, "a", "b"});
    BfRequest built;
    built.command = BfCommand::kMAdd;
    built.key = key;
    built.error_rate = defaults_.error_rate;
    built.capacity = defaults_.capacity;
    built.expansion = defaults_.expansion;
    built.items = {"a", "b"};
    if (const WindowRule* rule = rules_.For(built)) ApplyWindowRule(*rule, &built);
    EXPECT_EQ(built.window_ms, parsed.window_ms) << key;
    EXPECT_EQ(built.slots, parsed.slots) << key;
    EXPECT_EQ(built.error_rate, parsed.error_rate) << key;
    EXPECT_EQ(built.capacity, parsed.capacity) << key;
    EXPECT_EQ(built.expansion, parsed.expansion) << key;
    EXPECT_EQ(built.nonscaling, parsed.nonscaling) << key;
  }
}

TEST_F(WindowedParseTest, InsertKeepsItsOwnCapacityAndError) {
  BfRequest r = Parse({"BF.INSERT", "w:1", "ITEMS", "a"});
  EXPECT_EQ(r.window_ms, 60000u);
  EXPECT_EQ(r.slots, 4u);
  EXPECT_EQ(r.error_rate, 0.001);
  EXPECT_EQ(r.capacity, 5000u);

  // Each of its own wins on its own.
  r = Parse({"BF.INSERT", "w:1", "CAPACITY", "10", "ITEMS", "a"});
  EXPECT_EQ(r.capacity, 10u);
  EXPECT_EQ(r.error_rate, 0.001);
  r = Parse({"BF.INSERT", "w:1", "ERROR", "0.1", "NONSCALING", "ITEMS", "a"});
  EXPECT_EQ(r.capacity, 5000u);
  EXPECT_EQ(r.error_rate, 0.1);
  EXPECT_TRUE(r.nonscaling);
  EXPECT_EQ(r.window_ms, 60000u);

  // Its own WINDOW: the rule does not apply at all.
  r = Parse({"BF.INSERT", "w:1", "WINDOW", "5000", "ITEMS", "a"});
  EXPECT_EQ(r.window_ms, 5000u);
  EXPECT_EQ(r.slots, 0u);
  EXPECT_EQ(r.error_rate, 0.02);
  EXPECT_EQ(r.capacity, 300u);

  // TTL alone takes the rule's window and is left for the plan to check against the filter's:
  // an existing filter may have another window than the rule's.
  r = Parse({"BF.INSERT", "bare:1", "TTL", "5000", "ITEMS", "a"});
  EXPECT_EQ(r.window_ms, 1000u);
  EXPECT_EQ(r.ttl_ms, 5000u);
  r = Parse({"BF.INSERT", "bare:1", "NOCREATE", "TTL", "500", "ITEMS", "a"});
  EXPECT_TRUE(r.nocreate);
  EXPECT_EQ(r.window_ms, 1000u);
  EXPECT_EQ(r.ttl_ms, 500u);
}

TEST_F(WindowedParseTest, OtherCommandsAndKeysAreUntouched) {
  BfRequest r = Parse({"BF.RESERVE", "w:1", "0.05", "100"});
  EXPECT_EQ(r.window_ms, 0u);
  EXPECT_EQ(r.capacity, 100u);
  EXPECT_EQ(r.error_rate, 0.05);
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"BF.EXISTS", "w:1", "a"},
           {"BF.MEXISTS", "w:1", "a"},
           {"BF.INFO", "w:1"},
           {"BF.CARD", "w:1"},
           {"BF.SCANDUMP", "w:1", "0"},
           {"BF.LOADCHUNK", "w:1", "1", "x"},
           {"BF.ADD", "other", "a"},
           {"BF.INSERT", "other", "ITEMS", "a"},
       }) {
    r = Parse(args);
    EXPECT_EQ(r.window_ms, 0u) << args[0] << " " << args[1];
    EXPECT_EQ(r.slots, 0u);
    EXPECT_EQ(r.capacity, 300u);
    EXPECT_EQ(r.error_rate, 0.02);
  }
  // The request's own reply errors, byte for byte, rule or not.
  EXPECT_EQ(ErrorOf({"BF.ADD", "w:1"}), "-ERR wrong number of arguments for 'bf.add' command\r\n");
  EXPECT_EQ(ErrorOf({"BF.INSERT", "w:1", "SLOTS", "3", "ITEMS", "a"}), kErrBadSlots);
  EXPECT_EQ(ErrorOf({"BF.INSERT", "w:1", "CAPACITY", "0", "ITEMS", "a"}), "-Bad capacity\r\n");
  EXPECT_EQ(ErrorOf({"BF.INFO", "w:1", "bogus"}), "-Invalid information value\r\n");
}

}  // namespace
}  // namespace bloomproxy::filters
