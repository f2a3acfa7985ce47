// The structures (filters, sketches) a proxy has seen, by name: their metadata, kept so that a
// command on a known structure costs one round trip. Plans validate what they use on every round
// trip (the structure's id), so a stale entry costs a retry, never a wrong answer.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace bloomproxy::filters {

template <typename Meta>
class MetaCache {
 public:
  // The entry for `name`, or null.
  std::shared_ptr<Meta> Find(std::string_view name) const {
    auto it = map_.find(std::string(name));
    return it == map_.end() ? nullptr : it->second;
  }
  // Sets the entry for `name`. Bounded: a proxy serving many structures keeps the recent ones;
  // clearing is cheap and safe, since every entry is validated on use anyway.
  void Put(std::string_view name, std::shared_ptr<Meta> meta) {
    if (map_.size() >= kMaxEntries) map_.clear();
    map_[std::string(name)] = std::move(meta);
  }
  // Drops the entry for `name`, if any.
  void Erase(std::string_view name) { map_.erase(std::string(name)); }
  // How many structures are cached.
  size_t size() const { return map_.size(); }

 private:
  static constexpr size_t kMaxEntries = 100000;
  std::unordered_map<std::string, std::shared_ptr<Meta>> map_;
};

}  // namespace bloomproxy::filters
