// The requests that run key commands on whole filters (filters/common/key_scripts.h). What the Lua
// does is checked against a real redis-server by the integration tests (test_bf_keys.py,
// test_watch_and_probes.py, test_key_commands_whole.py); here: which commands become which script
// request, with which keys and arguments, and that nothing else does.
#include "filters/common/key_scripts.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "filters/common/key_layout.h"
#include "filters/common/marked.lua.h"
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
  EXPECT_EQ(r, (std::vector<std::string>{"EVAL_RO", std::string(TypeScript()), "1", "users",
                                         "{users}:bf:m:users", "{users}:cms:m:users",
                                         "{users}:cf:m:users", "{users}:tk:m:users",
                                         "{users}:td:m:users"}));
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
    const size_t marker = s.find("if not marked(m) then");
    const size_t hmget = s.find("'HMGET'");
    if (hmget != std::string_view::npos) {
      EXPECT_LT(marker, hmget);
    }
    EXPECT_EQ(s.find("'HGET'"), std::string_view::npos);
  }
}

// A read-only command in a script makes a tracking client track the script's keys: a script
// that writes looks at markers with marked (SETRANGE of nothing) before anything else, and
// reads a key (TYPE, HMGET) only once a marker was found.
TEST(KeyScriptsTest, WritingScriptsFindMarkersWithoutReading) {
  for (std::string_view s :
       {DeleteScript(), ExpireScript(), RenameScript(), MoveScript(), RestoreScript(), CopyScript(),
        HashScript(true), HashInPartsScript(true)}) {
    // (After the hash scripts' prologue, which only moves the markers out of ARGV.)
    const std::string_view marked = lua::kMarked.body;
    const size_t fn = s.find(marked);
    ASSERT_LT(fn, s.find("redis."));
    const std::string_view body = s.substr(fn + marked.size());
    const size_t first_use = body.find("marked(");
    ASSERT_NE(first_use, std::string_view::npos);
    for (std::string_view read : {"'EXISTS'", "'TYPE'", "'HMGET'", "'PEXPIRETIME'"}) {
      const size_t at = body.find(read);
      if (at != std::string_view::npos) {
        EXPECT_LT(first_use, at) << read << " in " << s;
      }
    }
  }
  // EVAL_RO refuses SETRANGE: the scripts that only read use EXISTS.
  for (std::string_view s : {MemoryUsageScript(), ObjectTimeScript()}) {
    EXPECT_EQ(s.find("'SETRANGE'"), std::string_view::npos);
  }
}

TEST(KeyScriptsTest, ObjectEncodingAndCopyLookAtEveryMarker) {
  const auto enc = RequestFor({"OBJECT", "encoding", "users"});
  ASSERT_EQ(enc.size(), 12u);
  EXPECT_EQ(enc[0], "EVAL_RO");
  EXPECT_EQ(
      std::vector<std::string>(enc.begin() + 2, enc.begin() + 9),
      (std::vector<std::string>{"1", "users", "{users}:bf:m:users", "{users}:cms:m:users",
                                "{users}:cf:m:users", "{users}:tk:m:users", "{users}:td:m:users"}));
  EXPECT_EQ(std::vector<std::string>(enc.begin() + 9, enc.end()),
            (std::vector<std::string>{"OBJECT", "encoding", "users"}));
  EXPECT_EQ(RequestFor({"OBJECT", "ENCODING", "users"}, protocol::UpstreamKind::kShardingProxy)[0],
            "EVAL");
  // OBJECT REFCOUNT and HELP go upstream as they are (a hash's refcount is 1, as a module key's).
  std::string request;
  EXPECT_FALSE(KeyCommandRequest({"OBJECT", "REFCOUNT", "users"}, &request));
  EXPECT_FALSE(KeyCommandRequest({"OBJECT", "HELP"}, &request));
  const auto copy = RequestFor({"COPY", "a", "b", "REPLACE"});
  EXPECT_EQ(std::vector<std::string>(copy.begin() + 2, copy.begin() + 10),
            (std::vector<std::string>{"7", "a", "b", "{a}:bf:m:a", "{a}:cms:m:a", "{a}:cf:m:a",
                                      "{a}:tk:m:a", "{a}:td:m:a"}));
}

TEST(KeyScriptsTest, TypeGoesWithEvalBehindAShardingProxy) {
  EXPECT_EQ(RequestFor({"TYPE", "users"}, protocol::UpstreamKind::kRedis)[0], "EVAL_RO");
  const auto r = RequestFor({"type", "users"}, protocol::UpstreamKind::kShardingProxy);
  EXPECT_EQ(r, (std::vector<std::string>{"EVAL", std::string(TypeScript()), "1", "users",
                                         "{users}:bf:m:users", "{users}:cms:m:users",
                                         "{users}:cf:m:users", "{users}:tk:m:users",
                                         "{users}:td:m:users"}));
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

// The arguments from `from` on.
std::vector<std::string> Tail(const std::vector<std::string>& r, size_t from) {
  return from <= r.size() ? std::vector<std::string>(r.begin() + from, r.end())
                          : std::vector<std::string>{};
}

TEST(KeyScriptsTest, HashCommandsRunWithTheMarkersAsKeys) {
  const auto r = RequestFor({"HGET", "users", "f"});
  EXPECT_EQ(r, (std::vector<std::string>{"EVAL_RO", std::string(HashScript(false)), "1", "users",
                                         "{users}:bf:m:users", "{users}:cms:m:users",
                                         "{users}:cf:m:users", "{users}:tk:m:users",
                                         "{users}:td:m:users", "HGET", "users", "f"}));
  // Writes go with EVAL (held by CLIENT PAUSE WRITE as the write itself), reads with EVAL_RO.
  const std::vector<std::vector<std::string_view>> writes = {
      {"HSET", "k", "f", "v"}, {"hmset", "k", "f", "v"},   {"HSETNX", "k", "f", "v"},
      {"HDEL", "k", "f", "g"}, {"HINCRBY", "k", "f", "1"}, {"HINCRBYFLOAT", "k", "f", "1"}};
  const std::vector<std::vector<std::string_view>> reads = {
      {"HGET", "k", "f"},
      {"HLEN", "k"},
      {"HSTRLEN", "k", "f"},
      {"HKEYS", "k"},
      {"HVALS", "k"},
      {"HGETALL", "k"},
      {"HEXISTS", "k", "f"},
      {"HMGET", "k", "f", "g"},
      {"HRANDFIELD", "k", "-5", "WITHVALUES"},
      {"HSCAN", "k", "0", "MATCH", "*", "COUNT", "10"}};
  for (const auto& args : writes) {
    const auto w = RequestFor(args);
    ASSERT_GE(w.size(), 10u) << args[0];
    EXPECT_EQ(w[0], "EVAL") << args[0];
    EXPECT_EQ(w[1], args[0] == "HINCRBY" ? HashIncrByScript() : HashScript(true)) << args[0];
    EXPECT_EQ(Tail(w, 9), std::vector<std::string>(args.begin(), args.end())) << args[0];
    EXPECT_TRUE(KeyCommandNames(args).empty()) << args[0];
  }
  for (const auto& args : reads) {
    const auto rd = RequestFor(args);
    ASSERT_GE(rd.size(), 10u) << args[0];
    EXPECT_EQ(rd[0], "EVAL_RO") << args[0];
    EXPECT_EQ(std::vector<std::string>(rd.begin() + 2, rd.begin() + 9),
              (std::vector<std::string>{"1", "k", "{k}:bf:m:k", "{k}:cms:m:k", "{k}:cf:m:k",
                                        "{k}:tk:m:k", "{k}:td:m:k"}))
        << args[0];
    EXPECT_EQ(Tail(rd, 9), std::vector<std::string>(args.begin(), args.end())) << args[0];
    EXPECT_EQ(RequestFor(args, protocol::UpstreamKind::kShardingProxy)[0], "EVAL") << args[0];
  }
  // Wrong arity is Redis's to answer, with the command as sent.
  EXPECT_TRUE(RequestFor({"HGET", "k"}).empty());
  EXPECT_TRUE(RequestFor({"HSET", "k", "f"}).empty());
  EXPECT_TRUE(RequestFor({"HLEN", "k", "x"}).empty());
}

TEST(KeyScriptsTest, HashCommandsWithMoreArgumentsThanLuaTakes) {
  std::vector<std::string> storage(kMaxScriptArgs + 10, "f");
  for (std::string_view cmd : {"HSET", "HMSET", "HDEL", "HMGET", "HSCAN"}) {
    std::vector<std::string_view> args = {cmd, "k"};
    if (cmd == "HSCAN") args.push_back("0");
    args.insert(args.end(), storage.begin(), storage.end());
    std::string request;
    // HSET, HMSET, HDEL and HMGET run in parts in their script; HSCAN goes as it is.
    EXPECT_EQ(KeyCommandRequest(args, &request), cmd != "HSCAN") << cmd;
    if (cmd != "HSCAN") {
      const auto r = RequestFor(args);
      ASSERT_EQ(r.size(), 9 + args.size()) << cmd;
      EXPECT_EQ(r[1], HashInPartsScript(cmd != "HMGET")) << cmd;
    }
  }
  // Up to kMaxScriptArgs, the one-call script.
  std::vector<std::string_view> args = {"HSET", "k"};
  args.insert(args.end(), storage.begin(), storage.begin() + kMaxScriptArgs - 2);
  EXPECT_EQ(RequestFor(args)[1], HashScript(true));
  args.push_back("f");
  EXPECT_EQ(RequestFor(args)[1], HashInPartsScript(true));
  // Parts of 6000 arguments keep HSET's field-value pairs together.
  EXPECT_NE(HashInPartsScript(true).find("for i = 3, n, 6000 do"), std::string_view::npos);
  EXPECT_NE(HashInPartsScript(false).find("math.min(i + 5999, n)"), std::string_view::npos);
  // A write reads the markers with a write command that changes nothing, so that a client's
  // CLIENT TRACKING does not track the keys of its own writes; a read with EXISTS.
  EXPECT_NE(HashScript(true).find("'SETRANGE', k, 0, ''"), std::string_view::npos);
  EXPECT_EQ(HashScript(false).find("SETRANGE"), std::string_view::npos);
}

TEST(KeyScriptsTest, HashScriptRunsTheCommandOnTheMarkerOfAStructure) {
  for (std::string_view s : {HashScript(false), HashScript(true), HashIncrByScript(),
                             HashInPartsScript(false), HashInPartsScript(true)}) {
    // The markers are checked (touching nothing) before the name's type, and a structure's name
    // is replaced by its marker, a string, so Redis answers WRONGTYPE after checking the
    // arguments.
    const bool writes = s.find("SETRANGE") != std::string_view::npos;
    // The markers come in ARGV, not KEYS (a tracking client would track them): MK holds them.
    EXPECT_EQ(s.find("local MK = {}\nfor i = 1, 5 do MK[i] = table.remove(ARGV, 1) end\n"), 1u);
    EXPECT_LT(s.find(writes ? "if (marked(MK[1]) or marked(MK[2]) or marked(MK[3]) or "
                              "marked(MK[4]) or marked(MK[5]))"
                            : "call('EXISTS', unpack(MK))"),
              s.find("call('TYPE', KEYS[1])"));
    // The command runs on the first marker that is a string.
    EXPECT_LT(s.find("for _, m in ipairs(MK) do"), s.find("ARGV[2] = on"));
    EXPECT_LT(s.find("ARGV[2] = on"), s.rfind("redis.pcall("));
    EXPECT_EQ(s.find("KEYS[2]"), std::string_view::npos);
  }
  // Only HINCRBY's reply can be an integer beyond what a Lua number holds.
  EXPECT_EQ(RequestFor({"HINCRBY", "k", "f", "1"})[1], HashIncrByScript());
  EXPECT_EQ(RequestFor({"hincrby", "k", "f", "1"})[1], HashIncrByScript());
  EXPECT_EQ(RequestFor({"HINCRBYFLOAT", "k", "f", "1"})[1], HashScript(true));
  EXPECT_NE(HashIncrByScript().find("r >= 2^53 or r <= -2^53"), std::string_view::npos);
  EXPECT_EQ(HashScript(false).find("2^53"), std::string_view::npos);
  EXPECT_LT(HashScript(false).size(), 600u);
}

TEST(KeyScriptsTest, DumpIsRefusedOnAStructureOnly) {
  const auto r = RequestFor({"DUMP", "users"});
  EXPECT_EQ(r, (std::vector<std::string>{"EVAL_RO", std::string(DumpScript()), "1", "users",
                                         "{users}:bf:m:users", "{users}:cms:m:users",
                                         "{users}:cf:m:users", "{users}:tk:m:users",
                                         "{users}:td:m:users", "DUMP", "users"}));
  EXPECT_NE(DumpScript().find("{err = '" + std::string(kDumpRefused) + "'}"),
            std::string_view::npos);
  EXPECT_EQ(kDumpRefused.find('\n'), std::string_view::npos);
  EXPECT_EQ(kDumpRefused.find('\''), std::string_view::npos);
  EXPECT_EQ(kDumpRefused.substr(0, 4), "ERR ");
  EXPECT_TRUE(RequestFor({"DUMP", "a", "b"}).empty());
}

TEST(KeyScriptsTest, MoveAndRestoreCarryThePrefixAndTheCommand) {
  const auto move = RequestFor({"MOVE", "users", "1"});
  EXPECT_EQ(move, (std::vector<std::string>{"EVAL", std::string(MoveScript()), "1", "users",
                                            "{users}", "MOVE", "users", "1"}));
  EXPECT_EQ(KeyCommandNames({"MOVE", "users", "1"}), (std::vector<std::string_view>{"users"}));
  const auto restore = RequestFor({"RESTORE", "app{g}x", "0", "payload", "REPLACE", "ABSTTL"});
  EXPECT_EQ(restore, (std::vector<std::string>{"EVAL", std::string(RestoreScript()), "1", "app{g}x",
                                               "app{g}x", "RESTORE", "app{g}x", "0", "payload",
                                               "REPLACE", "ABSTTL"}));
  EXPECT_EQ(KeyCommandNames({"RESTORE", "k", "0", "p"}), (std::vector<std::string_view>{"k"}));
  EXPECT_TRUE(RequestFor({"MOVE", "users"}).empty());
  EXPECT_TRUE(RequestFor({"RESTORE", "k", "0"}).empty());
}

TEST(KeyScriptsTest, MemoryUsageAndObjectTimesNameTheKeyAfterTheSubcommand) {
  const auto mem = RequestFor({"memory", "usage", "users", "SAMPLES", "0"});
  EXPECT_EQ(mem,
            (std::vector<std::string>{"EVAL_RO", std::string(MemoryUsageScript()), "1", "users",
                                      "{users}", "memory", "usage", "users", "SAMPLES", "0"}));
  for (std::string_view sub : {"IDLETIME", "freq"}) {
    const auto r = RequestFor({"OBJECT", sub, "users"});
    EXPECT_EQ(r, (std::vector<std::string>{"EVAL_RO", std::string(ObjectTimeScript()), "1", "users",
                                           "{users}", "OBJECT", std::string(sub), "users"}));
    EXPECT_EQ(RequestFor({"OBJECT", sub, "users"}, protocol::UpstreamKind::kShardingProxy)[0],
              "EVAL");
    EXPECT_TRUE(RequestFor({"OBJECT", sub}).empty());
    EXPECT_TRUE(RequestFor({"OBJECT", sub, "a", "b"}).empty());
    EXPECT_TRUE(KeyCommandNames({"OBJECT", sub, "users"}).empty());
  }
  EXPECT_TRUE(RequestFor({"MEMORY", "USAGE"}).empty());
  EXPECT_TRUE(RequestFor({"MEMORY", "STATS"}).empty());
  EXPECT_TRUE(RequestFor({"MEMORY", "DOCTOR"}).empty());
}

TEST(KeyScriptsTest, NewScriptsReadAHashOnlyAfterItsMarker) {
  for (std::string_view s : {MoveScript(), RestoreScript(), MemoryUsageScript(), ObjectTimeScript(),
                             HashScript(false), HashScript(true), HashIncrByScript(),
                             HashInPartsScript(false), HashInPartsScript(true), DumpScript()}) {
    EXPECT_EQ(s.find("MULTI"), std::string_view::npos);
    EXPECT_EQ(s.find("EXEC"), std::string_view::npos);
    // filter_at (the only HMGET) checks the marker first; the hash and DUMP scripts never read
    // a structure's hash (HashIncrByScript's HGET is of a plain hash's field, after HINCRBY).
    const size_t hmget = s.find("'HMGET'");
    if (hmget != std::string_view::npos) {
      EXPECT_LT(s.find("if not marked(m) then"), hmget);
    }
  }
  // OBJECT IDLETIME / FREQ asks the name before filter_at reads its metadata (which touches it).
  const std::string_view o = ObjectTimeScript();
  const size_t body = o.find("local r = redis.pcall(unpack(ARGV, 2))");
  ASSERT_NE(body, std::string_view::npos);
  EXPECT_LT(body, o.find("filter_at(KEYS[1], ARGV[1])", body));
  // RESTORE removes the structure only once Redis restored the name.
  const std::string_view r = RestoreScript();
  EXPECT_LT(r.find("redis.pcall(unpack(ARGV, 2))"),
            r.find("unlink_all(m, data or {})", r.find("local r")));
}

TEST(KeyScriptsTest, NewCommandsGoAsTheyAreBehindAShardingProxyWhereNoStructureLives) {
  const std::string long_name(kShardingProxyMaxName + 1, 'n');
  for (std::string_view name :
       {std::string_view("a}b"), std::string_view(""), std::string_view(long_name)}) {
    std::string request;
    EXPECT_FALSE(
        KeyCommandRequest({"HGET", name, "f"}, &request, protocol::UpstreamKind::kShardingProxy));
    EXPECT_FALSE(
        KeyCommandRequest({"DUMP", name}, &request, protocol::UpstreamKind::kShardingProxy));
    EXPECT_TRUE(request.empty());
    // With Redis itself any name can be a structure.
    EXPECT_TRUE(KeyCommandRequest({"HGET", name, "f"}, &request));
  }
  for (std::vector<std::string_view> args :
       {std::vector<std::string_view>{"HSET", "users", "f", "v"},
        {"HGET", "app{grp}x", "f"},
        {"DUMP", "users"}}) {
    const auto r = RequestFor(args, protocol::UpstreamKind::kShardingProxy);
    ASSERT_GE(r.size(), 4u);
    EXPECT_EQ(r[0], "EVAL");
    const std::vector<std::string_view> views(r.begin(), r.end());
    EXPECT_TRUE(protocol::ShardingProxyForwards(views)) << args[0];
  }
}

// A Top-K sketch is the fourth structure: its marker is the fourth of every marker list.
TEST(KeyScriptsTest, TopkIsTheFourthStructure) {
  EXPECT_EQ(TopkMarkerKey(DataKeyPrefix("users"), "users"), "{users}:tk:m:users");
  EXPECT_EQ(TopkMarkerKey(DataKeyPrefix("app{g}x"), "app{g}x"), "app{g}x:tk:m:app{g}x");
  EXPECT_NE(TopkMarkerKey(DataKeyPrefix("{users}"), "{users}"),
            TopkMarkerKey(DataKeyPrefix("users"), "users"));
  // What the scripts do with a Top-K's keys (TYPE, DEL, RENAME, MOVE, MEMORY USAGE, ...) is
  // checked where they run, against a real Redis: tests/integration/test_topk_keys.py.
  const auto copy = RequestFor({"COPY", "{t}a", "b", "DB", "1"});
  ASSERT_EQ(copy.size(), 15u);
  EXPECT_EQ(copy[2], "7");
  EXPECT_EQ(copy[8], "{t}a:tk:m:{t}a");
  EXPECT_EQ(Tail(copy, 10), (std::vector<std::string>{"COPY", "{t}a", "b", "DB", "1"}));
  // Behind a sharding proxy the fourth marker is still within what it forwards.
  const std::string longest_name(kShardingProxyMaxName, 'n');
  const auto r = RequestFor({"HGET", longest_name, "f"}, protocol::UpstreamKind::kShardingProxy);
  ASSERT_GE(r.size(), 8u);
  EXPECT_EQ(r[7], TopkMarkerKey(DataKeyPrefix(longest_name), longest_name));
  const std::vector<std::string_view> views(r.begin(), r.end());
  EXPECT_TRUE(protocol::ShardingProxyForwards(views)) << protocol::ShardingProxyRefusal(views);
}

// A t-digest is the fifth structure: its marker is the fifth of every marker list the C++ builds
// (TYPE, OBJECT ENCODING, DUMP, the hash commands) and COPY's seventh key. What the scripts do
// with a t-digest's keys is checked where they run, against a real Redis:
// tests/integration/test_tdigest_keys.py.
TEST(KeyScriptsTest, TdigestIsTheFifthStructure) {
  EXPECT_EQ(TdigestMarkerKey(DataKeyPrefix("users"), "users"), "{users}:td:m:users");
  EXPECT_EQ(TdigestMarkerKey(DataKeyPrefix("app{g}x"), "app{g}x"), "app{g}x:td:m:app{g}x");
  EXPECT_EQ(TdigestMarkerKey(DataKeyPrefix("a}b"), "a}b"), DataKeyPrefix("a}b") + ":td:m:a}b");
  EXPECT_NE(TdigestMarkerKey(DataKeyPrefix("{users}"), "{users}"),
            TdigestMarkerKey(DataKeyPrefix("users"), "users"));
  // Every structure's marker of one name is a key of its own.
  const std::string p = DataKeyPrefix("d");
  const std::vector<std::string> markers = {MarkerKey(p, "d"), CmsMarkerKey(p, "d"),
                                            CfMarkerKey(p, "d"), TopkMarkerKey(p, "d"),
                                            TdigestMarkerKey(p, "d")};
  for (size_t i = 0; i < markers.size(); ++i) {
    for (size_t j = i + 1; j < markers.size(); ++j) EXPECT_NE(markers[i], markers[j]);
  }
  // The scripts that look at markers take all five, the t-digest's last, then the command.
  for (std::vector<std::string_view> args : {std::vector<std::string_view>{"TYPE", "d"},
                                             {"OBJECT", "ENCODING", "d"},
                                             {"DUMP", "d"},
                                             {"HGET", "d", "f"},
                                             {"HSET", "d", "f", "v"},
                                             {"HINCRBY", "d", "f", "1"}}) {
    const auto r = RequestFor(args);
    ASSERT_GE(r.size(), 9u) << args[0];
    EXPECT_EQ(std::vector<std::string>(r.begin() + 2, r.begin() + 4),
              (std::vector<std::string>{"1", "d"}))
        << args[0];
    EXPECT_EQ(std::vector<std::string>(r.begin() + 4, r.begin() + 9), markers) << args[0];
    const std::vector<std::string> command =
        args[0] == "TYPE" ? std::vector<std::string>{}
                          : std::vector<std::string>(args.begin(), args.end());
    EXPECT_EQ(Tail(r, 9), command) << args[0];
  }
  // COPY: KEYS are the source, the destination and the source's five markers.
  const auto copy = RequestFor({"COPY", "{t}d", "e", "REPLACE"});
  ASSERT_EQ(copy.size(), 14u);
  EXPECT_EQ(copy[2], "7");
  EXPECT_EQ(copy[9], "{t}d:td:m:{t}d");
  EXPECT_EQ(Tail(copy, 10), (std::vector<std::string>{"COPY", "{t}d", "e", "REPLACE"}));
  // Behind a sharding proxy the fifth marker is still within what it forwards.
  const std::string longest_name(kShardingProxyMaxName, 'n');
  for (std::vector<std::string_view> args :
       {std::vector<std::string_view>{"HGET", longest_name, "f"},
        {"TYPE", longest_name},
        {"DUMP", longest_name}}) {
    const auto r = RequestFor(args, protocol::UpstreamKind::kShardingProxy);
    ASSERT_GE(r.size(), 9u) << args[0];
    EXPECT_EQ(r[0], "EVAL") << args[0];
    EXPECT_EQ(r[8], TdigestMarkerKey(DataKeyPrefix(longest_name), longest_name)) << args[0];
    const std::vector<std::string_view> views(r.begin(), r.end());
    EXPECT_TRUE(protocol::ShardingProxyForwards(views)) << protocol::ShardingProxyRefusal(views);
  }
}

}  // namespace
}  // namespace bloomproxy::filters
