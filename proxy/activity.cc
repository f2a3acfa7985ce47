#include "proxy/activity.h"

#include <uv.h>

#include <atomic>

namespace bloomproxy::proxy {
namespace {

std::atomic<int64_t> g_stalling{0};
std::atomic<int64_t> g_shared_writes{0};
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

bool UpstreamActivity::WritesPaused(uint64_t now_ms) {
  return PauseActive(now_ms) && g_pause_writes_only.load();
}

void UpstreamActivity::BeginSharedWrite() { g_shared_writes.fetch_add(1); }

void UpstreamActivity::EndSharedWrite() { g_shared_writes.fetch_sub(1); }

int64_t UpstreamActivity::SharedWrites() { return g_shared_writes.load(); }

uint64_t UpstreamActivity::MonotonicMs() { return uv_hrtime() / 1000000; }

}  // namespace bloomproxy::proxy
