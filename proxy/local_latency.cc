#include "proxy/local_latency.h"

#include <mutex>
#include <string>

namespace bloomproxy::proxy {
namespace {

std::mutex g_mutex;
protocol::LatencyTable& Table() {
  static auto* table = new protocol::LatencyTable();
  return *table;
}

}  // namespace

void LocalLatency::Record(std::string_view full_name, uint64_t nanos) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = Table().find(full_name);
  if (it == Table().end())
    it = Table().emplace(std::string(full_name), protocol::LatencyCounts{}).first;
  it->second.Record(nanos);
}

void LocalLatency::Reset() {
  std::lock_guard<std::mutex> lock(g_mutex);
  Table().clear();
}

protocol::LatencyTable LocalLatency::Snapshot() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return Table();
}

}  // namespace bloomproxy::proxy
