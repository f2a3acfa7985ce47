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

// The proxy's routing decision for each command (see Route). Anything not named here is
// forwarded on the shared connection.
struct RouteRule {
  std::string_view name;
  Route route;
};

constexpr RouteRule kRoutes[] = {
    // Answered by the proxy itself. INFO is local because the proxy appends its own section to
    // the upstream's reply. CLIENT is handled locally (its subcommands describe the client's
    // connection to the proxy, not the proxy's connection to Redis). COMMAND is forwarded.
    {"ping", Route::kLocal},
    {"echo", Route::kLocal},
    {"hello", Route::kLocal},
    {"auth", Route::kLocal},
    {"client", Route::kLocal},
    {"quit", Route::kLocal},
    {"reset", Route::kLocal},
    {"info", Route::kLocal},
    // Start per-connection state on the server: need a connection of their own.
    {"select", Route::kPin},
    {"multi", Route::kPin},
    {"watch", Route::kPin},
    {"subscribe", Route::kPin},
    {"psubscribe", Route::kPin},
    {"ssubscribe", Route::kPin},
    {"monitor", Route::kPin},
    // End that state.
    {"exec", Route::kUnpin},
    {"discard", Route::kUnpin},
    {"unwatch", Route::kUnpin},
    {"unsubscribe", Route::kUnpin},
    {"punsubscribe", Route::kUnpin},
    {"sunsubscribe", Route::kUnpin},
    // May block: must not stall the shared connection. XREAD/XREADGROUP only block with the
    // BLOCK option, which the proxy checks itself.
    {"blpop", Route::kBlocking},
    {"brpop", Route::kBlocking},
    {"blmove", Route::kBlocking},
    {"brpoplpush", Route::kBlocking},
    {"blmpop", Route::kBlocking},
    {"bzpopmin", Route::kBlocking},
    {"bzpopmax", Route::kBlocking},
    {"bzmpop", Route::kBlocking},
    {"wait", Route::kBlocking},
    {"xread", Route::kBlocking},
    {"xreadgroup", Route::kBlocking},
    // Cross-protocol attack guard.
    {"post", Route::kCloseClient},
    {"host:", Route::kCloseClient},
};

using Table = tsl::robin_map<std::string_view, CommandInfo>;

Table BuildTable() {
  Table table;
  table.reserve(std::size(kGenerated) + std::size(kExtra));
  auto add = [&table](const RawCommand& c) {
    // emplace keeps the first row: should a future Redis list POST itself, its row wins.
    table.emplace(c.name, CommandInfo{c.name, c.arity, c.first_key, c.last_key, c.key_step, c.flags,
                                      c.categories, Route::kForward});
  };
  for (const RawCommand& c : kGenerated) add(c);
  for (const RawCommand& c : kExtra) add(c);
  for (const RouteRule& rule : kRoutes) {
    auto it = table.find(rule.name);
    if (it != table.end()) it.value().route = rule.route;
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

size_t CommandCount() { return GetTable().size(); }

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
