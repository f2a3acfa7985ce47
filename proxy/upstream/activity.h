// What the proxy knows of the upstream being busy on purpose, shared by every event loop of the
// process: commands in flight that may keep the whole server busy (a script, DEBUG SLEEP, SAVE),
// and a CLIENT PAUSE sent through the proxy.
//
// The stall check (UpstreamPool::CheckTimeouts) reads it: while the upstream is busy on purpose,
// a shared connection that hears nothing is waiting, not stalled. Dispatch reads the pause: while
// the upstream holds back writes, writes go on connections of their own, so that reads queued
// behind them on a shared connection are answered as Redis answers them.
#pragma once

#include <cstdint>

namespace bloomproxy::proxy {

class UpstreamActivity {
 public:
  // A command that may stall the server went upstream / has its reply (or was abandoned).
  static void BeginStallingCommand();
  static void EndStallingCommand();
  static bool StallingCommandRunning();

  // CLIENT PAUSE <ms> [WRITE|ALL] was accepted by the upstream (now_ms: MonotonicMs()).
  static void Paused(uint64_t now_ms, uint64_t timeout_ms, bool writes_only);
  // CLIENT UNPAUSE was accepted.
  static void Unpaused();
  // A pause of any kind is in effect.
  static bool PauseActive(uint64_t now_ms);
  // Writes are held back upstream now (a WRITE pause; an ALL pause holds back everything, and
  // then moving writes elsewhere helps nobody).
  static bool WritesPaused();

  // Writes in flight on shared connections (any loop). A CLIENT PAUSE WRITE waits until they
  // are answered before it goes upstream: one held there would hold every read queued behind
  // it on its connection.
  static void BeginSharedWrite();
  static void EndSharedWrite();
  static int64_t SharedWrites();

  // Process-wide monotonic milliseconds (every loop's uv_now differs a little).
  static uint64_t MonotonicMs();
};

}  // namespace bloomproxy::proxy
