// Redis's glob patterns (KEYS, SCAN MATCH, PSUBSCRIBE; util.c stringmatchlen): `*` any bytes,
// `?` one byte, `[abc]` `[^abc]` `[a-z]` a set (a reversed range counts as its swap), `\x`
// the byte x. Binary-safe, case-sensitive. Pure.
#pragma once

#include <string_view>

namespace bloomproxy::protocol {

// Whether `subject` matches `pattern` as Redis matches a key against KEYS's pattern.
bool GlobMatch(std::string_view pattern, std::string_view subject);

}  // namespace bloomproxy::protocol
