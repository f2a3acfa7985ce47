// A Lua script the proxy sends to Redis, as the build embeds it from its .lua file
// (cmake/lua.cmake): the generated header "filters/<folder>/<stem>.lua.h" defines
// bloomproxy::filters::lua::k<Stem>. The SHA1 is Redis's name for the script (EVALSHA), computed
// at build time, so sending a script costs its 40-byte name, not its text.
#pragma once

#include <string_view>

namespace bloomproxy::filters {

struct LuaScript {
  std::string_view name;  // the file's stem: cf_insert
  std::string_view body;  // the text, includes expanded
  std::string_view sha1;  // of body, 40 lower-case hex digits
};

// Whether `answer` is Redis's NOSCRIPT error: the server does not have the script (yet, or
// after SCRIPT FLUSH), and the call must be sent again with its text.
inline bool IsNoScript(std::string_view answer) { return answer.substr(0, 9) == "-NOSCRIPT"; }

}  // namespace bloomproxy::filters
