// The words of a config-file line, split exactly like Redis's sdssplitargs (src/sds.c), so a
// line means the same to bloomproxy as to redis-server.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace bloomproxy::conf {

// Splits `line` into words (quotes, escapes). False on unbalanced quotes, or a closing quote
// not followed by a space.
bool SplitArgs(std::string_view line, std::vector<std::string>* args);
// `s` without the blanks Redis trims from config lines (" \t\r\n").
std::string_view Trim(std::string_view s);

}  // namespace bloomproxy::conf
