// CMS.MERGE (cms_plan_state.h). RedisBloom merges atomically; here the sketches live in several
// keys, and the sums are computed in the proxy (Lua's numbers cannot check RedisBloom's int64
// overflows exactly), so MERGE is a snapshot read and a checked write:
//
//   1. fetch   what the destination and every distinct source hold (RedisBloom's checks, in
//              its order: MergeChecks)
//   2. read    one script returns every part of every source, and the destination's header,
//              at one instant: a consistent snapshot, whatever increments run around it
//   3. compute the weighted sums here (filters/cms/cms.h: RedisBloom's overflow checks; on overflow
//              nothing is written)
//   4. commit  one script: if the destination still has the id and the version read (every
//              INCRBY and MERGE bumps it in the same atomic write as its cells), write its
//              parts, version + 1; otherwise nothing, and MERGE starts over.
//
// So a MERGE answered OK replaced the destination with the merge of the sources as they were at
// one instant, and no increment of the destination came between (it would have been lost).
// Increments of the sources after the read count in the sources only, as if they came after the
// MERGE. Only a destination that keeps changing makes MERGE start over (kMaxMergeRestarts).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "filters/cms/cms.h"
#include "filters/cms/cms_plan_state.h"

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
  std::vector<std::string> keys;
  std::vector<bool> header;
  for (size_t j = 0; j < names_.size(); ++j) {
    const CmsMeta& m = *fetched_[j].meta;
    read_at_[j] = keys.size();
    const bool source = IsSource(j);
    for (uint64_t p = 0; p < (source ? m.Parts() : 1); ++p) {
      keys.push_back(m.PartKey(p));
      header.push_back(!source);
    }
  }
  merge_keys_ = keys.size();
  AddCmsMergeRead(&req, keys, header, config_->upstream);
  EndStep(step);
}

bool CmsPlan::IsSource(size_t j) const {
  return std::find(source_of_.begin(), source_of_.end(), j) != source_of_.end();
}

// Sketch j's parts as read (`parts`: the read script's strings): its cells and count (for a
// source), and its version's 8 bytes. False with an empty *error when a part is gone (the
// sketch changed: start over).
bool CmsPlan::ReadSketch(const std::vector<std::string_view>& parts, size_t j, CmsSketch* sketch,
                         std::string* version, std::string* error) const {
  const CmsMeta& m = *fetched_[j].meta;
  const bool source = IsSource(j);
  if (source) *sketch = NewCmsSketch(m.width, m.depth);
  for (uint64_t p = 0; p < (source ? m.Parts() : 1); ++p) {
    const std::string_view bytes = parts[read_at_[j] + p];
    if (bytes.empty()) return false;
    const uint64_t want = source ? m.PartBytes(p) : kCmsHeaderBytes;
    if (bytes.size() != want) {
      *error = Unexpected(Named("EVAL"), "part " + U64(p) + " holds " + U64(bytes.size()) +
                                             " bytes, expected " + U64(want));
      return false;
    }
    if (p == 0) version->assign(bytes.substr(8, 8));
    if (!source) continue;
    if (p == 0) sketch->counter = CmsHeaderField(bytes, 0);
    const uint64_t first = p * m.part_cells;
    for (uint64_t c = 0; c < m.PartCells(p); ++c) {
      sketch->cells[first + c] = CmsPartCell(bytes, c);
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
    for (uint64_t c = 0; c < m.PartCells(p); ++c) AppendCmsCell(&content, merged.cells[first + c]);
    out.emplace_back(m.PartKey(p), std::move(content));
  }
  return out;
}

void CmsPlan::OnMergeRead(StepReplies& r, PlanStep* step) {
  if (r.IsErrorReply(0)) return Finish(step, UpstreamError(r.Frame(0), Named("EVAL")));
  const redisReply* a = r.Get(0);
  std::vector<std::string_view> parts;
  for (size_t i = 0; a != nullptr && a->type == REDIS_REPLY_ARRAY && i < a->elements; ++i) {
    parts.push_back(Str(a->element[i]));
  }
  if (parts.size() != merge_keys_) {
    return Finish(step, Unexpected(Named("EVAL"), "expected " + U64(merge_keys_) + " parts, got " +
                                                      DescribeFrame(r.Frame(0))));
  }
  std::vector<CmsSketch> sketches(names_.size());
  std::vector<std::string> versions(names_.size());
  std::string error;
  for (size_t j = 0; j < names_.size(); ++j) {
    if (!ReadSketch(parts, j, &sketches[j], &versions[j], &error)) {
      return error.empty() ? Restart(step) : Finish(step, std::move(error));
    }
  }
  std::vector<CmsMergeSource> sources;
  for (size_t i = 0; i < source_of_.size(); ++i) {
    sources.push_back({&sketches[source_of_[i]], weights_[i]});
  }
  CmsSketch merged;
  if (!CmsMerge(sources, &merged)) return Finish(step, std::string(kCmsErrMergeOverflow));
  const CmsMeta& dest = *fetched_[0].meta;
  phase_ = Phase::kMergeCommit;
  Requests& req = BeginStep(step);
  AddCmsMergeCommit(&req, {{names_[0], dest.id, dest.PartKey(0), versions[0]}},
                    DestParts(merged, versions[0]));
  req.Last().kind = ReplyCheck::Kind::kInteger;
  EndStep(step);
}

void CmsPlan::OnMergeCommit(StepReplies& r, PlanStep* step) {
  std::string error;
  if (!CheckReply(r, 0, checks_[0], &error)) return Finish(step, std::move(error));
  int64_t written = 0;
  FrameInt(r.Frame(0), &written);
  if (written != 1) {
    if (++merge_restarts_ > kMaxMergeRestarts) return Finish(step, std::string(kBusy));
    return Fetch(step);
  }
  Finish(step, "+OK\r\n");
}

}  // namespace bloomproxy::filters::cms_plan_internal
