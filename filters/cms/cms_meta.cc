#include "filters/cms/cms_meta.h"

#include <algorithm>

#include "filters/bloom/bf_meta.h"
#include "filters/common/key_layout.h"
#include "filters/common/plan_requests.h"

namespace bloomproxy::filters {
namespace {

// Metadata naming more parts than this is damaged (2^24 parts of 64 MiB: 1 PB).
constexpr uint64_t kMaxParts = uint64_t{1} << 24;

}  // namespace

uint64_t CmsMeta::PartCells(uint64_t p) const {
  const uint64_t first = p * part_cells;
  return first >= cells() ? 0 : std::min(part_cells, cells() - first);
}

std::string CmsMeta::PartKey(uint64_t p) const { return prefix + ":cms:" + id + ":" + U64(p); }

std::vector<std::string> CmsMeta::PartKeys() const {
  std::vector<std::string> out;
  for (uint64_t p = 0; p < Parts(); ++p) out.push_back(PartKey(p));
  return out;
}

std::shared_ptr<CmsMeta> NewCmsMeta(std::string_view name, uint64_t width, uint64_t depth,
                                    const CmsConfig& config) {
  auto meta = std::make_shared<CmsMeta>();
  meta->id = NewId();
  meta->prefix = DataKeyPrefix(name);
  meta->width = width;
  meta->depth = depth;
  const uint64_t max_cells = std::max<uint64_t>(1, (config.max_part_bytes - kCmsHeaderBytes) / 4);
  // Parts of equal size, as few as the limit allows: a sketch below the limit is one key.
  const uint64_t parts = (meta->cells() + max_cells - 1) / max_cells;
  meta->part_cells = (meta->cells() + parts - 1) / parts;
  return meta;
}

std::vector<std::string_view> CmsFetchArgs(std::string_view name) {
  return {"HMGET", name, "cms", "id", "width", "depth", "part"};
}

CmsFetched CmsMetaFromHmget(std::string_view name, const redisReply* r,
                            std::shared_ptr<CmsMeta>* out) {
  if (r == nullptr || r->type != REDIS_REPLY_ARRAY || r->elements != kCmsFetchFields) {
    return CmsFetched::kDamaged;
  }
  if (Str(r->element[0]) != "1") return CmsFetched::kOtherType;
  auto meta = std::make_shared<CmsMeta>();
  meta->id.assign(Str(r->element[1]));
  meta->prefix = DataKeyPrefix(name);
  const bool parsed = ParseU64(Str(r->element[2]), &meta->width) &&
                      ParseU64(Str(r->element[3]), &meta->depth) &&
                      ParseU64(Str(r->element[4]), &meta->part_cells);
  if (!parsed || meta->id.size() != 16 || meta->width == 0 || meta->depth == 0 ||
      meta->part_cells == 0 || meta->width > UINT64_MAX / meta->depth ||
      meta->part_cells > (512ULL * 1024 * 1024 - kCmsHeaderBytes) / 4 ||
      meta->Parts() > kMaxParts) {
    return CmsFetched::kDamaged;
  }
  *out = std::move(meta);
  return CmsFetched::kSketch;
}

std::string CmsHeader(uint64_t count, uint64_t version) {
  std::string out(kCmsHeaderBytes, '\0');
  for (int i = 0; i < 8; ++i) {
    out[static_cast<size_t>(7 - i)] = static_cast<char>((count >> (8 * i)) & 0xff);
    out[static_cast<size_t>(15 - i)] = static_cast<char>((version >> (8 * i)) & 0xff);
  }
  return out;
}

uint64_t CmsHeaderField(std::string_view part, size_t field) {
  uint64_t v = 0;
  for (size_t i = 0; i < 8 && 8 * field + i < part.size(); ++i) {
    v = (v << 8) | static_cast<unsigned char>(part[8 * field + i]);
  }
  return v;
}

}  // namespace bloomproxy::filters
