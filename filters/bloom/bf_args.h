// Argument parsing of the BF.* commands: RedisBloom's grammar and its error replies verbatim
// (see docs in the spec: some errors have no "ERR" prefix). Pure; no sockets.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace bloomproxy::filters {

enum class BfCommand {
  kReserve,
  kAdd,
  kMAdd,
  kInsert,
  kExists,
  kMExists,
  kInfo,
  kCard,
  kScanDump,
  kLoadChunk,
  kDebug,
};

// BF.INFO's optional single field.
enum class InfoField { kAll, kCapacity, kSize, kFilters, kItems, kExpansion };

// Creation defaults (config directives bf-error-rate, bf-initial-capacity, bf-expansion).
struct BfDefaults {
  double error_rate = 0.01;
  uint64_t capacity = 100;
  uint32_t expansion = 2;
};

struct BfRequest {
  BfCommand command = BfCommand::kAdd;
  std::string_view key;
  // Creation parameters: RESERVE's, INSERT's options, or the defaults (ADD/MADD on a new key).
  double error_rate = 0.01;
  uint64_t capacity = 100;
  uint32_t expansion = 2;
  bool nonscaling = false;
  bool nocreate = false;  // INSERT NOCREATE
  // ADD/MADD/INSERT/EXISTS/MEXISTS items, in order (views into the caller's arguments).
  std::vector<std::string_view> items;
  InfoField info_field = InfoField::kAll;
  int64_t iterator = 0;   // SCANDUMP / LOADCHUNK
  std::string_view data;  // LOADCHUNK
  // Windowed filters (docs/windowed-filters.md): BF.RESERVE's and BF.INSERT's WINDOW ms
  // [SLOTS g], or a bf-window rule's (0: a plain filter); BF.INSERT's TTL ms (0: the window).
  uint64_t window_ms = 0;
  uint32_t slots = 0;  // g; 0 with a window means kDefaultWindowSlots
  uint64_t ttl_ms = 0;
  // Internal, for a windowed filter's slots: every key the plan creates gets PEXPIREAT
  // expire_at_ms, and the filter gets no marker (0: an ordinary filter).
  int64_t expire_at_ms = 0;
  // Internal, for a windowed filter's lookups: the caller checks, in the same step and before
  // the reads, that the filter is as the plan's cached metadata says and that its shards have
  // their sizes (filters/bloom/window/window_check.lua), so the BF.EXISTS / BF.MEXISTS plan sends
  // neither its validation nor its STRLENs.
  bool checked_outside = false;
};

// Windowed filters' limits (docs/windowed-filters.md).
inline constexpr uint32_t kDefaultWindowSlots = 3;
inline constexpr uint32_t kMinWindowSlots = 2;
inline constexpr uint32_t kMaxWindowSlots = 64;
inline constexpr uint64_t kMaxWindowMs = 10ULL * 366 * 24 * 3600 * 1000;  // ten years

// The argument errors of windowed filters (RedisBloom has no such options, so these are ours):
// WINDOW not an integer in 1..kMaxWindowMs; SLOTS not in kMinWindowSlots..kMaxWindowSlots, or
// without WINDOW; TTL not an integer in 1..W (1..kMaxWindowMs when the command gives no window).
inline constexpr std::string_view kErrBadWindow = "-ERR bad window\r\n";
inline constexpr std::string_view kErrBadSlots = "-ERR bad slots\r\n";
inline constexpr std::string_view kErrBadTtl = "-ERR bad TTL\r\n";

// Whether the command creates the filter when its name is free: RESERVE, ADD, MADD, INSERT
// without NOCREATE, and LOADCHUNK of the header (iterator 1).
bool CreatesFilter(const BfRequest& req);

// Recognises a BF command name (any case); false for anything else.
bool LookupBfCommand(std::string_view name, BfCommand* out);

// Parses args (args[0] is the command name, any case) into *out. Returns an empty string on
// success, otherwise the complete RESP error reply RedisBloom gives, e.g.
// "-ERR wrong number of arguments for 'bf.add' command\r\n" or "-Bad capacity\r\n".
// Errors that depend on the key's state (not found, item exists, WRONGTYPE) are not decided
// here. BF.RESERVE and BF.INSERT also take the windowed filters' WINDOW ms [SLOTS g] (and
// INSERT TTL ms) into window_ms, slots (0 when not given) and ttl_ms, with the errors above; a
// command without these words parses exactly as RedisBloom's.
std::string ParseBfRequest(const std::vector<std::string_view>& args, const BfDefaults& defaults,
                           BfRequest* out);

}  // namespace bloomproxy::filters
