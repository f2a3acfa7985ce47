// The check at the head of a windowed filter's lookup round (window_check.lua): one script that
// validates the name and every live slot against what the proxy knows of them, so that the
// slots' own lookup plans, sent in the same step right after it, read their bits with neither a
// validation nor STRLENs of their own (BfRequest::checked_outside). A round costs the check and
// one BITFIELD_RO per slot (per link and shard), where each slot's plan would send three
// commands. The proxy uses it when it knows every live slot: the metadata of each one it has
// seen (cached by the slots' plans), and none for those it expects missing.
//
//   EVALSHA <sha> <keys> name slot... shard...  bloomproxy 1 <id> <window> <slots>
//           (slot <id or ""> l<links> <shards> (shard <length>)...)...
//
// Pure; no sockets.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "filters/bloom/bf_meta.h"
#include "protocol/reply_decoder.h"

namespace bloomproxy::filters {

// One live slot as the proxy knows it.
struct CheckedSlot {
  std::string name;
  std::shared_ptr<const FilterMeta> meta;  // null: no such slot as far as the proxy knows
};

// Appends the check of windowed filter `name` (`filter`, its metadata) and `slots` to *out:
// EVALSHA, or with `body` EVAL (the server lacks the script).
void AppendWindowCheck(std::string* out, std::string_view name, const FilterMeta& filter,
                       const std::vector<CheckedSlot>& slots, bool body);

// Whether the check's reply says all is as the proxy knows (1); anything else (-1, -2, an error
// reply) sends the round to the slots' plans with their own checks.
bool WindowCheckPassed(const redisReply* reply);

// The script, for tests.
std::string_view WindowCheckScript();

}  // namespace bloomproxy::filters
