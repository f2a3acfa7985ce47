// Structure names that exercise filters::DataKeyPrefix's three rules (a tag made of the name, a tag
// of its own, a tag put in front) and names that hold the internal keys' infixes themselves, for
// the tests of what reads internal key names (protocol/internal_keys.h, filters/common/sweep.h).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace bloomproxy::test {

inline constexpr std::string_view kKeyId = "0123456789abcdef";

inline const std::vector<std::string>& KeyNames() {
  static const std::vector<std::string> names = {"users",
                                                 "{users}",
                                                 "app{users}x",
                                                 "{u}",
                                                 "c1:a1",
                                                 "",
                                                 "a}b",
                                                 "a{b",
                                                 "{}",
                                                 "foo{}{bar}",
                                                 "}{",
                                                 "x:bf:m:y",
                                                 "{t}:bf:m:z",
                                                 "k:cms:0123456789abcdef:1",
                                                 std::string("bin\0\r\n", 6)};
  return names;
}

}  // namespace bloomproxy::test
