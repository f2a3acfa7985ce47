#include "proxy/upstream/pin_registry.h"

#include <mutex>
#include <unordered_map>

namespace bloomproxy::proxy {
namespace {

std::mutex g_mutex;
std::unordered_map<uint64_t, PinRegistry::Entry>& Entries() {
  static auto* entries = new std::unordered_map<uint64_t, PinRegistry::Entry>();
  return *entries;
}

}  // namespace

void PinRegistry::Set(uint64_t client_id, const Entry& entry) {
  std::lock_guard<std::mutex> lock(g_mutex);
  Entries()[client_id] = entry;
}

void PinRegistry::Clear(uint64_t client_id) {
  std::lock_guard<std::mutex> lock(g_mutex);
  Entries().erase(client_id);
}

void PinRegistry::LearnId(uint64_t client_id, const std::string& address, int64_t upstream_id) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = Entries().find(client_id);
  if (it != Entries().end() && it->second.address == address) it->second.upstream_id = upstream_id;
}

bool PinRegistry::Find(uint64_t client_id, Entry* out) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = Entries().find(client_id);
  if (it == Entries().end()) return false;
  *out = it->second;
  return true;
}

}  // namespace bloomproxy::proxy
