// Top-K maths, exactly as RedisBloom computes it (src/topk.c, src/rm_topk.c), kept as a small
// in-memory reference model: the same buckets, the same heap array order, the same replies.
// Pure functions; no sockets.
//
// HeavyKeeper (Gong et al., "HeavyKeeper: An Accurate Algorithm for Finding Top-k Elephant
// Flows", USENIX ATC 2018): depth rows of width buckets {fp, count}, and a min-heap of k slots
// {fp, item, count}:
//
//   bucket index:  0 .. width-1 | width .. 2*width-1 | ... | (depth-1)*width .. depth*width-1
//                     row 0     |       row 1        | ... |          row depth-1
//
//   heap array:    slot 0 (root, read as heapMin) | slot 1 | slot 2 | ... | slot k-1
//
// Hashing: fp(item) = MurmurHash2(item, seed 1919); row i's bucket is
// (uint32)(i * width) + MurmurHash2(item, seed i) % width (the row start wraps mod 2^32, as
// RedisBloom's uint32 product does). A bucket with count 0 is empty whatever its fp.
// Decay: a step against a foreign fingerprint decrements a bucket of count c with probability
// P(c) = decay^c, read from a 256-entry table (see TopkDecayProbability). Counts are uint32 and
// wrap mod 2^32, never saturate.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bloomproxy::filters {

// TOPK.RESERVE key k alone: width 8, depth 7, decay 0.9.
inline constexpr uint32_t kTopkDefaultWidth = 8;
inline constexpr uint32_t kTopkDefaultDepth = 7;
inline constexpr double kTopkDefaultDecay = 0.9;
// The seed of an item's fingerprint (RedisBloom's GA).
inline constexpr uint32_t kTopkFingerprintSeed = 1919;
// Entries of the decay table (RedisBloom's TOPK_DECAY_LOOKUP_TABLE).
inline constexpr size_t kTopkDecayTableSize = 256;
// TOPK.INCRBY's largest increment.
inline constexpr int64_t kTopkMaxIncrement = 100000;
// The largest width * depth TOPK.RESERVE accepts; beyond it "Insufficient memory".
inline constexpr uint64_t kTopkMaxBuckets = (uint64_t{1} << 61) - 1;

struct TopkParams {
  uint32_t k = 0;  // all three >= 1
  uint32_t width = kTopkDefaultWidth;
  uint32_t depth = kTopkDefaultDepth;
  double decay = kTopkDefaultDecay;  // 0 < decay <= 1
};

// ---------------------------------------------------------------------------------------------
// Hashing.

// MurmurHash2(item, seed 1919).
uint32_t TopkFingerprint(std::string_view item);

// MurmurHash2(item, seed row): the hash whose remainder modulo the width is row `row`'s column.
uint32_t TopkRowHash(std::string_view item, uint32_t row);

// The bucket index of `item` in row `row`: (uint32)(row * width) + MurmurHash2(item, row) % width.
// width >= 1.
uint64_t TopkBucketIndex(std::string_view item, uint32_t width, uint32_t row);

// ---------------------------------------------------------------------------------------------
// Decay.

using TopkDecayTable = std::array<double, kTopkDecayTableSize>;

// T[c] = pow(decay, c) for c < 256, as RedisBloom builds it at creation.
TopkDecayTable MakeTopkDecayTable(double decay);

// P(count): T[count] below 256, else pow(T[255], count / 255) * T[count % 255] (integer
// division), RedisBloom's composition for large counts.
double TopkDecayProbability(const TopkDecayTable& table, uint32_t count);

// The random source of the decay steps: each call returns a uniform double in [0, 1]; a step
// decrements iff the value is below P(count) (RedisBloom: rand() / (double)RAND_MAX). It is
// called only for a step whose outcome is uncertain: never when decay is 1 (the closed form
// below), never when P is exactly 0, never for a bucket that is empty or holds the item's fp.
using TopkRandom = std::function<double()>;

// One bucket of a row meeting an increment n of an item whose fingerprint is fp: the exact
// rule of TOPK.ADD / TOPK.INCRBY. Returns what the row offers the item's count ("best"): n for
// an empty bucket, the wrapped sum for its own fp, the remaining steps r after a takeover of a
// foreign bucket, 0 when the foreign bucket survives.
struct TopkBucket {
  uint32_t fp = 0;
  uint32_t count = 0;  // 0: empty, whatever fp holds
};
uint32_t TopkUpdateBucket(TopkBucket* bucket, uint32_t fp, uint32_t n, double decay,
                          const TopkDecayTable& table, const TopkRandom& random);

// ---------------------------------------------------------------------------------------------
// The sketch.

struct TopkSlot {
  uint32_t fp = 0;
  uint32_t count = 0;
  bool has_item = false;  // false until an item first enters the slot
  std::string item;       // full bytes (NULs included)
};

struct TopkSketch {
  TopkParams params;
  std::vector<TopkBucket> buckets;  // width * depth, row-major
  std::vector<TopkSlot> heap;       // exactly k slots
  TopkDecayTable decay_table{};
};

// A new sketch: every bucket and heap slot empty. The caller checked the parameters (TOPK.RESERVE)
// and that width * depth buckets and k slots fit in memory.
TopkSketch NewTopkSketch(const TopkParams& params);

// RedisBloom's "sift down only" from slot `start` of a heap of heap->size() slots: stop at once
// for fewer than 2 slots or a leaf; the smaller child (ties go left) moves up unless it is
// strictly larger; then keep descending while the smaller child is strictly smaller than the
// moving entry. An entry equal to its smaller child therefore still moves exactly one level.
void TopkSiftDown(std::vector<TopkSlot>* heap, size_t start);

// The slot holding `item` (same fp, length and bytes), searched from slot k-1 down to 0, or
// nullopt.
std::optional<size_t> TopkFindInHeap(const TopkSketch& sketch, std::string_view item);

// The result of one item of TOPK.ADD / TOPK.INCRBY: the expelled item's full bytes, or nullopt
// for a null reply element. The reply shows TopkReplyItem(*expelled).
using TopkExpelled = std::optional<std::string>;

// TOPK.ADD (n = 1) / TOPK.INCRBY of one item, 0 <= n <= 100000: heapMin = slot 0's count read
// first; every row's bucket updated (TopkUpdateBucket); then, if best >= heapMin, the item's
// slot takes count best (possibly lower than before) and sifts down, or else slot 0 is
// overwritten and sifts down, and its previous item is expelled.
TopkExpelled TopkAdd(TopkSketch* sketch, std::string_view item, uint32_t n,
                     const TopkRandom& random);

// TOPK.QUERY of one item: whether the heap holds it (count-0 entries included).
bool TopkQuery(const TopkSketch& sketch, std::string_view item);

// TOPK.COUNT of one item: the largest count of its buckets holding its fp, counting only buckets
// >= heapMin (slot 0's count) when the item is in the heap; 0 when none.
uint32_t TopkCount(const TopkSketch& sketch, std::string_view item);

struct TopkListEntry {
  std::string_view item;  // as replied: cut at the first NUL; views into the sketch
  uint32_t count = 0;
};

// TOPK.LIST: the heap array stably sorted by count, highest first, up to the first count 0.
// Views stay valid until the sketch changes.
std::vector<TopkListEntry> TopkList(const TopkSketch& sketch);

// An item as RedisBloom replies it (a C string): the bytes before the first NUL.
std::string_view TopkReplyItem(std::string_view item);

// TOPK.INFO's decay as Redis 7.0 prints a double: printf("%.17g"), e.g. 0.9 ->
// "0.90000000000000002", 1 -> "1", 1e-300 -> "1e-300".
std::string TopkFormatDecay(double decay);

}  // namespace bloomproxy::filters
