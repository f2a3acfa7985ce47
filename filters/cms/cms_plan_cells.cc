// CMS.INCRBY and CMS.QUERY on a sketch in one part (cms_plan_state.h), the hot path: the step's
// operations (every row of every item of every command of a batch) as one BITFIELD that touches
// each distinct cell once, encoded straight into RESP.
//
// A batch of many commands hits the same cells again and again (800 INCRBYs of 10 items on a
// 2000 x 7 sketch: 56,000 operations on 14,000 cells). Saturating additions of non-negative
// increments compose (min(min(c + a, M) + b, M) == min(c + a + b, M)), so a cell incremented k > 1
// times is read (GET) and incremented once by the sum, in the same atomic BITFIELD; the value each
// operation would have seen is min(c + its prefix sum, M), worked out here. A cell read k times is
// read once. Redis does a fraction of the work; every reply is the one the commands in order
// would get.
#include <algorithm>
#include <charconv>
#include <string>
#include <unordered_map>
#include <vector>

#include "filters/cms/cms.h"
#include "filters/cms/cms_plan_state.h"
#include "protocol/encoder.h"

namespace bloomproxy::filters::cms_plan_internal {
namespace {

// "$<len>\r\n<prefix><v>\r\n" into `buf` (kBulkNumber bytes); returns its length.
constexpr size_t kBulkNumber = 48;
size_t BulkNumber(uint64_t v, std::string_view prefix, char* buf) {
  char digits[24];
  const size_t n =
      static_cast<size_t>(std::to_chars(digits, digits + sizeof(digits), v).ptr - digits);
  char len[8];
  const size_t l =
      static_cast<size_t>(std::to_chars(len, len + sizeof(len), prefix.size() + n).ptr - len);
  std::string_view parts[] = {"$", {len, l}, "\r\n", prefix, {digits, n}, "\r\n"};
  size_t at = 0;
  for (std::string_view part : parts) {
    part.copy(buf + at, part.size());
    at += part.size();
  }
  return at;
}

void AppendNumber(uint64_t v, std::string_view prefix, std::string* out) {
  char buf[kBulkNumber];
  out->append(buf, BulkNumber(v, prefix, buf));
}

constexpr uint64_t kMaxSum = static_cast<uint64_t>(INT64_MAX);

}  // namespace

void CmsPlan::GroupCells(bool write) {
  const CmsMeta& m = *meta_;
  const size_t ops = items_.size() * m.depth;
  cells_.clear();
  op_cell_.resize(ops);
  // A table over the whole sketch when it is small next to the step, else a hash map.
  const bool dense = m.cells() <= std::max<uint64_t>(65536, 8 * ops);
  std::vector<uint32_t> table(dense ? m.cells() : 0, UINT32_MAX);
  std::unordered_map<uint64_t, uint32_t> map;
  for (size_t i = 0; i < items_.size(); ++i) {
    for (uint64_t row = 0; row < m.depth; ++row) {
      const size_t op = i * m.depth + row;
      const uint64_t cell = CmsItemCell(items_[i], m.width, row);
      uint32_t* slot = dense ? &table[cell] : &map.try_emplace(cell, UINT32_MAX).first->second;
      if (*slot == UINT32_MAX) {
        *slot = static_cast<uint32_t>(cells_.size());
        cells_.push_back({cell, 0, op, 0, 0});
      }
      Cell& c = cells_[*slot];
      ++c.count;
      if (write) c.sum = std::min(kMaxSum, c.sum + std::min(kMaxSum, increments_[i]));
      op_cell_[op] = *slot;
    }
  }
}

void CmsPlan::EncodeOnePart(bool write, std::string* out) {
  const CmsMeta& m = *meta_;
  GroupCells(write);
  size_t args = 2 + (write ? 12 : 0);
  for (const Cell& c : cells_) args += !write ? 3 : c.count == 1 ? 4 : 7;
  protocol::AppendArrayHeader(out, static_cast<int64_t>(args));
  protocol::AppendBulk(out, write || ShardingProxy() ? "BITFIELD" : "BITFIELD_RO");
  protocol::AppendBulk(out, m.PartKey(0));
  size_t at = 0;
  if (write) {
    uint64_t sum = 0;
    for (uint64_t v : increments_) sum = CmsCounterAdd(sum, v);
    for (std::string_view a : {"OVERFLOW", "WRAP", "INCRBY", "i64", "0"}) {
      protocol::AppendBulk(out, a);
    }
    protocol::AppendBulk(out, std::to_string(CmsCounterShown(sum)));
    for (std::string_view a : {"INCRBY", "i64", "64", "1", "OVERFLOW", "SAT"}) {
      protocol::AppendBulk(out, a);
    }
    at = 2;
  }
  constexpr std::string_view kGet = "$3\r\nGET\r\n$3\r\nu32\r\n";
  constexpr std::string_view kIncr = "$6\r\nINCRBY\r\n$3\r\nu32\r\n";
  out->reserve(out->size() + cells_.size() * 64);
  for (Cell& c : cells_) {
    char offset[kBulkNumber];
    const size_t offset_len = BulkNumber(kCmsHeaderCells + c.cell, "#", offset);
    c.at = at;
    if (!write || c.count > 1) {
      out->append(kGet);
      out->append(offset, offset_len);
      ++at;
    }
    if (write) {
      out->append(kIncr);
      out->append(offset, offset_len);
      AppendNumber(c.count == 1 ? increments_[c.first_op / m.depth] : c.sum, "", out);
      ++at;
    }
  }
  values_expected_ = at;
  deduped_ = true;
}

// The value each operation would have seen, from the reply's (one per distinct cell, or a GET
// and the INCRBY of the sum), in operation order.
bool CmsPlan::OpValues(StepReplies& r, std::vector<int64_t>* values, std::string* error) {
  const std::vector<int64_t>* ints = r.Ints(first_bitfield_);
  if (ints == nullptr || ints->size() != values_expected_) {
    *error = Unexpected(Named("BITFIELD"), "expected " + U64(values_expected_) + " integers, got " +
                                               DescribeFrame(r.Frame(first_bitfield_)));
    return false;
  }
  const bool write = command_ == CmsCommand::kIncrBy;
  const uint64_t depth = meta_->depth;
  std::vector<int64_t> running(cells_.size(), -1);
  values->resize(op_cell_.size());
  for (size_t op = 0; op < op_cell_.size(); ++op) {
    const Cell& c = cells_[op_cell_[op]];
    int64_t v = (*ints)[c.at];
    if (write && c.count > 1) {
      int64_t& cur = running[op_cell_[op]];
      if (cur < 0) cur = v;  // the GET: the cell before the batch
      cur = static_cast<int64_t>(
          CmsSaturatingAdd(static_cast<uint32_t>(cur), increments_[op / depth]));
      v = cur;
    }
    (*values)[op] = v;
  }
  return true;
}

}  // namespace bloomproxy::filters::cms_plan_internal
