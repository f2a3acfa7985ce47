// The latencies of the commands the proxy answers itself (protocol/latency_histogram.h):
// LATENCY HISTOGRAM joins them to the upstream's, CONFIG RESETSTAT clears them with the
// upstream's.
//
// Every event loop (Server) records into its own table, keyed by the command's row in the
// command table, so a PING costs no string and meets no other loop's lock; a LATENCY HISTOGRAM
// adds up every loop's table.
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "protocol/command_table.h"
#include "protocol/latency_histogram.h"

namespace bloomproxy::proxy {

class LocalLatency {
 public:
  LocalLatency();  // joins the process's tables
  ~LocalLatency();
  LocalLatency(const LocalLatency&) = delete;
  LocalLatency& operator=(const LocalLatency&) = delete;

  // `command` (a command or subcommand of the table) was answered here in `nanos`.
  void Record(const protocol::CommandInfo* command, uint64_t nanos);

  // Every loop's, by Redis's full name ("client|id"); cleared (CONFIG RESETSTAT).
  static protocol::LatencyTable Snapshot();
  static void Reset();

 private:
  std::mutex mutex_;  // its loop's on each record; another loop's only to read or clear
  std::unordered_map<const protocol::CommandInfo*, protocol::LatencyCounts> counts_;
};

}  // namespace bloomproxy::proxy
