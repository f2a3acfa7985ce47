#include "proxy/client/acl.h"

#include <utility>

#include "filters/bloom/bf_args.h"
#include "filters/bloom/bf_plan.h"
#include "protocol/command_table.h"

namespace bloomproxy::proxy {

namespace {

// Redis accepts module commands in ACL rules only once the module is loaded; the proxy does not
// know the upstream's modules, so a dotted name ("json.get") is taken on trust.
bool IsModuleName(std::string_view name) { return name.find('.') != std::string_view::npos; }

// A command the rules decide on: its full name, categories and container ("config" for
// "config|get", empty otherwise).
struct Entry {
  std::string name;
  uint32_t categories;
  std::string_view container;
};

bool CheckName(std::string_view name, std::string* error) {
  const size_t bar = name.find('|');
  const std::string_view command = name.substr(0, bar);
  filters::SketchFamily family;
  const protocol::CommandInfo* info = protocol::LookupCommand(command);
  if (bar == std::string_view::npos) {
    if (info != nullptr || filters::LookupSketchCommand(command, &family) ||
        IsModuleName(command)) {
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

bool CommandAcl::Compile(const std::vector<std::string>& given, CommandAcl* out,
                         std::string* error) {
  std::vector<std::string> rules;
  for (const std::string& rule : given) rules.push_back(conf::CanonicalCommandRule(rule));
  for (const std::string& rule : rules) {
    if (rule.size() < 2 || (rule[0] != '+' && rule[0] != '-')) {
      *error = "unsupported rule '" + rule + "'";
      return false;
    }
  }
  // Every command the rules can speak of, decided one rule at a time, in order.
  std::vector<Entry> entries;
  for (const protocol::CommandInfo* info : protocol::AllCommands()) {
    const size_t bar = info->name.find('|');
    entries.push_back(
        {std::string(info->name), info->categories,
         bar == std::string_view::npos ? std::string_view() : info->name.substr(0, bar)});
  }
  for (const filters::SketchCommandName& c : filters::SketchCommandNames()) {
    // Its categories as a Redis 7.4 server with RedisBloom lists them (@read or @write, @fast
    // for some, and its family's: @bloom, @cuckoo, @cms).
    uint32_t categories = 0;
    for (std::string_view name : c.categories) {
      uint32_t bit = 0;
      if (protocol::LookupAclCategory(name, &bit)) categories |= bit;
    }
    entries.push_back({std::string(c.name), categories, {}});
  }
  for (const std::string& rule : rules) {
    const std::string_view name = std::string_view(rule).substr(1);
    if (name[0] == '@') continue;
    if (!CheckName(name, error)) {
      *error = "rule '" + rule + "': " + *error;
      return false;
    }
    if (IsModuleName(name) && protocol::LookupCommand(name) == nullptr) {
      filters::SketchFamily family;
      if (!filters::LookupSketchCommand(name, &family)) {
        entries.push_back({std::string(name), 0, {}});
      }
    }
  }
  std::vector<bool> allowed(entries.size(), false);
  bool others = false;
  for (const std::string& rule : rules) {
    const bool allow = rule[0] == '+';
    const std::string_view name = std::string_view(rule).substr(1);
    if (name == "@all") {
      allowed.assign(entries.size(), allow);
      others = allow;
    } else if (name[0] == '@') {
      uint32_t category = 0;
      if (!protocol::LookupAclCategory(name.substr(1), &category)) {
        *error = "rule '" + rule + "': unknown category '" + std::string(name.substr(1)) + "'";
        return false;
      }
      for (size_t i = 0; i < entries.size(); ++i) {
        if (entries[i].categories & category) allowed[i] = allow;
      }
    } else {
      // A command's rule covers its subcommands; a subcommand's only itself.
      for (size_t i = 0; i < entries.size(); ++i) {
        if (entries[i].name == name || entries[i].container == name) allowed[i] = allow;
      }
    }
  }
  CommandAcl acl;
  acl.others_ = others;
  for (size_t i = 0; i < entries.size(); ++i) {
    acl.decided_.emplace(std::move(entries[i].name), allowed[i]);
  }
  *out = std::move(acl);
  return true;
}

bool CommandAcl::Allows(std::string_view name) const {
  auto it = decided_.find(name);
  return it != decided_.end() ? it->second : others_;
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
