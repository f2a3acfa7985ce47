#include "filters/bloom/window/window_check.h"

#include <algorithm>

#include "filters/bloom/window/window_check.lua.h"
#include "filters/common/plan_requests.h"
#include "protocol/encoder.h"

namespace bloomproxy::filters {

std::string_view WindowCheckScript() { return lua::kWindowCheck.body; }

void AppendWindowCheck(std::string* out, std::string_view name, const FilterMeta& filter,
                       const std::vector<CheckedSlot>& slots, bool body) {
  std::vector<std::string> keys = {std::string(name)};
  std::vector<std::string> argv = {std::string(kMarkerField), std::string(kMarkerValue), filter.id,
                                   U64(filter.window_ms), U64(slots.size())};
  auto key = [&](std::string k) {
    keys.push_back(std::move(k));
    return U64(keys.size());
  };
  for (const CheckedSlot& slot : slots) {
    const FilterMeta* meta = slot.meta.get();
    argv.push_back(key(slot.name));
    argv.push_back(meta != nullptr ? meta->id : std::string());
    argv.push_back("l" + std::to_string(meta != nullptr ? meta->links.size() : 0));
    const size_t count_at = argv.size();
    argv.emplace_back();
    uint64_t shards = 0;
    for (size_t l = 0; meta != nullptr && l < meta->links.size(); ++l) {
      for (uint64_t s = 0; s < meta->ShardCount(l); ++s, ++shards) {
        argv.push_back(key(meta->BitsKey(l, s)));
        argv.push_back(
            U64(std::min(meta->shard_bytes, meta->links[l].bytes - s * meta->shard_bytes)));
      }
    }
    argv[count_at] = U64(shards);
  }
  std::vector<std::string_view> args;
  args.reserve(3 + keys.size() + argv.size());
  args.push_back(body ? "EVAL" : "EVALSHA");
  args.push_back(body ? lua::kWindowCheck.body : lua::kWindowCheck.sha1);
  const std::string numkeys = U64(keys.size());
  args.push_back(numkeys);
  for (const std::string& k : keys) args.push_back(k);
  for (const std::string& a : argv) args.push_back(a);
  protocol::AppendCommand(out, args);
}

bool WindowCheckPassed(const redisReply* reply) {
  return reply != nullptr && reply->type == REDIS_REPLY_INTEGER && reply->integer == 1;
}

}  // namespace bloomproxy::filters
