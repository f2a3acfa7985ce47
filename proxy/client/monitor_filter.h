// What a client's MONITOR through the proxy shows: the upstream's stream less the proxy's own
// traffic, so that it shows what reached Redis for the clients (BF.* plans' commands and the key
// scripts included, docs/connections.md). Hidden:
//
//   - every line of the proxy's background connections (OwnConnections kBackground: a sweep
//     pass, the stall check's probe);
//   - on the connections that carry clients' commands: CLIENT SETNAME and CLIENT ID (the proxy
//     answers clients' own, so these are always the proxy's), and the commands OwnConnections
//     recorded as the proxy's (AUTH, INFO, HELLO 3, the PING before WAIT, CLUSTER SLOTS) when
//     sent after this MONITOR started;
//   - any bloomproxy's sweep, also another process's, by content (filters::RecogniseSweep): the
//     lock's EVAL anywhere; a pass's commands, and then every later line of their sender, which
//     carries nothing else; and a sender that names itself kBackgroundName, likewise;
//   - the "[db lua]" lines of a hidden script: they follow its line (Redis feeds EVAL and
//     EVALSHA to monitors before running them).
//
// The monitor's own connection's lines always show. Not hidden: another process's setup
// commands, and (over a Unix socket, where every client is "unix:/path") anything not
// recognised by content. Pure but for OwnConnections (given, so tests bring their own).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "protocol/monitor_line.h"
#include "proxy/upstream/own_connections.h"

namespace bloomproxy::proxy {

class MonitorFilter {
 public:
  // `upstream`: the monitor's upstream (its name in `registry`); `self`: the monitor's own
  // connection's local address; `since`: registry->Now() when MONITOR's +OK came.
  MonitorFilter(const OwnConnections* registry, std::string upstream, std::string self,
                uint64_t since);

  // Whether the monitor's client is to see `frame`, a line of MONITOR's output. `now_ms`
  // (any monotonic clock) ages the other processes' background senders out.
  bool Shows(std::string_view frame, uint64_t now_ms);

  // Another process's background sender silent this long is forgotten.
  static constexpr uint64_t kForgetSenderMs = 60000;

 private:
  // A connection of this proxy's seen in the stream: which one, and the last of its recorded
  // commands hidden (those before it are behind).
  struct Own {
    uint64_t id = 0;
    uint64_t cursor = 0;
  };
  bool Hides(const protocol::MonitorLine& line, uint64_t now_ms);
  bool HidesOwn(const protocol::MonitorLine& line);
  bool MarkedBackground(std::string_view sender, uint64_t now_ms);

  const OwnConnections* registry_;
  const std::string upstream_;
  const std::string self_;
  const uint64_t since_;
  bool in_hidden_script_ = false;  // the last line not from a script was hidden
  std::unordered_map<std::string, Own> own_;
  std::unordered_map<std::string, uint64_t> background_;  // other processes': last seen (ms)
  protocol::MonitorLine line_;                            // reused
};

}  // namespace bloomproxy::proxy
