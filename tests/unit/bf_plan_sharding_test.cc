// BF plans behind a sharding proxy (BfConfig::upstream), without sockets: they must send only
// what twemproxy and Codis both forward (protocol/sharding_proxy.h), using the scripts of
// filters/common/sharding_requests.h (which MiniRedis emulates) where they would use RENAMENX or
// PEXPIRETIME, and the client must see the same replies as in front of Redis.
#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "filters/bloom/add_script.h"
#include "filters/common/sharding_requests.h"
#include "protocol/sharding_proxy.h"
#include "tests/unit/bf_plan_fixture.h"

namespace bloomproxy::filters {
namespace {

// upstream), each on an empty MiniRedis: the client sees the same replies either way, and
// behind the sharding proxy every request a plan sends is one both twemproxy and Codis forward.
class BfPlanShardingProxyTest : public BfPlanTest {
 protected:
  // A scenario sends BF commands through Bf() and appends their replies, and whatever else the
  // two runs must agree on, to the vector.
  using Scenario = std::function<void(std::vector<std::string>*)>;

  static constexpr int64_t kExpireAt = 4102444800000;  // 2100-01-01, in ms

  // What one request was, for the checks and messages: its name, and for EVAL which script.
  static std::string Kind(const std::vector<std::string>& cmd) {
    if (cmd[0] != "EVAL") return cmd[0];
    if (cmd.size() > 1 && cmd[1] == PublishScript()) return "EVAL publish";
    if (cmd.size() > 1 && cmd[1] == ShardScript()) return "EVAL shard";
    if (cmd.size() > 1 && cmd[1] == ExpireTimeScript()) return "EVAL expire time";
    if (cmd.size() > 1 && cmd[1] == AddScript()) return "EVAL add";
    return "EVAL other";
  }

  // Runs `scenario` in front of Redis and behind a sharding proxy; returns the kinds of request
  // sent behind the sharding proxy.
  std::multiset<std::string> ExpectSameBehindShardingProxy(const Scenario& scenario) {
    std::vector<std::string> seen[2];
    std::multiset<std::string> kinds;
    for (const protocol::UpstreamKind upstream :
         {protocol::UpstreamKind::kRedis, protocol::UpstreamKind::kShardingProxy}) {
      const bool sharding = upstream == protocol::UpstreamKind::kShardingProxy;
      SCOPED_TRACE(sharding ? "behind a sharding proxy" : "in front of Redis");
      redis_ = MiniRedis();
      cache_ = FilterCache();
      warm_ = true;
      config_ = BfConfig();
      config_.upstream = upstream;
      scenario(&seen[sharding ? 1 : 0]);
      redis_.override = nullptr;
      size_t refused = 0;
      for (const std::vector<std::string>& cmd : redis_.sent) {
        const std::vector<std::string_view> args(cmd.begin(), cmd.end());
        if (protocol::ShardingProxyForwards(args)) continue;
        ++refused;
        if (sharding) {
          ADD_FAILURE() << "sent " << Kind(cmd) << " " << (cmd.size() > 1 ? cmd[1] : "") << ": "
                        << protocol::ShardingProxyRefusal(args);
        }
      }
      if (sharding) {
        for (const std::vector<std::string>& cmd : redis_.sent) kinds.insert(Kind(cmd));
      } else {
        // In front of Redis the plans use commands a sharding proxy refuses (RENAMENX,
        // BITFIELD_RO, PEXPIRETIME): the check above is not vacuous.
        EXPECT_GT(refused, 0u);
      }
    }
    EXPECT_EQ(seen[0], seen[1]);
    return kinds;
  }

  // The number of strings and hashes, and of keys with an expiry.
  std::string Keys() const {
    return std::to_string(redis_.strings.size()) + " strings, " +
           std::to_string(redis_.hashes.size()) + " hashes, " +
           std::to_string(redis_.expiry.size()) + " with a TTL";
  }

  // Gives every key an expiry (as EXPIRE on a filter does, filters/common/key_scripts.h).
  void ExpireEverything() {
    for (const auto& [k, v] : redis_.strings) redis_.expiry[k] = kExpireAt;
    for (const auto& [k, v] : redis_.hashes) redis_.expiry[k] = kExpireAt;
  }
  // Every key has that expiry.
  bool AllExpireTogether() const {
    if (redis_.expiry.size() != redis_.strings.size() + redis_.hashes.size()) return false;
    for (const auto& [k, at] : redis_.expiry) {
      if (at != kExpireAt || !redis_.Exists(k)) return false;
    }
    return true;
  }

  // BF.SCANDUMP of `from` chunk by chunk, each loaded into `to` with BF.LOADCHUNK.
  void DumpAndLoad(const std::string& from, const std::string& to, std::vector<std::string>* r) {
    int64_t iter = 0;
    for (int i = 0; i < 1000; ++i) {
      const std::string dump = Bf({"BF.SCANDUMP", from, std::to_string(iter)});
      r->push_back(dump);
      // "*2\r\n:<iter>\r\n$<n>\r\n<data>\r\n"
      ASSERT_EQ(dump.rfind("*2\r\n:", 0), 0u) << dump;
      const size_t eol = dump.find("\r\n", 5);
      iter = std::stoll(dump.substr(5, eol - 5));
      if (iter == 0) return;
      ASSERT_EQ(dump[eol + 2], '$');
      const size_t len_end = dump.find("\r\n", eol + 3);
      const size_t n = std::stoul(dump.substr(eol + 3, len_end - eol - 3));
      r->push_back(Bf({"BF.LOADCHUNK", to, std::to_string(iter), dump.substr(len_end + 2, n)}));
    }
    ADD_FAILURE() << "the dump did not end";
  }

  // Another proxy (a cache of its own) running `args` on the same upstream.
  std::string BfElsewhere(FilterCache* cache, std::vector<std::string> args) {
    std::vector<std::string_view> views(args.begin(), args.end());
    BfRequest request;
    EXPECT_EQ(ParseBfRequest(views, config_.defaults, &request), "");
    std::unique_ptr<Plan> plan = MakeBfPlan(request, cache, &config_);
    protocol::ReplyDecoder decoder;
    PlanStep step;
    plan->Start(&step);
    for (int round = 0; round < 200; ++round) {
      StepReplies replies(&decoder);
      for (auto& r : ParseRequests(step.requests)) replies.Add(redis_.Reply(r));
      if (step.done) return step.reply;
      PlanStep next;
      plan->OnReplies(replies, &next);
      step = std::move(next);
    }
    ADD_FAILURE() << "the other proxy's plan did not finish";
    return {};
  }

  // Has another proxy run `args` just before the first request `when` matches runs; its reply
  // goes to *reply.
  void Meanwhile(std::function<bool(const std::vector<std::string>&)> when,
                 std::vector<std::string> args, std::string* reply) {
    auto fired = std::make_shared<bool>(false);
    auto cache = std::make_shared<FilterCache>();
    redis_.override = [this, fired, cache, when, args, reply](const std::vector<std::string>& cmd,
                                                              int) -> std::optional<std::string> {
      if (*fired || !when(cmd)) return std::nullopt;
      *fired = true;
      *reply = BfElsewhere(cache.get(), args);
      return std::nullopt;
    };
  }

  // The request that publishes filter `name`'s metadata.
  static std::function<bool(const std::vector<std::string>&)> PublishOf(std::string name) {
    return [name](const std::vector<std::string>& cmd) {
      return (cmd[0] == "RENAMENX" && cmd.size() == 3 && cmd[2] == name) ||
             (cmd[0] == "EVAL" && cmd.size() > 3 && cmd[1] == PublishScript() && cmd[3] == name);
    };
  }
};

TEST_F(BfPlanShardingProxyTest, EveryCommand) {
  const auto kinds = ExpectSameBehindShardingProxy([&](std::vector<std::string>* r) {
    redis_.hashes["hash"]["x"] = "y";
    redis_.strings["string"] = "v";
    for (const std::vector<std::string>& cmd : std::vector<std::vector<std::string>>{
             {"BF.RESERVE", "f", "0.01", "100"},
             {"BF.ADD", "f", "a"},
             {"BF.ADD", "f", "a"},
             {"BF.MADD", "f", "b", "c", "a"},
             {"BF.INSERT", "f", "ITEMS", "d", "e"},
             {"BF.INSERT", "g", "CAPACITY", "50", "ERROR", "0.001", "ITEMS", "x", "y"},
             {"BF.INSERT", "h", "NOCREATE", "ITEMS", "x"},
             {"BF.ADD", "new", "x"},
             {"BF.MADD", "new2", "x", "y"},
             {"BF.RESERVE", "ns", "0.1", "10", "NONSCALING"},
             {"BF.EXISTS", "f", "a"},
             {"BF.EXISTS", "f", "zz"},
             {"BF.MEXISTS", "f", "a", "zz", "e"},
             {"BF.EXISTS", "nothing", "a"},
             {"BF.CARD", "f"},
             {"BF.CARD", "nothing"},
             {"BF.INFO", "f"},
             {"BF.INFO", "f", "CAPACITY"},
             {"BF.INFO", "g", "ITEMS"},
             {"BF.INFO", "nothing"},
             {"BF.RESERVE", "f", "0.01", "100"},
             {"BF.ADD", "hash", "a"},
             {"BF.EXISTS", "hash", "a"},
             {"BF.ADD", "string", "a"},
             {"BF.CARD", "string"},
         }) {
      r->push_back(Bf(cmd));
    }
    // The metadata read anew.
    warm_ = false;
    r->push_back(Bf({"BF.MEXISTS", "f", "a", "b", "zz"}));
    r->push_back(Bf({"BF.MADD", "f", "z", "a"}));
    r->push_back(Bf({"BF.CARD", "f"}));
    r->push_back(Bf({"BF.INFO", "g"}));
    warm_ = true;
    DumpAndLoad("f", "copy", r);
    r->push_back(Bf({"BF.MEXISTS", "copy", "a", "b", "c", "d", "e", "z", "zz"}));
    r->push_back(Bf({"BF.CARD", "copy"}));
    r->push_back(Bf({"BF.INFO", "copy"}));
    r->push_back(Keys());
    EXPECT_EQ(redis_.strings[MarkerKey(DataKeyPrefix("copy"), "copy")], "1");
  });
  EXPECT_GE(kinds.count("EVAL publish"), 6u);
  EXPECT_GE(kinds.count("BITFIELD"), 5u);
  EXPECT_EQ(kinds.count("EVAL other"), 0u);
}

TEST_F(BfPlanShardingProxyTest, ScalingFilterAddsLinks) {
  const auto kinds = ExpectSameBehindShardingProxy([&](std::vector<std::string>* r) {
    r->push_back(Bf({"BF.RESERVE", "s", "0.01", "2", "EXPANSION", "2"}));
    std::vector<std::string> items;
    for (int i = 0; i < 40; ++i) {
      items.push_back("item" + std::to_string(i));
      warm_ = i % 3 != 0;
      r->push_back(Bf({"BF.ADD", "s", items.back()}));
    }
    warm_ = true;
    std::vector<std::string> madd = {"BF.MADD", "s"};
    for (int i = 40; i < 100; ++i) madd.push_back("item" + std::to_string(i));
    r->push_back(Bf(madd));
    std::vector<std::string> mexists = {"BF.MEXISTS", "s"};
    for (int i = 0; i < 110; ++i) mexists.push_back("item" + std::to_string(i));
    r->push_back(Bf(mexists));
    r->push_back(Bf({"BF.CARD", "s"}));
    r->push_back(Bf({"BF.INFO", "s"}));
    r->push_back(std::to_string(redis_.hashes["s"].size()) + " metadata fields");
    EXPECT_GE(redis_.hashes["s"].count("l5"), 1u);
    DumpAndLoad("s", "copy", r);
    mexists[1] = "copy";
    r->push_back(Bf(mexists));
    r->push_back(Bf({"BF.INFO", "copy"}));
    r->push_back(Keys());
  });
  EXPECT_GE(kinds.count("EVAL shard"), 5u);
  EXPECT_GE(kinds.count("EVAL expire time"), 5u);
  EXPECT_GE(kinds.count("HSETNX"), 5u);
  EXPECT_GE(kinds.count("EVAL add"), 30u);  // sets in links after the first
}

// Behind a Redis Cluster a redirected command can run after a later one of its step (an ASK's
// resend, a TRYAGAIN held during a migration), so filters and links are created with the
// single-key scripts, with the same replies and keys as in front of one Redis.
TEST_F(BfPlanShardingProxyTest, ClusterCreatesKeysWithScripts) {
  std::vector<std::string> seen[2];
  for (const bool cluster : {false, true}) {
    SCOPED_TRACE(cluster ? "cluster" : "one Redis");
    redis_ = MiniRedis();
    cache_ = FilterCache();
    warm_ = true;
    config_ = BfConfig();
    config_.cluster = cluster;
    std::vector<std::string>& r = seen[cluster ? 1 : 0];
    r.push_back(Bf({"BF.RESERVE", "s", "0.01", "2"}));
    for (int i = 0; i < 20; ++i) r.push_back(Bf({"BF.ADD", "s", "item" + std::to_string(i)}));
    r.push_back(Bf({"BF.MADD", "n", "x", "y"}));
    r.push_back(Bf({"BF.INFO", "s"}));
    r.push_back(Keys());
    std::multiset<std::string> kinds;
    for (const std::vector<std::string>& cmd : redis_.sent) kinds.insert(Kind(cmd));
    EXPECT_GE(redis_.hashes["s"].count("l3"), 1u);
    if (cluster) {
      EXPECT_EQ(kinds.count("RENAMENX"), 0u);
      EXPECT_GE(kinds.count("EVAL shard"), 3u);
      EXPECT_EQ(kinds.count("EVAL publish"), 2u);
    } else {
      EXPECT_GE(kinds.count("RENAMENX"), 5u);
      EXPECT_EQ(kinds.count("EVAL shard") + kinds.count("EVAL publish"), 0u);
    }
  }
  EXPECT_EQ(seen[0], seen[1]);
}

TEST_F(BfPlanShardingProxyTest, NewLinkGetsTheNamesTtl) {
  const auto kinds = ExpectSameBehindShardingProxy([&](std::vector<std::string>* r) {
    r->push_back(Bf({"BF.RESERVE", "t", "0.01", "2"}));
    r->push_back(Bf({"BF.MADD", "t", "a", "b"}));
    ExpireEverything();
    const size_t before = redis_.expiry.size();
    r->push_back(Bf({"BF.ADD", "t", "c"}));
    r->push_back(Bf({"BF.MADD", "t", "d", "e", "f", "g", "h"}));
    EXPECT_EQ(redis_.hashes["t"].count("l2"), 1u);
    EXPECT_GT(redis_.expiry.size(), before);
    EXPECT_TRUE(AllExpireTogether()) << Keys();
    r->push_back(Keys());
    r->push_back(Bf({"BF.CARD", "t"}));
  });
  EXPECT_GE(kinds.count("EVAL expire time"), 2u);
  EXPECT_GE(kinds.count("PEXPIREAT"), 4u);
}

TEST_F(BfPlanShardingProxyTest, ShardedFilters) {
  const auto kinds = ExpectSameBehindShardingProxy([&](std::vector<std::string>* r) {
    config_.max_shard_bytes = 64;
    // 144 bytes: shards of 64, 64 and 16 bytes.
    r->push_back(Bf({"BF.RESERVE", "f", "0.01", "100"}));
    r->push_back(Bf({"BF.MADD", "f", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}));
    r->push_back(Bf({"BF.MEXISTS", "f", "a", "e", "j", "zz", "yy"}));
    r->push_back(Bf({"BF.ADD", "f", "k"}));
    r->push_back(Bf({"BF.EXISTS", "f", "k"}));
    // A scaling filter whose new links take several shards, with a TTL.
    r->push_back(Bf({"BF.RESERVE", "s", "0.01", "60", "EXPANSION", "2"}));
    std::vector<std::string> madd = {"BF.MADD", "s"};
    for (int i = 0; i < 60; ++i) madd.push_back("item" + std::to_string(i));
    r->push_back(Bf(madd));
    ExpireEverything();
    for (int round = 1; round < 6; ++round) {
      madd = {"BF.MADD", "s"};
      for (int i = 0; i < 60; ++i) madd.push_back("item" + std::to_string(round * 60 + i));
      r->push_back(Bf(madd));
    }
    EXPECT_EQ(redis_.hashes["s"].count("l2"), 1u);
    EXPECT_TRUE(AllExpireTogether()) << Keys();
    std::vector<std::string> mexists = {"BF.MEXISTS", "s"};
    for (int i = 0; i < 400; i += 7) mexists.push_back("item" + std::to_string(i));
    r->push_back(Bf(mexists));
    r->push_back(Bf({"BF.INFO", "s"}));
    DumpAndLoad("s", "copy", r);
    mexists[1] = "copy";
    r->push_back(Bf(mexists));
    r->push_back(Keys());
  });
  EXPECT_GE(kinds.count("EVAL shard"), 6u);
  EXPECT_GE(kinds.count("SETRANGE"), 6u);
}

TEST_F(BfPlanShardingProxyTest, NameTakenWhileCreating) {
  std::string other;
  const auto kinds = ExpectSameBehindShardingProxy([&](std::vector<std::string>* r) {
    // Another proxy creates the filter between this one's preparing and publishing its own:
    // this one's keys go, and it adds to the other's filter.
    other.clear();
    Meanwhile(PublishOf("n"), {"BF.RESERVE", "n", "0.01", "50"}, &other);
    r->push_back(Bf({"BF.ADD", "n", "x"}));
    EXPECT_EQ(other, "+OK\r\n");
    r->push_back(other);
    r->push_back(Bf({"BF.INFO", "n", "CAPACITY"}));
    r->push_back(Bf({"BF.CARD", "n"}));
    r->push_back(Bf({"BF.EXISTS", "n", "x"}));
    EXPECT_EQ(Keys(), "3 strings, 1 hashes, 0 with a TTL");
    r->push_back(Keys());
    // Taken by a filter: BF.RESERVE answers that it exists.
    other.clear();
    Meanwhile(PublishOf("m"), {"BF.MADD", "m", "y", "z"}, &other);
    r->push_back(Bf({"BF.RESERVE", "m", "0.01", "100"}));
    EXPECT_EQ(other, "*2\r\n:1\r\n:1\r\n");
    r->push_back(other);
    r->push_back(Bf({"BF.CARD", "m"}));
    // Taken by a plain key: another type.
    redis_.override = [this](const std::vector<std::string>& cmd,
                             int) -> std::optional<std::string> {
      if (PublishOf("p")(cmd) && !redis_.Exists("p")) redis_.hashes["p"]["f"] = "v";
      return std::nullopt;
    };
    r->push_back(Bf({"BF.ADD", "p", "x"}));
    redis_.override = nullptr;
    r->push_back(Bf({"BF.LOADCHUNK", "p", "1", "x"}));
    r->push_back(Keys());
  });
  EXPECT_GE(kinds.count("EVAL publish"), 3u);
  EXPECT_GE(kinds.count("UNLINK"), 3u);
}

TEST_F(BfPlanShardingProxyTest, LinkCreatedByTwoProxiesAtOnce) {
  std::string other;
  const auto kinds = ExpectSameBehindShardingProxy([&](std::vector<std::string>* r) {
    r->push_back(Bf({"BF.RESERVE", "c", "0.01", "2"}));
    r->push_back(Bf({"BF.MADD", "c", "a", "b"}));
    ExpireEverything();
    // This proxy has made link 1's keys and is about to name the link; the other, which read
    // the metadata afresh, makes and names it first, and adds its item to it.
    other.clear();
    Meanwhile([](const std::vector<std::string>& cmd) { return cmd[0] == "HSETNX"; },
              {"BF.ADD", "c", "y"}, &other);
    r->push_back(Bf({"BF.ADD", "c", "x"}));
    EXPECT_EQ(other, ":1\r\n");
    r->push_back(other);
    r->push_back(Bf({"BF.MEXISTS", "c", "a", "b", "x", "y", "zz"}));
    r->push_back(Bf({"BF.CARD", "c"}));
    warm_ = false;
    r->push_back(Bf({"BF.CARD", "c"}));
    EXPECT_TRUE(AllExpireTogether()) << Keys();
    r->push_back(Keys());
  });
  EXPECT_GE(kinds.count("HSETNX"), 2u);
  EXPECT_GE(kinds.count("EVAL shard"), 2u);
}

// StepReplies::Ints reads only well-formed arrays of integers.

}  // namespace
}  // namespace bloomproxy::filters
