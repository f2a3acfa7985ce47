// RESP3 replies seen as RESP2: what the proxy needs to read a reply that came on a RESP3
// upstream connection with the code (and hiredis 0.14, RESP2 only) it reads RESP2 replies with.
// Forwarded replies are never converted: a RESP3 client gets the upstream's bytes.
#pragma once

#include <string>
#include <string_view>

namespace bloomproxy::protocol {

// Rewrites one complete reply (as framed by ReplyFramer) into RESP2, the way Redis writes the
// same value to a RESP2 client: a map `%n` becomes an array of 2n, a set `~n` and a push `>n`
// an array, a null `_` a null bulk `$-1`, a double `,` and a big number `(` a bulk string, a
// verbatim string its text without the `txt:` prefix, a blob error a simple error, `#t` `:1`
// and `#f` a null bulk (Lua's false, the only boolean Redis itself sends), and an attribute is
// dropped. Returns false, leaving *out untouched, when the reply has no RESP3 type (then it is
// RESP2 as it is) or is malformed.
bool Resp3ToResp2(std::string_view frame, std::string* out);

// The first byte of a value says it is RESP3-only.
inline bool IsResp3Type(char c) {
  switch (c) {
    case '%':
    case '~':
    case '>':
    case '|':
    case '_':
    case '#':
    case ',':
    case '(':
    case '=':
    case '!':
      return true;
    default:
      return false;
  }
}

// A flat array of 2n field/value elements, as a RESP3 client gets it from Redis: a map of n
// pairs (HGETALL), or with `as_pairs` an array of n two-element arrays (HRANDFIELD ...
// WITHVALUES). Anything else is returned as it is.
std::string PairsToResp3(std::string_view frame, bool as_pairs);

// A RESP3 push that is the reply of a command: (p|s)(un)subscribe's confirmations. Other pushes
// (messages, invalidations) come on their own.
bool IsSubscribeReplyPush(std::string_view frame);

}  // namespace bloomproxy::protocol
