// The fast path of a TOPK.ADD / INCRBY batch: the proxy reads the whole sketch (topk_read.lua's
// "snapshot"), works the update out in C++ with the model (filters/topk/topk.h: the same rules
// the scripts follow, decay steps drawn from the proxy's own generator), and sends only what
// changed (topk_commit.lua), applied only if the sketch is still the one read. A script's Lua
// costs about a microsecond per bucket touched on the server every proxy shares; this path costs
// the server two small scripts and a few string copies per batch. Only for sketches small enough
// to read whole (TopkSnapshotFits); others, and a conflict, take topk_add.lua. Pure; no sockets.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "filters/topk/topk.h"
#include "filters/topk/topk_meta.h"
#include "filters/topk/topk_scripts.h"
#include "protocol/reply_decoder.h"

namespace bloomproxy::filters {

// The largest sketch read whole: buckets and heap slots (8 bytes each), and heap slots.
inline constexpr uint64_t kTopkSnapshotMaxBytes = uint64_t{1} << 20;
inline constexpr uint32_t kTopkSnapshotMaxK = 1024;

bool TopkSnapshotFits(const TopkMeta& meta);

// What a snapshot read, and the sketch it holds.
struct TopkSnapshot {
  std::string id;
  std::string v;
  std::vector<std::string> shards;  // the bucket shards' bytes, as read
  std::string heap;                 // the heap's slots, as read
  TopkSketch sketch;                // the same, decoded (items included)
};

// The call that reads one.
TopkCall TopkSnapshotCall(const TopkMeta& meta);

// From the snapshot's results and fields (topk_read.lua's answer, decoded); false when they do
// not describe a sketch of consistent sizes.
bool ParseTopkSnapshot(const redisReply* results, const redisReply* fields, TopkSnapshot* out);

// A decay step's uniform number in [0, 1) from the proxy's generator (one per thread, seeded by
// the system).
double TopkProxyRandom();

// The commit of `after` (the snapshot's sketch once updated) over `before`: what changed.
TopkCall TopkCommitCall(const TopkSnapshot& before, const TopkSketch& after);

}  // namespace bloomproxy::filters
