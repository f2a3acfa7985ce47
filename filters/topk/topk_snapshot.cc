#include "filters/topk/topk_snapshot.h"

#include <cstdlib>
#include <random>

#include "filters/common/plan_requests.h"
#include "filters/topk/topk_commit.lua.h"
#include "filters/topk/topk_read.lua.h"

namespace bloomproxy::filters {
namespace {

uint32_t LoadU32(const char* p) {
  const auto* b = reinterpret_cast<const unsigned char*>(p);
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
}

void StoreU32(char* p, uint32_t v) {
  p[0] = static_cast<char>(v >> 24);
  p[1] = static_cast<char>(v >> 16);
  p[2] = static_cast<char>(v >> 8);
  p[3] = static_cast<char>(v);
}

std::string EncodeHeap(const std::vector<TopkSlot>& heap) {
  std::string out(8 * heap.size(), '\0');
  for (size_t s = 0; s < heap.size(); ++s) {
    StoreU32(&out[8 * s], heap[s].fp);
    StoreU32(&out[8 * s + 4], heap[s].count);
  }
  return out;
}

// The heap's items as HGETALL answered them: slot, item pairs.
bool ParseItems(const redisReply* items, std::vector<TopkSlot>* heap) {
  if (items->type != REDIS_REPLY_ARRAY || items->elements % 2 != 0) return false;
  for (size_t i = 0; i < items->elements; i += 2) {
    int64_t slot = 0;
    if (items->element[i]->type != REDIS_REPLY_STRING ||
        items->element[i + 1]->type != REDIS_REPLY_STRING ||
        !ParseCount(Str(items->element[i]), &slot) || slot >= static_cast<int64_t>(heap->size())) {
      return false;
    }
    TopkSlot& s = (*heap)[static_cast<size_t>(slot)];
    s.has_item = true;
    s.item = std::string(Str(items->element[i + 1]));
  }
  return true;
}

}  // namespace

bool TopkSnapshotFits(const TopkMeta& meta) {
  const uint64_t bytes = 8 * (uint64_t{meta.width} * meta.depth + meta.k);
  return meta.k <= kTopkSnapshotMaxK && bytes <= kTopkSnapshotMaxBytes;
}

TopkCall TopkSnapshotCall(const TopkMeta& meta) {
  return {&lua::kTopkRead, true, {meta.id, "0", "snapshot"}};
}

bool ParseTopkSnapshot(const redisReply* results, const redisReply* fields, TopkSnapshot* out) {
  const std::shared_ptr<TopkMeta> meta = TopkMetaFromFields(fields);
  if (meta == nullptr || results == nullptr || results->type != REDIS_REPLY_ARRAY ||
      results->elements < 4 || !TopkSnapshotFits(*meta)) {
    return false;
  }
  for (size_t i = 0; i < results->elements; ++i) {
    if (i != 2 && results->element[i]->type != REDIS_REPLY_STRING) return false;
  }
  TopkParams params{meta->k, meta->width, meta->depth, 0};
  char* end = nullptr;
  params.decay = std::strtod(meta->decay.c_str(), &end);
  if (end == meta->decay.c_str() || *end != '\0' || !(params.decay > 0 && params.decay <= 1)) {
    return false;
  }
  out->id = meta->id;
  out->v = std::string(Str(results->element[0]));
  out->heap = std::string(Str(results->element[1]));
  out->shards.clear();
  std::string buckets;
  for (size_t i = 3; i < results->elements; ++i) {
    out->shards.emplace_back(Str(results->element[i]));
    buckets += out->shards.back();
  }
  out->sketch = NewTopkSketch(params);
  TopkSketch& sk = out->sketch;
  if (buckets.size() != 8 * sk.buckets.size() || out->heap.size() != 8 * sk.heap.size()) {
    return false;
  }
  for (size_t j = 0; j < sk.buckets.size(); ++j) {
    sk.buckets[j] = {LoadU32(&buckets[8 * j]), LoadU32(&buckets[8 * j + 4])};
  }
  for (size_t s = 0; s < sk.heap.size(); ++s) {
    sk.heap[s].fp = LoadU32(&out->heap[8 * s]);
    sk.heap[s].count = LoadU32(&out->heap[8 * s + 4]);
  }
  return ParseItems(results->element[2], &sk.heap);
}

double TopkProxyRandom() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

TopkCall TopkCommitCall(const TopkSnapshot& before, const TopkSketch& after) {
  TopkCall call{&lua::kTopkCommit, false, {before.id, before.v}};
  std::string heap = EncodeHeap(after.heap);
  call.argv.push_back(heap == before.heap ? std::string() : std::move(heap));
  std::vector<std::string> set;
  std::vector<std::string> gone;
  for (size_t s = 0; s < after.heap.size(); ++s) {
    const TopkSlot& was = before.sketch.heap[s];
    const TopkSlot& is = after.heap[s];
    if (is.has_item && (!was.has_item || was.item != is.item)) {
      set.push_back(U64(s));
      set.push_back(is.item);
    } else if (!is.has_item && was.has_item) {
      gone.push_back(U64(s));
    }
  }
  call.argv.push_back(U64(set.size() / 2));
  call.argv.insert(call.argv.end(), set.begin(), set.end());
  call.argv.push_back(U64(gone.size()));
  call.argv.insert(call.argv.end(), gone.begin(), gone.end());
  size_t at = 0;  // the first bucket of the shard
  for (size_t s = 0; s < before.shards.size(); ++s) {
    const std::string& old = before.shards[s];
    std::string now(old.size(), '\0');
    for (size_t b = 0; b < old.size() / 8; ++b) {
      StoreU32(&now[8 * b], after.buckets[at + b].fp);
      StoreU32(&now[8 * b + 4], after.buckets[at + b].count);
    }
    at += old.size() / 8;
    if (now != old) {
      call.argv.push_back(U64(s));
      call.argv.push_back(std::move(now));
    }
  }
  return call;
}

}  // namespace bloomproxy::filters
