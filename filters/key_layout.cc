#include "filters/key_layout.h"

#include <array>

namespace bloomproxy::filters {
namespace {

constexpr size_t kSlots = 16384;
constexpr size_t kTagLength = 4;
constexpr std::string_view kTagAlphabet = "0123456789abcdefghijklmnopqrstuvwxyz";

// CRC16-CCITT (XMODEM): polynomial 0x1021, initial value 0, no reflection, no final xor; the
// table Redis's crc16.c spells out, generated here instead.
constexpr std::array<uint16_t, 256> MakeCrc16Table() {
  std::array<uint16_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t crc = i << 8;
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 0x8000) != 0 ? (crc << 1) ^ 0x1021 : crc << 1;
    }
    table[i] = static_cast<uint16_t>(crc & 0xffff);
  }
  return table;
}
constexpr std::array<uint16_t, 256> kCrc16Table = MakeCrc16Table();

// cluster.c keyHashSlot: the hashed part is the text between the first '{' and the first '}'
// after it, when that text is non-empty; otherwise the whole key.
std::string_view HashTag(std::string_view key, bool* has_tag) {
  *has_tag = false;
  const size_t open = key.find('{');
  if (open == std::string_view::npos) return key;
  const size_t close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) return key;
  *has_tag = true;
  return key.substr(open + 1, close - open - 1);
}

// For each slot, the first 4-character tag over [0-9a-z] (counting in base 36, first character
// most significant: "0000", "0001", ..., "zzzz") that hashes to it. 36^4 = 1,679,616 candidates
// cover all 16384 slots (the unit test checks); built once, on first use (thread-safe static).
using TagTable = std::array<std::array<char, kTagLength>, kSlots>;
const TagTable& SlotTags() {
  static const TagTable table = [] {
    TagTable t{};
    std::array<bool, kSlots> found{};
    size_t remaining = kSlots;
    const size_t base = kTagAlphabet.size();
    const size_t total = base * base * base * base;
    for (size_t n = 0; n < total && remaining > 0; ++n) {
      std::array<char, kTagLength> tag;
      size_t v = n;
      for (size_t i = kTagLength; i-- > 0;) {
        tag[i] = kTagAlphabet[v % base];
        v /= base;
      }
      const uint16_t slot = Crc16(std::string_view(tag.data(), tag.size())) & (kSlots - 1);
      if (!found[slot]) {
        found[slot] = true;
        t[slot] = tag;
        --remaining;
      }
    }
    return t;
  }();
  return table;
}

}  // namespace

uint16_t Crc16(std::string_view data) {
  uint16_t crc = 0;
  for (const char c : data) {
    const auto byte = static_cast<unsigned char>(c);
    crc = static_cast<uint16_t>((crc << 8) ^ kCrc16Table[((crc >> 8) ^ byte) & 0xff]);
  }
  return crc;
}

uint16_t KeySlot(std::string_view key) {
  bool has_tag = false;
  return Crc16(HashTag(key, &has_tag)) & (kSlots - 1);
}

// The prefix keeps every data key in the name's slot, because the prefix's own tag decides the
// slot whatever follows it:
//   1. the name has a tag:                    the name itself (its tag is the first one)
//   2. non-empty, no '{' and no '}':          "{name}" (the tag is the whole name)
//   3. otherwise (empty, or braces, no tag):  "{T}name", T from SlotTags() for the name's slot
// The mapping is not injective across rules ("users" and "{users}" both give "{users}"); the
// random filter id in every data key keeps such filters apart.
std::string DataKeyPrefix(std::string_view name) {
  bool has_tag = false;
  HashTag(name, &has_tag);
  if (has_tag) return std::string(name);
  if (!name.empty() && name.find_first_of("{}") == std::string_view::npos) {
    std::string prefix;
    prefix.reserve(name.size() + 2);
    prefix.push_back('{');
    prefix.append(name);
    prefix.push_back('}');
    return prefix;
  }
  const auto& tag = SlotTags()[KeySlot(name)];
  std::string prefix;
  prefix.reserve(name.size() + kTagLength + 2);
  prefix.push_back('{');
  prefix.append(tag.data(), tag.size());
  prefix.push_back('}');
  prefix.append(name);
  return prefix;
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

}  // namespace bloomproxy::filters
