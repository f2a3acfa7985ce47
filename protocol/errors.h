// Every error reply the proxy writes itself, in one place. Where Redis or RedisBloom has the
// same situation the text is theirs, verbatim (src/server.c, src/networking.c, src/acl.c).
// Each constant is a complete RESP2 error line, CRLF included.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace bloomproxy::protocol::errors {

// Authentication (Redis src/server.c shared objects, src/acl.c).
inline constexpr std::string_view kNoAuth = "-NOAUTH Authentication required.\r\n";
inline constexpr std::string_view kWrongPass =
    "-WRONGPASS invalid username-password pair or user is disabled.\r\n";
inline constexpr std::string_view kAuthNoPassword =
    "-ERR AUTH <password> called without any password configured for the default user. "
    "Are you sure your configuration is correct?\r\n";
inline constexpr std::string_view kSyntax = "-ERR syntax error\r\n";

// HELLO.
inline constexpr std::string_view kNoProto =
    "-NOPROTO sorry, this protocol version is not supported\r\n";
inline constexpr std::string_view kUnsupportedProto = "-NOPROTO unsupported protocol version\r\n";
inline constexpr std::string_view kBadProtoVersion =
    "-ERR Protocol version is not an integer or out of range\r\n";

// CLIENT.
inline constexpr std::string_view kBadClientName =
    "-ERR Client names cannot contain spaces, newlines or special characters.\r\n";

// A command against a key of another type (Redis's shared.wrongtypeerr).
inline constexpr std::string_view kWrongType =
    "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";

// Limits.
inline constexpr std::string_view kMaxClients = "-ERR max number of clients reached\r\n";

// Upstream trouble, for the one request it affects. Redis has no equivalent.
// Redis Cluster's words (cluster.c clusterRedirectClient) for what the proxy answers on a
// cluster: keys in two slots, and a slot no reachable master serves.
inline constexpr std::string_view kCrossSlot =
    "-CROSSSLOT Keys in request don't hash to the same slot\r\n";
inline constexpr std::string_view kClusterDown = "-CLUSTERDOWN The cluster is down\r\n";
// A structure whose keys a sharding proxy would spread over several servers (filters/common/
// key_layout.h, KeptWholeBehindShardingProxy). Redis has no equivalent.
inline constexpr std::string_view kNotKeptWhole =
    "-ERR bloomproxy: behind a sharding proxy a filter's name needs a {hash tag}, or no braces "
    "at all, and at most 7900 bytes, so that all its keys stay on one server\r\n";
inline constexpr std::string_view kSlotNotServed = "-CLUSTERDOWN Hash slot not served\r\n";
// Redis's transaction errors (multi.c), for transactions the proxy ends itself.
inline constexpr std::string_view kExecAbort =
    "-EXECABORT Transaction discarded because of previous errors.\r\n";
inline constexpr std::string_view kNestedMulti = "-ERR MULTI calls can not be nested\r\n";
inline constexpr std::string_view kUpstreamUnavailablePrefix = "-ERR upstream unavailable";
inline constexpr std::string_view kShuttingDown =
    "-ERR upstream unavailable (proxy shutting down)\r\n";

// A reply the upstream sent that a BF plan cannot make sense of (a filter's data key of
// another type, missing or overwritten, metadata that does not parse, a reply of the wrong
// type or length): the command gets this error instead of an answer. Redis has no equivalent.
inline constexpr std::string_view kUnexpectedUpstreamPrefix =
    "-ERR bloomproxy: unexpected reply from upstream";

// "-ERR bloomproxy: unexpected reply from upstream to <what>: <detail>\r\n". `what` names the
// upstream command and the key's role ("BITFIELD_RO of link 0 shard 0"), `detail` the problem
// (it may quote the upstream's own error). CR and LF become spaces, and each part is cut at
// 200 bytes, so the reply is always one well-formed error line.
inline std::string UnexpectedUpstreamReply(std::string_view what, std::string_view detail) {
  std::string out(kUnexpectedUpstreamPrefix);
  auto append = [&out](std::string_view s) {
    constexpr size_t kMax = 200;
    const size_t n = s.size() < kMax ? s.size() : kMax;
    for (size_t i = 0; i < n; ++i) out.push_back(s[i] == '\r' || s[i] == '\n' ? ' ' : s[i]);
    if (s.size() > kMax) out.append("...");
  };
  out.append(" to ");
  append(what);
  out.append(": ");
  append(detail);
  out.append("\r\n");
  return out;
}

// Redis's "wrong number of arguments for '%s' command" with the name lower-cased as given.
std::string WrongArity(std::string_view command);
// Redis's "unknown command '%.128s', with args beginning with: 'a' 'b' ".
std::string UnknownCommand(std::string_view command, const std::string_view* args, size_t nargs);
// Redis's "unknown subcommand '%.128s'. Try %s HELP."
std::string UnknownSubcommand(std::string_view command, std::string_view sub);
// Redis's ACL refusal: "-NOPERM this user has no permissions to run the '%s' command", with the
// command's lower-case full name ("flushall", "config|set").
std::string NoPermission(std::string_view full_name);
// "-ERR upstream unavailable (reason)\r\n".
std::string UpstreamUnavailable(std::string_view reason);

}  // namespace bloomproxy::protocol::errors
