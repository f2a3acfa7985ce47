// BF plans fed upstream replies that make no sense (no sockets): a filter's keys changed under
// the plan (deleted, of another type, overwritten), and replies of the wrong type or length,
// errors in the middle of a pipeline, undecodable or truncated frames. Each must end the command
// with an error reply, never with an answer made of the nonsense (":0", ":1", a count, an INFO
// value), and never crash.
//
// The plans run against MiniRedis, a small in-memory model of the Redis commands plans send
// (strings and hashes only), so a healthy filter gives RedisBloom's replies; each test then
// damages its keys, or replaces the reply to one command.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "filters/bloom/add_script.h"
#include "tests/unit/bf_plan_fixture.h"

namespace bloomproxy::filters {
namespace {

TEST_F(BfPlanTest, HealthyFilterGivesRedisBloomsReplies) {
  MakeFilter();
  ExpectHealthy();
  EXPECT_EQ(Bf({"BF.ADD", "f", "a"}), ":0\r\n");
  EXPECT_EQ(Bf({"BF.ADD", "f", "c"}), ":1\r\n");
  EXPECT_EQ(Bf({"BF.INFO", "f", "ITEMS"}), "*1\r\n:3\r\n");
  EXPECT_EQ(Bf({"BF.EXISTS", "nothing", "a"}), ":0\r\n");
  EXPECT_EQ(Bf({"BF.CARD", "nothing"}), ":0\r\n");
  EXPECT_EQ(redis_.strings[Bits()].size(), bytes_);
  EXPECT_EQ(redis_.strings[Count()], "3");
  EXPECT_EQ(k_, 8u);
  warm_ = false;
  EXPECT_EQ(Bf({"BF.MEXISTS", "f", "a", "b", "c", "zz"}), "*4\r\n:1\r\n:1\r\n:1\r\n:0\r\n");
  EXPECT_EQ(Bf({"BF.CARD", "f"}), ":3\r\n");
}

// A windowed filter's checked lookup round (filters/bloom/window/window_check.h): the slot's
// lookup sends its bit reads only, the check script having validated the slot and its shards.
TEST_F(BfPlanTest, LookupCheckedOutsideSendsOnlyItsBitReads) {
  MakeFilter();
  for (const bool checked : {false, true}) {
    SCOPED_TRACE(checked ? "checked outside" : "on its own");
    warm_ = true;
    const std::vector<std::string> args = {"BF.MEXISTS", "f", "a", "b", "zz"};
    std::vector<std::string_view> views(args.begin(), args.end());
    BfRequest request;
    ASSERT_EQ(ParseBfRequest(views, config_.defaults, &request), "");
    request.checked_outside = checked;
    redis_.calls.clear();
    EXPECT_EQ(Run(MakeBfPlan(request, &cache_, &config_)), "*3\r\n:1\r\n:1\r\n:0\r\n");
    EXPECT_EQ(redis_.calls["HMGET"], checked ? 0 : 1);
    EXPECT_EQ(redis_.calls["STRLEN"], checked ? 0 : 1);
    EXPECT_EQ(redis_.calls["BITFIELD_RO"], 1);
  }
  // Only lookups take it: an add keeps its validation.
  const std::vector<std::string> add = {"BF.ADD", "f", "c"};
  std::vector<std::string_view> views(add.begin(), add.end());
  BfRequest request;
  ASSERT_EQ(ParseBfRequest(views, config_.defaults, &request), "");
  request.checked_outside = true;
  redis_.calls.clear();
  EXPECT_EQ(Run(MakeBfPlan(request, &cache_, &config_)), ":1\r\n");
  EXPECT_GE(redis_.calls["HMGET"], 1);
}

TEST(UnexpectedUpstreamReplyTest, OneWellFormedErrorLine) {
  EXPECT_EQ(
      protocol::errors::UnexpectedUpstreamReply("STRLEN of link 0 shard 0", "the key is missing"),
      "-ERR bloomproxy: unexpected reply from upstream to STRLEN of link 0 shard 0: the key "
      "is missing\r\n");
  EXPECT_EQ(protocol::errors::UnexpectedUpstreamReply("X", "a\r\nb"),
            "-ERR bloomproxy: unexpected reply from upstream to X: a  b\r\n");
  const std::string cut = protocol::errors::UnexpectedUpstreamReply("X", std::string(1000, 'y'));
  EXPECT_EQ(cut, "-ERR bloomproxy: unexpected reply from upstream to X: " + std::string(200, 'y') +
                     "...\r\n");
}

// --- (a) the filter's keys changed under the plan ---------------------------------------------

TEST_F(BfPlanTest, BitsKeyDeleted) {
  BothCaches([&] { redis_.strings.erase(Bits()); },
             [&] {
               const std::string missing =
                   Nonsense("STRLEN of link 0 shard 0", "the key is missing");
               EXPECT_EQ(Bf({"BF.EXISTS", "f", "a"}), missing);
               EXPECT_EQ(Bf({"BF.MEXISTS", "f", "a", "zz"}), missing);
               EXPECT_EQ(Bf({"BF.ADD", "f", "a"}), missing);
               EXPECT_EQ(Bf({"BF.MADD", "f", "a", "new"}), missing);
               EXPECT_EQ(Bf({"BF.INSERT", "f", "ITEMS", "new"}), missing);
               // Nothing was written: the shard is not created anew (small, all zeros), and the
               // places reserved for the adds were given back.
               EXPECT_FALSE(redis_.Exists(Bits()));
               EXPECT_EQ(redis_.strings[Count()], "2");
               EXPECT_EQ(Bf({"BF.SCANDUMP", "f", "1"}),
                         Nonsense("GETRANGE of link 0 shard 0", "the key is missing"));
             });
}

TEST_F(BfPlanTest, BitsKeyOfAnotherType) {
  BothCaches(
      [&] {
        redis_.strings.erase(Bits());
        redis_.hashes[Bits()]["x"] = "y";
      },
      [&] {
        const std::string wrongtype = Nonsense("STRLEN of link 0 shard 0", kWrongTypeText);
        EXPECT_EQ(Bf({"BF.EXISTS", "f", "a"}), wrongtype);
        EXPECT_EQ(Bf({"BF.ADD", "f", "new"}), wrongtype);
        EXPECT_EQ(Bf({"BF.MADD", "f", "new", "a"}), wrongtype);
        EXPECT_EQ(Bf({"BF.SCANDUMP", "f", "1"}),
                  Nonsense("GETRANGE of link 0 shard 0", kWrongTypeText));
        EXPECT_EQ(redis_.strings[Count()], "2");
      });
}

TEST_F(BfPlanTest, BitsKeyOverwrittenWithGarbage) {
  BothCaches([&] { redis_.strings[Bits()] = "garbage"; },
             [&] {
               const std::string wrong =
                   Nonsense("STRLEN of link 0 shard 0",
                            "the key holds 7 bytes, expected " + std::to_string(bytes_));
               EXPECT_EQ(Bf({"BF.EXISTS", "f", "a"}), wrong);
               EXPECT_EQ(Bf({"BF.ADD", "f", "new"}), wrong);
               EXPECT_EQ(Bf({"BF.MADD", "f", "new", "a"}), wrong);
               EXPECT_EQ(redis_.strings[Bits()], "garbage");
               EXPECT_EQ(Bf({"BF.LOADCHUNK", "f", "9", "abcdefgh"}), wrong);
             });
}

TEST_F(BfPlanTest, CountKeyDeleted) {
  BothCaches([&] { redis_.strings.erase(Count()); },
             [&] {
               const std::string counts =
                   Nonsense("MGET of the counts", "the count of link 0 is missing or not a string");
               EXPECT_EQ(Bf({"BF.CARD", "f"}), counts);
               EXPECT_EQ(Bf({"BF.INFO", "f"}), counts);
               EXPECT_EQ(Bf({"BF.INFO", "f", "ITEMS"}), counts);
               EXPECT_EQ(Bf({"BF.SCANDUMP", "f", "0"}), counts);
               const std::string add =
                   warm_ ? Nonsense("STRLEN of the count of link 0", "the key is missing") : counts;
               EXPECT_EQ(Bf({"BF.ADD", "f", "new"}), add);
               EXPECT_EQ(Bf({"BF.MADD", "f", "new", "a"}), add);
               // The INCRBY that found no key does not leave one behind (the count would start
               // again from this round's reservation).
               EXPECT_FALSE(redis_.Exists(Count()));
               // EXISTS does not read the counts: its answer is still right.
               EXPECT_EQ(Bf({"BF.EXISTS", "f", "a"}), ":1\r\n");
             });
}

TEST_F(BfPlanTest, CountKeyOverwritten) {
  BothCaches([&] { redis_.strings[Count()] = "abc"; },
             [&] {
               const std::string counts =
                   Nonsense("MGET of the counts", "the count of link 0 is not an integer >= 0");
               EXPECT_EQ(Bf({"BF.CARD", "f"}), counts);
               EXPECT_EQ(Bf({"BF.INFO", "f", "CAPACITY"}), counts);
               EXPECT_EQ(Bf({"BF.ADD", "f", "new"}),
                         warm_ ? Nonsense("INCRBY of the count of link 0",
                                          "ERR value is not an integer or out of range")
                               : counts);
               EXPECT_EQ(redis_.strings[Count()], "abc");
             });
  BothCaches([&] { redis_.strings[Count()] = "-5"; },
             [&] {
               EXPECT_EQ(
                   Bf({"BF.CARD", "f"}),
                   Nonsense("MGET of the counts", "the count of link 0 is not an integer >= 0"));
               if (warm_) {
                 EXPECT_EQ(Bf({"BF.ADD", "f", "new"}),
                           Nonsense("INCRBY of the count of link 0", "the count was negative"));
                 EXPECT_EQ(redis_.strings[Count()], "-5");  // the reservation was given back
               }
             });
  BothCaches(
      [&] {
        redis_.strings.erase(Count());
        redis_.hashes[Count()]["x"] = "1";
      },
      [&] {
        EXPECT_EQ(Bf({"BF.CARD", "f"}),
                  Nonsense("MGET of the counts", "the count of link 0 is missing or not a string"));
        if (warm_) {
          EXPECT_EQ(Bf({"BF.ADD", "f", "new"}),
                    Nonsense("STRLEN of the count of link 0", kWrongTypeText));
        }
      });
}

TEST_F(BfPlanTest, MetadataThatDoesNotParse) {
  struct Case {
    std::function<void(std::map<std::string, std::string>&)> damage;
    std::string problem;
  };
  const std::vector<Case> cases = {
      {[](auto& h) { h["l0"] = "garbage"; }, "the filter's metadata field 'l0' is not valid"},
      {[](auto& h) { h["l0"] = h["l0"].substr(1); },
       "the filter's metadata field 'l0' is not valid"},  // bits != bytes * 8
      {[](auto& h) { h.erase("l0"); }, "the filter's metadata has no field 'l0'"},
      {[](auto& h) { h["l2"] = h["l0"]; }, "the filter's metadata has no field 'l1' but has 'l2'"},
      {[](auto& h) { h.erase("id"); }, "the filter's metadata has no field 'id'"},
      {[](auto& h) { h["id"] = "a b"; }, "the filter's metadata field 'id' is not valid"},
      {[](auto& h) { h["shard"] = "0"; }, "the filter's metadata field 'shard' is not valid"},
      {[](auto& h) { h.erase("capacity"); }, "the filter's metadata has no field 'capacity'"},
      {[](auto& h) { h["error"] = "0.01"; }, "the filter's metadata field 'error' is not valid"},
      {[](auto& h) { h["expansion"] = "-1"; },
       "the filter's metadata field 'expansion' is not valid"},
      {[](auto& h) { h["options"] = "x"; }, "the filter's metadata field 'options' is not valid"},
      // Values that parse but that the plans cannot use: a scaling chain whose new links take
      // no items (links added for ever), a link of more shards than memory holds.
      {[](auto& h) { h["capacity"] = "0"; }, "the filter's metadata field 'capacity' is not valid"},
      {[](auto& h) { h["expansion"] = "0"; },
       "the filter's metadata field 'expansion' is not valid"},
      {[](auto& h) {
         const std::string rest = h["l0"].substr(h["l0"].find(' ', h["l0"].find(' ') + 1));
         h["l0"] = "1099511627776 8796093022208" + rest;  // 1 TiB in shards of 64 bytes
         h["shard"] = "64";
       },
       "the filter's metadata field 'l0' is not valid"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.problem);
    redis_ = MiniRedis();
    warm_ = true;
    MakeFilter();
    c.damage(redis_.hashes["f"]);
    warm_ = false;
    const std::string error = Nonsense("HGETALL", c.problem);
    for (std::vector<std::string> cmd : {std::vector<std::string>{"BF.EXISTS", "f", "a"},
                                         {"BF.MEXISTS", "f", "a", "b"},
                                         {"BF.ADD", "f", "a"},
                                         {"BF.MADD", "f", "x", "y"},
                                         {"BF.CARD", "f"},
                                         {"BF.INFO", "f"},
                                         {"BF.INFO", "f", "EXPANSION"},
                                         {"BF.SCANDUMP", "f", "0"},
                                         {"BF.RESERVE", "f", "0.1", "9"},
                                         {"BF.INSERT", "f", "NOCREATE", "ITEMS", "a"}}) {
      EXPECT_EQ(Bf(cmd), error) << cmd[0];
    }
  }
  // A hash without the marker is another type, as before: RedisBloom's replies.
  redis_ = MiniRedis();
  redis_.hashes["h"]["f"] = "v";
  EXPECT_EQ(Bf({"BF.EXISTS", "h", "a"}), ":0\r\n");
  EXPECT_EQ(Bf({"BF.ADD", "h", "a"}), kWrongTypeReply);
}

TEST_F(BfPlanTest, DumpWhoseChainWouldNeverStopGrowingIsRefused) {
  MakeFilter();
  const std::string dump = Bf({"BF.SCANDUMP", "f", "0"});
  // "*2\r\n:1\r\n$<n>\r\n<header>\r\n"; the header: total u64, links u32, options u32,
  // expansion u32 (little-endian), then the links.
  const size_t start = dump.find("\r\n", dump.find('$')) + 2;
  std::string header = dump.substr(start, dump.size() - start - 2);
  ASSERT_EQ(Bf({"BF.LOADCHUNK", "copy", "1", header}), "+OK\r\n");
  header.replace(16, 4, std::string(4, '\0'));
  EXPECT_EQ(Bf({"BF.LOADCHUNK", "zero", "1", header}), "-ERR received bad data\r\n");
  EXPECT_FALSE(redis_.Exists("zero"));
}

TEST_F(BfPlanTest, LinkAddedWithDamagedFieldIsSeenByTheNextRound) {
  BothCaches([&] { redis_.hashes["f"]["l1"] = "1 8 1 1 0 x y"; },
             [&] {
               const std::string error =
                   Nonsense("HGETALL", "the filter's metadata field 'l1' is not valid");
               EXPECT_EQ(Bf({"BF.EXISTS", "f", "a"}), error);
               EXPECT_EQ(Bf({"BF.ADD", "f", "a"}), error);
               EXPECT_EQ(Bf({"BF.CARD", "f"}), error);
             });
}

// --- (b) replies of the wrong kind -----------------------------------------------------------

// Replaces the reply to the `nth` command named `name` (1 = the first) with `reply`.
std::function<std::optional<std::string>(const std::vector<std::string>&, int)> Replace(
    std::string name, std::string reply, int nth = 1) {
  auto seen = std::make_shared<int>(0);
  return [=](const std::vector<std::string>& cmd, int) -> std::optional<std::string> {
    if (cmd[0] == name && ++*seen == nth) return reply;
    return std::nullopt;
  };
}

struct Injection {
  std::string command;   // the upstream command whose reply is replaced
  std::string reply;     // what the upstream answers instead
  std::string expected;  // the client's reply
};

class BfPlanInjectionTest : public BfPlanTest {
 protected:
  enum Cache { kBoth, kCachedOnly, kNotCachedOnly };
  // Runs `cmd` on a healthy filter (metadata cached, or not) with one reply replaced.
  void Check(const std::vector<std::string>& cmd, const std::vector<Injection>& cases,
             Cache cache = kBoth) {
    for (bool warm : {false, true}) {
      if ((cache == kCachedOnly && !warm) || (cache == kNotCachedOnly && warm)) continue;
      for (const Injection& c : cases) {
        SCOPED_TRACE(cmd[0] + " with " + c.command + " answering " + c.reply +
                     (warm ? " (cached)" : " (not cached)"));
        redis_ = MiniRedis();
        cache_ = FilterCache();
        warm_ = true;
        MakeFilter();
        if (read_whole_) ReadWhole();
        warm_ = warm;
        const std::string count_before = redis_.strings[Count()];
        redis_.override = Replace(c.command, c.reply);
        EXPECT_EQ(Bf(cmd), c.expected);
        EXPECT_GE(redis_.calls[c.command], 1) << c.command << " was not sent";
        redis_.override = nullptr;
        // Places reserved by an add that failed were given back.
        EXPECT_EQ(redis_.strings[Count()], count_before);
      }
    }
  }
  std::string Bits0() const { return "BITFIELD_RO of link 0 shard 0"; }
  // The proxy's tally says most lookups of "f" are of items it has: BF.EXISTS reads every bit
  // in one step (no probe).
  void ReadWhole() { cache_.Find("f")->probes = {100, 100}; }
  bool read_whole_ = false;  // each case starts with ReadWhole()
};

// Replies of the wrong kind or length for a BITFIELD_RO of `n` ops.
std::vector<std::pair<std::string, std::string>> BadBitReplies(int n) {
  const std::string want = "expected an array of " + std::to_string(n) + " integers 0 or 1, ";
  std::string longer = "*" + std::to_string(n + 1) + "\r\n";
  for (int i = 0; i <= n; ++i) longer += ":1\r\n";
  std::string two = "*" + std::to_string(n) + "\r\n";
  for (int i = 1; i < n; ++i) two += ":1\r\n";
  two += ":2\r\n";
  return {{":1\r\n", want + "got the integer 1"},
          {longer, want + "got an array of " + std::to_string(n + 1)},
          {"*0\r\n", want + "got an array of 0"},
          {"*-1\r\n", want + "got a nil array"},
          {"$-1\r\n", want + "got nil"},
          {"+OK\r\n", want + "got the status 'OK'"},
          {two, "expected bits 0 or 1, got the integer 2"},
          {"-ERR injected\r\n", "ERR injected"}};
}

TEST_F(BfPlanInjectionTest, ExistsNeverAnswersFromNonsense) {
  read_whole_ = true;
  const std::string k = std::to_string(8);  // ops per item (k of a 1 % link)
  std::string ints_of_bulks = "*8\r\n";
  for (int i = 0; i < 8; ++i) ints_of_bulks += "$1\r\n1\r\n";
  std::string ones_and_a_two = "*8\r\n";
  for (int i = 0; i < 7; ++i) ones_and_a_two += ":1\r\n";
  ones_and_a_two += ":2\r\n";
  const std::vector<Injection> cases = {
      // An integer where an array is expected.
      {"BITFIELD_RO", ":1\r\n",
       Nonsense(Bits0(), "expected an array of 8 integers 0 or 1, got the integer 1")},
      // Arrays of the wrong length.
      {"BITFIELD_RO", "*1\r\n:1\r\n",
       Nonsense(Bits0(), "expected an array of 8 integers 0 or 1, got an array of 1")},
      {"BITFIELD_RO", "*9\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n",
       Nonsense(Bits0(), "expected an array of 8 integers 0 or 1, got an array of 9")},
      {"BITFIELD_RO", "*0\r\n",
       Nonsense(Bits0(), "expected an array of 8 integers 0 or 1, got an array of 0")},
      {"BITFIELD_RO", "*-1\r\n",
       Nonsense(Bits0(), "expected an array of 8 integers 0 or 1, got a nil array")},
      {"BITFIELD_RO", "$-1\r\n",
       Nonsense(Bits0(), "expected an array of 8 integers 0 or 1, got nil")},
      {"BITFIELD_RO", "+OK\r\n",
       Nonsense(Bits0(), "expected an array of 8 integers 0 or 1, got the status 'OK'")},
      {"BITFIELD_RO", ints_of_bulks,
       Nonsense(Bits0(),
                "expected an array of 8 integers 0 or 1, got an array of 8 with elements other "
                "than integers")},
      {"BITFIELD_RO", ones_and_a_two, Nonsense(Bits0(), "expected bits 0 or 1, got the integer 2")},
      // A truncated frame (as if the reply stopped short).
      {"BITFIELD_RO", "*8\r\n:1\r\n:1\r\n",
       Nonsense(Bits0(),
                "expected an array of 8 integers 0 or 1, got an array of 8 with elements other "
                "than integers")},
      // Errors in the middle of the pipeline: Redis's ERR is nonsense here, a server state
      // error is the upstream's own answer.
      {"BITFIELD_RO", "-ERR unknown command 'BITFIELD_RO'\r\n",
       Nonsense(Bits0(), "ERR unknown command 'BITFIELD_RO'")},
      {"BITFIELD_RO", "-NOPERM this user has no permissions to run the 'bitfield_ro' command\r\n",
       "-NOPERM this user has no permissions to run the 'bitfield_ro' command\r\n"},
      {"BITFIELD_RO", "-oops\r\n", Nonsense(Bits0(), "oops")},
      {"STRLEN", "-LOADING Redis is loading the dataset in memory\r\n",
       "-LOADING Redis is loading the dataset in memory\r\n"},
      {"STRLEN", "*0\r\n",
       Nonsense("STRLEN of link 0 shard 0", "expected an integer, got an array of 0")},
      {"STRLEN", "$3\r\n144\r\n",
       Nonsense("STRLEN of link 0 shard 0", "expected an integer, got a bulk string of 3 bytes")},
      {"STRLEN", ":-1\r\n",
       Nonsense("STRLEN of link 0 shard 0", "the key holds -1 bytes, expected 144")},
      // The validation reply.
      {"HMGET", ":1\r\n", Nonsense("HMGET", "expected an array of 3, got the integer 1")},
      {"HMGET", "*2\r\n$1\r\n1\r\n$-1\r\n",
       Nonsense("HMGET", "expected an array of 3, got an array of 2")},
      {"HMGET", "*3\r\n:1\r\n:2\r\n:3\r\n",
       Nonsense("HMGET", "expected bulk strings or nils, got other values")},
      {"HMGET", "*3\r\n$1\r\n1\r\n",
       Nonsense("HMGET", "expected an array of 3, got a reply that could not be decoded")},
      {"HMGET", "-ERR injected\r\n", Nonsense("HMGET", "ERR injected")},
      {"HMGET", "-READONLY You can't write against a read only replica.\r\n",
       "-READONLY You can't write against a read only replica.\r\n"},
  };
  Check({"BF.EXISTS", "f", "a"}, cases, kCachedOnly);
  Check({"BF.MEXISTS", "f", "a", "b"},
        {{"BITFIELD_RO", "*8\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n",
          Nonsense(Bits0(), "expected an array of 16 integers 0 or 1, got an array of 8")}},
        kCachedOnly);
}

// Probing, BF.EXISTS of an item the filter has reads its first bit (1 op), then its 7 others:
// a reply that makes no sense in either step ends the command with an error.
TEST_F(BfPlanInjectionTest, ExistsProbeStepsNeverAnswerFromNonsense) {
  for (const auto& [nth, n] : {std::pair{1, 1}, std::pair{2, 7}}) {
    SCOPED_TRACE("BITFIELD_RO number " + std::to_string(nth));
    for (const auto& [reply, why] : BadBitReplies(n)) {
      SCOPED_TRACE(reply);
      redis_ = MiniRedis();
      cache_ = FilterCache();
      MakeFilter();
      redis_.override = Replace("BITFIELD_RO", reply, nth);
      EXPECT_EQ(Bf({"BF.EXISTS", "f", "a"}), Nonsense(Bits0(), why));
      EXPECT_EQ(redis_.calls["BITFIELD_RO"], nth);
      redis_.override = nullptr;
    }
  }
}

TEST_F(BfPlanInjectionTest, MetadataRepliesThatMakeNoSense) {
  const std::vector<Injection> cases = {
      {"TYPE", "-LOADING Redis is loading the dataset in memory\r\n",
       "-LOADING Redis is loading the dataset in memory\r\n"},
      {"TYPE", "-NOAUTH Authentication required.\r\n", "-NOAUTH Authentication required.\r\n"},
      {"TYPE", ":1\r\n", Nonsense("TYPE", "expected a type name, got the integer 1")},
      {"TYPE", "*1\r\n$4\r\nhash\r\n", Nonsense("TYPE", "expected a type name, got an array of 1")},
      {"HGETALL", ":1\r\n",
       Nonsense("HGETALL", "expected an array of field-value pairs, got the integer 1")},
      {"HGETALL", "*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n",
       Nonsense("HGETALL", "expected an array of field-value pairs, got an array of 3")},
      {"HGETALL", "*2\r\n$10\r\nbloomproxy\r\n:1\r\n",
       Nonsense("HGETALL", "expected fields and values as bulk strings")},
      {"HGETALL", "-ERR injected\r\n", Nonsense("HGETALL", "ERR injected")},
      {"HGETALL",
       "-MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.\r\n",
       "-MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.\r\n"},
  };
  for (const auto& cmd : {std::vector<std::string>{"BF.EXISTS", "f", "a"},
                          {"BF.ADD", "f", "x"},
                          {"BF.CARD", "f"},
                          {"BF.INFO", "f"}}) {
    for (const Injection& c : cases) {
      SCOPED_TRACE(cmd[0] + " with " + c.command + " answering " + c.reply);
      redis_ = MiniRedis();
      warm_ = true;
      MakeFilter();
      warm_ = false;
      redis_.override = Replace(c.command, c.reply);
      EXPECT_EQ(Bf(cmd), c.expected);
      redis_.override = nullptr;
      EXPECT_EQ(redis_.strings[Count()], "2");
    }
  }
}

TEST_F(BfPlanInjectionTest, CountsThatMakeNoSense) {
  const std::string mget = "MGET of the counts";
  const std::vector<Injection> cases = {
      {"MGET", ":1\r\n", Nonsense(mget, "expected an array of 1, got the integer 1")},
      {"MGET", "*0\r\n", Nonsense(mget, "expected an array of 1, got an array of 0")},
      {"MGET", "*2\r\n$1\r\n2\r\n$1\r\n2\r\n",
       Nonsense(mget, "expected an array of 1, got an array of 2")},
      {"MGET", "*1\r\n$-1\r\n", Nonsense(mget, "the count of link 0 is missing or not a string")},
      {"MGET", "*1\r\n$3\r\nabc\r\n", Nonsense(mget, "the count of link 0 is not an integer >= 0")},
      {"MGET", "*1\r\n$2\r\n-1\r\n", Nonsense(mget, "the count of link 0 is not an integer >= 0")},
      {"MGET", "*1\r\n:2\r\n", Nonsense(mget, "the count of link 0 is not an integer >= 0")},
      {"MGET", "*1\r\n",
       Nonsense(mget, "expected an array of 1, got a reply that could not be decoded")},
      {"MGET", "-ERR injected\r\n", Nonsense(mget, "ERR injected")},
      {"MGET", "-BUSY Redis is busy running a script.\r\n",
       "-BUSY Redis is busy running a script.\r\n"},
  };
  Check({"BF.CARD", "f"}, cases);
  Check({"BF.INFO", "f"}, cases);
  Check({"BF.INFO", "f", "ITEMS"}, cases);
  Check({"BF.SCANDUMP", "f", "0"}, cases);
  // ADD reads the counts when the metadata is not cached.
  Check({"BF.ADD", "f", "x"}, {cases[3], cases[4]}, kNotCachedOnly);
}

TEST_F(BfPlanInjectionTest, AddNeverAnswersFromNonsense) {
  const std::string set = "BITFIELD of link 0 shard 0";
  const std::string incr = "INCRBY of the count of link 0";
  const std::vector<Injection> cases = {
      // The check step.
      {"INCRBY", "$1\r\n3\r\n",
       Nonsense(incr, "expected an integer, got a bulk string of 1 bytes")},
      {"INCRBY", "*1\r\n:3\r\n", Nonsense(incr, "expected an integer, got an array of 1")},
      {"INCRBY", "-ERR increment or decrement would overflow\r\n",
       Nonsense(incr, "ERR increment or decrement would overflow")},
      {"INCRBY", "-OOM command not allowed when used memory > 'maxmemory'.\r\n",
       "-OOM command not allowed when used memory > 'maxmemory'.\r\n"},
      {"STRLEN", ":0\r\n", Nonsense("STRLEN of the count of link 0", "the key is missing")},
      {"STRLEN", "-ERR injected\r\n", Nonsense("STRLEN of the count of link 0", "ERR injected")},
      // The set step: its old values say which items are new.
      {"BITFIELD", ":0\r\n",
       Nonsense(set, "expected an array of 8 integers 0 or 1, got the integer 0")},
      {"BITFIELD", "*7\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n",
       Nonsense(set, "expected an array of 8 integers 0 or 1, got an array of 7")},
      {"BITFIELD", "*8\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n:-1\r\n",
       Nonsense(set, "expected bits 0 or 1, got the integer -1")},
      {"BITFIELD", "-OOM command not allowed when used memory > 'maxmemory'.\r\n",
       "-OOM command not allowed when used memory > 'maxmemory'.\r\n"},
      {"BITFIELD", "-ERR injected\r\n", Nonsense(set, "ERR injected")},
      {"HMGET", "*1\r\n$1\r\n1\r\n",
       Nonsense("HMGET", "expected an array of 3, got an array of 1")},
  };
  Check({"BF.ADD", "f", "x"}, cases, kCachedOnly);
  Check({"BF.MADD", "f", "x", "a"},
        {{"BITFIELD", "*8\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n",
          Nonsense(set, "expected an array of 16 integers 0 or 1, got an array of 8")},
         cases[0]},
        kCachedOnly);
  Check({"BF.INSERT", "f", "ITEMS", "x"}, {cases[6]}, kCachedOnly);
}

// On a filter with two links, the set step is the add script (add_script.h): its reply must be
// -1 or one result per item.
TEST_F(BfPlanInjectionTest, ScriptedAddNeverAnswersFromNonsense) {
  const std::string set = "EVAL setting bits in link 1";
  const std::vector<Injection> cases = {
      {"EVAL", ":0\r\n",
       Nonsense(set, "expected -1 or an array of 1 integers 0, 1 or 2, got the integer 0")},
      {"EVAL", "*2\r\n:0\r\n:0\r\n",
       Nonsense(set, "expected -1 or an array of 1 integers 0, 1 or 2, got an array of 2")},
      {"EVAL", "*1\r\n:3\r\n", Nonsense(set, "expected results 0, 1 or 2, got the integer 3")},
      {"EVAL", "*1\r\n$1\r\n1\r\n",
       Nonsense(set, "expected -1 or an array of 1 integers 0, 1 or 2, got an array of 1")},
      {"EVAL", "-OOM command not allowed when used memory > 'maxmemory'.\r\n",
       "-OOM command not allowed when used memory > 'maxmemory'.\r\n"},
      {"EVAL", "-NOSCRIPT No matching script.\r\n", "-NOSCRIPT No matching script.\r\n"},
      {"EVAL", "-ERR user_script:3: Script attempted to access nonexistent global variable\r\n",
       Nonsense(set, "ERR user_script:3: Script attempted to access nonexistent global variable")},
  };
  for (const Injection& c : cases) {
    SCOPED_TRACE(c.command + " answering " + c.reply);
    redis_ = MiniRedis();
    warm_ = true;
    MakeFilter({"BF.RESERVE", "f", "0.01", "2"});
    ASSERT_EQ(Bf({"BF.ADD", "f", "c"}), ":1\r\n");  // link 1
    const std::string count1 = CountKey(DataKeyPrefix("f"), id_, 1);
    redis_.override = Replace(c.command, c.reply);
    EXPECT_EQ(Bf({"BF.ADD", "f", "x"}), c.expected);
    redis_.override = nullptr;
    EXPECT_EQ(redis_.strings[count1], "1");
  }
}

TEST_F(BfPlanInjectionTest, ErrorInTheMiddleOfAPipelineOnAScaledFilter) {
  // Link 0 full: the check step reads link 0's bits and reserves places in link 1.
  redis_ = MiniRedis();
  warm_ = true;
  MakeFilter({"BF.RESERVE", "f", "0.01", "2"});
  ASSERT_EQ(Bf({"BF.ADD", "f", "c"}), ":1\r\n");
  ASSERT_EQ(redis_.hashes["f"].count("l1"), 1u);
  const std::string count1 = CountKey(DataKeyPrefix("f"), id_, 1);
  ASSERT_EQ(redis_.strings[count1], "1");
  // HMGET, STRLEN count 1, STRLEN link 1 shard 0, INCRBY, STRLEN link 0 shard 0, BITFIELD_RO
  redis_.override = Replace("STRLEN", "-ERR injected\r\n", 2);
  EXPECT_EQ(Bf({"BF.ADD", "f", "d"}), Nonsense("STRLEN of link 1 shard 0", "ERR injected"));
  EXPECT_EQ(redis_.strings[count1], "1");
  redis_.override = Replace("BITFIELD_RO", "*1\r\n:1\r\n");
  EXPECT_EQ(Bf({"BF.ADD", "f", "d"}),
            Nonsense("BITFIELD_RO of link 0 shard 0",
                     "expected an array of 8 integers 0 or 1, got an array of 1"));
  EXPECT_EQ(redis_.strings[count1], "1");
  redis_.override = nullptr;
  EXPECT_EQ(Bf({"BF.ADD", "f", "d"}), ":1\r\n");
  EXPECT_EQ(Bf({"BF.CARD", "f"}), ":4\r\n");
}

// The add script answers -1 when the filter changed before it ran (it wrote nothing): the
// metadata is read again and the script sent again for the same items and places. A script
// that always says so ends the command after a few tries, its places given back.
TEST_F(BfPlanInjectionTest, AddScriptFindsTheFilterChanged) {
  redis_ = MiniRedis();
  warm_ = true;
  MakeFilter({"BF.RESERVE", "f", "0.01", "2"});
  ASSERT_EQ(Bf({"BF.ADD", "f", "c"}), ":1\r\n");  // link 1: the set step is the script
  const std::string count1 = CountKey(DataKeyPrefix("f"), id_, 1);
  redis_.calls.clear();
  redis_.override = Replace("EVAL", ":-1\r\n");
  EXPECT_EQ(Bf({"BF.MADD", "f", "x", "a", "y"}), "*3\r\n:1\r\n:0\r\n:1\r\n");
  EXPECT_EQ(redis_.calls["EVAL"], 2);
  EXPECT_EQ(redis_.calls["HGETALL"], 1);  // the metadata read again
  EXPECT_EQ(redis_.calls["INCRBY"], 1);   // the same places
  EXPECT_EQ(redis_.strings[count1], "3");
  redis_.override = [](const std::vector<std::string>& cmd, int) -> std::optional<std::string> {
    if (cmd[0] == "EVAL") return ":-1\r\n";
    return std::nullopt;
  };
  EXPECT_EQ(Bf({"BF.ADD", "f", "z"}), "-ERR filter metadata keeps changing, try again\r\n");
  redis_.override = nullptr;
  EXPECT_EQ(redis_.strings[count1], "3");
  EXPECT_EQ(Bf({"BF.ADD", "f", "z"}), ":1\r\n");
  EXPECT_EQ(Bf({"BF.CARD", "f"}), ":6\r\n");
}

TEST_F(BfPlanInjectionTest, NewLinkRepliesThatMakeNoSense) {
  const std::vector<Injection> cases = {
      {"GET", "$-1\r\n", Nonsense("GET of the count of link 1", "the key is missing")},
      {"GET", "$3\r\nabc\r\n",
       Nonsense("GET of the count of link 1",
                "expected an integer >= 0, got a bulk string of 3 bytes")},
      {"PEXPIRETIME", "-ERR unknown command 'PEXPIRETIME'\r\n",
       Nonsense("PEXPIRETIME", "ERR unknown command 'PEXPIRETIME'")},
      {"PEXPIRETIME", "$2\r\n-1\r\n",
       Nonsense("PEXPIRETIME", "expected an integer, got a bulk string of 2 bytes")},
      {"HSETNX", "+OK\r\n", Nonsense("HSETNX", "expected an integer, got the status 'OK'")},
      {"SETRANGE", ":1\r\n",
       Nonsense("SETRANGE of link 1 shard 0", "the key holds 1 bytes, expected 8")},
      {"SETRANGE", "-OOM command not allowed when used memory > 'maxmemory'.\r\n",
       "-OOM command not allowed when used memory > 'maxmemory'.\r\n"},
  };
  for (const Injection& c : cases) {
    SCOPED_TRACE(c.command + " answering " + c.reply);
    redis_ = MiniRedis();
    warm_ = true;
    MakeFilter({"BF.RESERVE", "f", "0.01", "2"});
    redis_.override = Replace(c.command, c.reply);
    EXPECT_EQ(Bf({"BF.ADD", "f", "c"}), c.expected);
    redis_.override = nullptr;
    EXPECT_EQ(redis_.strings[Count()], "2");
  }
}

// A new link is named in the metadata only once its keys exist: when a shard's creation fails
// (in a cluster a RENAMENX that ran after its temporary key's UNLINK answered "no such key"), the
// command fails, the filter keeps its links, and the next add creates the link afresh.
TEST_F(BfPlanInjectionTest, NewLinkWhoseKeysFailIsNotNamed) {
  const std::vector<Injection> cases = {
      {"RENAMENX", "-ERR no such key\r\n",
       Nonsense("RENAMENX of link 1 shard 0", "ERR no such key")},
      {"SETRANGE", "-OOM command not allowed when used memory > 'maxmemory'.\r\n",
       "-OOM command not allowed when used memory > 'maxmemory'.\r\n"},
      {"SET", "-ERR injected\r\n", Nonsense("SET of the count of link 1", "ERR injected")},
  };
  for (const Injection& c : cases) {
    SCOPED_TRACE(c.command + " answering " + c.reply);
    redis_ = MiniRedis();
    warm_ = true;
    MakeFilter({"BF.RESERVE", "f", "0.01", "2"});
    redis_.calls.clear();
    redis_.override = Replace(c.command, c.reply);
    EXPECT_EQ(Bf({"BF.ADD", "f", "c"}), c.expected);
    redis_.override = nullptr;
    EXPECT_EQ(redis_.calls["HSETNX"], 0);
    EXPECT_EQ(redis_.hashes["f"].count("l1"), 0u);
    EXPECT_EQ(Bf({"BF.ADD", "f", "c"}), ":1\r\n");
    EXPECT_EQ(redis_.hashes["f"].count("l1"), 1u);
    EXPECT_EQ(Bf({"BF.EXISTS", "f", "c"}), ":1\r\n");
    EXPECT_EQ(Bf({"BF.CARD", "f"}), ":3\r\n");
  }
}

TEST_F(BfPlanInjectionTest, CreationRepliesThatMakeNoSense) {
  const std::vector<Injection> cases = {
      {"RENAMENX", "+OK\r\n", Nonsense("RENAMENX", "expected an integer, got the status 'OK'")},
      {"RENAMENX", ":2\r\n", Nonsense("RENAMENX", "expected 0 or 1, got the integer 2")},
      {"SETRANGE", "-OOM command not allowed when used memory > 'maxmemory'.\r\n",
       "-OOM command not allowed when used memory > 'maxmemory'.\r\n"},
      {"SETRANGE", ":7\r\n",
       Nonsense("SETRANGE of link 0 shard 0", "the key holds 7 bytes, expected 144")},
      {"SET", "-ERR injected\r\n", Nonsense("SET of the count of link 0", "ERR injected")},
      {"HSET", "$1\r\n1\r\n",
       Nonsense("HSET", "expected an integer, got a bulk string of 1 bytes")},
  };
  for (const auto& cmd : {std::vector<std::string>{"BF.ADD", "n", "x"},
                          {"BF.RESERVE", "n", "0.01", "100"},
                          {"BF.MADD", "n", "x", "y"}}) {
    for (const Injection& c : cases) {
      SCOPED_TRACE(cmd[0] + " with " + c.command + " answering " + c.reply);
      redis_ = MiniRedis();
      cache_ = FilterCache();
      redis_.override = Replace(c.command, c.reply);
      EXPECT_EQ(Bf(cmd), c.expected);
      redis_.override = nullptr;
      // Nothing is left behind: not the prepared keys, and not a filter published with a write
      // that failed.
      EXPECT_TRUE(redis_.strings.empty());
      EXPECT_TRUE(redis_.hashes.empty());
      // The name is free: the next command creates the filter.
      EXPECT_EQ(Bf({"BF.ADD", "n", "x"}), ":1\r\n");
    }
  }
}

TEST_F(BfPlanInjectionTest, DumpAndLoadRepliesThatMakeNoSense) {
  const std::string get = "GETRANGE of link 0 shard 0";
  Check({"BF.SCANDUMP", "f", "1"},
        {{"GETRANGE", "$-1\r\n", Nonsense(get, "expected a bulk string, got nil")},
         {"GETRANGE", ":1\r\n", Nonsense(get, "expected a bulk string, got the integer 1")},
         {"GETRANGE", "$3\r\nabc\r\n",
          Nonsense(get, "the key holds 3 bytes in the range, expected 144")},
         {"GETRANGE", "-ERR injected\r\n", Nonsense(get, "ERR injected")}});
  const std::string set = "SETRANGE of link 0 shard 0";
  Check({"BF.LOADCHUNK", "f", "9", "abcdefgh"},
        {{"SETRANGE", ":5\r\n", Nonsense(set, "the key holds 5 bytes, expected 144")},
         {"SETRANGE", "+OK\r\n", Nonsense(set, "expected an integer, got the status 'OK'")},
         {"SETRANGE", "-READONLY You can't write against a read only replica.\r\n",
          "-READONLY You can't write against a read only replica.\r\n"},
         {"STRLEN", ":0\r\n", Nonsense("STRLEN of link 0 shard 0", "the key is missing")}});
}

// A plan of "proxy A" (its own metadata cache) run step by step against the same MiniRedis as
// the fixture's commands ("proxy B"), so B's commands can run between two of A's steps.
class TwoProxiesTest : public BfPlanTest {
 protected:
  void StartA(std::vector<std::string_view> args) {
    BfRequest request;
    ASSERT_EQ(ParseBfRequest(args, config_.defaults, &request), "");
    a_ = MakeBfPlan(request, &cache_a_, &config_);
    step_ = PlanStep();
    a_->Start(&step_);
  }
  // Runs A's steps until its next one would set bits: the add script, or a BITFIELD SET.
  void RunAToItsSetStep(bool script) {
    const std::string mark = script ? std::string(AddScript()) : "$3\r\nSET\r\n$2\r\nu1\r\n";
    for (int i = 0; i < 10 && !step_.done; ++i) {
      if (step_.requests.find(mark) != std::string::npos) return;
      Answer();
    }
    FAIL() << "A reached no set step";
  }
  // Runs A to its end (its trailing requests too) and returns its reply.
  std::string FinishA() {
    for (int i = 0; i < 20 && !step_.done; ++i) Answer();
    EXPECT_TRUE(step_.done);
    for (auto& r : ParseRequests(step_.requests)) redis_.Reply(r);
    return step_.reply;
  }
  std::string LinkCount(size_t link) {
    return redis_.strings[CountKey(DataKeyPrefix("f"), id_, link)];
  }

 private:
  void Answer() {
    StepReplies replies(&decoder_);
    for (auto& r : ParseRequests(step_.requests)) replies.Add(redis_.Reply(r));
    PlanStep next;
    a_->OnReplies(replies, &next);
    step_ = std::move(next);
  }

  FilterCache cache_a_;
  std::unique_ptr<Plan> a_;
  PlanStep step_;
};

// Two proxies add the same item while the filter scales. Proxy A reserves the last place of
// link 0 (the only link: its set step is a plain BITFIELD); meanwhile proxy B finds link 0
// full, creates link 1 and adds the item there with the add script (link 0 does not hold it
// yet). A's write to link 0 then finds the item new, but its validation after the write shows
// link 1: in doubt, A reads the item in link 1, finds it, and answers 0. Of the two adds
// exactly one answers 1, and the count holds the item once.
TEST_F(TwoProxiesTest, SameItemWhileTheFilterScales) {
  MakeFilter({"BF.RESERVE", "f", "0.01", "3"});  // a and b: one place left in link 0
  StartA({"BF.ADD", "f", "x"});
  RunAToItsSetStep(/*script=*/false);
  ASSERT_EQ(LinkCount(0), "3");  // A holds the last place of link 0
  warm_ = false;                 // B has its own cache
  EXPECT_EQ(Bf({"BF.ADD", "f", "x"}), ":1\r\n");
  ASSERT_EQ(redis_.hashes["f"].count("l1"), 1u);
  EXPECT_EQ(FinishA(), ":0\r\n");
  EXPECT_EQ(Bf({"BF.CARD", "f"}), ":3\r\n");
  EXPECT_EQ(LinkCount(0), "2");  // A's place given back: its item was not new
  EXPECT_EQ(LinkCount(1), "1");
}

// The same with different items: A's item is not in link 1, so A's add stands, in the place it
// reserved (a link is never left short because its successor appeared meanwhile).
TEST_F(TwoProxiesTest, ItemInDoubtNotFoundInTheNewLinkStaysNew) {
  MakeFilter({"BF.RESERVE", "f", "0.01", "3"});
  StartA({"BF.ADD", "f", "x"});
  RunAToItsSetStep(/*script=*/false);
  warm_ = false;
  EXPECT_EQ(Bf({"BF.ADD", "f", "y"}), ":1\r\n");
  EXPECT_EQ(FinishA(), ":1\r\n");
  EXPECT_EQ(LinkCount(0), "3");
  EXPECT_EQ(LinkCount(1), "1");
  EXPECT_EQ(Bf({"BF.MEXISTS", "f", "x", "y", "a", "b"}), "*4\r\n:1\r\n:1\r\n:1\r\n:1\r\n");
  EXPECT_EQ(Bf({"BF.CARD", "f"}), ":4\r\n");
}

// The same one link later, where A's set step is the add script: it finds link 2, which A does
// not know, and writes nothing; on fresh metadata A sends it again for its place in link 1, and
// the script, reading link 2 too, finds the item there: A answers 0.
TEST_F(TwoProxiesTest, ScriptSeesTheLinkItsProxyDidNotKnow) {
  MakeFilter({"BF.RESERVE", "f", "0.01", "2"});  // link 0 full with a and b
  ASSERT_EQ(Bf({"BF.MADD", "f", "c", "d", "e"}), "*3\r\n:1\r\n:1\r\n:1\r\n");
  ASSERT_EQ(LinkCount(1), "3");  // one place left in link 1
  StartA({"BF.ADD", "f", "x"});
  RunAToItsSetStep(/*script=*/true);
  warm_ = false;
  EXPECT_EQ(Bf({"BF.ADD", "f", "x"}), ":1\r\n");  // link 2
  ASSERT_EQ(redis_.hashes["f"].count("l2"), 1u);
  EXPECT_EQ(FinishA(), ":0\r\n");
  EXPECT_EQ(LinkCount(1), "3");
  EXPECT_EQ(LinkCount(2), "1");
  StartA({"BF.ADD", "f", "y"});  // a new item goes to link 2
  EXPECT_EQ(FinishA(), ":1\r\n");
  EXPECT_EQ(Bf({"BF.CARD", "f"}), ":7\r\n");
}

TEST_F(BfPlanTest, ShardedFilterNamesTheShard) {
  config_.max_shard_bytes = 64;  // 144 bytes: shards of 64, 64 and 16 bytes
  MakeFilter();
  ASSERT_EQ(redis_.strings[Bits(0, 2)].size(), 16u);
  redis_.strings[Bits(0, 2)] = std::string(64, '\0');
  std::string reply = Bf({"BF.MEXISTS", "f", "a", "b", "c", "d", "e", "f", "g", "h"});
  EXPECT_EQ(reply, Nonsense("STRLEN of link 0 shard 2", "the key holds 64 bytes, expected 16"));
  redis_.strings.erase(Bits(0, 1));
  reply = Bf({"BF.MEXISTS", "f", "a", "b", "c", "d", "e", "f", "g", "h"});
  EXPECT_EQ(
      reply.rfind("-ERR bloomproxy: unexpected reply from upstream to STRLEN of link 0 shard ", 0),
      0u)
      << reply;
}

TEST_F(BfPlanTest, BatchOfSeveralCommandsGetsTheErrorEach) {
  MakeFilter();
  redis_.override = Replace("BITFIELD_RO", ":1\r\n");
  std::vector<std::string> items = {"a", "b", "zz"};
  BfRequest request;
  request.command = BfCommand::kMExists;
  request.key = "f";
  request.items = {items[0], items[1], items[2]};
  Plan* plan = nullptr;
  const std::string reply =
      Run(MakeBatchPlan(request, {{0, 1, false}, {1, 2, true}}, &cache_, &config_), &plan);
  std::unique_ptr<Plan> owned(plan);
  // a's first bit (a single-item member is probed), b's and zz's 8 bits.
  EXPECT_EQ(reply, Nonsense("BITFIELD_RO of link 0 shard 0",
                            "expected an array of 17 integers 0 or 1, got the integer 1"));
  // No reply of its own for any member: the runner gives each the error.
  EXPECT_TRUE(owned->MemberReplies().empty());
}

TEST_F(BfPlanTest, CreationSetsTheNamesMarker) {
  MakeFilter();
  // key_layout.h: the marker that lets TYPE and the key scripts recognise the filter.
  EXPECT_EQ(redis_.strings[MarkerKey(DataKeyPrefix("f"), "f")], "1");
  EXPECT_EQ(MarkerKey(DataKeyPrefix("f"), "f"), "{f}:bf:m:f");
}

// --- behind a sharding proxy -----------------------------------------------------------------

// Runs scenarios of BF commands twice, in front of Redis and behind a sharding proxy (BfConfig's
TEST(StepRepliesTest, IntsOnlyForArraysOfIntegers) {
  protocol::ReplyDecoder decoder;
  StepReplies r(&decoder);
  r.Add("*2\r\n:1\r\n:0\r\n");
  r.Add("*2\r\n:1\r\n$1\r\n0\r\n");
  r.Add("*2\r\n:1\r\n");
  r.Add(":1\r\n");
  r.Add("*-1\r\n");
  r.Add("*1\r\n:x\r\n");
  r.Add("*5\r\n:10\r\n:1\r\n:-1\r\n:0\r\n:9\r\n");  // one digit, and longer
  r.Add("*2\r\n:1\r\n:1x\r\n");
  ASSERT_NE(r.Ints(0), nullptr);
  EXPECT_EQ(*r.Ints(0), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(r.Ints(1), nullptr);
  EXPECT_EQ(r.Ints(2), nullptr);
  EXPECT_EQ(r.Ints(3), nullptr);
  ASSERT_NE(r.Ints(4), nullptr);
  EXPECT_TRUE(r.Ints(4)->empty());
  EXPECT_EQ(r.Ints(5), nullptr);
  ASSERT_NE(r.Ints(6), nullptr);
  EXPECT_EQ(*r.Ints(6), (std::vector<int64_t>{10, 1, -1, 0, 9}));
  EXPECT_EQ(r.Ints(7), nullptr);
  EXPECT_EQ(r.Ints(8), nullptr);  // no such reply
  EXPECT_EQ(r.Get(2), nullptr);   // truncated: hiredis cannot decode it either
}

}  // namespace
}  // namespace bloomproxy::filters