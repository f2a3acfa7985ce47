#include "protocol/command_table.h"

#include <tsl/robin_map.h>

#include <cstddef>
#include <cstring>
#include <iterator>
#include <string_view>

namespace bloomproxy::protocol {
namespace {

// One row of the generated data (protocol/command_table_data.inc).
struct RawCommand {
  std::string_view name;
  int arity;
  int first_key;
  int last_key;
  int key_step;
  uint32_t flags;
  uint32_t categories;
};

constexpr RawCommand kGenerated[] = {
#include "protocol/command_table_data.inc"
};

// Redis closes a connection whose first word is "POST" or "Host:" (an HTTP request sent to the
// Redis port: a cross-protocol attack). Redis 7 does this outside its command table, so COMMAND
// does not list them; the proxy does the same and needs rows for them. Flags as Redis 6 had them.
constexpr RawCommand kExtra[] = {
    {"host:", -1, 0, 0, 0, kFlagLoading | kFlagStale, 0},
    {"post", -1, 0, 0, 0, kFlagLoading | kFlagStale, 0},
};

constexpr size_t MaxNameLength() {
  size_t longest = 0;
  for (const RawCommand& c : kGenerated)
    longest = c.name.size() > longest ? c.name.size() : longest;
  for (const RawCommand& c : kExtra) longest = c.name.size() > longest ? c.name.size() : longest;
  return longest;
}

// Lookup lower-cases into a stack buffer of this size; longer names cannot be in the table.
constexpr size_t kMaxNameLength = MaxNameLength();

// The proxy's rule for each command (see Conn in command_table.h).
struct RouteRow {
  std::string_view name;
  Conn conn = Conn::kShared;
  Effect effect = Effect::kNone;
  InMulti in_multi = InMulti::kQueue;
  uint8_t traits = 0;
  Spread spread = Spread::kSlot;
  Merge merge = Merge::kNone;
};

// Short names for the rows of command_routes.inc.
constexpr Conn kShared = Conn::kShared;
constexpr Conn kLocal = Conn::kLocal;
constexpr Conn kPinned = Conn::kPinned;
constexpr Conn kDedicated = Conn::kDedicated;
constexpr Conn kTunnel = Conn::kTunnel;
constexpr Conn kCloseClient = Conn::kCloseClient;
constexpr Effect kNone = Effect::kNone;
constexpr Effect kMulti = Effect::kMulti;
constexpr Effect kExec = Effect::kExec;
constexpr Effect kDiscard = Effect::kDiscard;
constexpr Effect kWatch = Effect::kWatch;
constexpr Effect kUnwatch = Effect::kUnwatch;
constexpr Effect kSelect = Effect::kSelect;
constexpr Effect kSubscribe = Effect::kSubscribe;
constexpr Effect kUnsubscribe = Effect::kUnsubscribe;
constexpr Effect kMonitor = Effect::kMonitor;
constexpr Effect kTracking = Effect::kTracking;
constexpr Effect kNoEvict = Effect::kNoEvict;
constexpr Effect kReadonly = Effect::kReadonly;
constexpr Effect kReadwrite = Effect::kReadwrite;
constexpr Effect kAsking = Effect::kAsking;
constexpr Effect kPause = Effect::kPause;
constexpr Effect kUnpause = Effect::kUnpause;
constexpr Effect kReplyMode = Effect::kReplyMode;
constexpr Effect kBlockOption = Effect::kBlockOption;
constexpr Effect kWait = Effect::kWait;
constexpr Effect kUnblock = Effect::kUnblock;
constexpr Effect kUnknownSub = Effect::kUnknownSub;
constexpr InMulti kQueue = InMulti::kQueue;
constexpr InMulti kTrack = InMulti::kTrack;
constexpr InMulti kAtExec = InMulti::kAtExec;
constexpr InMulti kTunnelInMulti = InMulti::kTunnel;
constexpr Spread kSplit = Spread::kSplit;
constexpr Spread kAllMasters = Spread::kAllMasters;
constexpr Spread kScan = Spread::kScan;
constexpr Spread kSlotArg = Spread::kSlotArg;
constexpr Merge kByPosition = Merge::kByPosition;
constexpr Merge kAllOk = Merge::kAllOk;
constexpr Merge kSum = Merge::kSum;
constexpr Merge kConcat = Merge::kConcat;
constexpr Merge kSame = Merge::kSame;
constexpr Merge kAllOne = Merge::kAllOne;
constexpr Merge kFirstNonNil = Merge::kFirstNonNil;
constexpr Merge kMin = Merge::kMin;

constexpr RouteRow kRouteRows[] = {
#include "protocol/command_routes.inc"
};

using Table = tsl::robin_map<std::string_view, CommandInfo>;

Table BuildTable() {
  Table table;
  table.reserve(std::size(kGenerated) + std::size(kExtra));
  auto add = [&table](const RawCommand& c) {
    // emplace keeps the first row: should a future Redis list POST itself, its row wins.
    table.emplace(c.name, CommandInfo{c.name, c.arity, c.first_key, c.last_key, c.key_step, c.flags,
                                      c.categories, Route{}});
  };
  for (const RawCommand& c : kGenerated) add(c);
  for (const RawCommand& c : kExtra) add(c);
  for (const RouteRow& row : kRouteRows) {
    auto it = table.find(row.name);
    if (it != table.end())
      it.value().route =
          Route{row.conn, row.effect, row.in_multi, row.traits, row.spread, row.merge};
  }
  return table;
}

const Table& GetTable() {
  // Function-local static: built once, thread-safe, and independent of static init order.
  static const Table table = BuildTable();
  return table;
}

}  // namespace

const CommandInfo* LookupCommand(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength) return nullptr;
  char lower[kMaxNameLength];
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    lower[i] = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  }
  const Table& table = GetTable();
  auto it = table.find(std::string_view(lower, name.size()));
  return it == table.end() ? nullptr : &it->second;
}

const CommandInfo* LookupSubcommand(const CommandInfo& container, std::string_view sub) {
  const size_t len = container.name.size() + 1 + sub.size();
  if ((container.flags & kFlagContainer) == 0 || sub.empty() || len > kMaxNameLength) {
    return nullptr;
  }
  char full[kMaxNameLength];
  std::memcpy(full, container.name.data(), container.name.size());
  full[container.name.size()] = '|';
  for (size_t i = 0; i < sub.size(); ++i) {
    char c = sub[i];
    full[container.name.size() + 1 + i] =
        (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  }
  const Table& table = GetTable();
  auto it = table.find(std::string_view(full, len));
  return it == table.end() ? nullptr : &it->second;
}

const CommandInfo* LookupFullName(std::string_view name) {
  const size_t bar = name.find('|');
  const CommandInfo* info = LookupCommand(name.substr(0, bar));
  if (info == nullptr || bar == std::string_view::npos) return info;
  return LookupSubcommand(*info, name.substr(bar + 1));
}

size_t CommandCount() { return GetTable().size(); }

std::vector<std::string_view> RouteRowNames() {
  std::vector<std::string_view> out;
  for (const RouteRow& row : kRouteRows) out.push_back(row.name);
  return out;
}

std::vector<const CommandInfo*> AllCommands() {
  std::vector<const CommandInfo*> out;
  for (const auto& [name, info] : GetTable()) out.push_back(&info);
  return out;
}

bool LookupAclCategory(std::string_view name, uint32_t* category) {
  static constexpr std::pair<std::string_view, AclCategory> kNames[] = {
      {"keyspace", kCatKeyspace},
      {"read", kCatRead},
      {"write", kCatWrite},
      {"set", kCatSet},
      {"sortedset", kCatSortedset},
      {"list", kCatList},
      {"hash", kCatHash},
      {"string", kCatString},
      {"bitmap", kCatBitmap},
      {"hyperloglog", kCatHyperloglog},
      {"geo", kCatGeo},
      {"stream", kCatStream},
      {"pubsub", kCatPubsub},
      {"admin", kCatAdmin},
      {"fast", kCatFast},
      {"slow", kCatSlow},
      {"blocking", kCatBlocking},
      {"dangerous", kCatDangerous},
      {"connection", kCatConnection},
      {"transaction", kCatTransaction},
      {"scripting", kCatScripting},
      {"bloom", kCatBloom},
      {"cms", kCatCms},
      {"cuckoo", kCatCuckoo},
      {"topk", kCatTopk},
      {"tdigest", kCatTdigest},
  };
  for (const auto& [n, c] : kNames) {
    if (n == name) {
      *category = c;
      return true;
    }
  }
  return false;
}

}  // namespace bloomproxy::protocol
