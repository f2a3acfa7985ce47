#include "protocol/sharding_proxy.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace bloomproxy::protocol {
namespace {

// twemproxy's request parser (src/proto/nc_redis.c) sorts the commands it knows by where their
// key is and how many arguments follow it, and closes the connection on any other count.
enum class Shape : uint8_t {
  kKey,      // key only (redis_arg0)
  kKey1,     // key and exactly 1 argument (redis_arg1)
  kKey2,     // key and exactly 2 (redis_arg2)
  kKey3,     // key and exactly 3 (redis_arg3)
  kKeyN,     // key and any number (redis_argn)
  kKeys,     // one or more keys (redis_argx)
  kPairs,    // key value pairs (redis_argkvx)
  kEval,     // script numkeys key ..., numkeys digits only and > 0 (redis_argeval)
  kNoArgs,   // no argument at all (redis_argz)
  kAnyArgs,  // no key, any arguments (redis_nokey)
};

struct Known {
  std::string_view name;  // lower case
  Shape shape;
};

// nutcracker 0.5.0, sorted by name. (Its parser also knows MOVE, but marks it not to be
// forwarded: the connection is closed.)
constexpr std::array kTwemproxy = {
    Known{"append", Shape::kKey1},
    Known{"auth", Shape::kKey},
    Known{"bitcount", Shape::kKeyN},
    Known{"bitfield", Shape::kKeyN},
    Known{"bitpos", Shape::kKeyN},
    Known{"command", Shape::kNoArgs},
    Known{"copy", Shape::kKeyN},
    Known{"decr", Shape::kKey},
    Known{"decrby", Shape::kKey1},
    Known{"del", Shape::kKeys},
    Known{"dump", Shape::kKey},
    Known{"eval", Shape::kEval},
    Known{"evalsha", Shape::kEval},
    Known{"exists", Shape::kKeyN},
    Known{"expire", Shape::kKey1},
    Known{"expireat", Shape::kKey1},
    Known{"geoadd", Shape::kKeyN},
    Known{"geodist", Shape::kKeyN},
    Known{"geohash", Shape::kKeyN},
    Known{"geopos", Shape::kKeyN},
    Known{"georadius", Shape::kKeyN},
    Known{"georadiusbymember", Shape::kKeyN},
    Known{"geosearch", Shape::kKeyN},
    Known{"geosearchstore", Shape::kKeyN},
    Known{"get", Shape::kKey},
    Known{"getbit", Shape::kKey1},
    Known{"getdel", Shape::kKey},
    Known{"getex", Shape::kKeyN},
    Known{"getrange", Shape::kKey2},
    Known{"getset", Shape::kKey1},
    Known{"hdel", Shape::kKeyN},
    Known{"hexists", Shape::kKey1},
    Known{"hget", Shape::kKey1},
    Known{"hgetall", Shape::kKey},
    Known{"hincrby", Shape::kKey2},
    Known{"hincrbyfloat", Shape::kKey2},
    Known{"hkeys", Shape::kKey},
    Known{"hlen", Shape::kKey},
    Known{"hmget", Shape::kKeyN},
    Known{"hmset", Shape::kKeyN},
    Known{"hrandfield", Shape::kKeyN},
    Known{"hscan", Shape::kKeyN},
    Known{"hset", Shape::kKeyN},
    Known{"hsetnx", Shape::kKey2},
    Known{"hstrlen", Shape::kKey1},
    Known{"hvals", Shape::kKey},
    Known{"incr", Shape::kKey},
    Known{"incrby", Shape::kKey1},
    Known{"incrbyfloat", Shape::kKey1},
    Known{"lindex", Shape::kKey1},
    Known{"linsert", Shape::kKey3},
    Known{"llen", Shape::kKey},
    Known{"lmove", Shape::kKey3},
    Known{"lolwut", Shape::kAnyArgs},
    Known{"lpop", Shape::kKeyN},
    Known{"lpos", Shape::kKeyN},
    Known{"lpush", Shape::kKeyN},
    Known{"lpushx", Shape::kKeyN},
    Known{"lrange", Shape::kKey2},
    Known{"lrem", Shape::kKey2},
    Known{"lset", Shape::kKey2},
    Known{"ltrim", Shape::kKey2},
    Known{"mget", Shape::kKeys},
    Known{"mset", Shape::kPairs},
    Known{"persist", Shape::kKey},
    Known{"pexpire", Shape::kKey1},
    Known{"pexpireat", Shape::kKey1},
    Known{"pfadd", Shape::kKeyN},
    Known{"pfcount", Shape::kKeyN},
    Known{"pfmerge", Shape::kKeyN},
    Known{"ping", Shape::kNoArgs},
    Known{"psetex", Shape::kKey2},
    Known{"pttl", Shape::kKey},
    Known{"quit", Shape::kNoArgs},
    Known{"restore", Shape::kKeyN},
    Known{"rpop", Shape::kKeyN},
    Known{"rpoplpush", Shape::kKey1},
    Known{"rpush", Shape::kKeyN},
    Known{"rpushx", Shape::kKeyN},
    Known{"sadd", Shape::kKeyN},
    Known{"scard", Shape::kKey},
    Known{"sdiff", Shape::kKeyN},
    Known{"sdiffstore", Shape::kKeyN},
    Known{"set", Shape::kKeyN},
    Known{"setbit", Shape::kKey2},
    Known{"setex", Shape::kKey2},
    Known{"setnx", Shape::kKey1},
    Known{"setrange", Shape::kKey2},
    Known{"sinter", Shape::kKeyN},
    Known{"sinterstore", Shape::kKeyN},
    Known{"sismember", Shape::kKey1},
    Known{"smembers", Shape::kKey},
    Known{"smismember", Shape::kKeyN},
    Known{"smove", Shape::kKey2},
    Known{"sort", Shape::kKeyN},
    Known{"spop", Shape::kKeyN},
    Known{"srandmember", Shape::kKeyN},
    Known{"srem", Shape::kKeyN},
    Known{"sscan", Shape::kKeyN},
    Known{"strlen", Shape::kKey},
    Known{"sunion", Shape::kKeyN},
    Known{"sunionstore", Shape::kKeyN},
    Known{"touch", Shape::kKeys},
    Known{"ttl", Shape::kKey},
    Known{"type", Shape::kKey},
    Known{"unlink", Shape::kKeys},
    Known{"zadd", Shape::kKeyN},
    Known{"zcard", Shape::kKey},
    Known{"zcount", Shape::kKey2},
    Known{"zdiff", Shape::kKeyN},
    Known{"zdiffstore", Shape::kKeyN},
    Known{"zincrby", Shape::kKey2},
    Known{"zinter", Shape::kKeyN},
    Known{"zinterstore", Shape::kKeyN},
    Known{"zlexcount", Shape::kKey2},
    Known{"zmscore", Shape::kKeyN},
    Known{"zpopmax", Shape::kKeyN},
    Known{"zpopmin", Shape::kKeyN},
    Known{"zrandmember", Shape::kKeyN},
    Known{"zrange", Shape::kKeyN},
    Known{"zrangebylex", Shape::kKeyN},
    Known{"zrangebyscore", Shape::kKeyN},
    Known{"zrangestore", Shape::kKeyN},
    Known{"zrank", Shape::kKey1},
    Known{"zrem", Shape::kKeyN},
    Known{"zremrangebylex", Shape::kKey2},
    Known{"zremrangebyrank", Shape::kKey2},
    Known{"zremrangebyscore", Shape::kKey2},
    Known{"zrevrange", Shape::kKeyN},
    Known{"zrevrangebylex", Shape::kKeyN},
    Known{"zrevrangebyscore", Shape::kKeyN},
    Known{"zrevrank", Shape::kKey1},
    Known{"zscan", Shape::kKeyN},
    Known{"zscore", Shape::kKey1},
    Known{"zunion", Shape::kKeyN},
    Known{"zunionstore", Shape::kKeyN},
};

// Codis 3 (pkg/proxy/mapper.go): the commands flagged FlagNotAllow, answered with an error.
// Every other command, known to it or not, is forwarded to the server of its first argument.
// Sorted by name.
constexpr std::string_view kCodisRefuses[] = {
    "bgrewriteaof",
    "bgsave",
    "bitop",
    "blpop",
    "brpop",
    "brpoplpush",
    "client",
    "config",
    "dbsize",
    "debug",
    "discard",
    "exec",
    "flushall",
    "flushdb",
    "keys",
    "lastsave",
    "latency",
    "migrate",
    "monitor",
    "move",
    "msetnx",
    "multi",
    "object",
    "psubscribe",
    "psync",
    "publish",
    "punsubscribe",
    "randomkey",
    "rename",
    "renamenx",
    "replconf",
    "restore",
    "save",
    "scan",
    "script",
    "shutdown",
    "slaveof",
    "slotscheck",
    "slotsdel",
    "slotsmgrtone",
    "slotsmgrtslot",
    "slotsmgrttagone",
    "slotsmgrttagslot",
    "slowlog",
    "subscribe",
    "sync",
    "time",
    "unsubscribe",
    "unwatch",
    "watch",
};

// Why a command is refused (kNone: forwarded).
enum class Why : uint8_t { kNone, kCommand, kArguments, kNoKeys, kLongKey };

// The longest name either table holds ("georadiusbymember"); a longer one is in neither.
constexpr size_t kMaxName = 24;

// `name` lower-cased into `buf` (no allocation); empty when it is longer than any known name.
std::string_view Lower(std::string_view name, char (&buf)[kMaxName]) {
  if (name.size() > kMaxName) return {};
  for (size_t i = 0; i < name.size(); ++i) {
    buf[i] = static_cast<char>(std::tolower(static_cast<unsigned char>(name[i])));
  }
  return {buf, name.size()};
}

const Known* FindTwemproxy(std::string_view lower) {
  auto it = std::lower_bound(kTwemproxy.begin(), kTwemproxy.end(), lower,
                             [](const Known& k, std::string_view n) { return k.name < n; });
  return it != kTwemproxy.end() && it->name == lower ? &*it : nullptr;
}

bool LongKey(std::string_view key) { return key.size() >= kShardingProxyMaxKey; }

// EVAL's numkeys as twemproxy reads it: digits only, above 0; 0 when it is not.
size_t EvalKeys(std::string_view numkeys) {
  if (numkeys.empty() || numkeys.size() > 9) return 0;
  size_t n = 0;
  for (char c : numkeys) {
    if (c < '0' || c > '9') return 0;
    n = n * 10 + static_cast<size_t>(c - '0');
  }
  return n;
}

// The argument count twemproxy accepts for `shape` (args.size() includes the name).
bool CountFits(Shape shape, size_t n) {
  switch (shape) {
    case Shape::kKey:
      return n == 2;
    case Shape::kKey1:
      return n == 3;
    case Shape::kKey2:
      return n == 4;
    case Shape::kKey3:
      return n == 5;
    case Shape::kKeyN:
    case Shape::kKeys:
      return n >= 2;
    case Shape::kPairs:
      return n >= 3 && n % 2 == 1;
    case Shape::kEval:
      return n >= 4;
    case Shape::kNoArgs:
      return n == 1;
    case Shape::kAnyArgs:
      return true;
  }
  return false;
}

// `lower`: args[0] lower-cased (Lower).
Why TwemproxyRefuses(std::string_view lower, const std::vector<std::string_view>& args) {
  const Known* known = FindTwemproxy(lower);
  if (known == nullptr) return Why::kCommand;
  if (known->shape == Shape::kEval && args.size() >= 3 && EvalKeys(args[2]) == 0) {
    return Why::kNoKeys;
  }
  if (!CountFits(known->shape, args.size())) return Why::kArguments;
  switch (known->shape) {
    case Shape::kKeys:
      for (size_t i = 1; i < args.size(); ++i) {
        if (LongKey(args[i])) return Why::kLongKey;
      }
      return Why::kNone;
    case Shape::kPairs:
      for (size_t i = 1; i < args.size(); i += 2) {
        if (LongKey(args[i])) return Why::kLongKey;
      }
      return Why::kNone;
    case Shape::kEval: {
      const size_t keys = EvalKeys(args[2]);
      if (keys > args.size() - 3) return Why::kArguments;
      for (size_t i = 3; i < 3 + keys; ++i) {
        if (LongKey(args[i])) return Why::kLongKey;
      }
      return Why::kNone;
    }
    case Shape::kNoArgs:
    case Shape::kAnyArgs:
      return Why::kNone;
    default:
      return LongKey(args[1]) ? Why::kLongKey : Why::kNone;
  }
}

Why CodisRefuses(std::string_view lower) {
  return std::binary_search(std::begin(kCodisRefuses), std::end(kCodisRefuses), lower)
             ? Why::kCommand
             : Why::kNone;
}

Why Refuses(const std::vector<std::string_view>& args) {
  if (args.empty()) return Why::kCommand;
  char buf[kMaxName];
  const std::string_view lower = Lower(args[0], buf);
  const Why twemproxy = TwemproxyRefuses(lower, args);
  return twemproxy != Why::kNone ? twemproxy : CodisRefuses(lower);
}

}  // namespace

bool Forwards(ShardingProxy proxy, const std::vector<std::string_view>& args) {
  if (args.empty()) return false;
  char buf[kMaxName];
  const std::string_view lower = Lower(args[0], buf);
  return (proxy == ShardingProxy::kTwemproxy ? TwemproxyRefuses(lower, args)
                                             : CodisRefuses(lower)) == Why::kNone;
}

std::string ShownCommandName(std::string_view name) {
  std::string shown;
  for (char c : name.substr(0, 64)) {
    const bool plain =
        std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == '|';
    shown += plain ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : '?';
  }
  return shown;
}

bool ShardingProxyForwards(const std::vector<std::string_view>& args) {
  return Refuses(args) == Why::kNone;
}

std::string ShardingProxyRefusal(const std::vector<std::string_view>& args) {
  const std::string name = ShownCommandName(args.empty() ? std::string_view() : args[0]);
  std::string detail;
  switch (Refuses(args)) {
    case Why::kArguments:
      detail = " with " + std::to_string(args.size() - 1) + " arguments";
      break;
    case Why::kNoKeys:
      detail = " without keys";
      break;
    case Why::kLongKey:
      detail = " with a key of " + std::to_string(kShardingProxyMaxKey) + " bytes or more";
      break;
    case Why::kNone:
    case Why::kCommand:
      break;
  }
  return "-ERR bloomproxy: '" + name + "'" + detail +
         " is not supported behind a sharding proxy (upstream-kind sharding-proxy)\r\n";
}

}  // namespace bloomproxy::protocol
