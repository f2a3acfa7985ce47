// What a sharding proxy in front of Redis forwards: twemproxy (nutcracker 0.5.0, Debian's) and
// Codis 3. Both hash a key's {tag} (or the whole key) to pick one server, and both refuse part
// of Redis's command set: twemproxy closes the client's connection on any command its parser
// does not know, or knows with another number of arguments (EXPIRE key 10 NX), or on a key of
// 16 KB or more; Codis answers an error for the commands it does not allow (MULTI, RENAME,
// SCAN, KEYS, ...). An upstream of kind sharding-proxy may be either, so bloomproxy sends it
// only what both forward, and answers everything else itself with an error naming the command.
// Pure; the rules of each are kept apart so that tests can check them one by one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace bloomproxy::protocol {

// What the proxy talks to: Redis itself (one server or a Redis Cluster), or a sharding proxy.
enum class UpstreamKind : uint8_t { kRedis, kShardingProxy };

// The sharding proxies whose rules are modelled.
enum class ShardingProxy : uint8_t { kTwemproxy, kCodis };

// twemproxy refuses a key this long or longer: its key must fit one buffer (mbuf, 16 KB by
// default, less its header). bloomproxy stays below it, with room for a filter's key suffixes.
constexpr size_t kShardingProxyMaxKey = 16000;

// Whether `proxy` forwards the command `args` (args[0] is its name, in any case) to a server.
// PING and QUIT count as forwarded (both proxies answer them themselves).
bool Forwards(ShardingProxy proxy, const std::vector<std::string_view>& args);

// Whether every modelled sharding proxy forwards it: what an upstream of kind sharding-proxy
// may be sent.
bool ShardingProxyForwards(const std::vector<std::string_view>& args);

// A command name as error replies show it: upper case, at most 64 bytes, anything but letters,
// digits and "_-.|" shown as '?' (a reply stays one safe line).
std::string ShownCommandName(std::string_view name);

// The error reply for a command ShardingProxyForwards refuses, naming the command and why:
// "-ERR bloomproxy: 'RENAME' is not supported behind a sharding proxy (upstream-kind
// sharding-proxy)\r\n".
std::string ShardingProxyRefusal(const std::vector<std::string_view>& args);

}  // namespace bloomproxy::protocol
