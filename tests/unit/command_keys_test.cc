// Where commands' keys are. Expected positions are Redis 7.0's: COMMAND GETKEYS, and, where that
// differs from what Redis Cluster routes by (db.c getKeysFromCommand), CROSSSLOT probes of a
// one-node cluster (noted at each such case).
#include "protocol/command_keys.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/command_table.h"

namespace bloomproxy::protocol {
namespace {

using Positions = std::vector<size_t>;

// The keys of `args` (name first; a container's subcommand second), or nullopt when
// CommandKeys answers false.
std::optional<Positions> Keys(const std::vector<std::string_view>& args) {
  const CommandInfo* info = LookupCommand(args.at(0));
  if (info == nullptr) {
    ADD_FAILURE() << "unknown command " << args[0];
    return std::nullopt;
  }
  if ((info->flags & kFlagContainer) != 0 && args.size() > 1) {
    if (const CommandInfo* sub = LookupSubcommand(*info, args[1])) info = sub;
  }
  Positions positions = {99};  // CommandKeys appends: the sentinel must stay first
  if (!CommandKeys(*info, args, &positions)) {
    EXPECT_EQ(positions, Positions{99}) << "false must add nothing";
    return std::nullopt;
  }
  EXPECT_FALSE(positions.empty());
  if (positions.empty() || positions.front() != 99) return std::nullopt;
  return Positions(positions.begin() + 1, positions.end());
}

const std::optional<Positions> kNone = std::nullopt;

TEST(CommandKeysTest, NoKeys) {
  EXPECT_EQ(Keys({"ping"}), Positions{});
  EXPECT_EQ(Keys({"info", "keyspace"}), Positions{});
  EXPECT_EQ(Keys({"client", "getname"}), Positions{});
  EXPECT_EQ(Keys({"pubsub", "shardnumsub", "ch"}), Positions{});
  // SUNSUBSCRIBE with no channel: the range 1..-1 is empty.
  EXPECT_EQ(Keys({"sunsubscribe"}), Positions{});
}

TEST(CommandKeysTest, FirstLastStep) {
  EXPECT_EQ(Keys({"get", "k"}), Positions({1}));
  EXPECT_EQ(Keys({"SET", "k", "v", "EX", "10"}), Positions({1}));
  EXPECT_EQ(Keys({"mget", "a", "b", "c"}), Positions({1, 2, 3}));
  EXPECT_EQ(Keys({"del", "a"}), Positions({1}));
  EXPECT_EQ(Keys({"del", "a", "b"}), Positions({1, 2}));
  EXPECT_EQ(Keys({"mset", "a", "1", "b", "2", "c", "3"}), Positions({1, 3, 5}));
  EXPECT_EQ(Keys({"msetnx", "a", "1"}), Positions({1}));
  // BITOP op dst key...: the operation is not a key.
  EXPECT_EQ(Keys({"bitop", "and", "dst", "a", "b"}), Positions({2, 3, 4}));
  EXPECT_EQ(Keys({"rename", "a", "b"}), Positions({1, 2}));
  EXPECT_EQ(Keys({"lcs", "a", "b", "LEN"}), Positions({1, 2}));
  // last_key -2: the timeout is not a key.
  EXPECT_EQ(Keys({"blpop", "a", "b", "0"}), Positions({1, 2}));
  EXPECT_EQ(Keys({"bzpopmin", "a", "1.5"}), Positions({1}));
  EXPECT_EQ(Keys({"pfdebug", "getreg", "h"}), Positions({2}));
  // Sharded channels are routed like keys (their slot decides the node).
  EXPECT_EQ(Keys({"spublish", "ch", "msg"}), Positions({1}));
  EXPECT_EQ(Keys({"ssubscribe", "a", "b"}), Positions({1, 2}));
}

TEST(CommandKeysTest, SubcommandPositionsCountTheContainer) {
  EXPECT_EQ(Keys({"object", "encoding", "k"}), Positions({2}));
  EXPECT_EQ(Keys({"OBJECT", "FREQ", "k"}), Positions({2}));
  EXPECT_EQ(Keys({"memory", "usage", "k", "SAMPLES", "5"}), Positions({2}));
  EXPECT_EQ(Keys({"xinfo", "stream", "s"}), Positions({2}));
  EXPECT_EQ(Keys({"xinfo", "stream", "s", "FULL", "COUNT", "10"}), Positions({2}));
  EXPECT_EQ(Keys({"xinfo", "consumers", "s", "g"}), Positions({2}));
  EXPECT_EQ(Keys({"xgroup", "create", "s", "g", "$", "MKSTREAM"}), Positions({2}));
  EXPECT_EQ(Keys({"xgroup", "destroy", "s", "g"}), Positions({2}));
}

TEST(CommandKeysTest, WrongArity) {
  EXPECT_EQ(Keys({"get"}), kNone);
  EXPECT_EQ(Keys({"get", "a", "b"}), kNone);
  EXPECT_EQ(Keys({"mset", "a"}), kNone);
  EXPECT_EQ(Keys({"blpop", "a"}), kNone);
  EXPECT_EQ(Keys({"object", "encoding"}), kNone);
  EXPECT_EQ(Keys({"eval", "s"}), kNone);
  EXPECT_EQ(Keys({"zunionstore", "d", "1"}), kNone);
  EXPECT_EQ(Keys({"xread", "streams", "a"}), kNone);
}

TEST(CommandKeysTest, ScriptsAndFunctions) {
  EXPECT_EQ(Keys({"eval", "return 1", "0"}), Positions{});
  EXPECT_EQ(Keys({"eval", "return 1", "0", "a", "b"}), Positions{});
  EXPECT_EQ(Keys({"eval", "s", "2", "a", "b", "arg"}), Positions({3, 4}));
  EXPECT_EQ(Keys({"eval", "s", "2", "a", "b"}), Positions({3, 4}));
  EXPECT_EQ(Keys({"EVALSHA", "sha", "1", "a"}), Positions({3}));
  EXPECT_EQ(Keys({"eval_ro", "s", "1", "a", "x"}), Positions({3}));
  EXPECT_EQ(Keys({"evalsha_ro", "sha", "3", "a", "b", "c"}), Positions({3, 4, 5}));
  EXPECT_EQ(Keys({"fcall", "f", "0"}), Positions{});
  EXPECT_EQ(Keys({"fcall", "f", "1", "k", "arg"}), Positions({3}));
  EXPECT_EQ(Keys({"fcall_ro", "f", "2", "k1", "k2"}), Positions({3, 4}));
}

TEST(CommandKeysTest, MalformedNumkeys) {
  // Not a number, negative, more keys than arguments: Redis finds no keys (and errors).
  EXPECT_EQ(Keys({"eval", "s", "x", "a"}), kNone);
  EXPECT_EQ(Keys({"eval", "s", "", "a"}), kNone);
  EXPECT_EQ(Keys({"eval", "s", "-1", "a"}), kNone);
  EXPECT_EQ(Keys({"eval", "s", "3", "a", "b"}), kNone);
  EXPECT_EQ(Keys({"fcall", "f", "1"}), kNone);
  // EVAL accepts "0" only as Redis writes integers: "00" and " 0" fail the command.
  EXPECT_EQ(Keys({"eval", "s", "00"}), kNone);
  EXPECT_EQ(Keys({"eval", "s", "0abc"}), kNone);
  EXPECT_EQ(Keys({"zunionstore", "d", "0", "a"}), kNone);
  EXPECT_EQ(Keys({"zunionstore", "d", "x", "a"}), kNone);
  EXPECT_EQ(Keys({"zunion", "3", "a", "b"}), kNone);
  EXPECT_EQ(Keys({"zinter", "-2", "a", "b"}), kNone);
  EXPECT_EQ(Keys({"sintercard", "0", "a"}), kNone);
  EXPECT_EQ(Keys({"lmpop", "2", "a", "LEFT", "x"}), Positions({2, 3}));
  EXPECT_EQ(Keys({"lmpop", "4", "a", "LEFT"}), kNone);
  EXPECT_EQ(Keys({"blmpop", "0", "0", "a", "LEFT"}), kNone);
  EXPECT_EQ(Keys({"bzmpop", "0", "nan", "a", "MIN"}), kNone);
}

TEST(CommandKeysTest, NumkeysReadAsCAtoi) {
  // Redis reads numkeys with atoi to find keys, and routes by them before the command itself
  // rejects the number (a one-node cluster answers CROSSSLOT to EVAL s 2abc a b).
  EXPECT_EQ(Keys({"eval", "s", "2abc", "a", "b"}), Positions({3, 4}));
  EXPECT_EQ(Keys({"eval", "s", " +1", "a"}), Positions({3}));
  EXPECT_EQ(Keys({"eval", "s", "\t\n1", "a"}), Positions({3}));
  EXPECT_EQ(Keys({"eval", "s", "01", "a"}), Positions({3}));
  EXPECT_EQ(Keys({"zunionstore", "d", "1.9", "a"}), Positions({1, 3}));
  EXPECT_EQ(Keys({"eval", "s",
                  std::string_view("1\0"
                                   "9",
                                   3),
                  "a"}),
            Positions({3}));
  // (int)strtol: 2^32 + 2 truncates to 2; past LONG_MAX it saturates, and (int)LONG_MAX is -1.
  EXPECT_EQ(Keys({"eval", "s", "4294967298", "a", "b"}), Positions({3, 4}));
  EXPECT_EQ(Keys({"eval", "s", "99999999999999999999999", "a"}), kNone);
  EXPECT_EQ(Keys({"eval", "s", "-4294967295", "a"}), Positions({3}));
  EXPECT_EQ(Keys({"eval", "s", "- 1", "a"}), kNone);
  EXPECT_EQ(Keys({"eval", "s", "+-1", "a"}), kNone);
}

TEST(CommandKeysTest, SortedSetAlgebra) {
  EXPECT_EQ(Keys({"zunion", "2", "a", "b", "WEIGHTS", "1", "2"}), Positions({2, 3}));
  EXPECT_EQ(Keys({"zinter", "1", "a", "WITHSCORES"}), Positions({2}));
  EXPECT_EQ(Keys({"zdiff", "2", "a", "b"}), Positions({2, 3}));
  EXPECT_EQ(Keys({"zintercard", "2", "a", "b", "LIMIT", "5"}), Positions({2, 3}));
  EXPECT_EQ(Keys({"sintercard", "2", "a", "b", "LIMIT", "5"}), Positions({2, 3}));
  // The destination first, as it comes in the arguments (Redis's function lists it last).
  EXPECT_EQ(Keys({"zunionstore", "d", "2", "a", "b", "AGGREGATE", "MAX"}), Positions({1, 3, 4}));
  EXPECT_EQ(Keys({"zinterstore", "d", "1", "a"}), Positions({1, 3}));
  EXPECT_EQ(Keys({"zdiffstore", "d", "2", "a", "b"}), Positions({1, 3, 4}));
  // numkeys may swallow an option: Redis counts it as a key (the command then fails).
  EXPECT_EQ(Keys({"zunion", "2", "a", "WITHSCORES"}), Positions({2, 3}));
}

TEST(CommandKeysTest, MultiPop) {
  EXPECT_EQ(Keys({"lmpop", "2", "a", "b", "LEFT", "COUNT", "2"}), Positions({2, 3}));
  EXPECT_EQ(Keys({"zmpop", "1", "a", "MIN"}), Positions({2}));
  EXPECT_EQ(Keys({"blmpop", "0.5", "2", "a", "b", "RIGHT"}), Positions({3, 4}));
  EXPECT_EQ(Keys({"bzmpop", "0", "1", "a", "MAX", "COUNT", "3"}), Positions({3}));
}

TEST(CommandKeysTest, Sort) {
  EXPECT_EQ(Keys({"sort", "k"}), Positions({1}));
  EXPECT_EQ(Keys({"sort", "k", "BY", "w_*", "GET", "#", "LIMIT", "0", "10", "ALPHA", "STORE", "d"}),
            Positions({1, 11}));
  EXPECT_EQ(Keys({"sort", "k", "store", "d"}), Positions({1, 3}));
  // The last STORE wins, as in SORT itself.
  EXPECT_EQ(Keys({"sort", "k", "STORE", "a", "STORE", "b"}), Positions({1, 5}));
  // STORE as the last argument has no key.
  EXPECT_EQ(Keys({"sort", "k", "STORE"}), Positions({1}));
  // Option arguments are skipped: "store" after GET, BY or LIMIT is an argument, not STORE.
  EXPECT_EQ(Keys({"sort", "k", "GET", "store", "x"}), Positions({1}));
  EXPECT_EQ(Keys({"sort", "k", "BY", "store", "x"}), Positions({1}));
  EXPECT_EQ(Keys({"sort", "k", "LIMIT", "0", "store", "x"}), Positions({1}));
  // The argument after STORE is read as an option too (Redis's scan does not skip it).
  EXPECT_EQ(Keys({"sort", "k", "STORE", "STORE", "d"}), Positions({1, 4}));
  EXPECT_EQ(Keys({"sort", "k", "STORE", "limit", "1", "2"}), Positions({1, 3}));
  // SORT_RO has no STORE.
  EXPECT_EQ(Keys({"sort_ro", "k", "STORE", "d"}), Positions({1}));
  EXPECT_EQ(Keys({"sort_ro", "k"}), Positions({1}));
}

TEST(CommandKeysTest, Migrate) {
  EXPECT_EQ(Keys({"migrate", "h", "6379", "k", "0", "1000"}), Positions({3}));
  EXPECT_EQ(Keys({"migrate", "h", "6379", "k", "0", "1000", "COPY", "REPLACE"}), Positions({3}));
  EXPECT_EQ(Keys({"migrate", "h", "6379", "", "0", "1000", "KEYS", "a", "b"}), Positions({7, 8}));
  EXPECT_EQ(Keys({"migrate", "h", "6379", "", "0", "1000", "COPY", "AUTH", "pw", "AUTH2", "u", "pw",
                  "keys", "a"}),
            Positions({13}));
  // AUTH's password may be "KEYS".
  EXPECT_EQ(Keys({"migrate", "h", "6379", "", "0", "1000", "AUTH", "keys", "KEYS", "a"}),
            Positions({9}));
  // The empty key argument without KEYS is a key (the empty key, slot 0).
  EXPECT_EQ(Keys({"migrate", "h", "6379", "", "0", "1000"}), Positions({3}));
  // KEYS with nothing after it: no key (MIGRATE answers NOKEY).
  EXPECT_EQ(Keys({"migrate", "h", "6379", "", "0", "1000", "KEYS"}), Positions{});
  // KEYS with a key argument is a syntax error.
  EXPECT_EQ(Keys({"migrate", "h", "6379", "k", "0", "1000", "KEYS", "a"}), kNone);
}

TEST(CommandKeysTest, Georadius) {
  EXPECT_EQ(Keys({"georadius", "k", "15", "37", "200", "km"}), Positions({1}));
  EXPECT_EQ(Keys({"georadius", "k", "15", "37", "200", "km", "WITHDIST", "STORE", "d"}),
            Positions({1, 8}));
  EXPECT_EQ(Keys({"georadius", "k", "15", "37", "200", "km", "storedist", "d"}), Positions({1, 7}));
  // Both: GEORADIUS stores once, into the last one named. COMMAND GETKEYS lists both (its key
  // specs), but a one-node cluster runs "georadius {k}x 0 0 1 m store a storedist {k}b": the
  // cluster routes by the key and the last destination only.
  EXPECT_EQ(Keys({"georadius", "k", "0", "0", "1", "m", "STORE", "a", "STOREDIST", "b"}),
            Positions({1, 9}));
  EXPECT_EQ(Keys({"georadius", "k", "0", "0", "1", "m", "STORE"}), Positions({1}));
  EXPECT_EQ(Keys({"georadiusbymember", "k", "m", "100", "km", "STORE", "d"}), Positions({1, 6}));
  EXPECT_EQ(Keys({"georadiusbymember", "k", "m", "100", "km"}), Positions({1}));
  // The read-only variants have no destination.
  EXPECT_EQ(Keys({"georadius_ro", "k", "0", "0", "1", "m", "STORE", "d"}), Positions({1}));
}

TEST(CommandKeysTest, Xread) {
  EXPECT_EQ(Keys({"xread", "STREAMS", "a", "0"}), Positions({2}));
  EXPECT_EQ(Keys({"xread", "streams", "a", "b", "0", "$"}), Positions({2, 3}));
  EXPECT_EQ(Keys({"xread", "COUNT", "1", "BLOCK", "0", "STREAMS", "a", "0"}), Positions({6}));
  EXPECT_EQ(Keys({"xreadgroup", "GROUP", "g", "c", "COUNT", "1", "NOACK", "STREAMS", "a", ">"}),
            Positions({8}));
  // A group, consumer, option value or key may be called "streams".
  EXPECT_EQ(Keys({"xreadgroup", "GROUP", "streams", "streams", "STREAMS", "streams", ">"}),
            Positions({5}));
  EXPECT_EQ(Keys({"xread", "COUNT", "streams", "STREAMS", "a", "0"}), Positions({4}));
  // Unbalanced keys and IDs, no STREAMS, an unknown option: no keys. (COMMAND GETKEYS, from key
  // specs, finds "a" in the first; Redis Cluster finds nothing and XREAD answers its error.)
  EXPECT_EQ(Keys({"xread", "STREAMS", "a", "b", "0"}), kNone);
  EXPECT_EQ(Keys({"xread", "COUNT", "1", "a", "0"}), kNone);
  EXPECT_EQ(Keys({"xread", "FOO", "STREAMS", "a", "0"}), kNone);
  EXPECT_EQ(Keys({"xread", "COUNT", "1", "STREAMS"}), kNone);
}

// One call per movable-keys row: every such row of the table has a rule, and a table
// regenerated with a new movable-keys command fails here until the rule is written.
TEST(CommandKeysTest, EveryMovableCommandHasARule) {
  const std::map<std::string_view, std::pair<std::vector<std::string_view>, Positions>> cases = {
      {"blmpop", {{"blmpop", "0", "1", "a", "LEFT"}, {3}}},
      {"bzmpop", {{"bzmpop", "0", "1", "a", "MIN"}, {3}}},
      {"eval", {{"eval", "s", "1", "a"}, {3}}},
      {"eval_ro", {{"eval_ro", "s", "1", "a"}, {3}}},
      {"evalsha", {{"evalsha", "s", "1", "a"}, {3}}},
      {"evalsha_ro", {{"evalsha_ro", "s", "1", "a"}, {3}}},
      {"fcall", {{"fcall", "f", "1", "a"}, {3}}},
      {"fcall_ro", {{"fcall_ro", "f", "1", "a"}, {3}}},
      {"georadius", {{"georadius", "k", "0", "0", "1", "m", "STORE", "d"}, {1, 7}}},
      {"georadiusbymember", {{"georadiusbymember", "k", "m", "1", "m", "STORE", "d"}, {1, 6}}},
      {"lmpop", {{"lmpop", "1", "a", "LEFT"}, {2}}},
      {"migrate", {{"migrate", "h", "1", "", "0", "0", "KEYS", "a"}, {7}}},
      {"sintercard", {{"sintercard", "1", "a"}, {2}}},
      {"sort", {{"sort", "k", "STORE", "d"}, {1, 3}}},
      {"sort_ro", {{"sort_ro", "k"}, {1}}},
      {"xread", {{"xread", "STREAMS", "a", "0"}, {2}}},
      {"xreadgroup", {{"xreadgroup", "GROUP", "g", "c", "STREAMS", "a", ">"}, {5}}},
      {"zdiff", {{"zdiff", "1", "a"}, {2}}},
      {"zdiffstore", {{"zdiffstore", "d", "1", "a"}, {1, 3}}},
      {"zinter", {{"zinter", "1", "a"}, {2}}},
      {"zintercard", {{"zintercard", "1", "a"}, {2}}},
      {"zinterstore", {{"zinterstore", "d", "1", "a"}, {1, 3}}},
      {"zmpop", {{"zmpop", "1", "a", "MIN"}, {2}}},
      {"zunion", {{"zunion", "1", "a"}, {2}}},
      {"zunionstore", {{"zunionstore", "d", "1", "a"}, {1, 3}}},
  };
  size_t movable = 0;
  for (const CommandInfo* info : AllCommands()) {
    if ((info->flags & kFlagMovableKeys) == 0) continue;
    ++movable;
    const auto it = cases.find(info->name);
    ASSERT_NE(it, cases.end()) << info->name << " has movable keys and no case here";
    EXPECT_EQ(Keys(it->second.first), it->second.second) << info->name;
  }
  EXPECT_EQ(movable, cases.size());
}

// Each first/last/step row finds its keys inside the shortest arguments its arity allows (one
// more for SUNSUBSCRIBE, which may have no channel), at or after first_key.
TEST(CommandKeysTest, EveryRangeFitsItsArity) {
  for (const CommandInfo* info : AllCommands()) {
    if ((info->flags & kFlagMovableKeys) != 0 || info->first_key == 0) continue;
    const int arity = info->arity < 0 ? -info->arity : info->arity;
    const size_t argc = static_cast<size_t>(std::max(arity, info->first_key + 1));
    std::vector<std::string> storage(argc, "x");
    std::vector<std::string_view> args(storage.begin(), storage.end());
    Positions positions;
    EXPECT_TRUE(CommandKeys(*info, args, &positions)) << info->name;
    ASSERT_FALSE(positions.empty()) << info->name;
    EXPECT_EQ(positions.front(), static_cast<size_t>(info->first_key)) << info->name;
    EXPECT_LT(positions.back(), argc) << info->name;
  }
}

}  // namespace
}  // namespace bloomproxy::protocol
