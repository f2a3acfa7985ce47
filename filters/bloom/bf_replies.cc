#include "filters/bloom/bf_replies.h"

#include <cstdint>
#include <string>

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
