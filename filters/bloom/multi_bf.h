// BF.* inside MULTI (multi_command.h): the script each command is queued as (bf_multi.lua) and the
// reply made of its answer (multi_bf.cc). Pure; no sockets.
#pragma once

#include <string_view>

#include "filters/common/multi_command.h"

namespace bloomproxy::filters {

// The script (its arguments and answers are documented in filters/bloom/bf_multi.lua).
std::string_view MultiBfScript();

}  // namespace bloomproxy::filters
