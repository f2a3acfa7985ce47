#include "filters/topk/topk.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "filters/common/murmur_hash.h"

namespace bloomproxy::filters {
namespace {

// RedisBloom passes the length as an int (Redis caps an argument at 512 MB).
uint32_t Hash(std::string_view item, uint32_t seed) {
  return MurmurHash2(item.data(), static_cast<int>(item.size()), seed);
}

// A foreign bucket under decay 1: every step decrements (P = 1), so n steps against count c
// either leave c - n, or empty the bucket at step c and hand it the n - c + 1 steps left.
uint32_t DecayOneClosedForm(TopkBucket* bucket, uint32_t fp, uint32_t n) {
  if (n < bucket->count) {
    bucket->count -= n;
    return 0;
  }
  bucket->count = n - bucket->count + 1;
  bucket->fp = fp;
  return bucket->count;
}

// A foreign bucket under decay < 1: for r = n .. 1 one Bernoulli(P(count)) trial each; the
// bucket is taken over with the r steps left when its count reaches 0.
uint32_t DecayLoop(TopkBucket* bucket, uint32_t fp, uint32_t n, const TopkDecayTable& table,
                   const TopkRandom& random) {
  for (uint32_t r = n; r > 0; --r) {
    const double p = TopkDecayProbability(table, bucket->count);
    // P == 0 (a decay such as 1e-300 at count >= 2) can never win a trial, and the count it
    // depends on cannot change: the remaining steps are all no-ops.
    if (p == 0.0) return 0;
    if (!(random() < p)) continue;
    if (--bucket->count == 0) {
      bucket->fp = fp;
      bucket->count = r;
      return r;
    }
  }
  return 0;
}

}  // namespace

uint32_t TopkFingerprint(std::string_view item) { return Hash(item, kTopkFingerprintSeed); }

uint32_t TopkRowHash(std::string_view item, uint32_t row) { return Hash(item, row); }

uint64_t TopkBucketIndex(std::string_view item, uint32_t width, uint32_t row) {
  // The row start is a uint32 product in RedisBloom; only the product wraps, not the sum.
  const uint32_t row_start = row * width;
  return uint64_t{row_start} + Hash(item, row) % width;
}

TopkDecayTable MakeTopkDecayTable(double decay) {
  TopkDecayTable table{};
  for (size_t c = 0; c < kTopkDecayTableSize; ++c) {
    table[c] = std::pow(decay, static_cast<double>(c));
  }
  return table;
}

double TopkDecayProbability(const TopkDecayTable& table, uint32_t count) {
  if (count < kTopkDecayTableSize) return table[count];
  constexpr uint32_t kLast = kTopkDecayTableSize - 1;  // 255
  return std::pow(table[kLast], static_cast<double>(count / kLast)) * table[count % kLast];
}

uint32_t TopkUpdateBucket(TopkBucket* bucket, uint32_t fp, uint32_t n, double decay,
                          const TopkDecayTable& table, const TopkRandom& random) {
  if (bucket->count == 0) {
    // n = 0 leaves the bucket empty but still stamps the fingerprint.
    bucket->fp = fp;
    bucket->count = n;
    return n;
  }
  if (bucket->fp == fp) {
    bucket->count += n;  // wraps mod 2^32, as RedisBloom's uint32 does
    return bucket->count;
  }
  if (decay == 1.0) return DecayOneClosedForm(bucket, fp, n);
  return DecayLoop(bucket, fp, n, table, random);
}

TopkSketch NewTopkSketch(const TopkParams& params) {
  TopkSketch sketch;
  sketch.params = params;
  sketch.buckets.assign(uint64_t{params.width} * params.depth, TopkBucket{});
  sketch.heap.assign(params.k, TopkSlot{});
  sketch.decay_table = MakeTopkDecayTable(params.decay);
  return sketch;
}

void TopkSiftDown(std::vector<TopkSlot>* heap, size_t start) {
  std::vector<TopkSlot>& h = *heap;
  const size_t len = h.size();
  if (len < 2 || (len - 2) / 2 < start) return;
  // The smaller child of `parent`; ties go left.
  auto smaller_child = [&h, len](size_t parent) {
    const size_t c = 2 * parent + 1;
    return (c + 1 < len && h[c].count > h[c + 1].count) ? c + 1 : c;
  };
  size_t child = smaller_child(start);
  if (h[child].count > h[start].count) return;
  // The first move happens even for equal counts; later ones only for strictly smaller children.
  TopkSlot moving = std::move(h[start]);
  size_t hole = start;
  do {
    h[hole] = std::move(h[child]);
    hole = child;
    if ((len - 2) / 2 < child) break;
    child = smaller_child(child);
  } while (h[child].count < moving.count);
  h[hole] = std::move(moving);
}

std::optional<size_t> TopkFindInHeap(const TopkSketch& sketch, std::string_view item) {
  const uint32_t fp = TopkFingerprint(item);
  for (size_t i = sketch.heap.size(); i-- > 0;) {
    const TopkSlot& slot = sketch.heap[i];
    // An empty slot has fp 0 and no item; the only item of length 0, "", has another fp.
    if (slot.fp == fp && slot.has_item && slot.item == item) return i;
  }
  return std::nullopt;
}

TopkExpelled TopkAdd(TopkSketch* sketch, std::string_view item, uint32_t n,
                     const TopkRandom& random) {
  const TopkParams& p = sketch->params;
  const uint32_t fp = TopkFingerprint(item);
  // heapMin is read before any bucket changes; it is slot 0's count, not necessarily the least.
  const uint32_t heap_min = sketch->heap[0].count;
  uint32_t best = 0;
  for (uint32_t row = 0; row < p.depth; ++row) {
    TopkBucket* bucket = &sketch->buckets[TopkBucketIndex(item, p.width, row)];
    best = std::max(best, TopkUpdateBucket(bucket, fp, n, p.decay, sketch->decay_table, random));
  }
  if (best < heap_min) return std::nullopt;

  if (const std::optional<size_t> at = TopkFindInHeap(*sketch, item)) {
    // Not max(best, old count): the count may go down, and the entry never sifts up.
    sketch->heap[*at].count = best;
    TopkSiftDown(&sketch->heap, *at);
    return std::nullopt;
  }
  TopkSlot& root = sketch->heap[0];
  TopkExpelled expelled;
  if (root.has_item) expelled = std::move(root.item);
  root.fp = fp;
  root.count = best;
  root.has_item = true;
  root.item.assign(item.data(), item.size());
  TopkSiftDown(&sketch->heap, 0);
  return expelled;
}

bool TopkQuery(const TopkSketch& sketch, std::string_view item) {
  return TopkFindInHeap(sketch, item).has_value();
}

uint32_t TopkCount(const TopkSketch& sketch, std::string_view item) {
  const TopkParams& p = sketch.params;
  const uint32_t fp = TopkFingerprint(item);
  const bool in_heap = TopkFindInHeap(sketch, item).has_value();
  const uint32_t heap_min = sketch.heap[0].count;
  uint32_t result = 0;
  for (uint32_t row = 0; row < p.depth; ++row) {
    const TopkBucket& b = sketch.buckets[TopkBucketIndex(item, p.width, row)];
    if (b.fp == fp && (!in_heap || b.count >= heap_min)) result = std::max(result, b.count);
  }
  return result;
}

std::vector<TopkListEntry> TopkList(const TopkSketch& sketch) {
  std::vector<const TopkSlot*> order;
  order.reserve(sketch.heap.size());
  for (const TopkSlot& slot : sketch.heap) order.push_back(&slot);
  // glibc's qsort is a merge sort at these sizes: equal counts keep heap-array order.
  std::stable_sort(order.begin(), order.end(),
                   [](const TopkSlot* a, const TopkSlot* b) { return a->count > b->count; });
  std::vector<TopkListEntry> out;
  for (const TopkSlot* slot : order) {
    if (slot->count == 0) break;
    out.push_back({TopkReplyItem(slot->item), slot->count});
  }
  return out;
}

std::string_view TopkReplyItem(std::string_view item) {
  return item.substr(0, std::min(item.find('\0'), item.size()));
}

std::string TopkFormatDecay(double decay) {
  char buf[64];
  const int n = std::snprintf(buf, sizeof(buf), "%.17g", decay);
  return std::string(buf, n > 0 ? static_cast<size_t>(n) : 0);
}

}  // namespace bloomproxy::filters
