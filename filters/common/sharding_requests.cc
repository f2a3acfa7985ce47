#include "filters/common/sharding_requests.h"

#include <cstdint>

namespace bloomproxy::filters {
namespace {

// KEYS[1]: the filter's name; ARGV: field value ... of its metadata.
constexpr std::string_view kPublish = R"lua(
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV))
return 1
)lua";

// KEYS[1]: a shard; ARGV[1]: its last offset; ARGV[2]: one zero byte. SETRANGE of the last
// byte makes Redis allocate exactly the shard's size, zeroed.
constexpr std::string_view kShard = R"lua(
if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('SETRANGE', KEYS[1], ARGV[1], ARGV[2]) end
return redis.call('STRLEN', KEYS[1])
)lua";

constexpr std::string_view kExpireTime = "return redis.call('PEXPIRETIME', KEYS[1])";

}  // namespace

std::string_view PublishScript() { return kPublish; }
std::string_view ShardScript() { return kShard; }
std::string_view ExpireTimeScript() { return kExpireTime; }

std::string_view ReadBitsCommand(protocol::UpstreamKind upstream) {
  return upstream == protocol::UpstreamKind::kShardingProxy ? "BITFIELD" : "BITFIELD_RO";
}

void AddPublishIfFree(Requests* req, std::string_view name,
                      const std::vector<std::string>& fields) {
  std::vector<std::string_view> args = {"EVAL", kPublish, "1", name};
  args.insert(args.end(), fields.begin(), fields.end());
  req->Add(args);
  req->Last().kind = ReplyCheck::Kind::kInteger;
}

void AddShardIfMissing(Requests* req, std::string_view key, uint64_t size) {
  req->Add({"EVAL", kShard, "1", key, U64(size - 1), std::string_view("\0", 1)});
}

void AddExpireTime(Requests* req, std::string_view key) {
  req->Add({"EVAL", kExpireTime, "1", key});
  req->Last().kind = ReplyCheck::Kind::kInteger;
}

}  // namespace bloomproxy::filters
