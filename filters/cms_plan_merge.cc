// CMS.MERGE (cms_plan_state.h). RedisBloom merges atomically; here the sketches live in several
// keys, so MERGE is optimistic:
//
//   1. fetch   what the destination and every distinct source hold (RedisBloom's checks, in
//              its order: MergeChecks)
//   2. read    every part of every source (GET), and the destination's header when it is no
//              source: with part 0 comes each sketch's version, which every INCRBY and MERGE
//              bumps in the same atomic write as its cells
//   3. compute the weighted sums here (filters/cms.h: RedisBloom's overflow checks; on overflow
//              nothing is written)
//   4. commit  one script: if every sketch still has the id and version read, write the
//              destination's parts (the version + 1); otherwise nothing, and MERGE starts over.
//
// So a MERGE answered OK is the merge of states that no increment came between, as in Redis.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "filters/cms.h"
#include "filters/cms_plan_state.h"

namespace bloomproxy::filters::cms_plan_internal {

std::string CmsPlan::MergeChecks() const {
  const Fetched& dest = fetched_[0];
  if (!NotASketch(dest).empty()) return std::string(NotASketch(dest));
  if (!parse_error_.empty() && error_order_ == CmsErrorOrder::kAfterKey) return parse_error_;
  for (size_t i = 0; i < source_of_.size(); ++i) {
    if (i == bad_weight_) return parse_error_;
    const Fetched& source = fetched_[source_of_[i]];
    if (!NotASketch(source).empty()) return std::string(NotASketch(source));
    if (source.meta->width != dest.meta->width || source.meta->depth != dest.meta->depth) {
      return std::string(kCmsErrDimsNotEqual);
    }
  }
  return {};
}

void CmsPlan::MergeRead(PlanStep* step) {
  phase_ = Phase::kMergeRead;
  Requests& req = BeginStep(step);
  read_at_.assign(names_.size(), 0);
  for (size_t j = 0; j < names_.size(); ++j) {
    const CmsMeta& m = *fetched_[j].meta;
    read_at_[j] = req.count();
    const bool source = std::find(source_of_.begin(), source_of_.end(), j) != source_of_.end();
    if (!source) {
      req.Add({"GETRANGE", m.PartKey(0), "0", U64(kCmsHeaderBytes - 1)});
      continue;
    }
    for (uint64_t p = 0; p < m.Parts(); ++p) req.Add({"GET", m.PartKey(p)});
  }
  EndStep(step);
}

// Sketch j's parts as read: its cells and count (for a source), and its version's 8 bytes.
// False with an empty *error when a part is gone (the sketch changed: start over).
bool CmsPlan::ReadSketch(StepReplies& r, size_t j, CmsSketch* sketch, std::string* version,
                         std::string* error) const {
  const CmsMeta& m = *fetched_[j].meta;
  const bool source = std::find(source_of_.begin(), source_of_.end(), j) != source_of_.end();
  const uint64_t parts = source ? m.Parts() : 1;
  if (source) *sketch = NewCmsSketch(m.width, m.depth);
  for (uint64_t p = 0; p < parts; ++p) {
    const size_t at = read_at_[j] + p;
    const ReplyCheck check = Named(source ? "GET" : "GETRANGE");
    if (r.IsErrorReply(at)) {
      if (r.Frame(at).substr(0, 10) == "-WRONGTYPE") return false;
      *error = UpstreamError(r.Frame(at), check);
      return false;
    }
    const redisReply* v = r.Get(at);
    if (v == nullptr || v->type != REDIS_REPLY_STRING || v->len == 0) return false;
    const std::string_view bytes(v->str, v->len);
    const uint64_t want = source ? m.PartBytes(p) : kCmsHeaderBytes;
    if (bytes.size() != want) {
      *error = Unexpected(check,
                          "the part holds " + U64(bytes.size()) + " bytes, expected " + U64(want));
      return false;
    }
    if (p == 0) version->assign(bytes.substr(8, 8));
    if (!source) continue;
    if (p == 0) sketch->counter = CmsHeaderField(bytes, 0);
    const uint64_t first = p * m.part_cells;
    for (uint64_t c = 0; c < m.PartCells(p); ++c) {
      const auto* b =
          reinterpret_cast<const unsigned char*>(bytes.data() + kCmsHeaderBytes + 4 * c);
      sketch->cells[first + c] =
          (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | uint32_t{b[3]};
    }
  }
  return true;
}

// The destination's parts holding `merged`, with part 0's header (count, the new version).
std::vector<std::pair<std::string, std::string>> CmsPlan::DestParts(
    const CmsSketch& merged, std::string_view version) const {
  const CmsMeta& m = *fetched_[0].meta;
  std::vector<std::pair<std::string, std::string>> out;
  for (uint64_t p = 0; p < m.Parts(); ++p) {
    std::string content = p == 0 ? CmsHeader(merged.counter, CmsHeaderField(version, 0) + 1)
                                 : std::string(kCmsHeaderBytes, '\0');
    const uint64_t first = p * m.part_cells;
    for (uint64_t c = 0; c < m.PartCells(p); ++c) {
      const uint32_t v = merged.cells[first + c];
      const char be[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                          static_cast<char>(v >> 8), static_cast<char>(v)};
      content.append(be, 4);
    }
    out.emplace_back(m.PartKey(p), std::move(content));
  }
  return out;
}

void CmsPlan::OnMergeRead(StepReplies& r, PlanStep* step) {
  std::vector<CmsSketch> sketches(names_.size());
  std::vector<std::string> versions(names_.size());
  std::string error;
  for (size_t j = 0; j < names_.size(); ++j) {
    if (!ReadSketch(r, j, &sketches[j], &versions[j], &error)) {
      return error.empty() ? Restart(step) : Finish(step, std::move(error));
    }
  }
  std::vector<CmsMergeSource> sources;
  for (size_t i = 0; i < source_of_.size(); ++i) {
    sources.push_back({&sketches[source_of_[i]], weights_[i]});
  }
  CmsSketch merged;
  if (!CmsMerge(sources, &merged)) return Finish(step, std::string(kCmsErrMergeOverflow));
  std::vector<CmsChecked> checked;
  for (size_t j = 0; j < names_.size(); ++j) {
    const CmsMeta& m = *fetched_[j].meta;
    checked.push_back({names_[j], m.id, m.PartKey(0), versions[j]});
  }
  phase_ = Phase::kMergeCommit;
  Requests& req = BeginStep(step);
  AddCmsMergeCommit(&req, checked, DestParts(merged, versions[0]));
  req.Last().kind = ReplyCheck::Kind::kInteger;
  EndStep(step);
}

void CmsPlan::OnMergeCommit(StepReplies& r, PlanStep* step) {
  std::string error;
  if (!CheckReply(r, 0, checks_[0], &error)) return Finish(step, std::move(error));
  int64_t written = 0;
  FrameInt(r.Frame(0), &written);
  if (written != 1) return Restart(step);
  Finish(step, "+OK\r\n");
}

}  // namespace bloomproxy::filters::cms_plan_internal
