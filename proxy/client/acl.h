// Per-user command permissions: the rules of `user NAME PASSWORD RULE...` (conf/options.h),
// compiled once and checked for every command of a client that AUTHed as that user. The command
// part of Redis ACLs: commands, subcommands and categories (Redis 7.0's, plus RedisBloom's
// @bloom, @cuckoo, @cms, @topk and @tdigest) allowed or denied in order. Pure code, no sockets:
// tests/unit/acl_test.cc.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <tsl/robin_map.h>

#include "conf/options.h"

namespace bloomproxy::proxy {

class CommandAcl {
 public:
  // Compiles `rules` (lower case, as conf::User holds them). A command or subcommand name must
  // be one the proxy knows (Redis 7.0's table or a BF.* command) or look like a module's command
  // ("json.get"), and a category one of ACL CAT's; otherwise false, with *error saying which.
  static bool Compile(const std::vector<std::string>& given, CommandAcl* out, std::string* error);

  // True when the user may run `name`: a command ("get") or a subcommand ("config|get"), lower
  // case.
  bool Allows(std::string_view name) const;

 private:
  struct Hash {
    using is_transparent = void;  // lookups by string_view, without a temporary string
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  // Every command and subcommand of the table, the BF.* commands and the module commands the
  // rules name -> allowed.
  tsl::robin_map<std::string, bool, Hash, std::equal_to<>> decided_;
  bool others_ = false;  // commands the proxy does not know: only @all decides them
};

// The compiled rules of every configured user with rules, by user name. Users without rules
// (and "default") may run every command: Find() returns nullptr for them.
class AclTable {
 public:
  // False with one error per bad rule ("user 'alice': ...").
  bool Compile(const conf::Options& options, std::vector<std::string>* errors);
  const CommandAcl* Find(std::string_view user) const;

 private:
  std::vector<std::pair<std::string, CommandAcl>> users_;
};

}  // namespace bloomproxy::proxy
