#include "protocol/key_slot.h"

#include <array>

namespace bloomproxy::protocol {
namespace {

// The table Redis's crc16.c spells out, generated here instead (same polynomial and order).
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

constexpr size_t kSlots = kClusterSlots;
constexpr size_t kTagLength = 4;
constexpr std::string_view kTagAlphabet = "0123456789abcdefghijklmnopqrstuvwxyz";

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
      const uint16_t slot =
          protocol::Crc16(std::string_view(tag.data(), tag.size())) & (kSlots - 1);
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

// As cluster.c keyHashSlot: only the first '{' counts, and an empty tag ("{}") means no tag, so
// "foo{}{bar}" hashes whole while "foo{{bar}}zap" hashes "{bar".
std::string_view HashTag(std::string_view key, bool* has_tag) {
  *has_tag = false;
  const size_t open = key.find('{');
  if (open == std::string_view::npos) return key;
  const size_t close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) return key;
  *has_tag = true;
  return key.substr(open + 1, close - open - 1);
}

uint16_t KeySlot(std::string_view key) {
  bool has_tag = false;
  // kClusterSlots is a power of two: the mask is the modulo.
  return Crc16(HashTag(key, &has_tag)) & (kClusterSlots - 1);
}

std::string_view SlotTag(int slot) {
  const auto& tag = SlotTags()[static_cast<size_t>(slot) & (kSlots - 1)];
  return std::string_view(tag.data(), tag.size());
}

}  // namespace bloomproxy::protocol
