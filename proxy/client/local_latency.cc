#include "proxy/client/local_latency.h"

#include <string>
#include <vector>

namespace bloomproxy::proxy {
namespace {

std::mutex g_tables_mutex;  // the list below, not the tables
std::vector<LocalLatency*>& Tables() {
  static auto* tables = new std::vector<LocalLatency*>();
  return *tables;
}

}  // namespace

LocalLatency::LocalLatency() {
  std::lock_guard<std::mutex> lock(g_tables_mutex);
  Tables().push_back(this);
}

LocalLatency::~LocalLatency() {
  std::lock_guard<std::mutex> lock(g_tables_mutex);
  std::vector<LocalLatency*>& tables = Tables();
  for (size_t i = 0; i < tables.size(); ++i) {
    if (tables[i] == this) {
      tables.erase(tables.begin() + static_cast<ptrdiff_t>(i));
      break;
    }
  }
}

void LocalLatency::Record(const protocol::CommandInfo* command, uint64_t nanos) {
  std::lock_guard<std::mutex> lock(mutex_);
  counts_[command].Record(nanos);
}

protocol::LatencyTable LocalLatency::Snapshot() {
  protocol::LatencyTable out;
  std::lock_guard<std::mutex> lock(g_tables_mutex);
  for (LocalLatency* t : Tables()) {
    std::lock_guard<std::mutex> table_lock(t->mutex_);
    for (const auto& [command, counts] : t->counts_) {
      protocol::LatencyCounts& sum = out[std::string(command->name)];
      sum.calls += counts.calls;
      for (size_t b = 0; b < protocol::LatencyCounts::kBuckets; ++b) {
        sum.buckets[b] += counts.buckets[b];
      }
    }
  }
  return out;
}

void LocalLatency::Reset() {
  std::lock_guard<std::mutex> lock(g_tables_mutex);
  for (LocalLatency* t : Tables()) {
    std::lock_guard<std::mutex> table_lock(t->mutex_);
    t->counts_.clear();
  }
}

}  // namespace bloomproxy::proxy
