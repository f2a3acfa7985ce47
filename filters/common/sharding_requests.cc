#include "filters/common/sharding_requests.h"

#include <cstdint>

#include "filters/common/expire_time.lua.h"
#include "filters/common/publish_if_free.lua.h"
#include "filters/common/shard_if_missing.lua.h"

namespace bloomproxy::filters {

std::string_view PublishScript() { return lua::kPublishIfFree.body; }
std::string_view ShardScript() { return lua::kShardIfMissing.body; }
std::string_view ExpireTimeScript() { return lua::kExpireTime.body; }

std::string_view ReadBitsCommand(protocol::UpstreamKind upstream) {
  return upstream == protocol::UpstreamKind::kShardingProxy ? "BITFIELD" : "BITFIELD_RO";
}

void AddPublishIfFree(Requests* req, std::string_view name,
                      const std::vector<std::string>& fields) {
  std::vector<std::string_view> args = {"EVAL", lua::kPublishIfFree.body, "1", name};
  args.insert(args.end(), fields.begin(), fields.end());
  req->Add(args);
  req->Last().kind = ReplyCheck::Kind::kInteger;
}

void AddShardIfMissing(Requests* req, std::string_view key, uint64_t size) {
  req->Add({"EVAL", lua::kShardIfMissing.body, "1", key, U64(size - 1), std::string_view("\0", 1)});
}

void AddExpireTime(Requests* req, std::string_view key) {
  req->Add({"EVAL", lua::kExpireTime.body, "1", key});
  req->Last().kind = ReplyCheck::Kind::kInteger;
}

}  // namespace bloomproxy::filters
