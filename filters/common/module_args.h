// How RedisBloom reads its arguments, shared by every sketch's parser (bf_args, cms_args): the
// number parsing of the Redis module API and Redis's case-insensitive name comparison. Pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace bloomproxy::filters {

// ASCII only, as Redis compares command and option names (no locale).
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

// Redis's string2ll (util.c), which RedisModule_StringToLongLong uses: optional '-', then digits
// with no leading zero (except "0" itself), nothing else; no '+', no spaces, no exponent, at most
// 20 characters, and within long long.
bool ParseLongLong(std::string_view s, int64_t* out);

// Redis's string2d (util.c), which RedisModule_StringToDouble uses: strtod over the whole string,
// refusing the empty string, a leading space, trailing bytes (an embedded NUL included),
// overflow to +-inf, underflow to 0 and NaN. So "1e-3", ".5", "inf" and the denormal "5e-324"
// are numbers, " 5", "5 ", "nan" and "1e-400" are not.
bool ParseDouble(std::string_view s, double* out);

// Redis's arity error for a command named `lower` (lower case, as Redis names it):
// "-ERR wrong number of arguments for 'cms.query' command\r\n".
inline std::string WrongArityError(std::string_view lower) {
  return "-ERR wrong number of arguments for '" + std::string(lower) + "' command\r\n";
}

}  // namespace bloomproxy::filters
