#include "filters/bloom/window/window_rules.h"

#include "filters/bloom/bloom.h"
#include "filters/common/module_args.h"
#include "protocol/glob.h"

namespace bloomproxy::filters {
namespace {

std::string Quote(std::string_view s) { return "'" + std::string(s) + "'"; }

// An integer in lo..hi, read as the commands read theirs (Redis's string2ll: no '+', no
// spaces, no leading zero), so a rule accepts exactly what BF.RESERVE would.
bool InRange(std::string_view s, uint64_t lo, uint64_t hi, uint64_t* out) {
  int64_t v = 0;
  if (!ParseLongLong(s, &v) || v < 0) return false;
  if (static_cast<uint64_t>(v) < lo || static_cast<uint64_t>(v) > hi) return false;
  *out = static_cast<uint64_t>(v);
  return true;
}

// One option and its value into *r: "" or what is wrong with the value.
std::string ParseOption(std::string_view word, std::string_view value, WindowRule* r) {
  uint64_t v = 0;
  if (EqualsIgnoreCase(word, "slots")) {
    if (!InRange(value, kMinWindowSlots, kMaxWindowSlots, &v)) {
      return Quote(value) + " is not a slot count (" + std::to_string(kMinWindowSlots) + ".." +
             std::to_string(kMaxWindowSlots) + ")";
    }
    r->slots = static_cast<uint32_t>(v);
  } else if (EqualsIgnoreCase(word, "error")) {
    double rate = 0;
    if (!ParseDouble(value, &rate) || !(rate > 0 && rate < 1)) {
      return Quote(value) + " is not an error rate (between 0 and 1, exclusive)";
    }
    r->error_rate = rate;
  } else {
    if (!InRange(value, 1, kMaxCapacity, &r->capacity)) {
      return Quote(value) + " is not a capacity (1.." + std::to_string(kMaxCapacity) + ")";
    }
  }
  return "";
}

}  // namespace

std::string ParseWindowRule(const std::vector<std::string>& args, WindowRule* rule) {
  if (args.size() < 2) return "needs PATTERN WINDOW_MS [SLOTS g] [ERROR e] [CAPACITY n]";
  WindowRule r;
  r.pattern = args[0];
  if (!InRange(args[1], 1, kMaxWindowMs, &r.window_ms)) {
    return Quote(args[1]) + " is not a window (milliseconds, 1.." + std::to_string(kMaxWindowMs) +
           ")";
  }
  bool seen[3] = {false, false, false};  // slots, error, capacity
  for (size_t i = 2; i < args.size(); i += 2) {
    static constexpr std::string_view kOptions[] = {"slots", "error", "capacity"};
    size_t which = 0;
    while (which < 3 && !EqualsIgnoreCase(args[i], kOptions[which])) ++which;
    if (which == 3) return Quote(args[i]) + " is not an option (slots, error, capacity)";
    // A repeated option is more likely a mistake than an override worth honouring.
    if (seen[which]) return "option " + Quote(args[i]) + " is given twice";
    seen[which] = true;
    if (i + 1 == args.size()) return "option " + Quote(args[i]) + " has no value";
    if (std::string error = ParseOption(args[i], args[i + 1], &r); !error.empty()) return error;
  }
  for (size_t i = 0; i < args.size(); ++i) r.text += (i > 0 ? " " : "") + args[i];
  *rule = std::move(r);
  return "";
}

WindowRules WindowRules::FromArgs(const std::vector<std::vector<std::string>>& args) {
  std::vector<WindowRule> rules;
  for (const std::vector<std::string>& rule_args : args) {
    WindowRule rule;
    if (ParseWindowRule(rule_args, &rule).empty()) rules.push_back(std::move(rule));
  }
  return WindowRules(std::move(rules));
}

const WindowRule* WindowRules::Match(std::string_view key) const {
  for (const WindowRule& rule : rules_) {
    if (protocol::GlobMatch(rule.pattern, key)) return &rule;
  }
  return nullptr;
}

const WindowRule* WindowRules::For(const BfRequest& req) const {
  if (rules_.empty() || req.window_ms != 0) return nullptr;
  switch (req.command) {
    case BfCommand::kAdd:
    case BfCommand::kMAdd:
    case BfCommand::kInsert:
      return Match(req.key);
    default:
      return nullptr;
  }
}

std::string ParseBfRequestWithWindows(const std::vector<std::string_view>& args,
                                      const BfDefaults& defaults, const WindowRules& rules,
                                      BfRequest* out) {
  std::string error = ParseBfRequest(args, defaults, out);
  if (!error.empty()) return error;
  const WindowRule* rule = rules.For(*out);
  if (rule == nullptr) return error;
  if (rule->error_rate != 0 || rule->capacity != 0) {
    // Parsed again with the rule's values as the defaults, so that the command's own CAPACITY
    // and ERROR still win, each on its own, exactly as they win over bf-error-rate. The
    // arguments parsed once, so they parse again.
    BfDefaults with_rule = defaults;
    if (rule->error_rate != 0) with_rule.error_rate = rule->error_rate;
    if (rule->capacity != 0) with_rule.capacity = rule->capacity;
    error = ParseBfRequest(args, with_rule, out);
  }
  out->window_ms = rule->window_ms;
  out->slots = rule->slots;
  return error;
}

void ApplyWindowRule(const WindowRule& rule, BfRequest* req) {
  req->window_ms = rule.window_ms;
  req->slots = rule.slots;
  if (rule.error_rate != 0) req->error_rate = rule.error_rate;
  if (rule.capacity != 0) req->capacity = rule.capacity;
}

}  // namespace bloomproxy::filters
