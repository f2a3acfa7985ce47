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
  // width * depth fits 64 bits (both are below 2^32); eight times it may not.
  const uint64_t slots = uint64_t{meta.width} * meta.depth;
  return meta.k <= kTopkSnapshotMaxK && slots <= kTopkSnapshotMaxBytes / 8 &&
         8 * (slots + meta.k) <= kTopkSnapshotMaxBytes;
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
  size_t bytes = 0;
  for (size_t i = 3; i < results->elements; ++i) {
    out->shards.emplace_back(Str(results->element[i]));
    if (out->shards.back().size() % 8 != 0) return false;  // a shard holds whole buckets
    bytes += out->shards.back().size();
  }
  out->sketch = NewTopkSketch(params);
  TopkSketch& sk = out->sketch;
  if (bytes != 8 * sk.buckets.size() || out->heap.size() != 8 * sk.heap.size()) return false;
  size_t j = 0;  // buckets decoded from each shard in place, without joining the shards first
  for (const std::string& shard : out->shards) {
    for (size_t b = 0; b < shard.size(); b += 8, ++j) {
      sk.buckets[j] = {LoadU32(&shard[b]), LoadU32(&shard[b + 4])};
    }
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

TopkSnapshot TopkAfter(const TopkSnapshot& before, TopkSketch after) {
  TopkSnapshot out;
  out.id = before.id;
  int64_t v = 0;
  out.v = U64(ParseCount(before.v, &v) ? static_cast<uint64_t>(v) + 1 : 1);
  out.heap = EncodeHeap(after.heap);
  size_t at = 0;  // the first bucket of the shard
  for (const std::string& old : before.shards) {
    std::string& now = out.shards.emplace_back(old.size(), '\0');
    for (size_t b = 0; b < old.size() / 8; ++b) {
      StoreU32(&now[8 * b], after.buckets[at + b].fp);
      StoreU32(&now[8 * b + 4], after.buckets[at + b].count);
    }
    at += old.size() / 8;
  }
  out.sketch = std::move(after);
  return out;
}

TopkCall TopkCommitCall(const TopkSnapshot& before, const TopkSnapshot& after) {
  TopkCall call{&lua::kTopkCommit, false, {before.id, before.v}};
  call.argv.push_back(after.heap == before.heap ? std::string() : after.heap);
  std::vector<std::string> set;
  std::vector<std::string> gone;
  for (size_t s = 0; s < after.sketch.heap.size(); ++s) {
    const TopkSlot& was = before.sketch.heap[s];
    const TopkSlot& is = after.sketch.heap[s];
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
  for (size_t s = 0; s < before.shards.size(); ++s) {
    if (after.shards[s] == before.shards[s]) continue;
    call.argv.push_back(U64(s));
    call.argv.push_back(after.shards[s]);
  }
  return call;
}

size_t TopkStates::Bytes(const TopkSnapshot& s) {
  size_t n = s.heap.size() * 2;
  for (const std::string& shard : s.shards) n += shard.size() * 2;
  for (const TopkSlot& slot : s.sketch.heap) n += slot.item.size();
  return n;
}

std::shared_ptr<const TopkSnapshot> TopkStates::Find(std::string_view name) const {
  auto it = map_.find(std::string(name));
  return it == map_.end() ? nullptr : it->second;
}

void TopkStates::Put(std::string_view name, std::shared_ptr<const TopkSnapshot> state) {
  Erase(name);
  const size_t bytes = Bytes(*state);
  if (bytes_ + bytes > kMaxBytes) {
    map_.clear();
    bytes_ = 0;
  }
  bytes_ += bytes;
  map_[std::string(name)] = std::move(state);
}

void TopkStates::Erase(std::string_view name) {
  auto it = map_.find(std::string(name));
  if (it == map_.end()) return;
  bytes_ -= Bytes(*it->second);
  map_.erase(it);
}

}  // namespace bloomproxy::filters
