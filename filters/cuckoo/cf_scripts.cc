#include "filters/cuckoo/cf_scripts.h"

#include <algorithm>
#include <utility>

#include "filters/common/key_layout.h"
#include "filters/common/plan_requests.h"
#include "filters/cuckoo/cf_check.lua.h"
#include "filters/cuckoo/cf_compact.lua.h"
#include "filters/cuckoo/cf_create.lua.h"
#include "filters/cuckoo/cf_del.lua.h"
#include "filters/cuckoo/cf_info.lua.h"
#include "filters/cuckoo/cf_insert.lua.h"
#include "filters/cuckoo/cf_loadchunk.lua.h"
#include "filters/cuckoo/cf_scandump.lua.h"
#include "protocol/encoder.h"

namespace bloomproxy::filters {
namespace {

constexpr std::string_view kZero64 = "0000000000000000";

void AppendItem(std::vector<std::string>* argv, std::string_view item) {
  const CfItemHash h = CfHash(item);
  argv->push_back(U64(h.hi()));
  argv->push_back(U64(h.lo()));
}

// cf_insert.lua's arguments before the members: NOCREATE, the filter to create when the name is
// free (cf_layout.lua's fields: id nb bs mi ex sh), and the most bytes a filter may grow to.
std::vector<std::string> InsertHead(bool nocreate, uint64_t capacity, const CfConfig& config) {
  return {nocreate ? "1" : "0",
          NewId(),
          U64(CfNumBuckets(capacity, kCfDefaultBucketSize)),
          U64(kCfDefaultBucketSize),
          U64(kCfDefaultMaxIterations),
          U64(kCfDefaultExpansion),
          U64(CfShardBytes(kCfDefaultBucketSize, config.max_shard_bytes)),
          U64(std::min(config.max_bytes, kCfMaxBytes))};
}

// cf_create.lua's arguments: "create", then id nb bs mi ex nf sh ni nd.
std::vector<std::string> CreateArgs(const CfHeader& h, const CfConfig& config) {
  auto hex = [](uint64_t v) {
    std::string s(kZero64);
    for (int i = 15; i >= 0; --i, v >>= 4) s[static_cast<size_t>(i)] = "0123456789abcdef"[v & 15];
    return s;
  };
  return {"create",
          NewId(),
          U64(h.num_buckets),
          U64(h.bucket_size),
          U64(h.max_iterations),
          U64(h.expansion),
          U64(h.num_filters),
          U64(CfShardBytes(h.bucket_size, config.max_shard_bytes)),
          hex(h.num_items),
          hex(h.num_deletes)};
}

CfCall LoadChunkCall(const CfRequest& request, const CfConfig& config) {
  const CfLoadVerdict v = CheckCfLoad(request, config.max_bytes);
  if (request.iterator == 1) {
    // A header RedisBloom refuses: the script only says what the name holds ("check").
    if (!v.error.empty()) {
      return {&lua::kCfCreate,
              false,
              {"check", v.error == kCfErrInvalidHeader ? "INVALIDHEADER" : "CANNOTCREATE"}};
    }
    return {&lua::kCfCreate, false, CreateArgs(v.header, config)};
  }
  return {&lua::kCfLoadchunk,
          false,
          {v.error.empty() ? U64(v.offset) : "bad", std::string(request.data)}};
}

}  // namespace

CfCall CfCallFor(const CfRequest& request, const CfConfig& config) {
  switch (request.command) {
    case CfCommand::kReserve: {
      CfHeader h;
      h.num_buckets = CfNumBuckets(request.capacity, request.bucket_size);
      h.num_filters = 1;
      h.bucket_size = request.bucket_size;
      h.max_iterations = request.max_iterations;
      h.expansion = request.expansion;
      return {&lua::kCfCreate, false, CreateArgs(h, config)};
    }
    case CfCommand::kAdd:
    case CfCommand::kAddNx:
    case CfCommand::kInsert:
    case CfCommand::kInsertNx: {
      CfCall call{&lua::kCfInsert, false, InsertHead(request.nocreate, request.capacity, config)};
      call.argv.insert(call.argv.end(), {"1", request.Nx() ? "1" : "0", U64(request.items.size())});
      for (std::string_view item : request.items) AppendItem(&call.argv, item);
      return call;
    }
    case CfCommand::kExists:
    case CfCommand::kMExists:
    case CfCommand::kCount:
      return CfCheckCall(request.items, request.command == CfCommand::kCount);
    case CfCommand::kDel: {
      CfCall call{&lua::kCfDel, false, {}};
      AppendItem(&call.argv, request.items[0]);
      return call;
    }
    case CfCommand::kCompact:
      return {&lua::kCfCompact, false, {}};
    case CfCommand::kScanDump:
      if (request.iterator == 0) return {&lua::kCfInfo, true, {}};
      return {&lua::kCfScandump, true, {U64(static_cast<uint64_t>(request.iterator))}};
    case CfCommand::kLoadChunk:
      return LoadChunkCall(request, config);
    case CfCommand::kInfo:
    case CfCommand::kDebug:
      return {&lua::kCfInfo, true, {}};
  }
  return {};
}

CfCall CfInsertCall(const std::vector<std::string_view>& items,
                    const std::vector<PlanMember>& members, const CfConfig& config) {
  CfCall call{&lua::kCfInsert, false, InsertHead(false, kCfDefaultCapacity, config)};
  call.argv.push_back(U64(members.size()));
  for (size_t m = 0; m < members.size(); ++m) {
    call.argv.push_back(members[m].nx ? "1" : "0");
    call.argv.push_back(U64(members[m].count));
    for (size_t i = 0; i < members[m].count; ++i) {
      AppendItem(&call.argv, items[members[m].start + i]);
    }
  }
  return call;
}

CfCall CfCheckCall(const std::vector<std::string_view>& items, bool count) {
  CfCall call{&lua::kCfCheck, true, {count ? "count" : "exists"}};
  for (std::string_view item : items) AppendItem(&call.argv, item);
  return call;
}

void AppendCfCall(std::string* out, std::string_view name, const CfCall& call, bool body,
                  protocol::UpstreamKind upstream) {
  const std::string prefix = DataKeyPrefix(name);
  AppendStructureScript(out, *call.script, call.read_only, body, upstream, name,
                        CfMarkerKey(prefix, name), prefix, call.argv);
}

}  // namespace bloomproxy::filters
