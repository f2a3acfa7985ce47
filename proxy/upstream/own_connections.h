// Every upstream connection the proxy opens, in every thread (the loops share one registry), by
// the name a MONITOR line gives its sender: the upstream's address and the connection's local
// ip:port ("127.0.0.1:52000", as Redis prints its peer). The upstream is part of the key since
// connections to two cluster nodes can share a local port. proxy/client/monitor_filter.h reads it
// to take the proxy's own traffic out of its clients' MONITORs:
//
//   kBackground connections (a sweep pass, the stall check's probe) carry only the proxy's
//     commands: all their lines are hidden. They are also named kBackgroundName (CLIENT
//     SETNAME), so that other proxies recognise them.
//   kClients connections (shared, pinned) carry clients' commands and a few of the proxy's own,
//     which are recorded here when sent (Sent): the handshake (AUTH, INFO, HELLO 3), the PING
//     before WAIT, CLUSTER SLOTS. A MONITOR hides those sent after it started.
//
// A closed connection's entry is kept for a while (kKeepClosedMs), since a MONITOR may read its
// last lines after it closed; a new connection with the same address replaces it. Thread-safe.
// Over a Unix socket Redis names every client alike ("unix:/path"): such connections are not
// registered.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace bloomproxy::proxy {

// The name of the proxy's background connections (CLIENT SETNAME).
inline constexpr std::string_view kBackgroundName = "bloomproxy:background";

class OwnConnections {
 public:
  enum class Role : uint8_t { kClients, kBackground };
  // A command the proxy sent on a kClients connection, as MONITOR shows it
  // (protocol::MonitorArgs), and when (Now()).
  struct Command {
    uint64_t seq = 0;
    std::vector<std::string> args;
  };
  // What Find tells about a sender.
  struct Sender {
    uint64_t id = 0;  // the connection (a new connection at the same address gets another)
    Role role = Role::kClients;
    std::vector<Command> sent;  // the proxy's commands sent on it after Find's `after`, in order
  };

  static constexpr uint64_t kKeepClosedMs = 60000;
  static constexpr size_t kMaxSent = 16;  // per connection, the latest

  // The registry of this process.
  static OwnConnections& Global();

  // The registry's clock: each call returns a larger number. A MONITOR reads it when its +OK
  // comes; a command Sent later runs after the MONITOR started.
  uint64_t Now() { return ++clock_; }

  // A connection to `upstream` (UpstreamKey) from `local` is open; its id for Sent and Closed.
  uint64_t Opened(std::string_view upstream, std::string_view local, Role role);
  void Sent(uint64_t id, std::vector<std::string> args);
  void Closed(uint64_t id);

  // The connection `local` to `upstream`, if it is (or was lately) the proxy's.
  bool Find(std::string_view upstream, std::string_view local, uint64_t after, Sender* out) const;

  size_t size() const;

 private:
  struct Entry {
    uint64_t id = 0;
    Role role = Role::kClients;
    std::deque<Command> sent;
  };
  static std::string Key(std::string_view upstream, std::string_view local);
  static uint64_t MonotonicMs();
  void ForgetClosed(uint64_t now_ms);

  std::atomic<uint64_t> clock_{0};
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
  std::unordered_map<uint64_t, std::string> keys_;    // id -> key, while open or kept
  std::deque<std::pair<uint64_t, uint64_t>> closed_;  // (closed at, id), oldest first
};

}  // namespace bloomproxy::proxy
