// The requests that run key commands on whole filters (filters/key_scripts.h). What the Lua does
// is checked against a real redis-server by the integration tests (test_bf_keys.py,
// test_watch_and_probes.py); here: which commands become which script request, with which keys
// and arguments, and that nothing else does.
#include "filters/key_scripts.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "filters/key_layout.h"
#include "protocol/request_parser.h"
#include "protocol/sharding_proxy.h"

namespace bloomproxy::filters {
namespace {

// The arguments of the request built for `args`, or {} when none is.
std::vector<std::string> RequestFor(
    std::vector<std::string_view> args,
    protocol::UpstreamKind upstream = protocol::UpstreamKind::kRedis) {
  std::string request;
  if (!KeyCommandRequest(args, &request, upstream)) {
    EXPECT_TRUE(request.empty());
    return {};
  }
  protocol::RequestParser parser;
  protocol::Command cmd;
  size_t consumed = 0;
  EXPECT_EQ(parser.Parse(request, true, &consumed, &cmd), protocol::ParseStatus::kOk);
  EXPECT_EQ(consumed, request.size());
  return {cmd.args.begin(), cmd.args.end()};
}

TEST(KeyScriptsTest, DeleteRunsKeyByKeyWithEachPrefix) {
  const auto r = RequestFor({"del", "a", "{t}b", "a"});
  ASSERT_EQ(r.size(), 10u);
  EXPECT_EQ(r[0], "EVAL");
  EXPECT_EQ(r[1], DeleteScript());
  EXPECT_EQ(r[2], "3");
  EXPECT_EQ((std::vector<std::string>(r.begin() + 3, r.end())),
            (std::vector<std::string>{"a", "{t}b", "a", "del", "{a}", "{t}b", "{a}"}));
  EXPECT_EQ(RequestFor({"UNLINK", "x"}).back(), DataKeyPrefix("x"));
}

TEST(KeyScriptsTest, ExpireAndPersistCarryTheCommandAsSent) {
  const auto r = RequestFor({"PEXPIREAT", "k", "1000", "NX"});
  ASSERT_EQ(r.size(), 9u);
  EXPECT_EQ(r[1], ExpireScript());
  EXPECT_EQ((std::vector<std::string>(r.begin() + 2, r.end())),
            (std::vector<std::string>{"1", "k", "{k}", "PEXPIREAT", "k", "1000", "NX"}));
  for (std::string_view cmd : {"expire", "pexpire", "expireat", "persist"}) {
    std::vector<std::string_view> args = {cmd, "k"};
    if (cmd != "persist") args.push_back("10");
    EXPECT_EQ(RequestFor(args)[1], ExpireScript()) << cmd;
  }
}

TEST(KeyScriptsTest, RenameNamesBothKeysAndPrefixes) {
  const auto r = RequestFor({"RENAMENX", "a", "b"});
  EXPECT_EQ(r, (std::vector<std::string>{"EVAL", std::string(RenameScript()), "2", "a", "b", "{a}",
                                         "{b}", "RENAMENX", "a", "b"}));
}

TEST(KeyScriptsTest, TypeReadsTheMarkerOnly) {
  const auto r = RequestFor({"type", "users"});
  EXPECT_EQ(r, (std::vector<std::string>{"EVAL_RO", std::string(TypeScript()), "3", "users",
                                         "{users}:bf:m:users", "{users}:cms:m:users"}));
  // Names sharing a prefix have markers of their own.
  EXPECT_NE(MarkerKey(DataKeyPrefix("users"), "users"),
            MarkerKey(DataKeyPrefix("{users}"), "{users}"));
  EXPECT_EQ(DataKeyPrefix("users"), DataKeyPrefix("{users}"));
}

TEST(KeyScriptsTest, OtherCommandsAndWrongArityAreLeftToTheUpstream) {
  EXPECT_TRUE(RequestFor({"GET", "k"}).empty());
  EXPECT_TRUE(RequestFor({"DEL"}).empty());
  EXPECT_TRUE(RequestFor({"EXPIRE", "k"}).empty());
  EXPECT_TRUE(RequestFor({"RENAME", "a"}).empty());
  EXPECT_TRUE(RequestFor({"TYPE", "a", "b"}).empty());
  EXPECT_TRUE(RequestFor({"PERSIST", "a", "b"}).empty());
  EXPECT_TRUE(RequestFor({}).empty());
  EXPECT_TRUE(KeyCommandNames({"GET", "k"}).empty());
  EXPECT_EQ(KeyCommandNames({"DEL", "a", "b"}), (std::vector<std::string_view>{"a", "b"}));
  EXPECT_EQ(KeyCommandNames({"RENAME", "a", "b"}), (std::vector<std::string_view>{"a", "b"}));
}

TEST(KeyScriptsTest, ScriptsNeverOpenATransactionNorReadAHashUnmarked) {
  for (std::string_view s : {TypeScript(), DeleteScript(), ExpireScript(), RenameScript()}) {
    EXPECT_EQ(s.find("MULTI"), std::string_view::npos);
    EXPECT_EQ(s.find("EXEC"), std::string_view::npos);
    // The only hash read follows the marker check (filter_at).
    const size_t marker = s.find("redis.call('EXISTS', m) == 0");
    const size_t hmget = s.find("'HMGET'");
    if (hmget != std::string_view::npos) {
      EXPECT_LT(marker, hmget);
    }
    EXPECT_EQ(s.find("'HGET'"), std::string_view::npos);
  }
}

TEST(KeyScriptsTest, ObjectEncodingAndCopyLookAtBothMarkers) {
  const auto enc = RequestFor({"OBJECT", "encoding", "users"});
  ASSERT_EQ(enc.size(), 9u);
  EXPECT_EQ(enc[0], "EVAL_RO");
  EXPECT_EQ(std::vector<std::string>(enc.begin() + 2, enc.begin() + 6),
            (std::vector<std::string>{"3", "users", "{users}:bf:m:users", "{users}:cms:m:users"}));
  EXPECT_EQ(std::vector<std::string>(enc.begin() + 6, enc.end()),
            (std::vector<std::string>{"OBJECT", "encoding", "users"}));
  EXPECT_EQ(RequestFor({"OBJECT", "ENCODING", "users"}, protocol::UpstreamKind::kShardingProxy)[0],
            "EVAL");
  // Other OBJECT subcommands go upstream as they are.
  std::string request;
  EXPECT_FALSE(KeyCommandRequest({"OBJECT", "FREQ", "users"}, &request));
  const auto copy = RequestFor({"COPY", "a", "b", "REPLACE"});
  EXPECT_EQ(std::vector<std::string>(copy.begin() + 2, copy.begin() + 7),
            (std::vector<std::string>{"4", "a", "b", "{a}:bf:m:a", "{a}:cms:m:a"}));
}

TEST(KeyScriptsTest, TypeGoesWithEvalBehindAShardingProxy) {
  EXPECT_EQ(RequestFor({"TYPE", "users"}, protocol::UpstreamKind::kRedis)[0], "EVAL_RO");
  const auto r = RequestFor({"type", "users"}, protocol::UpstreamKind::kShardingProxy);
  EXPECT_EQ(r, (std::vector<std::string>{"EVAL", std::string(TypeScript()), "3", "users",
                                         "{users}:bf:m:users", "{users}:cms:m:users"}));
  // The other key commands are the same request either way.
  for (std::vector<std::string_view> args : {std::vector<std::string_view>{"DEL", "a", "b"},
                                             {"UNLINK", "a"},
                                             {"EXPIRE", "a", "10"},
                                             {"PERSIST", "a"},
                                             {"PEXPIREAT", "a", "1", "NX"}}) {
    EXPECT_EQ(RequestFor(args, protocol::UpstreamKind::kShardingProxy), RequestFor(args))
        << args[0];
  }
}

TEST(KeyScriptsTest, BehindAShardingProxyEveryRequestIsForwarded) {
  const std::string longest_key(protocol::kShardingProxyMaxKey - 1, 'k');
  const std::string longest_name(kShardingProxyMaxName, 'n');
  const std::string longest_tagged = "{t}" + std::string(kShardingProxyMaxName - 3, 'n');
  std::vector<std::string_view> names = {"users", "app{grp}x", "{u}",        "a}b",
                                         "",      "x{}y{z}",   longest_name, longest_tagged};
  std::vector<std::vector<std::string_view>> commands;
  for (std::string_view n : names) {
    commands.push_back({"TYPE", n});
    commands.push_back({"type", n});
  }
  // DEL, UNLINK, EXPIRE's family: any key twemproxy takes (the client's command went through
  // the same check).
  names.push_back(longest_key);
  for (std::string_view n : names) {
    for (std::string_view del : {"DEL", "UNLINK", "del"}) {
      commands.push_back({del, n});
      commands.push_back({del, "a", n, "{u}b"});
    }
    for (std::string_view exp : {"EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT", "expire"}) {
      commands.push_back({exp, n, "100"});
      commands.push_back({exp, n, "100", "NX"});
    }
    commands.push_back({"PERSIST", n});
  }
  std::vector<std::string_view> many = {"DEL"};
  for (int i = 0; i < 300; ++i) many.push_back(names[static_cast<size_t>(i) % 4]);
  commands.push_back(many);
  for (const auto& args : commands) {
    std::string request;
    ASSERT_TRUE(KeyCommandRequest(args, &request, protocol::UpstreamKind::kShardingProxy))
        << args[0];
    const std::vector<std::string> r = RequestFor(args, protocol::UpstreamKind::kShardingProxy);
    ASSERT_GE(r.size(), 4u);
    EXPECT_EQ(r[0], "EVAL");
    const std::vector<std::string_view> views(r.begin(), r.end());
    EXPECT_TRUE(protocol::ShardingProxyForwards(views))
        << args[0] << " " << args[1].substr(0, 20) << ": " << protocol::ShardingProxyRefusal(views);
  }
}

}  // namespace
}  // namespace bloomproxy::filters
