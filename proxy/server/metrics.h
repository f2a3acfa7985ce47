// Counters the event loops update on the hot path and the admin port (proxy/server/admin_http.h)
// reads, and their exposition in the Prometheus text format 0.0.4.
//
// Every loop (Server) has its own LoopMetrics and Stats, written only by that loop's thread.
// The admin port runs on the first loop and adds up all of them when /metrics is scraped.
//
//   loop 0 ── LoopMetrics ─┐
//   loop 1 ── LoopMetrics ─┼─ Snapshot (admin_http.cc, on loop 0) ── FormatMetrics ── text
//   loop N ── LoopMetrics ─┘
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace bloomproxy::protocol {
struct CommandInfo;
}

namespace bloomproxy::proxy {

// A counter (or gauge) written by one thread, its event loop, and read by another, the admin
// port on the first loop. With a single writer a relaxed load and store lose no update, and
// they compile to plain moves on x86-64 and ARM64: no locked instruction, no shared cache line
// bounced between loops (each loop has its own counters). The reader sees every value whole,
// perhaps a moment old, which is all a scrape needs.
class RelaxedCounter {
 public:
  constexpr RelaxedCounter(uint64_t v = 0) : v_(v) {}  // NOLINT: `RelaxedCounter n = 0;`
  RelaxedCounter(const RelaxedCounter&) = delete;
  RelaxedCounter& operator=(const RelaxedCounter&) = delete;
  RelaxedCounter& operator++() {
    Add(1);
    return *this;
  }
  void Add(uint64_t n) {
    v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  void Sub(uint64_t n) {
    v_.store(v_.load(std::memory_order_relaxed) - n, std::memory_order_relaxed);
  }
  RelaxedCounter& operator+=(uint64_t n) {
    Add(n);
    return *this;
  }
  void Set(uint64_t n) { v_.store(n, std::memory_order_relaxed); }
  uint64_t Get() const { return v_.load(std::memory_order_relaxed); }
  operator uint64_t() const { return Get(); }  // NOLINT: reads like the plain counter it was

 private:
  std::atomic<uint64_t> v_{0};
};

// The upper bounds of bloomproxy_command_duration_seconds's buckets, in nanoseconds, from
// 100 µs to 1 s (a proxied GET takes some tens of microseconds, a BF.ADD one round trip more).
inline constexpr std::array<uint64_t, 13> kDurationBoundsNs = {
    100'000,    250'000,    500'000,     1'000'000,   2'500'000,   5'000'000,    10'000'000,
    25'000'000, 50'000'000, 100'000'000, 250'000'000, 500'000'000, 1'000'000'000};
inline constexpr size_t kDurationBuckets = kDurationBoundsNs.size() + 1;  // + the +Inf bucket

// The label values of the command metrics, as small numbers: the command table's commands
// (top-level names: "client", not "client|list"), the RedisBloom family's module commands
// (bf.*, cf.*, cms.*, topk.*, tdigest.*), and "unknown" for anything else, so a client sending
// random names cannot grow the label set.
namespace command_ids {
// The id of a command of the table (its top-level row).
uint16_t ForInfo(const protocol::CommandInfo* info);
// The id of a command outside the table by its lower-case name: a module's, else Unknown().
uint16_t ForName(std::string_view lower_name);
uint16_t Unknown();
size_t Count();
std::string_view Name(uint16_t id);
}  // namespace command_ids

// One command's counters. Buckets are not cumulative here: bucket i counts durations in
// (bound[i-1], bound[i]]; the last one those above 1 s. The exposition adds them up.
struct CommandCounters {
  RelaxedCounter calls;
  RelaxedCounter errors;
  RelaxedCounter sum_ns;
  std::array<RelaxedCounter, kDurationBuckets> buckets;
};

// The metrics of one event loop. Only its loop writes; any thread may read.
class LoopMetrics {
 public:
  LoopMetrics();

  // A client command's reply is complete: it took `ns` (loop clock), and was an error or not.
  void Record(uint16_t id, uint64_t ns, bool error) {
    CommandCounters& c = commands_[id];
    ++c.calls;
    if (error) ++c.errors;
    c.sum_ns.Add(ns);
    size_t b = 0;
    while (b < kDurationBoundsNs.size() && ns > kDurationBoundsNs[b]) ++b;
    ++c.buckets[b];
  }
  const CommandCounters& command(uint16_t id) const { return commands_[id]; }

  // Monotonic time in ns, read once per loop turn (NewTurn starts a turn): a pipeline of a
  // thousand commands costs one clock read, not two thousand. Good to a loop turn, which is
  // what the proxy can observe of a command anyway.
  uint64_t NowNs() {
    if (now_ns_ == 0) now_ns_ = ReadClockNs();
    return now_ns_;
  }
  void NewTurn() { now_ns_ = 0; }

  RelaxedCounter connected_clients;  // Client objects alive on this loop
  RelaxedCounter upstream_requests;  // requests queued on upstream connections

 private:
  static uint64_t ReadClockNs();

  std::unique_ptr<CommandCounters[]> commands_;
  uint64_t now_ns_ = 0;
};

// What /metrics shows, added up over the loops (admin_http.cc builds it).
struct MetricsSnapshot {
  struct Command {
    std::string_view name;
    uint64_t calls = 0;
    uint64_t errors = 0;
    uint64_t sum_ns = 0;
    std::array<uint64_t, kDurationBuckets> buckets{};  // not cumulative
  };
  struct Upstream {
    std::string address;  // "host:port" (or "unix:/path")
    bool up = false;
  };
  std::string version;
  std::string mode;  // standalone | cluster
  std::string kind;  // upstream-kind: redis | sharding-proxy
  int threads = 1;
  std::vector<Command> commands;  // those called at least once, by name
  std::vector<Upstream> upstreams;
  uint64_t uptime_seconds = 0;
  uint64_t connected_clients = 0;
  uint64_t maxclients = 0;
  uint64_t connections_received = 0;
  uint64_t rejected_connections = 0;
  uint64_t commands_processed = 0;
  uint64_t upstream_requests = 0;
  uint64_t upstream_errors = 0;
  uint64_t sharding_proxy_refused = 0;
  uint64_t upstream_connections = 0;
  uint64_t upstream_pinned_connections = 0;
  uint64_t upstream_idle_pinned_connections = 0;
  uint64_t cluster_masters = 0;
  uint64_t cluster_masters_up = 0;
  uint64_t reloads_ok = 0;
  uint64_t reloads_error = 0;
  uint64_t resident_memory_bytes = 0;
  bool ready = false;
  bool draining = false;
};

// The Prometheus text exposition (format 0.0.4) of `s`: HELP and TYPE lines, label values
// escaped, histogram buckets cumulative with le="+Inf" equal to _count.
std::string FormatMetrics(const MetricsSnapshot& s);

// Escapes a label value (backslash, double quote, newline), as the text format asks.
std::string EscapeLabel(std::string_view v);

}  // namespace bloomproxy::proxy
