#include "proxy/upstream/own_connections.h"

#include <chrono>

namespace bloomproxy::proxy {

OwnConnections& OwnConnections::Global() {
  static OwnConnections* registry = new OwnConnections;  // never destroyed: threads may outlive
  return *registry;
}

std::string OwnConnections::Key(std::string_view upstream, std::string_view local) {
  std::string key(upstream);
  key.push_back(' ');
  key.append(local);
  return key;
}

uint64_t OwnConnections::MonotonicMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

uint64_t OwnConnections::Opened(std::string_view upstream, std::string_view local, Role role) {
  const uint64_t id = Now();
  std::string key = Key(upstream, local);
  std::lock_guard<std::mutex> lock(mu_);
  ForgetClosed(MonotonicMs());
  Entry& e = entries_[key];
  if (e.id != 0) keys_.erase(e.id);  // the old connection at this address is gone
  e = Entry{id, role, {}};
  keys_[id] = std::move(key);
  return id;
}

void OwnConnections::Sent(uint64_t id, std::vector<std::string> args) {
  const uint64_t seq = Now();
  std::lock_guard<std::mutex> lock(mu_);
  auto k = keys_.find(id);
  if (k == keys_.end()) return;
  Entry& e = entries_[k->second];
  e.sent.push_back({seq, std::move(args)});
  if (e.sent.size() > kMaxSent) e.sent.pop_front();
}

void OwnConnections::Closed(uint64_t id) {
  const uint64_t now = MonotonicMs();
  std::lock_guard<std::mutex> lock(mu_);
  if (keys_.count(id) != 0) closed_.emplace_back(now, id);
  ForgetClosed(now);
}

void OwnConnections::ForgetClosed(uint64_t now_ms) {
  while (!closed_.empty() && now_ms - closed_.front().first >= kKeepClosedMs) {
    const uint64_t id = closed_.front().second;
    closed_.pop_front();
    auto k = keys_.find(id);
    if (k == keys_.end()) continue;  // replaced by a newer connection at its address
    auto e = entries_.find(k->second);
    if (e != entries_.end() && e->second.id == id) entries_.erase(e);
    keys_.erase(k);
  }
}

bool OwnConnections::Find(std::string_view upstream, std::string_view local, uint64_t after,
                          Sender* out) const {
  const std::string key = Key(upstream, local);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return false;
  const Entry& e = it->second;
  out->id = e.id;
  out->role = e.role;
  out->sent.clear();
  for (const Command& c : e.sent) {
    if (c.seq > after) out->sent.push_back(c);
  }
  return true;
}

size_t OwnConnections::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

}  // namespace bloomproxy::proxy
