// What a sharding proxy forwards (protocol/sharding_proxy.h), checked against the proxies' own
// rules written down here independently of the product's table:
//  - twemproxy (nutcracker 0.5.0, src/proto/nc_redis.c): the commands its request parser knows,
//    sorted by the functions redis_argz, redis_arg0 .. redis_arg3, redis_argn, redis_argx,
//    redis_argkvx, redis_argeval and redis_nokey, and the argument counts its state machine
//    accepts for each (redis_parse_req); a key of kShardingProxyMaxKey bytes or more is refused
//    wherever the parser reads a key (SW_KEY_LEN);
//  - Codis 3 (pkg/proxy/mapper.go): the commands flagged FlagNotAllow; everything else, known to
//    it or not, is forwarded whatever its arguments.
// bloomproxy sends an upstream of kind sharding-proxy only what both forward, and answers the
// rest with an error naming the command and why.
#include "protocol/sharding_proxy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/command_table.h"

namespace bloomproxy::protocol {
namespace {

// --- the rules of nc_redis.c -------------------------------------------------------------------

// The parser's categories, named after the function that lists each.
enum class Cat { kArgz, kArg0, kArg1, kArg2, kArg3, kArgn, kArgx, kArgkvx, kArgeval, kNokey };

// The commands each function of nc_redis.c lists (its MSG_REQ_REDIS_<NAME> cases, lower-cased;
// the parser maps each name to the type of the same name).
const std::map<Cat, std::vector<std::string_view>>& NcRedisCategories() {
  static const std::map<Cat, std::vector<std::string_view>> cats = {
      {Cat::kArgz, {"ping", "quit", "command"}},
      {Cat::kArg0,
       {"persist", "pttl", "ttl", "type", "dump", "decr", "get", "getdel", "incr", "strlen",
        "hgetall", "hkeys", "hlen", "hvals", "llen", "scard", "smembers", "zcard", "auth"}},
      {Cat::kArg1,
       {"expire",  "expireat", "pexpire",   "pexpireat",   "move",  "append",   "decrby",
        "getbit",  "getset",   "incrby",    "incrbyfloat", "setnx", "hexists",  "hget",
        "hstrlen", "lindex",   "rpoplpush", "sismember",   "zrank", "zrevrank", "zscore"}},
      {Cat::kArg2,
       {"getrange", "psetex", "setbit", "setex", "setrange", "hincrby", "hincrbyfloat", "hsetnx",
        "lrange", "lrem", "lset", "ltrim", "smove", "zcount", "zlexcount", "zincrby",
        "zremrangebylex", "zremrangebyrank", "zremrangebyscore"}},
      {Cat::kArg3, {"linsert", "lmove"}},
      {Cat::kArgn,
       {"sort",
        "copy",
        "bitcount",
        "bitpos",
        "bitfield",
        "exists",
        "getex",
        "set",
        "hdel",
        "hmget",
        "hmset",
        "hscan",
        "hset",
        "hrandfield",
        "lpush",
        "lpushx",
        "rpush",
        "rpushx",
        "lpop",
        "rpop",
        "lpos",
        "sadd",
        "sdiff",
        "sdiffstore",
        "sinter",
        "sinterstore",
        "srem",
        "sunion",
        "sunionstore",
        "srandmember",
        "sscan",
        "spop",
        "smismember",
        "pfadd",
        "pfmerge",
        "pfcount",
        "zadd",
        "zdiff",
        "zdiffstore",
        "zinter",
        "zinterstore",
        "zmscore",
        "zpopmax",
        "zpopmin",
        "zrandmember",
        "zrange",
        "zrangebylex",
        "zrangebyscore",
        "zrangestore",
        "zrem",
        "zrevrange",
        "zrevrangebylex",
        "zrevrangebyscore",
        "zscan",
        "zunion",
        "zunionstore",
        "geodist",
        "geopos",
        "geohash",
        "geoadd",
        "georadius",
        "georadiusbymember",
        "geosearch",
        "geosearchstore",
        "restore"}},
      {Cat::kArgx, {"mget", "del", "unlink", "touch"}},
      {Cat::kArgkvx, {"mset"}},
      {Cat::kArgeval, {"eval", "evalsha"}},
      {Cat::kNokey, {"lolwut"}},
  };
  return cats;
}

const std::map<std::string, Cat>& NcRedisCommands() {
  static const std::map<std::string, Cat> commands = [] {
    std::map<std::string, Cat> out;
    for (const auto& [cat, names] : NcRedisCategories()) {
      for (std::string_view n : names) EXPECT_TRUE(out.emplace(std::string(n), cat).second) << n;
    }
    return out;
  }();
  return commands;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// Whether a key is read in SW_KEY_LEN and refused there: rlen >= mbuf_data_size(). bloomproxy
// takes kShardingProxyMaxKey as the bound (below the default mbuf's 16 KB less its header).
bool KeyTooLong(std::string_view key) { return key.size() >= kShardingProxyMaxKey; }

// EVAL's numkeys as redis_parse_req's SW_ARG2 reads it: at least one byte, digits only,
// accumulated in a uint32_t, not 0.
bool NcEvalNumkeysOk(std::string_view numkeys) {
  if (numkeys.empty()) return false;
  uint32_t n = 0;
  for (char c : numkeys) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    n = n * 10 + static_cast<uint32_t>(c - '0');
  }
  return n != 0;
}

// redis_parse_req's verdict on a request of args.size() (narg) arguments, name first.
bool NcRedisAccepts(const std::vector<std::string_view>& args) {
  if (args.empty()) return false;  // "*0": narg 0 is an error
  const std::string name = Lower(args[0]);
  const auto it = NcRedisCommands().find(name);
  if (it == NcRedisCommands().end()) return false;  // MSG_UNKNOWN
  // The parser marks MOVE noforward, as PING and AUTH, which twemproxy answers itself; but
  // redis_reply has no answer for MOVE (NOT_REACHED): the connection is closed instead.
  if (name == "move") return false;
  const size_t n = args.size();
  switch (it->second) {
    case Cat::kArgz:  // SW_REQ_TYPE_LF: narg != 1 is an error
      return n == 1;
    case Cat::kNokey:  // any number of SW_ARGN arguments
      return true;
    default:
      break;
  }
  if (n == 1) return false;  // SW_REQ_TYPE_LF: a key is needed
  switch (it->second) {
    case Cat::kArg0:  // SW_KEY_LF: rnarg != 0 is an error
      return n == 2 && !KeyTooLong(args[1]);
    case Cat::kArg1:
      return n == 3 && !KeyTooLong(args[1]);
    case Cat::kArg2:
      return n == 4 && !KeyTooLong(args[1]);
    case Cat::kArg3:
      return n == 5 && !KeyTooLong(args[1]);
    case Cat::kArgn:  // the key, then SW_ARGN arguments (not length-checked)
      return !KeyTooLong(args[1]);
    case Cat::kArgx:  // SW_KEY_LEN for every argument
      return std::none_of(args.begin() + 1, args.end(), KeyTooLong);
    case Cat::kArgkvx:  // SW_KEY_LF: narg % 2 == 0 is an error; keys at 1, 3, 5, ...
      if (n % 2 == 0) return false;
      for (size_t i = 1; i < n; i += 2) {
        if (KeyTooLong(args[i])) return false;
      }
      return true;
    case Cat::kArgeval:
      // SW_ARG1_LF (after the script): rnarg < 2 is an error; SW_ARG2: numkeys; then one key
      // (SW_KEY_LEN) and the rest as SW_ARGN arguments.
      if (n < 4) return false;
      if (!NcEvalNumkeysOk(args[2])) return false;
      return !KeyTooLong(args[3]);
    default:
      return false;
  }
}

// The commands Codis 3 flags FlagNotAllow (pkg/proxy/mapper.go).
const std::vector<std::string_view> kCodisNotAllowed = {
    "BGREWRITEAOF",
    "BGSAVE",
    "BITOP",
    "BLPOP",
    "BRPOP",
    "BRPOPLPUSH",
    "CLIENT",
    "CONFIG",
    "DBSIZE",
    "DEBUG",
    "DISCARD",
    "EXEC",
    "FLUSHALL",
    "FLUSHDB",
    "KEYS",
    "LASTSAVE",
    "LATENCY",
    "MIGRATE",
    "MONITOR",
    "MOVE",
    "MSETNX",
    "MULTI",
    "OBJECT",
    "PSUBSCRIBE",
    "PSYNC",
    "PUBLISH",
    "PUNSUBSCRIBE",
    "RANDOMKEY",
    "RENAME",
    "RENAMENX",
    "REPLCONF",
    "RESTORE",
    "SAVE",
    "SCAN",
    "SCRIPT",
    "SHUTDOWN",
    "SLAVEOF",
    "SLOTSCHECK",
    "SLOTSDEL",
    "SLOTSMGRTONE",
    "SLOTSMGRTSLOT",
    "SLOTSMGRTTAGONE",
    "SLOTSMGRTTAGSLOT",
    "SLOWLOG",
    "SUBSCRIBE",
    "SYNC",
    "TIME",
    "UNSUBSCRIBE",
    "UNWATCH",
    "WATCH",
};

bool CodisRefusesName(std::string_view name) {
  return std::find(kCodisNotAllowed.begin(), kCodisNotAllowed.end(), Upper(name)) !=
         kCodisNotAllowed.end();
}

// A request of `n` arguments (name included) for `name`: a short key, then small numbers (so
// that EVAL's numkeys, the third argument, is 1).
std::vector<std::string_view> Request(std::string_view name, size_t n) {
  static const std::string_view kFill[] = {"key", "1", "k2", "3", "4", "5", "6", "7", "8", "9"};
  std::vector<std::string_view> args = {name};
  for (size_t i = 1; i < n; ++i) args.push_back(kFill[(i - 1) % 10]);
  return args;
}

std::string Refusal(std::string_view what) {
  return "-ERR bloomproxy: " + std::string(what) +
         " is not supported behind a sharding proxy (upstream-kind sharding-proxy)\r\n";
}

// Every top-level command of Redis 7.0's table, lower case.
std::vector<std::string> RedisCommandNames() {
  std::vector<std::string> names;
  for (const CommandInfo* info : AllCommands()) {
    if (info->name.find('|') == std::string_view::npos) names.emplace_back(info->name);
  }
  return names;
}

// --- twemproxy -------------------------------------------------------------------------------

TEST(ShardingProxyTwemproxyTest, TheReferenceTableIsNcRedisWhole) {
  // 137 names across the ten functions, each in exactly one (checked while building).
  EXPECT_EQ(NcRedisCommands().size(), 137u);
}

TEST(ShardingProxyTwemproxyTest, EveryCountOfEveryKnownCommandAsTheParserDecides) {
  for (const auto& [name, cat] : NcRedisCommands()) {
    bool some_accepted = false, some_refused = false;
    for (size_t n = 1; n <= 9; ++n) {
      const std::vector<std::string_view> args = Request(name, n);
      const bool expected = NcRedisAccepts(args);
      EXPECT_EQ(Forwards(ShardingProxy::kTwemproxy, args), expected)
          << name << " with " << n - 1 << " arguments";
      (expected ? some_accepted : some_refused) = true;
    }
    EXPECT_EQ(some_accepted, name != "move") << name;
    if (cat != Cat::kNokey) {
      EXPECT_TRUE(some_refused) << name;
    }
  }
}

TEST(ShardingProxyTwemproxyTest, RightAndWrongCountPerCategory) {
  struct Shape {
    Cat cat;
    std::vector<size_t> right;  // argument counts (without the name) accepted
    std::vector<size_t> wrong;  // and refused
  };
  const std::vector<Shape> shapes = {
      {Cat::kArgz, {0}, {1, 2}},
      {Cat::kArg0, {1}, {0, 2, 3}},
      {Cat::kArg1, {2}, {0, 1, 3, 4}},
      {Cat::kArg2, {3}, {0, 1, 2, 4, 5}},
      {Cat::kArg3, {4}, {0, 1, 2, 3, 5, 6}},
      {Cat::kArgn, {1, 2, 3, 7}, {0}},
      {Cat::kArgx, {1, 2, 3, 7}, {0}},
      {Cat::kArgkvx, {2, 4, 6}, {0, 1, 3, 5}},
      {Cat::kArgeval, {3, 4, 7}, {0, 1, 2}},
      {Cat::kNokey, {0, 1, 2, 5}, {}},
  };
  for (const Shape& s : shapes) {
    for (std::string_view name : NcRedisCategories().at(s.cat)) {
      if (name == "move") continue;  // never forwarded (below)
      for (size_t n : s.right) {
        EXPECT_TRUE(Forwards(ShardingProxy::kTwemproxy, Request(name, n + 1)))
            << name << " with " << n << " arguments";
      }
      for (size_t n : s.wrong) {
        EXPECT_FALSE(Forwards(ShardingProxy::kTwemproxy, Request(name, n + 1)))
            << name << " with " << n << " arguments";
        // twemproxy's reason comes first (RESTORE: Codis refuses it too).
        EXPECT_EQ(ShardingProxyRefusal(Request(name, n + 1)),
                  Refusal("'" + Upper(name) + "' with " + std::to_string(n) + " arguments"))
            << name << " with " << n << " arguments";
      }
    }
  }
}

TEST(ShardingProxyTwemproxyTest, CommandsTheParserDoesNotKnowAreRefused) {
  size_t unknown = 0;
  for (const std::string& name : RedisCommandNames()) {
    if (NcRedisCommands().count(name)) continue;
    ++unknown;
    for (size_t n = 1; n <= 5; ++n) {
      EXPECT_FALSE(Forwards(ShardingProxy::kTwemproxy, Request(name, n))) << name;
    }
    // (Redis's "host:" and "post" close the connection; the ':' is shown as '?', below.)
    if (name == "host:") continue;
    EXPECT_EQ(ShardingProxyRefusal(Request(name, 3)), Refusal("'" + Upper(name) + "'")) << name;
  }
  EXPECT_GT(unknown, 100u);
  for (std::string_view name :
       {"bitfield_ro", "pexpiretime", "expiretime", "eval_ro", "evalsha_ro", "fcall", "rename",
        "renamenx", "info", "select", "multi", "scan", "keys", "bf.add", "getsetx", ""}) {
    EXPECT_FALSE(Forwards(ShardingProxy::kTwemproxy, {name, "k", "v"})) << name;
  }
  EXPECT_FALSE(Forwards(ShardingProxy::kTwemproxy, {}));
}

TEST(ShardingProxyTwemproxyTest, NamesInAnyCase) {
  for (std::string_view name : {"get", "GET", "Get", "gEt"}) {
    EXPECT_TRUE(Forwards(ShardingProxy::kTwemproxy, {name, "k"})) << name;
    EXPECT_TRUE(ShardingProxyForwards({name, "k"})) << name;
    EXPECT_FALSE(ShardingProxyForwards({name, "k", "x"})) << name;
  }
  for (std::string_view name : {"zremrangebyscore", "ZREMRANGEBYSCORE", "ZRemRangeByScore"}) {
    EXPECT_TRUE(ShardingProxyForwards({name, "z", "0", "1"})) << name;
  }
  EXPECT_TRUE(ShardingProxyForwards({"EvAl", "return 1", "1", "k"}));
  EXPECT_TRUE(ShardingProxyForwards({"mSeT", "a", "1"}));
  // A name is a name: one byte more or less is another command.
  EXPECT_FALSE(ShardingProxyForwards({"gets", "k"}));
  EXPECT_FALSE(ShardingProxyForwards({"ge", "k"}));
  EXPECT_FALSE(ShardingProxyForwards({std::string_view("get\0", 4), "k"}));
}

TEST(ShardingProxyTwemproxyTest, CommandsTwemproxyAnswersItselfTakeNoArguments) {
  for (std::string_view name : {"PING", "QUIT", "COMMAND"}) {
    EXPECT_TRUE(ShardingProxyForwards({name})) << name;
    EXPECT_FALSE(ShardingProxyForwards({name, "x"})) << name;
  }
  EXPECT_EQ(ShardingProxyRefusal({"ping", "hello"}), Refusal("'PING' with 1 arguments"));
  EXPECT_EQ(ShardingProxyRefusal({"COMMAND", "COUNT"}), Refusal("'COMMAND' with 1 arguments"));
  // AUTH: the password only.
  EXPECT_TRUE(ShardingProxyForwards({"AUTH", "pw"}));
  EXPECT_EQ(ShardingProxyRefusal({"AUTH", "user", "pw"}), Refusal("'AUTH' with 2 arguments"));
  // LOLWUT: anything.
  EXPECT_TRUE(ShardingProxyForwards({"LOLWUT"}));
  EXPECT_TRUE(ShardingProxyForwards({"LOLWUT", "VERSION", "5", "1", "2"}));
}

TEST(ShardingProxyTwemproxyTest, CommandsWithOptionsTwemproxyDoesNotKnow) {
  // Redis 7's options on commands twemproxy knows with a fixed count.
  EXPECT_TRUE(ShardingProxyForwards({"EXPIRE", "k", "10"}));
  EXPECT_FALSE(ShardingProxyForwards({"EXPIRE", "k", "10", "NX"}));
  EXPECT_EQ(ShardingProxyRefusal({"EXPIRE", "k", "10", "NX"}),
            Refusal("'EXPIRE' with 3 arguments"));
  EXPECT_FALSE(ShardingProxyForwards({"PEXPIREAT", "k", "10", "GT"}));
  EXPECT_FALSE(ShardingProxyForwards({"ZRANK", "z", "m", "WITHSCORE"}));
  EXPECT_FALSE(ShardingProxyForwards({"GETRANGE", "k", "0"}));
  // SET and GETEX take any options (redis_argn).
  EXPECT_TRUE(ShardingProxyForwards({"SET", "k", "v", "NX", "PX", "100", "GET"}));
  EXPECT_TRUE(ShardingProxyForwards({"GETEX", "k", "PERSIST"}));
  EXPECT_TRUE(ShardingProxyForwards({"SET", "k"}));  // Redis's error, not twemproxy's
}

// --- EVAL ------------------------------------------------------------------------------------

TEST(ShardingProxyEvalTest, NumkeysAsTheParserReadsIt) {
  for (std::string_view eval : {"EVAL", "EVALSHA"}) {
    SCOPED_TRACE(std::string(eval));
    // Digits only, above 0.
    EXPECT_TRUE(ShardingProxyForwards({eval, "s", "1", "k"}));
    EXPECT_TRUE(ShardingProxyForwards({eval, "s", "2", "k", "m"}));
    EXPECT_TRUE(ShardingProxyForwards({eval, "s", "1", "k", "argv1", "argv2"}));
    // "01" is 1 to twemproxy (it accumulates digits), and forwarded: Redis then refuses it
    // ("value is not an integer").
    EXPECT_TRUE(NcRedisAccepts({eval, "s", "01", "k"}));
    EXPECT_TRUE(ShardingProxyForwards({eval, "s", "01", "k"}));
    EXPECT_TRUE(ShardingProxyForwards({eval, "s", "002", "k", "m"}));
    // No keys: refused whatever follows.
    for (std::string_view numkeys : {"0", "00", "", "-1", "+1", "1a", "a", " 1", "1 ", "0x1"}) {
      SCOPED_TRACE("numkeys '" + std::string(numkeys) + "'");
      EXPECT_FALSE(NcRedisAccepts({eval, "s", numkeys, "k"}));
      EXPECT_FALSE(Forwards(ShardingProxy::kTwemproxy, {eval, "s", numkeys, "k"}));
      EXPECT_FALSE(Forwards(ShardingProxy::kTwemproxy, {eval, "s", numkeys}));
      EXPECT_TRUE(Forwards(ShardingProxy::kCodis, {eval, "s", numkeys, "k"}));
      EXPECT_EQ(ShardingProxyRefusal({eval, "s", numkeys, "k"}),
                Refusal("'" + std::string(eval) + "' without keys"));
    }
    // Too few arguments for a key.
    EXPECT_FALSE(ShardingProxyForwards({eval}));
    EXPECT_FALSE(ShardingProxyForwards({eval, "s"}));
    EXPECT_FALSE(ShardingProxyForwards({eval, "s", "1"}));
    EXPECT_EQ(ShardingProxyRefusal({eval}),
              Refusal("'" + std::string(eval) + "' with 0 arguments"));
    EXPECT_EQ(ShardingProxyRefusal({eval, "s", "1"}),
              Refusal("'" + std::string(eval) + "' with 2 arguments"));
  }
  EXPECT_EQ(ShardingProxyRefusal({"EVAL", "return 1", "0"}), Refusal("'EVAL' without keys"));
  EXPECT_EQ(ShardingProxyRefusal({"eval", "return 1", "0"}), Refusal("'EVAL' without keys"));
}

TEST(ShardingProxyEvalTest, NumkeysAboveTheArgumentsIsRefused) {
  // twemproxy does not compare numkeys with the arguments: it forwards these, and Redis answers
  // "Number of keys can't be greater than number of args". bloomproxy refuses them itself.
  EXPECT_TRUE(NcRedisAccepts({"EVAL", "s", "2", "k"}));
  EXPECT_FALSE(ShardingProxyForwards({"EVAL", "s", "2", "k"}));
  EXPECT_EQ(ShardingProxyRefusal({"EVAL", "s", "2", "k"}), Refusal("'EVAL' with 3 arguments"));
  EXPECT_FALSE(ShardingProxyForwards({"EVALSHA", "s", "9", "a", "b", "c"}));
  EXPECT_EQ(ShardingProxyRefusal({"EVALSHA", "s", "9", "a", "b", "c"}),
            Refusal("'EVALSHA' with 5 arguments"));
  // Exactly as many keys as arguments is fine.
  EXPECT_TRUE(ShardingProxyForwards({"EVAL", "s", "3", "a", "b", "c"}));
}

// --- key lengths -----------------------------------------------------------------------------

TEST(ShardingProxyKeyLengthTest, FirstKeyOfEveryShape) {
  const std::string ok(kShardingProxyMaxKey - 1, 'k');
  const std::string long_key(kShardingProxyMaxKey, 'k');
  ASSERT_EQ(ok.size(), 15999u);
  ASSERT_EQ(long_key.size(), 16000u);
  const std::vector<std::vector<std::string_view>> shapes = {
      {"GET", "K"},
      {"EXPIRE", "K", "10"},
      {"GETRANGE", "K", "0", "1"},
      {"LINSERT", "K", "BEFORE", "p", "v"},
      {"SET", "K", "v"},
      {"BITFIELD", "K", "GET", "u1", "0"},
      {"HMGET", "K", "f1", "f2"},
      {"DEL", "K"},
      {"MSET", "K", "v"},
      {"EVAL", "s", "1", "K"},
  };
  for (std::vector<std::string_view> args : shapes) {
    const size_t at = args[0] == "EVAL" ? 3 : 1;
    SCOPED_TRACE(std::string(args[0]));
    args[at] = ok;
    EXPECT_TRUE(NcRedisAccepts(args));
    EXPECT_TRUE(ShardingProxyForwards(args));
    args[at] = long_key;
    EXPECT_FALSE(NcRedisAccepts(args));
    EXPECT_FALSE(Forwards(ShardingProxy::kTwemproxy, args));
    EXPECT_TRUE(Forwards(ShardingProxy::kCodis, args));
    EXPECT_EQ(ShardingProxyRefusal(args),
              Refusal("'" + std::string(args[0]) + "' with a key of 16000 bytes or more"));
  }
  // Only the key: long values and other arguments are fine.
  EXPECT_TRUE(ShardingProxyForwards({"SET", "k", long_key}));
  EXPECT_TRUE(ShardingProxyForwards({"HSET", "k", long_key, long_key}));
  EXPECT_TRUE(ShardingProxyForwards({"SETRANGE", "k", "0", long_key}));
  EXPECT_TRUE(ShardingProxyForwards({"EVAL", long_key, "1", "k", long_key}));
}

TEST(ShardingProxyKeyLengthTest, EveryKeyOfDelAndMset) {
  const std::string ok(kShardingProxyMaxKey - 1, 'k');
  const std::string long_key(kShardingProxyMaxKey, 'k');
  for (std::string_view cmd : {"DEL", "UNLINK", "TOUCH", "MGET"}) {
    for (size_t at = 1; at <= 3; ++at) {
      std::vector<std::string_view> args = {cmd, "a", "b", "c"};
      args[at] = ok;
      EXPECT_TRUE(ShardingProxyForwards(args)) << cmd << " key " << at;
      args[at] = long_key;
      EXPECT_FALSE(ShardingProxyForwards(args)) << cmd << " key " << at;
      EXPECT_EQ(ShardingProxyRefusal(args),
                Refusal("'" + std::string(cmd) + "' with a key of 16000 bytes or more"));
    }
  }
  for (size_t at : {1, 3, 5}) {
    std::vector<std::string_view> args = {"MSET", "a", "1", "b", "2", "c", "3"};
    args[at] = ok;
    EXPECT_TRUE(ShardingProxyForwards(args)) << at;
    args[at] = long_key;
    EXPECT_FALSE(ShardingProxyForwards(args)) << at;
    EXPECT_EQ(ShardingProxyRefusal(args), Refusal("'MSET' with a key of 16000 bytes or more"));
    // The value after it is not a key.
    args[at] = "k";
    args[at + 1] = long_key;
    EXPECT_TRUE(ShardingProxyForwards(args)) << at;
  }
  // EXISTS is a one-key command to twemproxy (redis_argn): only its first key is read as one.
  EXPECT_TRUE(NcRedisAccepts({"EXISTS", "a", long_key}));
  EXPECT_TRUE(ShardingProxyForwards({"EXISTS", "a", long_key}));
  EXPECT_FALSE(ShardingProxyForwards({"EXISTS", long_key, "a"}));
}

TEST(ShardingProxyKeyLengthTest, EveryKeyOfEval) {
  const std::string ok(kShardingProxyMaxKey - 1, 'k');
  const std::string long_key(kShardingProxyMaxKey, 'k');
  for (size_t at = 3; at <= 5; ++at) {
    std::vector<std::string_view> args = {"EVAL", "s", "3", "a", "b", "c", "argv"};
    args[at] = ok;
    EXPECT_TRUE(ShardingProxyForwards(args)) << at;
    args[at] = long_key;
    // twemproxy reads only EVAL's first key as a key (the others as plain arguments);
    // bloomproxy keeps every key of EVAL below the bound.
    EXPECT_EQ(NcRedisAccepts(args), at != 3) << at;
    EXPECT_FALSE(ShardingProxyForwards(args)) << at;
    EXPECT_EQ(ShardingProxyRefusal(args), Refusal("'EVAL' with a key of 16000 bytes or more"));
  }
  // ARGV is not keys.
  EXPECT_TRUE(ShardingProxyForwards({"EVAL", "s", "1", "a", long_key, long_key}));
  EXPECT_TRUE(ShardingProxyForwards({"EVALSHA", "s", "2", "a", ok, long_key}));
}

// --- Codis -----------------------------------------------------------------------------------

TEST(ShardingProxyCodisTest, NotAllowedCommandsAreRefusedInAnyCase) {
  for (std::string_view name : kCodisNotAllowed) {
    EXPECT_FALSE(Forwards(ShardingProxy::kCodis, {name})) << name;
    EXPECT_FALSE(Forwards(ShardingProxy::kCodis, {name, "a", "b"})) << name;
    EXPECT_FALSE(Forwards(ShardingProxy::kCodis, {Lower(name), "a", "b"})) << name;
    std::string mixed = Lower(name);
    mixed[0] = static_cast<char>(std::toupper(mixed[0]));
    EXPECT_FALSE(Forwards(ShardingProxy::kCodis, {mixed, "a"})) << name;
    EXPECT_FALSE(ShardingProxyForwards({name, "a", "b"})) << name;
    EXPECT_EQ(ShardingProxyRefusal({Lower(name), "a", "b"}), Refusal("'" + std::string(name) + "'"))
        << name;
  }
}

TEST(ShardingProxyCodisTest, EverythingElseIsForwardedWhateverItsArguments) {
  for (std::string_view name :
       {"UNLINK", "BITFIELD", "GETEX", "GET", "EVAL", "EXPIRE", "BITFIELD_RO", "PEXPIRETIME",
        "EVAL_RO", "INFO", "SELECT", "NOSUCHCOMMAND", "BF.ADD", "x"}) {
    EXPECT_TRUE(Forwards(ShardingProxy::kCodis, {name})) << name;
    EXPECT_TRUE(Forwards(ShardingProxy::kCodis, {name, "k", "10", "NX", "more"})) << name;
  }
  size_t refused = 0;
  for (const std::string& name : RedisCommandNames()) {
    const bool not_allowed = CodisRefusesName(name);
    refused += not_allowed ? 1 : 0;
    EXPECT_EQ(Forwards(ShardingProxy::kCodis, {name, "k", "v"}), !not_allowed) << name;
  }
  // The list's names that Redis 7.0 has (the SLOTS* commands and SLAVEOF's old spelling aside).
  EXPECT_GE(refused, 40u);
  EXPECT_FALSE(Forwards(ShardingProxy::kCodis, {}));
}

// --- both ------------------------------------------------------------------------------------

TEST(ShardingProxyBothTest, WhatBothForward) {
  const std::vector<std::string> redis = RedisCommandNames();
  std::set<std::string> names(redis.begin(), redis.end());
  for (const auto& [name, cat] : NcRedisCommands()) names.insert(name);
  for (std::string_view n : kCodisNotAllowed) names.insert(Lower(n));
  for (const std::string& name : names) {
    for (size_t n = 1; n <= 6; ++n) {
      const std::vector<std::string_view> args = Request(name, n);
      EXPECT_EQ(ShardingProxyForwards(args), NcRedisAccepts(args) && !CodisRefusesName(name))
          << name << " with " << n - 1 << " arguments";
      EXPECT_EQ(ShardingProxyForwards(args),
                Forwards(ShardingProxy::kTwemproxy, args) && Forwards(ShardingProxy::kCodis, args))
          << name;
    }
  }
  EXPECT_FALSE(ShardingProxyForwards({}));
}

TEST(ShardingProxyBothTest, RestoreForwardedByTwemproxyOnlyAndMoveByNeither) {
  EXPECT_TRUE(Forwards(ShardingProxy::kTwemproxy, {"RESTORE", "k", "0", "payload"}));
  EXPECT_FALSE(Forwards(ShardingProxy::kCodis, {"RESTORE", "k", "0", "payload"}));
  EXPECT_FALSE(ShardingProxyForwards({"RESTORE", "k", "0", "payload"}));
  EXPECT_EQ(ShardingProxyRefusal({"RESTORE", "k", "0", "payload"}), Refusal("'RESTORE'"));
  // RESTORE with a count twemproxy refuses: the count is the reason given.
  EXPECT_EQ(ShardingProxyRefusal({"restore"}), Refusal("'RESTORE' with 0 arguments"));
  // twemproxy's parser knows MOVE (redis_arg1) but does not forward it, and Codis refuses it.
  for (size_t n = 1; n <= 4; ++n) {
    const std::vector<std::string_view> args = Request("MOVE", n);
    EXPECT_FALSE(Forwards(ShardingProxy::kTwemproxy, args)) << n;
    EXPECT_FALSE(Forwards(ShardingProxy::kCodis, args)) << n;
    EXPECT_FALSE(ShardingProxyForwards(args)) << n;
  }
  EXPECT_EQ(ShardingProxyRefusal({"move", "k", "1"}), Refusal("'MOVE'"));
}

TEST(ShardingProxyBothTest, WhatFilterPlansAndKeyScriptsSend) {
  const std::string_view zero("\0", 1);
  const std::vector<std::vector<std::string_view>> sent = {
      {"BITFIELD", "{f}:bf:0123456789abcdef:0.0", "GET", "u1", "17", "GET", "u1", "1151"},
      {"BITFIELD", "{f}:bf:0123456789abcdef:0.0", "SET", "u1", "17", "1"},
      {"STRLEN", "{f}:bf:0123456789abcdef:0.0"},
      {"INCRBY", "{f}:bf:0123456789abcdef:0:n", "3"},
      {"DECRBY", "{f}:bf:0123456789abcdef:0:n", "3"},
      {"SETRANGE", "{f}:bf:0123456789abcdef:0.0", "143", zero},
      {"GETRANGE", "{f}:bf:0123456789abcdef:0.0", "0", "143"},
      {"HMGET", "f", "bloomproxy", "id", "l1"},
      {"HGETALL", "f"},
      {"HSETNX", "f", "l1", "288 2304 200 7 0 0.005 9.58"},
      {"TYPE", "f"},
      {"MGET", "{f}:bf:0123456789abcdef:0:n", "{f}:bf:0123456789abcdef:1:n"},
      {"UNLINK", "{f}:bf:0123456789abcdef:0.0", "{f}:bf:0123456789abcdef:0:n"},
      {"UNLINK", "{f}:bf:0123456789abcdef:0:n"},
      {"SET", "{f}:bf:0123456789abcdef:0:n", "0", "NX"},
      {"SET", "{f}:bf:m:f", "1"},
      {"GET", "{f}:bf:0123456789abcdef:1:n"},
      {"PEXPIREAT", "{f}:bf:0123456789abcdef:1.0", "4102444800000"},
      {"EVAL", "return 1", "1", "f", "bloomproxy", "1", "id", "x"},
      {"EVAL", "return 1", "1", "{f}:bf:0123456789abcdef:1.0", "287", zero},
      {"EVAL", "return 1", "1", "f"},
      {"EVAL", "return 1", "2", "f", "{f}:bf:m:f"},
      {"EVAL", "return 1", "2", "a", "b", "DEL", "{a}", "{b}"},
  };
  for (const auto& args : sent) {
    EXPECT_TRUE(Forwards(ShardingProxy::kTwemproxy, args)) << args[0];
    EXPECT_TRUE(Forwards(ShardingProxy::kCodis, args)) << args[0];
    EXPECT_TRUE(ShardingProxyForwards(args)) << args[0];
    EXPECT_TRUE(NcRedisAccepts(args)) << args[0];
  }
  // What they send in front of Redis instead, which a sharding proxy refuses.
  EXPECT_FALSE(ShardingProxyForwards({"BITFIELD_RO", "k", "GET", "u1", "0"}));
  EXPECT_FALSE(ShardingProxyForwards({"RENAMENX", "tmp", "f"}));
  EXPECT_FALSE(ShardingProxyForwards({"PEXPIRETIME", "f"}));
  EXPECT_FALSE(ShardingProxyForwards({"EVAL_RO", "return 1", "2", "f", "{f}:bf:m:f"}));
}

// --- the refusal -----------------------------------------------------------------------------

TEST(ShardingProxyRefusalTest, EachReason) {
  EXPECT_EQ(ShardingProxyRefusal({"RENAME", "a", "b"}),
            "-ERR bloomproxy: 'RENAME' is not supported behind a sharding proxy (upstream-kind "
            "sharding-proxy)\r\n");
  EXPECT_EQ(ShardingProxyRefusal({"eval", "return 1", "0"}),
            "-ERR bloomproxy: 'EVAL' without keys is not supported behind a sharding proxy "
            "(upstream-kind sharding-proxy)\r\n");
  EXPECT_EQ(ShardingProxyRefusal({"expire", "k", "10", "NX"}),
            "-ERR bloomproxy: 'EXPIRE' with 3 arguments is not supported behind a sharding proxy "
            "(upstream-kind sharding-proxy)\r\n");
  EXPECT_EQ(ShardingProxyRefusal({"set", std::string(16000, 'k'), "v"}),
            "-ERR bloomproxy: 'SET' with a key of 16000 bytes or more is not supported behind a "
            "sharding proxy (upstream-kind sharding-proxy)\r\n");
  EXPECT_EQ(ShardingProxyRefusal({"GET"}), Refusal("'GET' with 0 arguments"));
  EXPECT_EQ(ShardingProxyRefusal({"MSET", "a"}), Refusal("'MSET' with 1 arguments"));
  EXPECT_EQ(ShardingProxyRefusal({"MSET", "a", "1", "b"}), Refusal("'MSET' with 3 arguments"));
  EXPECT_EQ(ShardingProxyRefusal({"INFO"}), Refusal("'INFO'"));
  EXPECT_EQ(ShardingProxyRefusal({"bitfield_ro", "k"}), Refusal("'BITFIELD_RO'"));
  EXPECT_EQ(ShardingProxyRefusal({}), Refusal("''"));
}

TEST(ShardingProxyRefusalTest, NamesWithOddBytesAreShownSafely) {
  EXPECT_EQ(ShardingProxyRefusal({"ge\r\nt", "k"}), Refusal("'GE??T'"));
  EXPECT_EQ(ShardingProxyRefusal({std::string_view("a\0b", 3)}), Refusal("'A?B'"));
  EXPECT_EQ(ShardingProxyRefusal({"it's", "k"}), Refusal("'IT?S'"));
  EXPECT_EQ(ShardingProxyRefusal({"\xc3\xa9t\xff"}), Refusal("'??T?'"));
  EXPECT_EQ(ShardingProxyRefusal({"a b\tc"}), Refusal("'A?B?C'"));
  EXPECT_EQ(ShardingProxyRefusal({"host:", "x"}), Refusal("'HOST?'"));
  EXPECT_EQ(ShardingProxyRefusal({"bf.x_y-z|w"}), Refusal("'BF.X_Y-Z|W'"));
  // At most 64 bytes of the name.
  EXPECT_EQ(ShardingProxyRefusal({std::string(1000, 'q')}),
            Refusal("'" + std::string(64, 'Q') + "'"));
  // Every refusal is one error line.
  for (std::string_view name : {"x\r\ny", "\r\n", "\n", "'", "\x7f"}) {
    const std::string r = ShardingProxyRefusal({name, "k"});
    EXPECT_EQ(r.find_first_of("\r\n"), r.size() - 2) << r;
    EXPECT_EQ(r.rfind("-ERR bloomproxy: '", 0), 0u) << r;
  }
}

}  // namespace
}  // namespace bloomproxy::protocol
