#include "filters/bloom/bf_meta.h"

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "filters/common/key_layout.h"
#include "protocol/request_parser.h"

namespace bloomproxy::filters {
namespace {

// HMGET of this many link fields covers any chain a key-level plan meets: with expansion >= 2
// a chain of 64 links would hold more than 2^64 items.
constexpr size_t kMaxLinkFields = 64;

// The largest shard a filter's metadata may name: Redis strings stop at 512 MB.
constexpr uint64_t kMaxShardBytes = 512ULL * 1024 * 1024;
// The most shards a link may have (2^24: 1 PB in shards of 64 MiB, 1 GB in the smallest, 64
// bytes); metadata naming more is damaged (listing its keys would exhaust memory).
constexpr uint64_t kMaxShardsPerLink = uint64_t{1} << 24;

}  // namespace

std::string Hex64(uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64, v);
  return buf;
}

std::string DoubleBits(double d) {
  uint64_t bits;
  std::memcpy(&bits, &d, sizeof(bits));
  return Hex64(bits);
}
bool ParseDoubleBits(std::string_view s, double* out) {
  if (s.size() != 16) return false;
  uint64_t bits = 0;
  for (char c : s) {
    int v = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
    if (v < 0) return false;
    bits = (bits << 4) | static_cast<uint64_t>(v);
  }
  std::memcpy(out, &bits, sizeof(bits));
  return true;
}
bool ParseU64(std::string_view s, uint64_t* out) {
  int64_t v = 0;
  if (!protocol::StringToInt64(s, &v) || v < 0) return false;
  *out = static_cast<uint64_t>(v);
  return true;
}

std::string EncodeLink(const LinkParams& l) {
  return U64(l.bytes) + " " + U64(l.bits) + " " + U64(l.capacity) + " " + std::to_string(l.k) +
         " " + std::to_string(l.n2) + " " + DoubleBits(l.error) + " " + DoubleBits(l.bpe);
}
bool DecodeLink(std::string_view s, LinkParams* l) {
  std::string_view parts[7];
  size_t n = 0;
  while (n < 7) {
    size_t sp = s.find(' ');
    parts[n++] = s.substr(0, sp);
    if (sp == std::string_view::npos) {
      s = {};
      break;
    }
    s.remove_prefix(sp + 1);
  }
  uint64_t k = 0, n2 = 0;
  if (n != 7 || !s.empty() || !ParseU64(parts[0], &l->bytes) || !ParseU64(parts[1], &l->bits) ||
      !ParseU64(parts[2], &l->capacity) || !ParseU64(parts[3], &k) || !ParseU64(parts[4], &n2) ||
      !ParseDoubleBits(parts[5], &l->error) || !ParseDoubleBits(parts[6], &l->bpe)) {
    return false;
  }
  if (l->bytes == 0 || l->bytes > (uint64_t{1} << 59) || l->bits != l->bytes * 8 || k == 0 ||
      k >= 1000 || n2 != 0 || !(l->error > 0 && l->error < 1) || !std::isfinite(l->bpe)) {
    return false;
  }
  l->k = static_cast<uint32_t>(k);
  l->n2 = 0;
  return true;
}

MetaStatus MetaFromFields(std::string_view name,
                          const std::vector<std::pair<std::string_view, std::string_view>>& f,
                          bool strict, std::shared_ptr<FilterMeta>* out, std::string* problem) {
  auto meta = std::make_shared<FilterMeta>();
  bool marker = false;
  bool have_id = false, have_error = false, have_capacity = false, have_expansion = false,
       have_options = false, have_shard = false;
  std::string bad;  // the first field that does not parse or is out of range
  auto fail = [&bad](std::string_view field) {
    if (bad.empty()) bad.assign(field);
  };
  std::vector<std::pair<uint64_t, std::string_view>> link_fields;
  for (const auto& [field, value] : f) {
    uint64_t v = 0;
    if (field == kMarkerField) {
      marker = value == kMarkerValue;
    } else if (field == "id") {
      have_id = true;
      meta->id.assign(value);
      bool ok = !value.empty() && value.size() <= 64;
      for (char c : value) ok = ok && std::isalnum(static_cast<unsigned char>(c));
      if (!ok) fail(field);
    } else if (field == "error") {
      have_error = true;
      if (!ParseDoubleBits(value, &meta->error) || !std::isfinite(meta->error) ||
          !(meta->error > 0)) {
        fail(field);
      }
    } else if (field == "capacity") {
      have_capacity = true;
      if (!ParseU64(value, &meta->capacity)) fail(field);
    } else if (field == "expansion") {
      have_expansion = true;
      if (!ParseU64(value, &v) || v > UINT32_MAX) fail(field);
      meta->expansion = static_cast<uint32_t>(v);
    } else if (field == "options") {
      have_options = true;
      if (!ParseU64(value, &v) || v > UINT32_MAX || (v & kOptHash64) == 0) fail(field);
      meta->options = static_cast<uint32_t>(v);
    } else if (field == "shard") {
      have_shard = true;
      if (!ParseU64(value, &meta->shard_bytes) || meta->shard_bytes == 0 ||
          meta->shard_bytes > kMaxShardBytes) {
        fail(field);
      }
    } else if (field == "window") {
      if (!ParseU64(value, &meta->window_ms) || meta->window_ms == 0 ||
          meta->window_ms > kMaxWindowMs) {
        fail(field);
      }
    } else if (field == "slots") {
      if (!ParseU64(value, &v) || v < kMinWindowSlots || v > kMaxWindowSlots) fail(field);
      meta->slots = static_cast<uint32_t>(v);
    } else if (field.size() > 1 && field[0] == 'l' && ParseU64(field.substr(1), &v)) {
      link_fields.emplace_back(v, value);
    }
  }
  if (!marker) return MetaStatus::kNotFilter;
  std::sort(link_fields.begin(), link_fields.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; i < link_fields.size(); ++i) {
    LinkParams l;
    if (link_fields[i].first != i) {
      // A gap: l<i> missing while a later link exists (links are only ever added in order).
      if (!strict) break;
      *problem = "the filter's metadata has no field 'l" + std::to_string(i) + "' but has 'l" +
                 std::to_string(link_fields[i].first) + "'";
      return MetaStatus::kDamaged;
    }
    // A link of more shards than any real one would have (the plans and DEL list them all).
    if (!DecodeLink(link_fields[i].second, &l) ||
        (meta->shard_bytes > 0 && l.bytes / meta->shard_bytes >= kMaxShardsPerLink)) {
      if (!strict) break;
      fail("l" + std::to_string(i));
      break;
    }
    meta->links.push_back(l);
  }
  if (strict && !meta->nonscaling()) {
    // A scaling chain whose next links would take no items would add links for ever.
    if (meta->capacity == 0) fail("capacity");
    if (meta->expansion == 0) fail("expansion");
  }
  if (strict) {
    const char* missing = !have_id                                   ? "id"
                          : !have_shard                              ? "shard"
                          : !have_options                            ? "options"
                          : !have_error                              ? "error"
                          : !have_capacity                           ? "capacity"
                          : !have_expansion                          ? "expansion"
                          : meta->windowed() && meta->slots == 0     ? "slots"
                          : link_fields.empty() && !meta->windowed() ? "l0"
                                                                     : nullptr;
    if (missing != nullptr) {
      *problem = std::string("the filter's metadata has no field '") + missing + "'";
      return MetaStatus::kDamaged;
    }
    if (!bad.empty()) {
      *problem = "the filter's metadata field '" + bad + "' is not valid";
      return MetaStatus::kDamaged;
    }
  } else if (meta->id.empty() || meta->shard_bytes == 0 ||
             (meta->links.empty() && !meta->windowed()) || bad == "id" || bad == "shard") {
    // (A windowed filter has no links: its data keys are its slots', found at the upstream's
    // time by whoever lists them.)
    return MetaStatus::kNotFilter;
  }
  meta->counts.assign(meta->links.size(), 0);
  meta->prefix = DataKeyPrefix(name);
  *out = std::move(meta);
  return MetaStatus::kFilter;
}

std::vector<std::string> MetaFieldList() {
  std::vector<std::string> f = {std::string(kMarkerField), "id", "shard", "options"};
  for (size_t i = 0; i < kMaxLinkFields; ++i) f.push_back("l" + std::to_string(i));
  f.emplace_back("window");
  f.emplace_back("slots");
  return f;
}
void AddMetaHmget(Requests* req, std::string_view key) {
  std::vector<std::string> args = {"HMGET", std::string(key)};
  for (std::string& f : MetaFieldList()) args.push_back(std::move(f));
  req->Add(args);
}
std::shared_ptr<FilterMeta> MetaFromHmget(std::string_view name, const redisReply* r) {
  if (r == nullptr || r->type != REDIS_REPLY_ARRAY) return nullptr;
  std::vector<std::string> names = MetaFieldList();
  std::vector<std::pair<std::string_view, std::string_view>> fields;
  for (size_t i = 0; i < r->elements && i < names.size(); ++i) {
    if (r->element[i]->type == REDIS_REPLY_STRING)
      fields.emplace_back(names[i], Str(r->element[i]));
  }
  // The chain's parameters are not read: the data keys need only id, shard and links (a
  // windowed filter's: id, window and slots).
  std::shared_ptr<FilterMeta> meta;
  std::string problem;
  if (MetaFromFields(name, fields, /*strict=*/false, &meta, &problem) != MetaStatus::kFilter) {
    return nullptr;
  }
  return meta;
}

// ---------------------------------------------------------------------------------------------
// FilterMeta and FilterCache

uint64_t FilterMeta::ShardCount(size_t link) const {
  const uint64_t bytes = links[link].bytes;
  return bytes == 0 ? 1 : (bytes + shard_bytes - 1) / shard_bytes;
}
std::string FilterMeta::BitsKey(size_t link, size_t shard) const {
  return filters::BitsKey(prefix, id, link, shard);
}
std::string FilterMeta::CountKey(size_t link) const { return filters::CountKey(prefix, id, link); }
std::vector<std::string> FilterMeta::DataKeys() const {
  std::vector<std::string> keys;
  for (size_t l = 0; l < links.size(); ++l) {
    for (uint64_t s = 0; s < ShardCount(l); ++s) keys.push_back(BitsKey(l, s));
    keys.push_back(CountKey(l));
  }
  return keys;
}

std::vector<std::string> MetaHashFields(const FilterMeta& meta) {
  std::vector<std::string> fields = {std::string(kMarkerField),
                                     std::string(kMarkerValue),
                                     "id",
                                     meta.id,
                                     "error",
                                     DoubleBits(meta.error),
                                     "capacity",
                                     U64(meta.capacity),
                                     "expansion",
                                     U64(meta.expansion),
                                     "options",
                                     U64(meta.options),
                                     "shard",
                                     U64(meta.shard_bytes)};
  if (meta.windowed()) {
    fields.insert(fields.end(), {"window", U64(meta.window_ms), "slots", U64(meta.slots)});
  }
  for (size_t l = 0; l < meta.links.size(); ++l) {
    fields.push_back("l" + std::to_string(l));
    fields.push_back(EncodeLink(meta.links[l]));
  }
  return fields;
}

FilterMeta NewFilterMeta(std::string_view name, const BfRequest& req, const DumpHeader* header,
                         const BfConfig& config) {
  FilterMeta meta;
  meta.id = NewId();
  meta.prefix = DataKeyPrefix(name);
  meta.shard_bytes = config.max_shard_bytes;
  if (header != nullptr) {
    meta.options = header->options;
    meta.expansion = header->expansion;
    meta.error = header->links[0].params.error;
    meta.capacity = header->links[0].params.capacity;
    for (const DumpLink& l : header->links) {
      meta.links.push_back(l.params);
      meta.counts.push_back(static_cast<int64_t>(l.items));
    }
    // The chain's own error rate: the first link of a scaling chain has half of it.
    if (!meta.nonscaling()) meta.error *= 2;
    return meta;
  }
  meta.error = req.error_rate;
  meta.capacity = req.capacity;
  meta.expansion = req.nonscaling ? 0 : req.expansion;
  meta.options = req.nonscaling ? kOptionsNonScaling : kOptionsScaling;
  if (req.window_ms > 0) {
    // A windowed filter's items are in its slots, each a filter of its own.
    meta.window_ms = req.window_ms;
    meta.slots = req.slots > 0 ? req.slots : kDefaultWindowSlots;
    return meta;
  }
  meta.links.push_back(ChainLink(meta.error, meta.capacity, meta.expansion, req.nonscaling, 0));
  meta.counts.push_back(0);
  return meta;
}

}  // namespace bloomproxy::filters
