// Where a count-min sketch lives in Redis, and its metadata as the CMS plans keep it. Pure; no
// sockets.
//
//   sketch "hits"          (the name's data-key prefix P, as for filters: key_layout.h)
//     hits                     hash    cms "1" (layout version), id <16 hex>, width W, depth D,
//                                      part C (cells per data key)
//     {hits}:cms:<id>:<p>      string  part p: a 16-byte header, then cells
//                                      [p*C, min((p+1)*C, W*D)) as BITFIELD u32 (big-endian)
//     {hits}:cms:m:hits        string  "1": the marker (key_layout.h), which TYPE and the key
//                                      commands look for
//
// Part 0's header holds the count of all increments (i64 at bit 0, wrapping as RedisBloom's
// counter does) and a version (i64 at bit 64) that every INCRBY and MERGE bumps, so MERGE can
// tell that what it read is still current when it writes. The other parts' headers stay zero:
// every part has the same layout, so cell j of a part is always at bit 128 + 32*j.
//
// Parts exist because a Redis string stops at 512 MB; C is chosen at creation from the proxy's
// `bf-max-shard-bytes` (64 MiB by default) and recorded, so proxies configured differently agree.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "filters/common/meta_cache.h"
#include "protocol/reply_decoder.h"
#include "protocol/sharding_proxy.h"

namespace bloomproxy::filters {

// The settings CMS plans take from the proxy's configuration.
struct CmsConfig {
  uint64_t max_part_bytes = 64ULL * 1024 * 1024 - 16;  // a part's size at most (header included)
  uint64_t max_bytes = uint64_t{1} << 47;              // the largest sketch INITBY* creates
  protocol::UpstreamKind upstream = protocol::UpstreamKind::kRedis;
};

inline constexpr uint64_t kCmsHeaderBytes = 16;
inline constexpr uint64_t kCmsHeaderCells = kCmsHeaderBytes / 4;  // u32 slots the header takes

struct CmsMeta {
  std::string id;
  std::string prefix;  // DataKeyPrefix(name)
  uint64_t width = 0;
  uint64_t depth = 0;
  uint64_t part_cells = 0;  // C

  uint64_t cells() const { return width * depth; }
  uint64_t Parts() const { return (cells() + part_cells - 1) / part_cells; }
  // The number of cells part p holds, and its size in bytes.
  uint64_t PartCells(uint64_t p) const;
  uint64_t PartBytes(uint64_t p) const { return kCmsHeaderBytes + 4 * PartCells(p); }
  std::string PartKey(uint64_t p) const;
  std::vector<std::string> PartKeys() const;
};

using CmsCache = MetaCache<CmsMeta>;

// A new sketch's metadata: a fresh id, and parts of at most config.max_part_bytes.
std::shared_ptr<CmsMeta> NewCmsMeta(std::string_view name, uint64_t width, uint64_t depth,
                                    const CmsConfig& config);

// The fields HMGET reads for a sketch (CmsFetchFields), and what they say.
inline constexpr size_t kCmsFetchFields = 5;  // cms id width depth part
std::vector<std::string_view> CmsFetchArgs(std::string_view name);
enum class CmsFetched {
  kSketch,     // *out is the sketch
  kOtherType,  // a hash that is no sketch (a filter, a plain hash)
  kDamaged,    // marked as a sketch, but fields missing or that do not parse
};
// From the reply to HMGET CmsFetchArgs (an array of kCmsFetchFields).
CmsFetched CmsMetaFromHmget(std::string_view name, const redisReply* r,
                            std::shared_ptr<CmsMeta>* out);

// Cell j of a part's bytes (BITFIELD u32: big-endian after the header); `part` holds it.
inline uint32_t CmsPartCell(std::string_view part, uint64_t j) {
  const auto* b = reinterpret_cast<const unsigned char*>(part.data() + kCmsHeaderBytes + 4 * j);
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | uint32_t{b[3]};
}
// Appends a cell as a part holds it.
inline void AppendCmsCell(std::string* part, uint32_t v) {
  const char be[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                      static_cast<char>(v >> 8), static_cast<char>(v)};
  part->append(be, 4);
}

// The header of part 0 as raw bytes (count and version, big-endian i64), and back.
std::string CmsHeader(uint64_t count, uint64_t version);
uint64_t CmsHeaderField(std::string_view part, size_t field);  // 0: count, 1: version

}  // namespace bloomproxy::filters
