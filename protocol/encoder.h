// RESP2 encoder: appends replies and commands to a byte buffer.
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

// Appends a command as a multibulk request: "*n\r\n$len\r\narg\r\n"...
template <typename Range>
void AppendCommand(std::string* out, const Range& args) {
  AppendArrayHeader(out, static_cast<int64_t>(std::size(args)));
  for (const auto& a : args) AppendBulk(out, std::string_view(a));
}

}  // namespace bloomproxy::protocol
