#include "filters/topk/topk_scripts.h"

#include <random>

#include "filters/common/key_layout.h"
#include "filters/common/plan_requests.h"
#include "filters/topk/topk_add.lua.h"
#include "filters/topk/topk_read.lua.h"
#include "filters/topk/topk_reserve.lua.h"
#include "protocol/encoder.h"

namespace bloomproxy::filters {
namespace {

// MRG32k3a's moduli (topk_random.lua).
constexpr uint64_t kM1 = 4294967087;
constexpr uint64_t kM2 = 4294944443;

// ARGV[3..4] of topk_add.lua and topk_read.lua: the id the proxy knows and how many hashes
// follow each item.
void AppendHashHead(std::vector<std::string>* argv, const TopkMeta* meta) {
  argv->push_back(meta != nullptr ? meta->id : std::string());
  argv->push_back(meta != nullptr ? U64(uint64_t{meta->depth} + 1) : "0");
}

// An item's fingerprint and its hash in every row (the column is the hash modulo the width,
// which the script takes).
void AppendHashes(std::vector<std::string>* argv, std::string_view item, const TopkMeta* meta) {
  if (meta == nullptr) return;
  argv->push_back(U64(TopkFingerprint(item)));
  for (uint32_t row = 0; row < meta->depth; ++row) argv->push_back(U64(TopkRowHash(item, row)));
}

// A fresh seed for the call's decay steps, from the proxy's own generator (one per thread,
// seeded by the system).
void AppendSeed(std::vector<std::string>* argv) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  for (int i = 0; i < 3; ++i) argv->push_back(U64(rng() % kM1));
  for (int i = 0; i < 3; ++i) argv->push_back(U64(rng() % kM2));
}

}  // namespace

bool TopkFits(const TopkParams& p, const TopkConfig& config) {
  const uint64_t buckets = uint64_t{p.width} * p.depth;
  // width and depth < 2^32 each: the product cannot overflow, its bytes can.
  if (buckets > config.max_bytes / 8) return false;
  return 8 * buckets + 8 * uint64_t{p.k} <= config.max_bytes;
}

TopkCall TopkReserveCall(const TopkParams& p, bool refused, const TopkConfig& config) {
  if (refused) return {&lua::kTopkReserve, false, {"check"}};
  const uint64_t shard = std::max<uint64_t>(8, config.max_shard_bytes / 8 * 8);
  return {&lua::kTopkReserve,
          false,
          {"create", NewId(), U64(p.k), U64(p.width), U64(p.depth), TopkFormatDecay(p.decay),
           U64(shard)}};
}

TopkCall TopkAddCall(const std::vector<TopkUpdate>& updates, const std::vector<size_t>& members,
                     const TopkMeta* meta) {
  TopkCall call{&lua::kTopkAdd, false, {}};
  AppendHashHead(&call.argv, meta);
  AppendSeed(&call.argv);
  call.argv.push_back(U64(members.size()));
  size_t at = 0;
  for (size_t count : members) {
    call.argv.push_back(U64(count));
    for (size_t i = 0; i < count; ++i, ++at) {
      call.argv.emplace_back(updates[at].item);
      call.argv.push_back(U64(updates[at].n));
      AppendHashes(&call.argv, updates[at].item, meta);
    }
  }
  return call;
}

TopkCall TopkReadCall(TopkCommand command, const std::vector<std::string_view>& items,
                      const TopkMeta* meta) {
  TopkCall call{&lua::kTopkRead, true, {}};
  AppendHashHead(&call.argv, meta);
  switch (command) {
    case TopkCommand::kQuery:
      call.argv.push_back("query");
      break;
    case TopkCommand::kCount:
      call.argv.push_back("count");
      break;
    case TopkCommand::kList:
      call.argv.push_back("list");
      return call;
    default:
      call.argv.push_back("info");
      return call;
  }
  for (std::string_view item : items) {
    call.argv.emplace_back(item);
    AppendHashes(&call.argv, item, meta);
  }
  return call;
}

void AppendTopkCall(std::string* out, std::string_view name, const TopkCall& call, bool body,
                    protocol::UpstreamKind upstream) {
  const std::string prefix = DataKeyPrefix(name);
  AppendStructureScript(out, *call.script, call.read_only, body, upstream, name,
                        TopkMarkerKey(prefix, name), prefix, call.argv);
}

}  // namespace bloomproxy::filters
