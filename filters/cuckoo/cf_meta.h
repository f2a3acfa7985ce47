// What a proxy keeps of a cuckoo filter it has seen: its shape, learnt from the fields a script
// answers (cf_layout.lua's cf_fields), so that CF.ADD and CF.EXISTS batches can take their fast
// paths (the plan does the bucket arithmetic; cf_insert_fast.lua, or BITFIELD_RO with no script
// at all). Nothing is trusted: the fast insert script checks the id and generation itself, and a
// direct read is checked by an HMGET of them right after it, so a stale entry costs a fallback
// to the general scripts, never a wrong answer. Pure; no sockets.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "filters/common/meta_cache.h"
#include "protocol/reply_decoder.h"

namespace bloomproxy::filters {

struct CfMeta {
  std::string id;
  uint64_t generation = 0;  // g: + 1 whenever the number of sub-filters changes
  uint64_t num_buckets = 0;
  uint64_t bucket_size = 0;
  uint64_t max_iterations = 0;
  uint64_t expansion = 0;
  uint64_t num_filters = 0;
  uint64_t shard_bytes = 0;  // sh: bytes per data key

  // Buckets of sub-filter i.
  uint64_t Buckets(uint64_t i) const;
  // Whether the fast paths apply: buckets of at most 6 bytes (one exact BITFIELD value in the
  // scripts' Lua doubles) and every sub-filter in one data key.
  bool Simple() const;
  // The data key of sub-filter i (its only one when Simple()).
  std::string DataKey(std::string_view prefix, uint64_t i) const;
};

using CfCache = MetaCache<CfMeta>;

// From the fields a script answered, {id, g, nb, bs, mi, ex, nf, sh}; null when they do not
// parse.
std::shared_ptr<CfMeta> CfMetaFromFields(const redisReply* r);

}  // namespace bloomproxy::filters
