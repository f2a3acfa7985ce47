// bf-window rules (docs/windowed-filters.md, "Configuration"): a BF.ADD, BF.MADD or BF.INSERT
// that creates a filter whose name matches a rule's pattern creates it windowed, so an unchanged
// application's filters forget. The rule as configured, the rule a command follows, and the
// command's request with the rule applied. Pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "filters/bloom/bf_args.h"

namespace bloomproxy::filters {

// One rule: `bf-window PATTERN WINDOW_MS [SLOTS g] [ERROR e] [CAPACITY n]`.
struct WindowRule {
  std::string pattern;     // Redis glob syntax (protocol/glob.h), as bf-layout's
  uint64_t window_ms = 0;  // 1..kMaxWindowMs
  uint32_t slots = 0;      // kMinWindowSlots..kMaxWindowSlots; 0: not given (the default)
  double error_rate = 0;   // 0: not given (the command's, or bf-error-rate)
  uint64_t capacity = 0;   // items per window; 0: not given (the command's, or the default)
  std::string text;        // the rule as configured, for messages
};

// Parses a rule's arguments (PATTERN WINDOW_MS [options], the options in any order and any case)
// into *rule. Returns "" or what is wrong, e.g. "'0' is not a window (milliseconds,
// 1..316224000000)".
std::string ParseWindowRule(const std::vector<std::string>& args, WindowRule* rule);

// The configured rules, tried in order.
class WindowRules {
 public:
  WindowRules() = default;
  explicit WindowRules(std::vector<WindowRule> rules) : rules_(std::move(rules)) {}
  // The rules of the bf-window options, each as its arguments (checked when the options were
  // loaded: a rule that does not parse is left out).
  static WindowRules FromArgs(const std::vector<std::vector<std::string>>& args);
  // The first rule whose pattern matches `key`, or null.
  const WindowRule* Match(std::string_view key) const;
  // The rule a parsed request follows: Match(key) for a BF.ADD, BF.MADD or BF.INSERT that gives
  // no WINDOW of its own; null for every other request.
  const WindowRule* For(const BfRequest& req) const;
  bool empty() const { return rules_.empty(); }

 private:
  std::vector<WindowRule> rules_;
};

// ParseBfRequest (same error replies) with the rules applied: a request For() finds a rule for
// gets the rule's window and slots, and the rule's error rate and capacity in place of
// `defaults`', so where the command gives none (BF.ADD and BF.MADD never do; BF.INSERT's own
// CAPACITY and ERROR win). The rule decides only how a filter is created: for an existing
// filter the plan goes by the filter's own parameters. So a BF.INSERT TTL is not checked
// against a rule's window here (the filter may have another): ttl_ms <= window_ms holds only
// when the command gave both.
std::string ParseBfRequestWithWindows(const std::vector<std::string_view>& args,
                                      const BfDefaults& defaults, const WindowRules& rules,
                                      BfRequest* out);

// For a request built from the defaults rather than parsed, as a BF.ADD or BF.MADD would be
// (the proxy's batch of one loop turn's adds to one name): the rule's window and slots, and its
// error rate and capacity where it gives them. The same request as ParseBfRequestWithWindows'.
void ApplyWindowRule(const WindowRule& rule, BfRequest* req);

}  // namespace bloomproxy::filters
