// BF.DEBUG (RedisBloom's BFDebug_RedisCommand): the text of its lines (C's %g for the error
// rates), its arguments, its reply through the BF plan (MiniRedis, tests/unit/bf_plan_fixture.h)
// for fresh, scaled and full filters, RedisBloom's documented example, missing keys, other types
// and damaged filters, inside MULTI, and for keys in a Java application's Guava layout.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "filters/bloom/bf_args.h"
#include "filters/bloom/bf_meta.h"
#include "filters/bloom/bf_replies.h"
#include "filters/bloom/bloom.h"
#include "filters/common/multi_command.h"
#include "filters/common/sketch_commands.h"
#include "filters/guava/bf_layout.h"
#include "filters/guava/guava_requests.h"
#include "protocol/reply_decoder.h"
#include "tests/unit/bf_plan_fixture.h"

namespace bloomproxy::filters {
namespace {

using Args = std::vector<std::string_view>;
using Lines = std::vector<std::string>;

// BF.DEBUG's reply made of its lines: an array of bulk strings.
std::string Reply(const Lines& lines) {
  std::string out = "*" + std::to_string(lines.size()) + "\r\n";
  for (const std::string& l : lines) out += "$" + std::to_string(l.size()) + "\r\n" + l + "\r\n";
  return out;
}

// RedisBloom's documentation of BF.DEBUG: the default filter after 497 distinct items.
const Lines kDocumentedExample = {
    "size:497",
    "bytes:144 bits:1152 hashes:8 hashwidth:64 capacity:100 size:100 ratio:0.005",
    "bytes:312 bits:2496 hashes:9 hashwidth:64 capacity:200 size:200 ratio:0.0025",
    "bytes:696 bits:5568 hashes:10 hashwidth:64 capacity:400 size:197 ratio:0.00125",
};

std::string Arity() { return "-ERR wrong number of arguments for 'bf.debug' command\r\n"; }

// --- the text ---------------------------------------------------------------------------------

TEST(BfDebugText, LinesAsRedisBloomPrintsThem) {
  DebugLink l{144, 1152, 8, 64, 100, 100, 0.005};
  EXPECT_EQ(DebugLinkText(l),
            "bytes:144 bits:1152 hashes:8 hashwidth:64 capacity:100 size:100 ratio:0.005");
  l.hashwidth = 32;
  l.size = 0;
  EXPECT_EQ(DebugLinkText(l),
            "bytes:144 bits:1152 hashes:8 hashwidth:32 capacity:100 size:0 ratio:0.005");
  EXPECT_EQ(DebugReply(0, {}), "*1\r\n$6\r\nsize:0\r\n");
  EXPECT_EQ(DebugReply(2, {l}),
            Reply({"size:2",
                   "bytes:144 bits:1152 hashes:8 hashwidth:32 capacity:100 size:0 ratio:0.005"}));
}

TEST(BfDebugText, RatioIsPrintedWithPercentG) {
  const struct {
    double ratio;
    const char* text;
  } cases[] = {
      {0.005, "0.005"},       {0.0025, "0.0025"}, {0.00125, "0.00125"}, {6.25e-05, "6.25e-05"},
      {0.000625, "0.000625"}, {0.0001, "0.0001"}, {1e-05, "1e-05"},     {0.25, "0.25"},
      {0.1 / 3, "0.0333333"}, {0.5, "0.5"},
  };
  for (const auto& c : cases) {
    const std::string text = DebugLinkText({8, 64, 1, 64, 1, 0, c.ratio});
    EXPECT_EQ(text.substr(text.find("ratio:") + 6), c.text) << c.text;
  }
  // The links of a chain reserved at 0.001: each halves the error.
  EXPECT_EQ(ChainLink(0.001, 100, 2, false, 3).error, 6.25e-05);
}

TEST(BfDebugText, CapacityIsPrintedWithPercentU) {
  // RedisBloom prints its 64-bit capacity with %u: the low 32 bits.
  const uint64_t big = (uint64_t{1} << 32) + 5;
  const std::string text = DebugLinkText({8, 64, 1, 64, big, 7, 0.5});
  EXPECT_EQ(text, "bytes:8 bits:64 hashes:1 hashwidth:64 capacity:5 size:7 ratio:0.5");
  // Every other number is printed whole.
  const std::string huge = DebugLinkText(
      {uint64_t{1} << 40, uint64_t{1} << 43, 3, 64, uint64_t{1} << 31, uint64_t{1} << 33, 0.5});
  EXPECT_EQ(huge,
            "bytes:1099511627776 bits:8796093022208 hashes:3 hashwidth:64 capacity:2147483648 "
            "size:8589934592 ratio:0.5");
}

TEST(BfDebugText, SameAsRedisBloomsFormatString) {
  // RedisBloom's format string and arguments as BFDebug_RedisCommand passes them (its capacity
  // is a uint64_t read by %u: on the ABIs Redis runs on, its low 32 bits).
  const DebugLink links[] = {
      {144, 1152, 8, 64, 100, 100, 0.005},
      {1984, 15872, 11, 64, 1000, 0, 0.0005},
      {8, 64, 1, 32, 1, 1, 0.25},
      {uint64_t{1} << 33, uint64_t{1} << 36, 30, 64, (uint64_t{1} << 34) + 3, 123456789, 1e-9},
      {912312, 7298496, 5, 32, 1000000, 17, 0.03},
  };
  for (const DebugLink& l : links) {
    char want[256];
    std::snprintf(want, sizeof(want),
                  "bytes:%llu bits:%llu hashes:%u hashwidth:%u capacity:%u size:%lu ratio:%g",
                  static_cast<unsigned long long>(l.bytes), static_cast<unsigned long long>(l.bits),
                  l.hashes, l.hashwidth, static_cast<unsigned>(l.capacity),
                  static_cast<unsigned long>(l.size), l.ratio);
    EXPECT_EQ(DebugLinkText(l), want);
  }
}

// --- arguments and the command table ----------------------------------------------------------

TEST(BfDebugArgs, OneKeyAnyCase) {
  BfCommand command;
  EXPECT_TRUE(LookupBfCommand("BF.DEBUG", &command));
  EXPECT_EQ(command, BfCommand::kDebug);
  EXPECT_TRUE(LookupBfCommand("bf.Debug", &command));
  EXPECT_FALSE(LookupBfCommand("BF.DEBU", &command));
  BfRequest req;
  EXPECT_EQ(ParseBfRequest(Args{"bf.debug", "k"}, BfDefaults{}, &req), "");
  EXPECT_EQ(req.command, BfCommand::kDebug);
  EXPECT_EQ(req.key, "k");
  EXPECT_FALSE(CreatesFilter(req));
  EXPECT_EQ(ParseBfRequest(Args{"BF.DEBUG"}, BfDefaults{}, &req), Arity());
  EXPECT_EQ(ParseBfRequest(Args{"BF.DEBUG", "k", "x"}, BfDefaults{}, &req), Arity());
}

TEST(BfDebugArgs, CommandTableRowHasNoCommandInfo) {
  const SketchFamilies bf = FamilyBit(SketchFamily::kBloom);
  SketchFamily family;
  EXPECT_TRUE(LookupSketchCommand("BF.DEBUG", &family));
  EXPECT_EQ(family, SketchFamily::kBloom);
  // Arity -1: Redis queues any count inside MULTI, the module checks 2 when it runs.
  EXPECT_TRUE(SketchArityOk("bf.debug", 1));
  EXPECT_TRUE(SketchArityOk("bf.debug", 5));
  const std::string entry = SketchCommandEntry("bf.debug", bf);
  EXPECT_EQ(entry.rfind("*10\r\n$8\r\nbf.debug\r\n:-1\r\n*3\r\n+readonly\r\n+module\r\n+fast\r\n"
                        ":1\r\n:1\r\n:1\r\n*2\r\n+@read\r\n+@bloom\r\n",
                        0),
            0u)
      << entry;
  EXPECT_NE(entry.find("+RW\r\n+access\r\n+update\r\n"), std::string::npos) << entry;
  EXPECT_EQ(SketchCommandDocs("bf.debug", bf),
            "$8\r\nbf.debug\r\n*4\r\n$5\r\ngroup\r\n$6\r\nmodule\r\n$6\r\nmodule\r\n$2\r\nbf\r\n");
  EXPECT_EQ(SketchGetKeys(Args{"BF.DEBUG", "k"}, false, bf), "*1\r\n$1\r\nk\r\n");
  EXPECT_EQ(SketchCommandEntry("bf.debug", FamilyBit(SketchFamily::kCuckoo)), "");
}

// --- through the plan -------------------------------------------------------------------------

TEST_F(BfPlanTest, DebugOfAFreshFilter) {
  EXPECT_EQ(Bf({"BF.RESERVE", "f", "0.01", "100"}), "+OK\r\n");
  EXPECT_EQ(Bf({"BF.DEBUG", "f"}),
            Reply({"size:0",
                   "bytes:144 bits:1152 hashes:8 hashwidth:64 capacity:100 size:0 ratio:0.005"}));
  EXPECT_EQ(Bf({"BF.ADD", "g", "a"}), ":1\r\n");
  EXPECT_EQ(Bf({"BF.DEBUG", "g"}),
            Reply({"size:1",
                   "bytes:144 bits:1152 hashes:8 hashwidth:64 capacity:100 size:1 ratio:0.005"}));
}

TEST_F(BfPlanTest, DebugOfRedisBloomsDocumentedExample) {
  for (int i = 0; i < 497; ++i) {
    ASSERT_EQ(Bf({"BF.ADD", "doc", "item:" + std::to_string(i)}), ":1\r\n") << i;
  }
  EXPECT_EQ(Bf({"BF.DEBUG", "doc"}), Reply(kDocumentedExample));
  EXPECT_EQ(Bf({"BF.CARD", "doc"}), ":497\r\n");
}

TEST_F(BfPlanTest, DebugOfAFullNonScalingFilter) {
  EXPECT_EQ(Bf({"BF.RESERVE", "n", "0.01", "10", "NONSCALING"}), "+OK\r\n");
  int added = 0;
  for (int i = 0; i < 100 && added < 10; ++i) {
    added += Bf({"BF.ADD", "n", "x" + std::to_string(i)}) == ":1\r\n" ? 1 : 0;
  }
  EXPECT_EQ(Bf({"BF.ADD", "n", "one more"}), "-ERR non scaling filter is full\r\n");
  EXPECT_EQ(
      Bf({"BF.DEBUG", "n"}),
      Reply({"size:10", "bytes:16 bits:128 hashes:7 hashwidth:64 capacity:10 size:10 ratio:0.01"}));
}

TEST_F(BfPlanTest, DebugOfMissingKeysOtherTypesAndDamagedFilters) {
  EXPECT_EQ(Bf({"BF.DEBUG", "nothing"}), "-ERR not found\r\n");
  redis_.strings["s"] = "v";
  EXPECT_EQ(Bf({"BF.DEBUG", "s"}), kWrongTypeReply);
  redis_.hashes["h"]["x"] = "y";  // a hash without the marker: another type
  EXPECT_EQ(Bf({"BF.DEBUG", "h"}), kWrongTypeReply);
  // Damage answers as BF.INFO does: an error, never lines made of it.
  const auto same_as_info = [&] {
    const std::string reply = Bf({"BF.DEBUG", "f"});
    EXPECT_EQ(reply.rfind("-ERR bloomproxy: unexpected reply from upstream", 0), 0u) << reply;
    EXPECT_EQ(reply, Bf({"BF.INFO", "f"}));
  };
  BothCaches([&] { redis_.strings.erase(Count()); }, same_as_info);
  BothCaches([&] { redis_.strings[Count()] = "x"; }, same_as_info);
  redis_ = MiniRedis();
  warm_ = false;
  MakeFilter();
  redis_.hashes["f"]["l0"] = "garbage";
  EXPECT_EQ(Bf({"BF.DEBUG", "f"}),
            Nonsense("HGETALL", "the filter's metadata field 'l0' is not valid"));
}

// --- inside MULTI -----------------------------------------------------------------------------

std::string MultiReply(const Args& args, std::string_view answer, const BfConfig& config) {
  std::string refusal;
  std::unique_ptr<QueuedSketch> q = QueueBfCommand(args, config, &refusal);
  if (q == nullptr) return "refused " + refusal;
  protocol::ReplyDecoder decoder;
  return q->Reply(answer, &decoder);
}

// The script's answer {"counts", HGETALL, counts} for `meta` with `counts`.
std::string CountsAnswer(const FilterMeta& meta, const std::vector<std::string>& counts) {
  const std::vector<std::string> fields = MetaHashFields(meta);
  std::string out = "*3\r\n$6\r\ncounts\r\n*" + std::to_string(fields.size()) + "\r\n";
  for (const std::string& f : fields) out += "$" + std::to_string(f.size()) + "\r\n" + f + "\r\n";
  out += "*" + std::to_string(counts.size()) + "\r\n";
  for (const std::string& c : counts) out += "$" + std::to_string(c.size()) + "\r\n" + c + "\r\n";
  return out;
}

TEST(BfDebugMulti, LinesFromTheCountsScript) {
  const BfConfig config;
  BfRequest req;
  ASSERT_EQ(ParseBfRequest(Args{"BF.ADD", "doc", "a"}, config.defaults, &req), "");
  FilterMeta meta = NewFilterMeta("doc", req, nullptr, config);
  for (size_t i = 1; i < 3; ++i) meta.links.push_back(ChainLink(0.01, 100, 2, false, i));
  EXPECT_EQ(MultiReply({"BF.DEBUG", "doc"}, CountsAnswer(meta, {"100", "200", "197"}), config),
            Reply(kDocumentedExample));
  EXPECT_EQ(MultiReply({"BF.DEBUG", "doc"}, "*1\r\n$7\r\nmissing\r\n", config),
            "-ERR not found\r\n");
  EXPECT_EQ(MultiReply({"BF.DEBUG", "doc"}, "*1\r\n$9\r\nwrongtype\r\n", config), kWrongTypeReply);
  EXPECT_EQ(MultiReply({"BF.DEBUG", "doc"}, CountsAnswer(meta, {"1", "2"}), config),
            "-ERR bloomproxy: the filter's metadata is damaged: counts missing\r\n");
  // A wrong count passes Redis's arity (-1): queued, and RedisBloom's error comes at EXEC.
  EXPECT_EQ(MultiReply({"BF.DEBUG"}, "+PONG\r\n", config), Arity());
  EXPECT_EQ(MultiReply({"BF.DEBUG", "a", "b"}, "+PONG\r\n", config), Arity());
}

// --- Guava layouts ----------------------------------------------------------------------------

LayoutRule Rule(const std::vector<std::string>& args) {
  LayoutRule rule;
  EXPECT_EQ(ParseLayoutRule(args, &rule), "");
  return rule;
}

std::string GuavaDebug(const LayoutRule& rule, const std::vector<int64_t>& bitcounts) {
  guava_plan::GuavaRequest req;
  req.command = BfCommand::kDebug;
  return guava_plan::CountsReply(req, rule, bitcounts);
}

TEST(BfDebugGuava, OneLinePerDataKey) {
  // guava 100 0.01: 960 bits (120 bytes), k = 7; 7 bits set is one item, 100 are 15.
  const LayoutRule g = Rule({"g:*", "guava", "100", "0.01"});
  EXPECT_EQ(
      GuavaDebug(g, {7}),
      Reply({"size:1", "bytes:120 bits:960 hashes:7 hashwidth:64 capacity:100 size:1 ratio:0.01"}));
  const LayoutRule u = Rule({"u:*", "guava-unrounded", "100", "0.01"});
  EXPECT_EQ(
      GuavaDebug(u, {0}),
      Reply({"size:0", "bytes:120 bits:958 hashes:7 hashwidth:64 capacity:100 size:0 ratio:0.01"}));
  const LayoutRule m = Rule({"m:*", "guava-mitz32", "1000000", "0.03"});
  EXPECT_EQ(GuavaDebug(m, {0}),
            Reply({"size:0",
                   "bytes:912312 bits:7298496 hashes:5 hashwidth:32 capacity:1000000 "
                   "size:0 ratio:0.03"}));
  EXPECT_EQ(guava_plan::HashWidth(GuavaLayout::kGuavaMitz32Unrounded), 32u);
  // An expanding filter: a line per data key, the total as BF.CARD's.
  const LayoutRule e = Rule({"e:*", "guava", "100", "0.01", "expanding", "%s:cursor"});
  EXPECT_EQ(GuavaDebug(e, {500, 100, 7}),
            Reply({"size:117",
                   "bytes:120 bits:960 hashes:7 hashwidth:64 capacity:100 size:101 ratio:0.01",
                   "bytes:120 bits:960 hashes:7 hashwidth:64 capacity:100 size:15 ratio:0.01",
                   "bytes:120 bits:960 hashes:7 hashwidth:64 capacity:100 size:1 ratio:0.01"}));
  guava_plan::GuavaRequest card;
  card.command = BfCommand::kCard;
  EXPECT_EQ(guava_plan::CountsReply(card, e, {500, 100, 7}), ":117\r\n");
  // Every bit set: Guava's count would throw; RedisBloom's numbers stay unsigned.
  EXPECT_EQ(GuavaDebug(g, {960}), Reply({"size:9223372036854775807",
                                         "bytes:120 bits:960 hashes:7 hashwidth:64 capacity:100 "
                                         "size:9223372036854775807 ratio:0.01"}));
}

TEST(BfDebugGuava, InsideMulti) {
  BfConfig config;
  config.layouts = LayoutRules({Rule({"g:*", "guava", "100", "0.01"})});
  EXPECT_EQ(
      MultiReply({"BF.DEBUG", "g:1"}, "*2\r\n:1\r\n:7\r\n", config),
      Reply({"size:1", "bytes:120 bits:960 hashes:7 hashwidth:64 capacity:100 size:1 ratio:0.01"}));
  EXPECT_EQ(MultiReply({"BF.DEBUG", "g:1"}, "*2\r\n:0\r\n:0\r\n", config), "-ERR not found\r\n");
  EXPECT_EQ(MultiReply({"BF.DEBUG", "g:1"}, kWrongTypeReply, config), kWrongTypeReply);
}

}  // namespace
}  // namespace bloomproxy::filters
