#include "filters/common/key_layout.h"

#include <array>
#include <cinttypes>
#include <cstdio>
#include <random>

#include "protocol/key_slot.h"
#include "protocol/sharding_proxy.h"

namespace bloomproxy::filters {

// The prefix keeps every data key in the name's slot, because the prefix's own tag decides the
// slot whatever follows it:
//   1. the name has a tag:                    the name itself (its tag is the first one)
//   2. non-empty, no '{' and no '}':          "{name}" (the tag is the whole name)
//   3. otherwise (empty, or braces, no tag):  "{T}name", T from protocol::SlotTag() for the name's
//   slot
// The mapping is not injective across rules ("users" and "{users}" both give "{users}"); the
// random filter id in every data key keeps such filters apart.
std::string DataKeyPrefix(std::string_view name) {
  bool has_tag = false;
  protocol::HashTag(name, &has_tag);
  if (has_tag) return std::string(name);
  if (!name.empty() && name.find_first_of("{}") == std::string_view::npos) {
    std::string prefix;
    prefix.reserve(name.size() + 2);
    prefix.push_back('{');
    prefix.append(name);
    prefix.push_back('}');
    return prefix;
  }
  const std::string_view tag = protocol::SlotTag(protocol::KeySlot(name));
  std::string prefix;
  prefix.reserve(name.size() + tag.size() + 2);
  prefix.push_back('{');
  prefix.append(tag.data(), tag.size());
  prefix.push_back('}');
  prefix.append(name);
  return prefix;
}

bool KeptWholeBehindShardingProxy(std::string_view name) {
  // The marker holds the name twice; ":bf:m:", braces, and a data key's id, link and shard
  // numbers take less than 100 bytes.
  static_assert(2 * kShardingProxyMaxName + 100 < protocol::kShardingProxyMaxKey);
  if (name.size() > kShardingProxyMaxName) return false;
  bool has_tag = false;
  protocol::HashTag(name, &has_tag);
  return has_tag || (!name.empty() && name.find_first_of("{}") == std::string_view::npos);
}

std::string BitsKey(std::string_view prefix, std::string_view id, size_t link, size_t shard) {
  std::string key(prefix);
  key.append(":bf:");
  key.append(id);
  key.push_back(':');
  key.append(std::to_string(link));
  key.push_back('.');
  key.append(std::to_string(shard));
  return key;
}

std::string CountKey(std::string_view prefix, std::string_view id, size_t link) {
  std::string key(prefix);
  key.append(":bf:");
  key.append(id);
  key.push_back(':');
  key.append(std::to_string(link));
  key.append(":n");
  return key;
}

std::string MarkerKey(std::string_view prefix, std::string_view name) {
  std::string key(prefix);
  key.append(":bf:m:");
  key.append(name);
  return key;
}

std::string CmsMarkerKey(std::string_view prefix, std::string_view name) {
  std::string out(prefix);
  out += ":cms:m:";
  out += name;
  return out;
}

std::string CfMarkerKey(std::string_view prefix, std::string_view name) {
  std::string out(prefix);
  out += ":cf:m:";
  out += name;
  return out;
}

std::string TopkMarkerKey(std::string_view prefix, std::string_view name) {
  std::string out(prefix);
  out += ":tk:m:";
  out += name;
  return out;
}

std::string TdigestMarkerKey(std::string_view prefix, std::string_view name) {
  std::string out(prefix);
  out += ":td:m:";
  out += name;
  return out;
}

std::string NewId() {
  static std::mt19937_64 rng{std::random_device{}()};
  char buf[20];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64, rng());
  return buf;
}

}  // namespace bloomproxy::filters
