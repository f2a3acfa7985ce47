// Redis Cluster's key slots: CRC16 (XMODEM) of the key's hash tag, modulo 16384
// (cluster.c keyHashSlot). Pure; used by the router (proxy/) and by the filters' key layout.
#pragma once

#include <cstdint>
#include <string_view>

namespace bloomproxy::protocol {

constexpr int kClusterSlots = 16384;

// CRC16-CCITT (XMODEM): polynomial 0x1021, initial 0, no reflection, no final xor.
uint16_t Crc16(std::string_view data);

// The hashed part of `key`: the text between the first '{' and the first '}' after it when
// that text is non-empty, else the whole key. *has_tag says which.
std::string_view HashTag(std::string_view key, bool* has_tag);

// The cluster slot of `key`.
uint16_t KeySlot(std::string_view key);

// The first 4-character tag over [0-9a-z] (counting in base 36: "0000", "0001", ...) that
// hashes to `slot`: "{" + SlotTag(s) + "}..." is a key of slot s. Built once, on first use.
std::string_view SlotTag(int slot);

}  // namespace bloomproxy::protocol
