#include "filters/guava/guava_requests.h"

#include <charconv>
#include <climits>
#include <cstdint>

#include "filters/bloom/bf_replies.h"
#include "filters/common/plan_requests.h"
#include "filters/common/sharding_requests.h"
#include "protocol/encoder.h"
#include "protocol/errors.h"

namespace bloomproxy::filters::guava_plan {

std::string ItemIndexes(const BfRequest& request, const LayoutRule& rule,
                        std::vector<uint64_t>* out) {
  out->clear();
  out->reserve(request.items.size() * rule.k);
  std::string bytes;
  for (std::string_view item : request.items) {
    if (!guava::FunnelBytes(rule.funnel, item, &bytes)) return std::string(kNotInteger);
    rule.Indexes(bytes, out);
  }
  return "";
}

void AppendBitfield(std::string* out, std::string_view key, const uint64_t* indexes, size_t n,
                    bool set, protocol::UpstreamKind upstream) {
  protocol::AppendArrayHeader(out, 2 + static_cast<int64_t>(n) * (set ? 4 : 3));
  protocol::AppendBulk(out, set ? "BITFIELD" : ReadBitsCommand(upstream));
  protocol::AppendBulk(out, key);
  char digits[24];
  for (size_t i = 0; i < n; ++i) {
    protocol::AppendBulk(out, set ? "SET" : "GET");
    protocol::AppendBulk(out, "u1");
    const auto res = std::to_chars(digits, digits + sizeof(digits), indexes[i]);
    protocol::AppendBulk(out, std::string_view(digits, static_cast<size_t>(res.ptr - digits)));
    if (set) protocol::AppendBulk(out, "1");
  }
}

const std::vector<int64_t>* BitsReply(StepReplies& r, size_t i, size_t n) {
  const std::vector<int64_t>* bits = r.Ints(i);
  if (bits == nullptr || bits->size() != n) return nullptr;
  for (int64_t b : *bits) {
    if (b != 0 && b != 1) return nullptr;
  }
  return bits;
}

bool MultiItem(BfCommand command) {
  return command == BfCommand::kMAdd || command == BfCommand::kMExists ||
         command == BfCommand::kInsert;
}

GuavaRequest KeepRequest(const BfRequest& request, const LayoutRule& rule) {
  GuavaRequest out;
  out.command = request.command;
  out.key.assign(request.key);
  out.nocreate = request.nocreate;
  out.info_field = request.info_field;
  out.error_rate = request.error_rate;
  out.capacity = request.capacity;
  out.items = request.items.size();
  if (out.command == BfCommand::kScanDump || out.command == BfCommand::kLoadChunk) {
    out.error = NoDump(rule);
  } else if (out.adds() || out.reads()) {
    out.error = ItemIndexes(request, rule, &out.indexes);
  }
  return out;
}

std::string ItemsReply(bool multi, const std::vector<uint8_t>& results) {
  if (!multi) return Integer(results.empty() ? 0 : results[0]);
  std::string out;
  protocol::AppendArrayHeader(&out, static_cast<int64_t>(results.size()));
  for (uint8_t r : results) out += r ? ":1\r\n" : ":0\r\n";
  return out;
}

uint32_t HashWidth(GuavaLayout layout) {
  return layout == GuavaLayout::kGuavaMitz32 || layout == GuavaLayout::kGuavaMitz32Unrounded ? 32
                                                                                             : 64;
}

std::string CountsReply(const GuavaRequest& req, const LayoutRule& rule,
                        const std::vector<int64_t>& bitcounts) {
  const int64_t keys = static_cast<int64_t>(bitcounts.size());
  int64_t items = 0;
  std::vector<DebugLink> links;
  for (int64_t bitcount : bitcounts) {
    const int64_t n =
        guava::ApproximateElementCount(static_cast<uint64_t>(bitcount), rule.bits, rule.k);
    items = n > INT64_MAX - items ? INT64_MAX : items + n;
    if (req.command == BfCommand::kDebug) {
      links.push_back({static_cast<uint64_t>(KeyBytes(rule)), rule.bits, rule.k,
                       HashWidth(rule.layout), rule.n(), static_cast<uint64_t>(n),
                       rule.error_rate});
    }
  }
  if (req.command == BfCommand::kCard) return Integer(items);
  if (req.command == BfCommand::kDebug) return DebugReply(static_cast<uint64_t>(items), links);
  const int64_t n = static_cast<int64_t>(rule.n());
  const int64_t capacity = keys == 0 ? 0 : n > INT64_MAX / keys ? INT64_MAX : n * keys;
  return InfoReply(req.info_field, capacity, KeyBytes(rule) * keys, keys, items,
                   rule.expanding() ? 1 : -1);
}

std::string ReserveMismatch(const LayoutRule& rule) {
  return "-ERR bloomproxy: this key is a filter of the rule 'bf-layout " + rule.text +
         "': BF.RESERVE may only repeat the rule's error rate and capacity\r\n";
}

std::string NoDump(const LayoutRule& rule) {
  return "-ERR bloomproxy: a filter of the rule 'bf-layout " + rule.text +
         "' has no RedisBloom dump: its bits are its keys' values (DUMP and RESTORE them)\r\n";
}

std::string Unexpected(std::string_view command, std::string_view frame) {
  return protocol::errors::UnexpectedUpstreamReply(command, DescribeFrame(frame));
}

}  // namespace bloomproxy::filters::guava_plan
