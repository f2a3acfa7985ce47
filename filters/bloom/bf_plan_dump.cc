// Dump and load, for the BF plan (bf_plan_state.h): BF.SCANDUMP's chunks after the header
// (GETRANGE of the shards a chunk spans) and BF.LOADCHUNK's chunks after the first (SETRANGE
// into the shards, each shard's size checked). The header itself is made with the counts
// (bf_plan_read.cc), and loaded when the filter is created (bf_plan_create.cc).
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "filters/bloom/bf_plan_state.h"
#include "filters/bloom/bloom.h"
#include "filters/common/plan_requests.h"
#include "protocol/encoder.h"

namespace bloomproxy::filters::bf_plan_internal {

// SCANDUMP with an iterator: the chunk's bytes, with GETRANGE from the shards it spans.
void BfPlan::DumpRound(PlanStep* step) {
  std::vector<uint64_t> sizes;
  for (const LinkParams& l : meta_->links) sizes.push_back(l.bytes);
  chunk_ = LocateDumpChunk(sizes, req_.iterator);
  Requests& req = BeginStep(step);
  AddValidation(&req);
  if (!chunk_.end) {
    const uint64_t sb = meta_->shard_bytes;
    for (uint64_t s = chunk_.offset / sb; s * sb < chunk_.offset + chunk_.length; ++s) {
      const uint64_t from = std::max(chunk_.offset, s * sb) - s * sb;
      const uint64_t to = std::min(chunk_.offset + chunk_.length, (s + 1) * sb) - 1 - s * sb;
      req.Add({"GETRANGE", meta_->BitsKey(chunk_.link, s), U64(from), U64(to)});
      // Shards have their full size: fewer bytes are a shard missing or overwritten.
      ReplyCheck& c = req.Last();
      c.kind = ReplyCheck::Kind::kBulk;
      c.role = ReplyCheck::Role::kShard;
      c.link = static_cast<uint32_t>(chunk_.link);
      c.shard = s;
      c.n = to - from + 1;
    }
  }
  EndStep(step);
}

// The replies were checked (CheckReplies).
void BfPlan::OnDumpRound(StepReplies& r, PlanStep* step) {
  if (chunk_.end) return Finish(step, "*2\r\n:0\r\n$0\r\n\r\n");
  std::string data;
  data.reserve(chunk_.length);
  for (size_t i = kValidationReplies; i < checks_.size(); ++i) data.append(Str(r.Get(i)));
  std::string out = "*2\r\n";
  protocol::AppendInteger(&out, req_.iterator + static_cast<int64_t>(chunk_.length));
  protocol::AppendBulk(&out, data);
  Finish(step, out);
}

// LOADCHUNK of data: SETRANGE into the shards the chunk spans (each shard's size checked
// before and after).
void BfPlan::LoadRound(PlanStep* step) {
  // RedisBloom's SBChain_LoadEncodedChunk: the chunk starts at iterator - length - 1.
  const int64_t len = static_cast<int64_t>(data_.size());
  if (req_.iterator <= 0 || req_.iterator < len) return Finish(step, std::string(kBadData));
  uint64_t pos = static_cast<uint64_t>(req_.iterator - len - 1);
  size_t link = 0;
  while (link < meta_->links.size() && pos >= meta_->links[link].bytes) {
    pos -= meta_->links[link].bytes;
    ++link;
  }
  if (req_.iterator - len - 1 < 0 || link == meta_->links.size()) {
    return Finish(step, std::string(kNoLink));
  }
  const uint64_t offset = pos;
  if (data_.size() > meta_->links[link].bytes - offset) {
    return Finish(step, std::string(kTooBig));
  }
  Requests& req = BeginStep(step);
  AddValidation(&req);
  const uint64_t sb = meta_->shard_bytes;
  const uint64_t end = offset + data_.size();
  for (uint64_t s = offset / sb; s * sb < end; ++s) {
    const uint64_t from = std::max(offset, s * sb);
    const uint64_t to = std::min(end, (s + 1) * sb);
    AddShardLengths(&req, link, {s});
    req.Add({"SETRANGE", meta_->BitsKey(link, s), U64(from - s * sb),
             std::string_view(data_).substr(from - offset, to - from)});
    ReplyCheck& c = req.Last();
    c.kind = ReplyCheck::Kind::kLength;
    c.role = ReplyCheck::Role::kShard;
    c.link = static_cast<uint32_t>(link);
    c.shard = s;
    c.n = ShardSize(*meta_, link, s);
  }
  EndStep(step);
}

std::string LoadHeaderError(std::string_view data, DumpHeader* header) {
  if (!DecodeDumpHeader(data, header)) return std::string(kBadData);
  // Dumps of very old RedisBloom filters (32-bit hash, power-of-two modulus) would need other
  // bit maths.
  bool old_format = (header->options & kOptHash64) == 0;
  for (const DumpLink& l : header->links) old_format = old_format || l.params.n2 != 0;
  if (old_format) return std::string(kOldDump);
  // A scaling chain whose new links would take no items (RedisBloom never writes one:
  // BF.RESERVE refuses a capacity or expansion of 0) would add links for ever.
  if ((header->options & kOptNoScaling) == 0 &&
      (header->expansion == 0 || header->links[0].params.capacity == 0)) {
    return std::string(kBadData);
  }
  return std::string();
}

}  // namespace bloomproxy::filters::bf_plan_internal
