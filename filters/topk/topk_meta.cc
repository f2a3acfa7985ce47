#include "filters/topk/topk_meta.h"

#include <cstdlib>
#include <limits>

#include "filters/common/plan_requests.h"
#include "protocol/internal_keys.h"

namespace bloomproxy::filters {

std::shared_ptr<TopkMeta> TopkMetaFromFields(const redisReply* r) {
  if (r == nullptr || r->type != REDIS_REPLY_ARRAY || r->elements != 5) return nullptr;
  for (size_t i = 0; i < 5; ++i) {
    if (r->element[i]->type != REDIS_REPLY_STRING) return nullptr;
  }
  auto meta = std::make_shared<TopkMeta>();
  meta->id = std::string(Str(r->element[0]));
  uint32_t* fields[] = {&meta->k, &meta->width, &meta->depth};
  for (size_t i = 0; i < 3; ++i) {
    int64_t v = 0;
    if (!ParseCount(Str(r->element[i + 1]), &v) || v < 1 ||
        v > std::numeric_limits<uint32_t>::max()) {
      return nullptr;
    }
    *fields[i] = static_cast<uint32_t>(v);
  }
  meta->decay = std::string(Str(r->element[4]));
  if (!protocol::IsInternalKeyId(meta->id)) return nullptr;
  return meta;
}

}  // namespace bloomproxy::filters
