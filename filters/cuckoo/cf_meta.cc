#include "filters/cuckoo/cf_meta.h"

#include "filters/common/plan_requests.h"
#include "filters/cuckoo/cuckoo.h"
#include "protocol/internal_keys.h"

namespace bloomproxy::filters {

uint64_t CfMeta::Buckets(uint64_t i) const {
  // Constant time for expansion 0 and 1, whatever the sub-filter (a filter may have 65535);
  // a larger expansion reaches kCfMaxBytes within 47 sub-filters.
  if (i == 0 || expansion == 1) return num_buckets;
  uint64_t n = num_buckets;
  for (uint64_t k = 0; k < i && n != 0; ++k) n *= expansion;
  return n;
}

bool CfMeta::Simple() const {
  if (bucket_size == 0 || bucket_size > 6) return false;
  uint64_t n = num_buckets;  // sub-filter i's, one pass
  for (uint64_t i = 0; i < num_filters; ++i, n *= expansion) {
    if (n * bucket_size > shard_bytes) return false;
  }
  return true;
}

std::string CfMeta::DataKey(std::string_view prefix, uint64_t i) const {
  std::string out(prefix);
  out += ":cf:";
  out += id;
  out += ':';
  out += std::to_string(i);
  out += ".0";
  return out;
}

std::shared_ptr<CfMeta> CfMetaFromFields(const redisReply* r) {
  if (r == nullptr || r->type != REDIS_REPLY_ARRAY || r->elements != 8) return nullptr;
  for (size_t i = 0; i < 8; ++i) {
    if (r->element[i]->type != REDIS_REPLY_STRING) return nullptr;
  }
  auto meta = std::make_shared<CfMeta>();
  meta->id = std::string(Str(r->element[0]));
  uint64_t* fields[] = {&meta->generation,     &meta->num_buckets, &meta->bucket_size,
                        &meta->max_iterations, &meta->expansion,   &meta->num_filters,
                        &meta->shard_bytes};
  for (size_t i = 0; i < 7; ++i) {
    int64_t v = 0;
    if (!ParseCount(Str(r->element[i + 1]), &v)) return nullptr;
    *fields[i] = static_cast<uint64_t>(v);
  }
  if (!protocol::IsInternalKeyId(meta->id) || meta->num_buckets == 0 || meta->bucket_size == 0 ||
      meta->bucket_size > 255 || meta->num_filters == 0 || meta->num_filters > 65535 ||
      meta->expansion > 32768 || meta->shard_bytes == 0 ||
      (meta->expansion == 0 && meta->num_filters > 1)) {
    return nullptr;
  }
  // A filter's sub-filters stay below kCfMaxBytes together (cuckoo.h), so Buckets() never
  // overflows for one that parses.
  uint64_t n = meta->num_buckets;
  uint64_t total = 0;
  for (uint64_t i = 0; i < meta->num_filters; ++i) {
    if (n >= kCfMaxBytes / meta->bucket_size) return nullptr;
    total += n * meta->bucket_size;
    if (total >= kCfMaxBytes) return nullptr;
    n *= meta->expansion;
  }
  return meta;
}

}  // namespace bloomproxy::filters
