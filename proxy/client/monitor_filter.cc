#include "proxy/client/monitor_filter.h"

#include <utility>

#include "filters/common/sweep.h"

namespace bloomproxy::proxy {
namespace {

using protocol::IsCommandName;

// The arguments a decision needs: the most of any command recognised (HELLO 3 AUTH u p SETNAME
// n, SCAN c MATCH p COUNT n TYPE t) and of those OwnConnections records.
constexpr size_t kMaxArgs = 8;
// Senders remembered, beyond which the oldest knowledge is dropped.
constexpr size_t kMaxSenders = 4096;

bool IsClientSubcommand(const protocol::MonitorLine& line, std::string_view sub) {
  return line.args.size() >= 2 && IsCommandName(line.args[0], "client") &&
         IsCommandName(line.args[1], sub);
}

}  // namespace

MonitorFilter::MonitorFilter(const OwnConnections* registry, std::string upstream, std::string self,
                             uint64_t since)
    : registry_(registry), upstream_(std::move(upstream)), self_(std::move(self)), since_(since) {}

bool MonitorFilter::Shows(std::string_view frame, uint64_t now_ms) {
  if (!protocol::ParseMonitorLine(frame, &line_, kMaxArgs)) return true;
  if (line_.from_script()) return !in_hidden_script_;
  in_hidden_script_ = Hides(line_, now_ms);
  return !in_hidden_script_;
}

bool MonitorFilter::Hides(const protocol::MonitorLine& line, uint64_t now_ms) {
  if (line.sender == self_) return false;
  // A sender is known by its address only over TCP (over a Unix socket all look alike).
  const bool addressed = !line.from_unix_socket();
  const filters::SweepTrace trace = filters::RecogniseSweep(line.args);
  const bool names_background = IsClientSubcommand(line, "setname") && line.args.size() == 3 &&
                                line.args[2] == kBackgroundName;
  if (trace == filters::SweepTrace::kPass || names_background) {
    if (addressed) {
      if (background_.size() >= kMaxSenders) background_.clear();
      background_[std::string(line.sender)] = now_ms;
    }
    return true;
  }
  if (trace == filters::SweepTrace::kLock) return true;
  if (!addressed) return false;
  return HidesOwn(line) || MarkedBackground(line.sender, now_ms);
}

bool MonitorFilter::HidesOwn(const protocol::MonitorLine& line) {
  // Commands at or before the cursor are behind. A new connection at the same address (after the
  // old one closed) sent all of its own after them: the cursor holds for it too.
  auto it = own_.find(std::string(line.sender));
  const uint64_t after = it != own_.end() ? it->second.cursor : since_;
  OwnConnections::Sender sender;
  if (!registry_->Find(upstream_, line.sender, after, &sender)) return false;
  if (sender.role == OwnConnections::Role::kBackground) return true;
  if (IsClientSubcommand(line, "setname") || IsClientSubcommand(line, "id")) return true;
  if (sender.sent.empty()) return false;
  if (it == own_.end() || it->second.id != sender.id) {
    if (own_.size() >= kMaxSenders) own_.clear();
    it = own_.insert_or_assign(std::string(line.sender), Own{sender.id, after}).first;
  }
  // The proxy's commands run on their connection in the order sent: the line is the first of
  // those not yet behind that it equals (any before it did not show, say refused).
  for (const OwnConnections::Command& c : sender.sent) {
    if (c.args.size() != line.argc) continue;
    if (c.args == line.args) {
      it->second.cursor = c.seq;
      return true;
    }
  }
  return false;
}

bool MonitorFilter::MarkedBackground(std::string_view sender, uint64_t now_ms) {
  auto it = background_.find(std::string(sender));
  if (it == background_.end()) return false;
  if (now_ms - it->second > kForgetSenderMs) {
    background_.erase(it);
    return false;
  }
  it->second = now_ms;
  return true;
}

}  // namespace bloomproxy::proxy
