// LATENCY HISTOGRAM for the commands the proxy answers itself (CLIENT ID, CLIENT LIST, PING,
// ...): their latencies, kept as Redis keeps a command's, and joined to the upstream's reply.
//
// Redis records each call's duration in nanoseconds and reports, per command, "calls" and
// "histogram_usec": a map from bucket to the cumulative count of calls up to it, over buckets
// that double from 1024 ns (reported in microseconds, 1, 2, 4, 8, 16, 32, 65, 131, ...), listing
// only the buckets where the count grows. A command answered both here and upstream (PING on a
// client's own connection) gets one entry: calls and counts added.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/encoder.h"
#include "protocol/reply_decoder.h"

namespace bloomproxy::protocol {

// The calls of one command, per bucket (not cumulative).
struct LatencyCounts {
  static constexpr size_t kBuckets = 40;  // up to 1024 << 39 ns, about 6.5 days
  uint64_t calls = 0;
  std::array<uint64_t, kBuckets> buckets{};

  void Record(uint64_t nanos);
};

// Command full name ("ping", "client|id") to its counts.
using LatencyTable = std::map<std::string, LatencyCounts, std::less<>>;

// The bucket's bound in microseconds as Redis reports it.
int64_t LatencyBucketMicros(size_t bucket);

// Whether LATENCY HISTOGRAM's arguments (`names`, none: every command) ask for `full_name`:
// by its full name or, for a subcommand, by its container's ("client" asks for "client|id"),
// in any case.
bool LatencyHistogramAsks(const std::vector<std::string_view>& names, std::string_view full_name);

// The upstream's LATENCY HISTOGRAM reply (`frame`, RESP2 or RESP3) with the entries of `local`
// that `names` asks for joined to it, written in `resp`. The frame as it is when it is not a
// reply of that shape (an error).
std::string MergeLatencyHistogram(std::string_view frame, const LatencyTable& local,
                                  const std::vector<std::string_view>& names, Resp resp,
                                  ReplyDecoder* decoder);

}  // namespace bloomproxy::protocol
