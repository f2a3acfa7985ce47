// RESP encoder: appends replies and commands to a byte buffer. The RESP3 types are for clients
// that said HELLO 3; the `Resp`-taking ones write whichever the client speaks.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace bloomproxy::protocol {

// Each function appends one complete RESP2 value to *out.
void AppendSimple(std::string* out, std::string_view s);  // "+s\r\n"; s must not hold CR/LF
void AppendError(std::string* out, std::string_view s);   // "-s\r\n"; CR/LF in s become spaces
void AppendInteger(std::string* out, int64_t v);          // ":v\r\n"
void AppendBulk(std::string* out, std::string_view s);    // "$len\r\ns\r\n"
void AppendNullBulk(std::string* out);                    // "$-1\r\n"
void AppendArrayHeader(std::string* out, int64_t n);      // "*n\r\n"

// RESP3 only.
void AppendMapHeader(std::string* out, int64_t pairs);  // "%n\r\n"
void AppendSetHeader(std::string* out, int64_t n);      // "~n\r\n"
void AppendPushHeader(std::string* out, int64_t n);     // ">n\r\n"
void AppendBool(std::string* out, bool v);              // "#t\r\n" / "#f\r\n"
void AppendNull(std::string* out);                      // "_\r\n"
// "=len\r\ntxt:s\r\n" (Redis's addReplyVerbatim with "txt": CLIENT INFO, INFO, ...).
void AppendVerbatim(std::string* out, std::string_view s);

// The protocol a client speaks (HELLO 2 / HELLO 3).
enum class Resp : uint8_t { k2 = 2, k3 = 3 };

// Redis's addReplyMapLen & co: a map is a flat array of 2n in RESP2, a set an array, a null
// "$-1" (a missing bulk), a null array "*-1", a boolean ":1"/":0", verbatim text a bulk.
void AppendMapHeader(std::string* out, int64_t pairs, Resp resp);
void AppendSetHeader(std::string* out, int64_t n, Resp resp);
void AppendNull(std::string* out, Resp resp);
void AppendNullArray(std::string* out, Resp resp);
void AppendBool(std::string* out, bool v, Resp resp);
void AppendVerbatim(std::string* out, std::string_view s, Resp resp);

// Appends a command as a multibulk request: "*n\r\n$len\r\narg\r\n"...
template <typename Range>
void AppendCommand(std::string* out, const Range& args) {
  AppendArrayHeader(out, static_cast<int64_t>(std::size(args)));
  for (const auto& a : args) AppendBulk(out, std::string_view(a));
}

}  // namespace bloomproxy::protocol
