// Key-level plans: commands on a key (TYPE, DEL, EXPIRE, RENAME, ...) that must act on a whole
// filter when the key is a filter's name, whose data keys live under other names.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "filters/bf_meta.h"
#include "filters/plan.h"

namespace bloomproxy::filters {

// Key-level commands that must act on a whole filter when a key is one: DEL, UNLINK, TYPE,
// EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT, PERSIST, RENAME, RENAMENX. Returns null for any
// other command (then it is forwarded as it is). `cache` outlives the plan.
std::unique_ptr<Plan> MakeKeyPlan(const std::vector<std::string_view>& args, FilterCache* cache);

// The Lua scripts the key-level plans run (key_plan.cc says what each takes and returns), for
// tests that model them.
std::string_view TypeScript();
const std::string& KeyScript();
std::string_view RenameScript();

}  // namespace bloomproxy::filters
