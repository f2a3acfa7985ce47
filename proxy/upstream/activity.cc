#include "proxy/upstream/activity.h"

#include <uv.h>

#include <atomic>

namespace bloomproxy::proxy {
namespace {

std::atomic<int64_t> g_stalling{0};

// Writes in flight on shared connections, counted per thread (every write command of every
// loop counts: one counter for all would bounce between the cores) and summed when a CLIENT
// PAUSE asks. A thread's count may go below zero when a slot dies on another thread; the sum
// is right.
struct alignas(64) WriteCount {
  std::atomic<int64_t> n{0};
};
constexpr int kWriteCounts = 64;
WriteCount g_write_counts[kWriteCounts];
std::atomic<int> g_next_write_count{0};
thread_local WriteCount* t_write_count = nullptr;

WriteCount& ThisThreadsWrites() {
  if (t_write_count == nullptr) {
    t_write_count = &g_write_counts[g_next_write_count.fetch_add(1) % kWriteCounts];
  }
  return *t_write_count;
}

// The pause: until when (MonotonicMs), and whether only writes wait. 0 = none.
std::atomic<uint64_t> g_pause_until{0};
std::atomic<bool> g_pause_writes_only{false};

}  // namespace

void UpstreamActivity::BeginStallingCommand() { g_stalling.fetch_add(1); }

void UpstreamActivity::EndStallingCommand() { g_stalling.fetch_sub(1); }

bool UpstreamActivity::StallingCommandRunning() { return g_stalling.load() > 0; }

void UpstreamActivity::Paused(uint64_t now_ms, uint64_t timeout_ms, bool writes_only) {
  // As Redis's pauseClients: a pause only ever gets longer or stronger (ALL over WRITE).
  const bool active = PauseActive(now_ms);
  g_pause_writes_only.store(writes_only && (!active || g_pause_writes_only.load()));
  uint64_t until = g_pause_until.load();
  const uint64_t end = now_ms + timeout_ms;
  while ((!active || end > until) && !g_pause_until.compare_exchange_weak(until, end)) {
  }
}

void UpstreamActivity::Unpaused() { g_pause_until.store(0); }

bool UpstreamActivity::PauseActive(uint64_t now_ms) { return now_ms < g_pause_until.load(); }

bool UpstreamActivity::WritesPaused() {
  // Every write asks: the clock is read only while a pause is known, and an ended one is
  // forgotten.
  uint64_t until = g_pause_until.load(std::memory_order_relaxed);
  if (until == 0) return false;
  if (MonotonicMs() >= until) {
    g_pause_until.compare_exchange_strong(until, 0);
    return false;
  }
  return g_pause_writes_only.load();
}

void UpstreamActivity::BeginSharedWrite() {
  ThisThreadsWrites().n.fetch_add(1, std::memory_order_relaxed);
}

void UpstreamActivity::EndSharedWrite() {
  ThisThreadsWrites().n.fetch_sub(1, std::memory_order_relaxed);
}

int64_t UpstreamActivity::SharedWrites() {
  int64_t sum = 0;
  for (const WriteCount& c : g_write_counts) sum += c.n.load(std::memory_order_relaxed);
  return sum;
}

uint64_t UpstreamActivity::MonotonicMs() { return uv_hrtime() / 1000000; }

}  // namespace bloomproxy::proxy
