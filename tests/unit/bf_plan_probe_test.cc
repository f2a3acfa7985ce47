// BF.EXISTS's probe (filters/bloom/bf_plan_read.cc): while most lookups of a filter are of items it
// does not have, a single-item lookup reads the item's first bit in each link, and its other
// bits only where that bit is 1. Run against MiniRedis (bf_plan_fixture.h), counting what the
// plans send.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/unit/bf_plan_fixture.h"

namespace bloomproxy::filters {
namespace {

class BfProbeTest : public BfPlanTest {
 protected:
  // Ops of every BITFIELD_RO sent since `from` (an index of redis_.sent), per command.
  std::vector<size_t> ReadOps(size_t from) const {
    std::vector<size_t> out;
    for (size_t i = from; i < redis_.sent.size(); ++i) {
      if (redis_.sent[i][0] == "BITFIELD_RO") out.push_back((redis_.sent[i].size() - 2) / 3);
    }
    return out;
  }
  // BF.EXISTS f <item>: its reply, and the ops of each BITFIELD_RO it sent.
  std::string Exists(const std::string& item, std::vector<size_t>* ops) {
    const size_t from = redis_.sent.size();
    std::string reply = Bf({"BF.EXISTS", "f", item});
    *ops = ReadOps(from);
    return reply;
  }
};

TEST_F(BfProbeTest, AnItemThatIsThereIsReadInTwoSteps) {
  MakeFilter();
  std::vector<size_t> ops;
  EXPECT_EQ(Exists("a", &ops), ":1\r\n");
  EXPECT_EQ(ops, (std::vector<size_t>{1, k_ - 1}));
  EXPECT_EQ(Bf({"BF.MEXISTS", "f", "b"}), "*1\r\n:1\r\n");
}

TEST_F(BfProbeTest, AbsentItemsAreMostlyToldByTheirFirstBit) {
  MakeFilter();
  int one_step = 0, two_steps = 0;
  for (int i = 0; i < 200; ++i) {
    std::vector<size_t> ops;
    ASSERT_EQ(Exists("absent" + std::to_string(i), &ops), ":0\r\n") << i;
    if (ops == std::vector<size_t>{1}) {
      ++one_step;
    } else {
      // The first bit was set (by "a" or "b"): the others were read, and one of them is 0.
      EXPECT_EQ(ops, (std::vector<size_t>{1, k_ - 1})) << i;
      ++two_steps;
    }
  }
  // Two items set at most 16 of the filter's bits: nearly every probe reads 0.
  EXPECT_GT(one_step, 180);
  EXPECT_EQ(one_step + two_steps, 200);
}

TEST_F(BfProbeTest, AProbeThatPassesForAnAbsentItemStillAnswersZero) {
  MakeFilter();
  // Fill the filter near its capacity (100), so that many absent items pass the probe.
  std::vector<std::string> madd = {"BF.MADD", "f"};
  for (int i = 0; i < 90; ++i) madd.push_back("in" + std::to_string(i));
  Bf(madd);
  int passed = 0;
  for (int i = 0; i < 300; ++i) {
    std::vector<size_t> ops;
    const std::string item = "out" + std::to_string(i);
    const std::string reply = Exists(item, &ops);
    if (ops.size() == 2 && reply == ":0\r\n") ++passed;
    // The same answer as reading every bit in one step (BF.MEXISTS of several items).
    EXPECT_EQ("*2\r\n" + reply + ":1\r\n", Bf({"BF.MEXISTS", "f", item, "a"})) << item;
  }
  EXPECT_GT(passed, 0);
}

TEST_F(BfProbeTest, SeveralItemsOfOneCommandAreReadInOneStep) {
  MakeFilter();
  const size_t from = redis_.sent.size();
  EXPECT_EQ(Bf({"BF.MEXISTS", "f", "a", "zz", "b"}), "*3\r\n:1\r\n:0\r\n:1\r\n");
  EXPECT_EQ(ReadOps(from), std::vector<size_t>{3 * k_});
}

TEST_F(BfProbeTest, MostlyPresentLookupsAreReadInOneStepThenProbedAgain) {
  MakeFilter();
  std::vector<size_t> ops;
  // Lookups of items the filter has: after a few, no more probe.
  for (int i = 0; i < 20; ++i) ASSERT_EQ(Exists(i % 2 ? "a" : "b", &ops), ":1\r\n");
  EXPECT_EQ(ops, std::vector<size_t>{k_});
  // Lookups of absent items: once they are the majority, the probe is back.
  for (int i = 0; i < 40; ++i) ASSERT_EQ(Exists("absent" + std::to_string(i), &ops), ":0\r\n");
  EXPECT_EQ(Exists("a", &ops), ":1\r\n");
  EXPECT_EQ(ops, (std::vector<size_t>{1, k_ - 1}));
}

TEST_F(BfProbeTest, EveryLinkIsProbed) {
  // Capacity 10, expansion 2: 40 items make a chain of three links.
  MakeFilter({"BF.RESERVE", "f", "0.01", "10", "EXPANSION", "2"});
  std::vector<std::string> madd = {"BF.MADD", "f"};
  for (int i = 0; i < 40; ++i) madd.push_back("i" + std::to_string(i));
  Bf(madd);
  ASSERT_EQ(Bf({"BF.INFO", "f", "FILTERS"}), "*1\r\n:3\r\n");
  for (int i = 0; i < 40; ++i) {
    std::vector<size_t> ops;
    cache_.Find("f")->probes = {};  // probing (the tally would stop it: these are all there)
    ASSERT_EQ(Exists("i" + std::to_string(i), &ops), ":1\r\n") << i;
    // A probe per link, then the rest in each link whose probe read 1 (its own at least).
    ASSERT_GE(ops.size(), 4u) << i;
    EXPECT_LE(ops.size(), 6u) << i;
    EXPECT_EQ(ops[0] + ops[1] + ops[2], 3u) << i;
    // Read whole, the same answer.
    cache_.Find("f")->probes = {100, 100};
    ASSERT_EQ(Exists("i" + std::to_string(i), &ops), ":1\r\n") << i;
    EXPECT_EQ(ops.size(), 3u) << i;
  }
}

TEST_F(BfProbeTest, AFilterReplacedBetweenTheStepsIsReadAgain) {
  MakeFilter();
  std::vector<size_t> ops;
  // Between the probe and the rest, the filter is deleted and made again without "a".
  redis_.override = [this](const std::vector<std::string>& cmd, int) -> std::optional<std::string> {
    if (cmd[0] == "HMGET" && redis_.calls["BITFIELD_RO"] == 1) {
      redis_.override = nullptr;
      redis_.hashes.erase("f");
      redis_.strings.clear();
      EXPECT_EQ(Bf({"BF.RESERVE", "f", "0.01", "100"}), "+OK\r\n");
    }
    return std::nullopt;
  };
  redis_.calls.clear();
  EXPECT_EQ(Exists("a", &ops), ":0\r\n");
}

}  // namespace
}  // namespace bloomproxy::filters
