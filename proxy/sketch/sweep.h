// The leftover sweep: a command the proxy does not intercept (SET, RESTORE REPLACE, a script,
// another client on the upstream) can overwrite a filter's or a sketch's name and leave its
// internal keys behind, with no TTL. Checking every such command would cost every SET a round
// trip, so the keys nobody owns are found afterwards, by a background pass over the keyspace
// (docs/leftovers.md has the bound, the lock and the limits; filters/common/sweep.h says who owns
// what).
//
//   every sweep-interval:  EVAL <lock> (SET NX PX, renewed by its holder) ── not ours: wait
//   a pass, per master, on a connection of its own (CLIENT NO-TOUCH where Redis has it):
//     SCRIPT LOAD <sweep script>; INFO keyspace; then for each database with keys:
//       SELECT db; SCAN cursor MATCH *:[bc][fm]*:* COUNT rate/10 (at most 10 a second)
//         ─► EVALSHA <sweep> per slot: the internal keys found, each checked against its owners
//
// A key nobody owns is only noted on first sight. It is deleted (by the same script, which
// checks again in the same atomic step) once seen unowned again at least sweep-grace later: a
// filter's creation writes its data keys before its name, and must not lose them meanwhile.
#pragma once

#include <uv.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "filters/common/sweep.h"
#include "proxy/upstream/reply_sink.h"
#include "proxy/upstream/upstream.h"

namespace bloomproxy::proxy {

class Server;

// What the passes did so far (for logs and tests).
struct SweepStats {
  uint64_t passes = 0;   // passes finished
  uint64_t checked = 0;  // internal keys checked
  uint64_t deleted = 0;  // keys nobody owned, deleted
};

class Sweep : public ReplySink {
 public:
  explicit Sweep(Server* server);
  ~Sweep() override;
  Sweep(const Sweep&) = delete;
  Sweep& operator=(const Sweep&) = delete;

  // Whether the server's options ask for a sweep that can run: sweep-interval > 0, an upstream
  // that is Redis or a Redis Cluster (a sharding proxy refuses SCAN and scripts without keys),
  // and BF.* or CMS.* emulated.
  static bool Wanted(const Server& server);
  // Starts the interval timer; the first pass is one interval after the start.
  void Start();
  // Closes the timers and the pass's connections (their requests are answered with errors at
  // once); nothing is sent afterwards. Call before the pools close.
  void Stop();

  void OnPart(uint32_t part, std::string_view frame) override;
  size_t hint() const override { return 0; }

  const SweepStats& stats() const { return stats_; }

 private:
  // What a reply on a master's connection answers.
  enum class Expect : uint8_t { kIgnore, kLoad, kKeyspace, kSelect, kScan, kCheck };
  // One master's part of a pass.
  struct Node {
    UpstreamPool* pool = nullptr;
    UpstreamRef conn;
    std::deque<std::pair<Expect, size_t>> expect;  // in order; size_t: the check's group
    std::string sha;
    std::vector<int> dbs;
    size_t db_index = 0;
    std::string cursor = "0";
    bool ready = false;  // waiting for the next pace tick to SCAN
    bool done = false;
    bool failed = false;
    // The SCAN batch being checked: its keys, their owners, and the entries of each request.
    std::vector<std::string> keys;
    std::vector<filters::SweepKey> parsed;
    std::vector<std::vector<size_t>> groups;
    size_t groups_left = 0;
  };
  // A key seen with nobody owning it: when first, and the last pass that saw it so.
  struct Seen {
    uint64_t first_ms = 0;
    uint64_t pass = 0;
  };

  static void OnTick(uv_timer_t* t);
  static void OnPace(uv_timer_t* t);
  void SendLock();
  void OnLock(std::string_view frame);
  void StartPass();
  void StartNode(size_t i);
  void Send(size_t i, const std::string& request, Expect expect, size_t group = 0);
  void OnReply(size_t i, Expect expect, size_t group, std::string_view frame);
  void NextDatabase(size_t i);
  void Scan(size_t i);
  void OnScan(size_t i, std::string_view frame);
  void OnCheck(size_t i, size_t group, std::string_view frame);
  // The batch is checked: the next SCAN at the next pace tick, or the next database.
  void BatchDone(size_t i);
  void Fail(size_t i, std::string_view why);
  void FinishNode(size_t i);
  void MaybeEndPass();
  std::string SeenKey(const Node& node, std::string_view key) const;

  Server* server_;
  const uint64_t interval_ms_;
  const uint64_t grace_ms_;
  const uint64_t count_;  // SCAN COUNT per call
  const std::string owner_;
  uv_timer_t tick_;
  uv_timer_t pace_;
  bool started_ = false;
  bool stopped_ = false;
  bool lock_pending_ = false;
  bool running_ = false;
  uint64_t pass_ = 0;
  uint64_t pass_started_ms_ = 0;
  std::vector<Node> nodes_;
  std::unordered_map<std::string, Seen> seen_;
  SweepStats stats_;
  uint64_t pass_checked_ = 0;
  uint64_t pass_deleted_ = 0;
};

}  // namespace bloomproxy::proxy
