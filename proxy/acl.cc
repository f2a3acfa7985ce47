#include "proxy/acl.h"

#include "filters/bf_args.h"
#include "protocol/command_table.h"

namespace bloomproxy::proxy {

namespace {

// Redis accepts module commands in ACL rules only once the module is loaded; the proxy does not
// know the upstream's modules, so a dotted name ("json.get") is taken on trust.
bool IsModuleName(std::string_view name) { return name.find('.') != std::string_view::npos; }

bool KnownName(std::string_view name, std::string* error) {
  const size_t bar = name.find('|');
  const std::string_view command = name.substr(0, bar);
  filters::BfCommand bf;
  const protocol::CommandInfo* info = protocol::LookupCommand(command);
  if (bar == std::string_view::npos) {
    if (info != nullptr || filters::LookupBfCommand(command, &bf) || IsModuleName(command)) {
      return true;
    }
    *error = "unknown command '" + std::string(command) + "'";
    return false;
  }
  const std::string_view sub = name.substr(bar + 1);
  if (info == nullptr) {
    *error = "unknown command '" + std::string(command) + "'";
    return false;
  }
  if ((info->flags & protocol::kFlagContainer) == 0 ||
      protocol::LookupSubcommand(*info, sub) == nullptr) {
    *error = "unknown subcommand '" + std::string(sub) + "' of '" + std::string(command) + "'";
    return false;
  }
  return true;
}

}  // namespace

bool CommandAcl::Compile(const std::vector<std::string>& rules, CommandAcl* out,
                         std::string* error) {
  CommandAcl acl;
  for (const std::string& rule : rules) {
    const bool allow = rule[0] == '+';
    const std::string_view name = std::string_view(rule).substr(1);
    if (name == "@all") {
      acl.all_ = allow;
      acl.named_.clear();
      continue;
    }
    if (!KnownName(name, error)) {
      *error = "rule '" + rule + "': " + *error;
      return false;
    }
    if (name.find('|') == std::string_view::npos) {
      // A rule on the whole command replaces the earlier rules on its subcommands.
      const std::string prefix = std::string(name) + "|";
      for (auto it = acl.named_.begin(); it != acl.named_.end();) {
        it =
            it->first.compare(0, prefix.size(), prefix) == 0 ? acl.named_.erase(it) : std::next(it);
      }
    }
    acl.named_[std::string(name)] = allow;
  }
  *out = std::move(acl);
  return true;
}

bool CommandAcl::Allows(std::string_view name) const {
  if (named_.empty()) return all_;
  auto it = named_.find(name);
  if (it != named_.end()) return it->second;
  const size_t bar = name.find('|');
  if (bar != std::string_view::npos) {
    it = named_.find(name.substr(0, bar));
    if (it != named_.end()) return it->second;
  }
  return all_;
}

bool AclTable::Compile(const conf::Options& options, std::vector<std::string>* errors) {
  users_.clear();
  bool ok = true;
  for (const conf::User& user : options.users) {
    if (user.rules.empty()) continue;
    CommandAcl acl;
    std::string error;
    if (!CommandAcl::Compile(user.rules, &acl, &error)) {
      errors->push_back("user '" + user.name + "': " + error);
      ok = false;
      continue;
    }
    users_.emplace_back(user.name, std::move(acl));
  }
  return ok;
}

const CommandAcl* AclTable::Find(std::string_view user) const {
  for (const auto& [name, acl] : users_) {
    if (name == user) return &acl;
  }
  return nullptr;
}

}  // namespace bloomproxy::proxy
