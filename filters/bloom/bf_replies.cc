#include "filters/bloom/bf_replies.h"

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "filters/common/plan_requests.h"
#include "protocol/encoder.h"

namespace bloomproxy::filters {

std::string InfoReply(InfoField field, int64_t capacity, int64_t size, int64_t filters,
                      int64_t items, int64_t expansion) {
  auto append_expansion = [&](std::string* o) {
    if (expansion < 0) {
      protocol::AppendNullBulk(o);
    } else {
      protocol::AppendInteger(o, expansion);
    }
  };
  std::string out;
  switch (field) {
    case InfoField::kAll:
      out = "*10\r\n";
      protocol::AppendSimple(&out, "Capacity");
      protocol::AppendInteger(&out, capacity);
      protocol::AppendSimple(&out, "Size");
      protocol::AppendInteger(&out, size);
      protocol::AppendSimple(&out, "Number of filters");
      protocol::AppendInteger(&out, filters);
      protocol::AppendSimple(&out, "Number of items inserted");
      protocol::AppendInteger(&out, items);
      protocol::AppendSimple(&out, "Expansion rate");
      append_expansion(&out);
      break;
    case InfoField::kCapacity:
      out = "*1\r\n" + Integer(capacity);
      break;
    case InfoField::kSize:
      out = "*1\r\n" + Integer(size);
      break;
    case InfoField::kFilters:
      out = "*1\r\n" + Integer(filters);
      break;
    case InfoField::kItems:
      out = "*1\r\n" + Integer(items);
      break;
    case InfoField::kExpansion:
      out = "*1\r\n";
      append_expansion(&out);
      break;
  }
  return out;
}

std::string DebugLinkText(const DebugLink& link) {
  char text[256];
  const int n =
      std::snprintf(text, sizeof(text),
                    "bytes:%" PRIu64 " bits:%" PRIu64 " hashes:%" PRIu32 " hashwidth:%" PRIu32
                    " capacity:%" PRIu32 " size:%" PRIu64 " ratio:%g",
                    link.bytes, link.bits, link.hashes, link.hashwidth,
                    static_cast<uint32_t>(link.capacity), link.size, link.ratio);
  return std::string(text, n > 0 ? static_cast<size_t>(n) : 0);
}

std::string DebugReply(uint64_t total, const std::vector<DebugLink>& links) {
  std::string out;
  protocol::AppendArrayHeader(&out, static_cast<int64_t>(links.size() + 1));
  protocol::AppendBulk(&out, "size:" + std::to_string(total));
  for (const DebugLink& link : links) protocol::AppendBulk(&out, DebugLinkText(link));
  return out;
}

namespace {

std::string FilterDebugReply(const FilterMeta& meta, int64_t total) {
  std::vector<DebugLink> links;
  links.reserve(meta.links.size());
  for (size_t l = 0; l < meta.links.size(); ++l) {
    const LinkParams& p = meta.links[l];
    links.push_back({p.bytes, p.bits != 0 ? p.bits : uint64_t{1} << (p.n2 & 63), p.k,
                     (meta.options & kOptHash64) != 0 ? 64u : 32u, p.capacity,
                     static_cast<uint64_t>(meta.counts[l]), p.error});
  }
  return DebugReply(static_cast<uint64_t>(total), links);
}

}  // namespace

CountsProblem CountsReply(const BfRequest& req, const FilterMeta& meta, std::string* reply) {
  int64_t total = 0;
  uint64_t capacity = 0, bytes = 0;
  bool counts_overflow = false, sizes_overflow = false;
  for (size_t l = 0; l < meta.links.size(); ++l) {
    counts_overflow = counts_overflow || __builtin_add_overflow(total, meta.counts[l], &total);
    sizes_overflow = sizes_overflow ||
                     __builtin_add_overflow(capacity, meta.links[l].capacity, &capacity) ||
                     __builtin_add_overflow(bytes, meta.links[l].bytes, &bytes);
  }
  if (counts_overflow) return CountsProblem::kCounts;
  // BF.INFO: RedisBloom's Size counts its structures (32 bytes + 64 per link) and the bits.
  const uint64_t size = 32 + 64 * meta.links.size() + bytes;
  constexpr uint64_t kMaxInt = static_cast<uint64_t>(INT64_MAX);
  if (sizes_overflow || capacity > kMaxInt || size > kMaxInt || size < bytes) {
    return CountsProblem::kSizes;
  }
  if (req.command == BfCommand::kCard) {
    *reply = Integer(total);
    return CountsProblem::kNone;
  }
  if (req.command == BfCommand::kDebug) {
    *reply = FilterDebugReply(meta, total);
    return CountsProblem::kNone;
  }
  if (req.command == BfCommand::kScanDump) {
    DumpHeader h;
    h.total_items = static_cast<uint64_t>(total);
    h.options = meta.options;
    h.expansion = meta.expansion;
    for (size_t l = 0; l < meta.links.size(); ++l) {
      h.links.push_back({meta.links[l], static_cast<uint64_t>(meta.counts[l])});
    }
    *reply = "*2\r\n:1\r\n";
    protocol::AppendBulk(reply, EncodeDumpHeader(h));
    return CountsProblem::kNone;
  }
  *reply = InfoReply(req.info_field, static_cast<int64_t>(capacity), static_cast<int64_t>(size),
                     static_cast<int64_t>(meta.links.size()), total,
                     meta.nonscaling() ? -1 : static_cast<int64_t>(meta.expansion));
  return CountsProblem::kNone;
}

}  // namespace bloomproxy::filters
