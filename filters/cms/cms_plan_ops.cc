// CMS.INCRBY, CMS.QUERY and CMS.INFO on a sketch whose metadata the plan has (cms_plan_state.h):
// one step of BITFIELD (or, for a sketch in several parts, one script running every part's
// BITFIELD atomically) followed by the validation, and the reply folded from its integers.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "filters/cms/cms.h"
#include "filters/cms/cms_plan_state.h"
#include "protocol/encoder.h"

namespace bloomproxy::filters::cms_plan_internal {
namespace {

// The minimum of each item's cells, in item order (for INCRBY after its own increments), from
// the operations' values in operation order (item-major).
std::vector<int64_t> Minima(const std::vector<int64_t>& values, size_t items, uint64_t depth) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < items; ++i) {
    int64_t min = kCmsCellMax;
    for (uint64_t row = 0; row < depth; ++row) min = std::min(min, values[i * depth + row]);
    out.push_back(min);
  }
  return out;
}

}  // namespace

// Every item's cells as BITFIELD operations grouped by part, part 0 first (an INCRBY always
// writes part 0: the count and the version are there), and where each cell's value will be.
void CmsPlan::PlanCells(bool write, std::vector<CmsPartOps>* parts) {
  const CmsMeta& m = *meta_;
  std::vector<std::vector<std::pair<size_t, uint64_t>>> by_part(m.Parts());  // (op, cell)
  for (size_t i = 0; i < items_.size(); ++i) {
    for (uint64_t row = 0; row < m.depth; ++row) {
      const uint64_t cell = CmsItemCell(items_[i], m.width, row);
      by_part[cell / m.part_cells].emplace_back(i * m.depth + row, cell % m.part_cells);
    }
  }
  positions_.assign(items_.size() * m.depth, 0);
  size_t at = 0;
  for (uint64_t p = 0; p < m.Parts(); ++p) {
    if (by_part[p].empty() && !(write && p == 0)) continue;
    CmsPartOps ops;
    ops.key = m.PartKey(p);
    if (write && p == 0) {
      uint64_t sum = 0;
      for (uint64_t v : increments_) sum = CmsCounterAdd(sum, v);
      ops.args = {"OVERFLOW", "WRAP", "INCRBY", "i64", "0", std::to_string(CmsCounterShown(sum)),
                  "INCRBY",   "i64",  "64",     "1"};
      at += 2;
    }
    if (write && !by_part[p].empty()) ops.args.insert(ops.args.end(), {"OVERFLOW", "SAT"});
    for (const auto& [op, cell] : by_part[p]) {
      const std::string offset = "#" + U64(kCmsHeaderCells + cell);
      if (write) {
        ops.args.insert(ops.args.end(), {"INCRBY", "u32", offset, U64(increments_[op / m.depth])});
      } else {
        ops.args.insert(ops.args.end(), {"GET", "u32", offset});
      }
      positions_[op] = at++;
    }
    parts->push_back(std::move(ops));
  }
  values_expected_ = at;
}

void CmsPlan::Main(PlanStep* step) {
  phase_ = Phase::kMain;
  Requests& req = BeginStep(step);
  written_.clear();
  whole_part_.clear();
  deduped_ = false;
  multi_part_ = false;
  positions_.clear();
  first_bitfield_ = req.count();
  AddDataRequest(&req);
  // The validation follows the data command (see the top of the file).
  validation_at_ = req.count();
  req.Add({"HMGET", name_, "cms", "id"});
  EndStep(step);
}

void CmsPlan::AddDataRequest(Requests* req) {
  const bool write = command_ == CmsCommand::kIncrBy;
  const bool one_part = meta_->Parts() == 1;
  if (command_ == CmsCommand::kQuery && one_part &&
      items_.size() * meta_->depth * kBytesPerRead >= meta_->PartBytes(0)) {
    // A batch that reads more cells than a whole part is worth: GET the part (a copy in Redis)
    // instead of parsing and answering thousands of BITFIELD operations.
    for (const std::string& item : items_) {
      for (uint64_t row = 0; row < meta_->depth; ++row) {
        whole_part_.push_back(CmsItemCell(item, meta_->width, row));
      }
    }
    req->Add({"GET", meta_->PartKey(0)});
    return;
  }
  if (command_ != CmsCommand::kInfo && one_part) {
    EncodeOnePart(write, &req->Begin(0));  // (it reserves room for its cells)
    req->End(write || ShardingProxy() ? "BITFIELD" : "BITFIELD_RO");
    if (write) written_.push_back(meta_->PartKey(0));
    return;
  }
  std::vector<CmsPartOps> parts;
  if (command_ == CmsCommand::kInfo) {
    parts.push_back({meta_->PartKey(0), {"GET", "i64", "0"}});
    values_expected_ = 1;
  } else {
    PlanCells(write, &parts);
  }
  multi_part_ = parts.size() > 1;
  if (multi_part_) {
    AddCmsMultiBitfield(req, parts);
  } else {
    std::vector<std::string_view> args = {write || ShardingProxy() ? "BITFIELD" : "BITFIELD_RO",
                                          parts[0].key};
    args.insert(args.end(), parts[0].args.begin(), parts[0].args.end());
    req->Add(args);
  }
  if (write) {
    for (const CmsPartOps& p : parts) written_.push_back(p.key);
  }
}

bool CmsPlan::StillTheSketch(StepReplies& r, size_t at, std::string* error) const {
  if (at >= r.size()) {
    *error = Unexpected(Named("HMGET"), "the reply is missing");
    return false;
  }
  if (r.IsErrorReply(at)) {
    if (IsWrongType(r.Frame(at))) return false;  // another type: not the sketch
    *error = UpstreamError(r.Frame(at), Named("HMGET"));
    return false;
  }
  const redisReply* v = r.Get(at);
  return v != nullptr && v->type == REDIS_REPLY_ARRAY && v->elements == 2 &&
         Str(v->element[0]) == "1" && Str(v->element[1]) == meta_->id;
}

bool CmsPlan::CollectValues(StepReplies& r, std::vector<int64_t>* values, std::string* error) {
  ReplyCheck check = Named(multi_part_ ? "EVAL" : !whole_part_.empty() ? "GET" : "BITFIELD");
  if (r.IsErrorReply(first_bitfield_)) {
    *error = UpstreamError(r.Frame(first_bitfield_), check);
    return false;
  }
  if (!whole_part_.empty()) return CellsOfPart(r, values, error);
  if (deduped_) return OpValues(r, values, error);
  if (!multi_part_) {
    const std::vector<int64_t>* ints = r.Ints(first_bitfield_);
    if (ints != nullptr) *values = *ints;
  } else if (const redisReply* a = r.Get(first_bitfield_);
             a != nullptr && a->type == REDIS_REPLY_ARRAY) {
    for (size_t c = 0; c < a->elements; ++c) {
      const redisReply* call = a->element[c];
      for (size_t k = 0; call->type == REDIS_REPLY_ARRAY && k < call->elements; ++k) {
        if (call->element[k]->type != REDIS_REPLY_INTEGER) break;
        values->push_back(call->element[k]->integer);
      }
    }
  }
  if (values->size() != values_expected_) {
    *error = Unexpected(check, "expected " + U64(values_expected_) + " integers, got " +
                                   DescribeFrame(r.Frame(first_bitfield_)));
    return false;
  }
  if (!positions_.empty()) {  // several parts: the replies in part order, back in operation order
    std::vector<int64_t> ops(positions_.size());
    for (size_t op = 0; op < ops.size(); ++op) ops[op] = (*values)[positions_[op]];
    values->swap(ops);
  }
  return true;
}

// The cells of whole_part_ from the GET of the part, in operation order.
bool CmsPlan::CellsOfPart(StepReplies& r, std::vector<int64_t>* values, std::string* error) {
  const redisReply* v = r.Get(first_bitfield_);
  const uint64_t want = meta_->PartBytes(0);
  if (v == nullptr || v->type != REDIS_REPLY_STRING || v->len != want) {
    *error = Unexpected(Named("GET"), "expected the part's " + U64(want) + " bytes, got " +
                                          DescribeFrame(r.Frame(first_bitfield_)));
    return false;
  }
  const std::string_view part(v->str, v->len);
  values->reserve(whole_part_.size());
  for (uint64_t cell : whole_part_) values->push_back(CmsPartCell(part, cell));
  return true;
}

void CmsPlan::OnMain(StepReplies& r, PlanStep* step) {
  std::string error;
  if (!StillTheSketch(r, validation_at_, &error)) {
    if (!error.empty()) return Finish(step, std::move(error));
    // The write reached parts of a sketch that is gone: remove them, then start over.
    if (!written_.empty()) AddCmsCleanup(&trailing_, name_, meta_->id, written_);
    return Restart(step);
  }
  std::vector<int64_t> values;
  if (!CollectValues(r, &values, &error)) return Finish(step, std::move(error));
  switch (command_) {
    case CmsCommand::kIncrBy:
    case CmsCommand::kQuery:
      return FinishItems(values, step);
    default:
      return Finish(step, InfoReply(values));
  }
}

std::string CmsPlan::ItemsReply(const std::vector<int64_t>& minima, size_t first,
                                size_t count) const {
  std::string out;
  protocol::AppendArrayHeader(&out, static_cast<int64_t>(count));
  for (size_t i = first; i < first + count; ++i) {
    // INCRBY's element for a saturated item is an error; QUERY shows the count.
    if (command_ == CmsCommand::kIncrBy && minima[i] >= kCmsCellMax) {
      out += kCmsErrIncrByOverflow;
    } else {
      protocol::AppendInteger(&out, minima[i]);
    }
  }
  return out;
}

void CmsPlan::FinishItems(const std::vector<int64_t>& values, PlanStep* step) {
  const std::vector<int64_t> minima = Minima(values, items_.size(), meta_->depth);
  // (The runner sends a plan of one member its final reply.)
  if (members_.size() <= 1) return Finish(step, ItemsReply(minima, 0, items_.size()));
  for (const PlanMember& m : members_) {
    member_replies_.push_back(ItemsReply(minima, m.start, m.count));
  }
  Finish(step, std::string());
}

std::string CmsPlan::InfoReply(const std::vector<int64_t>& values) const {
  std::string out;
  protocol::AppendArrayHeader(&out, 6);
  protocol::AppendSimple(&out, "width");
  protocol::AppendInteger(&out, static_cast<int64_t>(meta_->width));
  protocol::AppendSimple(&out, "depth");
  protocol::AppendInteger(&out, static_cast<int64_t>(meta_->depth));
  protocol::AppendSimple(&out, "count");
  protocol::AppendInteger(&out, values[0]);
  return out;
}

}  // namespace bloomproxy::filters::cms_plan_internal
