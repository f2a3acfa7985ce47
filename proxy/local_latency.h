// The latencies of the commands the proxy answers itself, for every event loop of the process
// (protocol/latency_histogram.h): LATENCY HISTOGRAM joins them to the upstream's, CONFIG
// RESETSTAT clears them with the upstream's.
#pragma once

#include <cstdint>
#include <string_view>

#include "protocol/latency_histogram.h"

namespace bloomproxy::proxy {

class LocalLatency {
 public:
  // `full_name` ("ping", "client|id") took `nanos` to answer.
  static void Record(std::string_view full_name, uint64_t nanos);
  static void Reset();
  static protocol::LatencyTable Snapshot();
};

}  // namespace bloomproxy::proxy
