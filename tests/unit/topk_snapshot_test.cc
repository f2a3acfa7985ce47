// The fast path's snapshot and commit (filters/topk/topk_snapshot.h) on hand-built answers of
// topk_read.lua's "snapshot", decoded as the plans decode them: buckets split over several shards,
// heap slots and their items, answers of inconsistent sizes rejected; the commit's arguments
// (only the changed shards, sent whole; the heap or "" when unchanged; items set and deleted; the
// id and v first); and which sketches are small enough to be read whole.
#include "filters/topk/topk_snapshot.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "filters/topk/topk.h"
#include "filters/topk/topk_commit.lua.h"
#include "filters/topk/topk_read.lua.h"
#include "filters/topk/topk_replies.h"
#include "protocol/reply_decoder.h"

namespace bloomproxy::filters {
namespace {

using namespace std::string_literals;  // NOLINT: items with NUL bytes

std::string Int(int64_t v) { return ":" + std::to_string(v) + "\r\n"; }
std::string Bulk(std::string_view s) {
  return "$" + std::to_string(s.size()) + "\r\n" + std::string(s) + "\r\n";
}
std::string Array(size_t n) { return "*" + std::to_string(n) + "\r\n"; }
const std::string kNull = "$-1\r\n";
constexpr std::string_view kId = "0123456789abcdef";

// A random source that must not be drawn (decay 1 never draws).
const TopkRandom kNoRandom = [] {
  ADD_FAILURE() << "random source drawn";
  return 0.5;
};

void PutU32(std::string* out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<char>(v >> shift));
}

std::string BucketBytes(const TopkSketch& s) {
  std::string out;
  for (const TopkBucket& b : s.buckets) {
    PutU32(&out, b.fp);
    PutU32(&out, b.count);
  }
  return out;
}

std::string HeapBytes(const TopkSketch& s) {
  std::string out;
  for (const TopkSlot& slot : s.heap) {
    PutU32(&out, slot.fp);
    PutU32(&out, slot.count);
  }
  return out;
}

std::vector<std::string> Split(const std::string& bytes, size_t shard) {
  std::vector<std::string> out;
  for (size_t at = 0; at < bytes.size(); at += shard) out.push_back(bytes.substr(at, shard));
  return out;
}

// The parts of a snapshot answer, to be spoilt one at a time.
struct Parts {
  std::string v = "7";
  std::string heap;
  std::vector<std::pair<std::string, std::string>> items;  // slot, item
  std::vector<std::string> shards;
  std::vector<std::string> fields;  // id k width depth decay

  std::string Answer() const {
    std::string items_frame = Array(2 * items.size());
    for (const auto& [slot, item] : items) items_frame += Bulk(slot) + Bulk(item);
    std::string out = Array(2) + Array(3 + shards.size()) + Bulk(v) + Bulk(heap) + items_frame;
    for (const std::string& s : shards) out += Bulk(s);
    out += Array(fields.size());
    for (const std::string& f : fields) out += Bulk(f);
    return out;
  }
};

Parts PartsOf(const TopkSketch& s, size_t shard_bytes) {
  Parts p;
  p.heap = HeapBytes(s);
  for (size_t i = 0; i < s.heap.size(); ++i) {
    if (s.heap[i].has_item) p.items.emplace_back(std::to_string(i), s.heap[i].item);
  }
  p.shards = Split(BucketBytes(s), shard_bytes);
  p.fields = {std::string(kId), std::to_string(s.params.k), std::to_string(s.params.width),
              std::to_string(s.params.depth), TopkFormatDecay(s.params.decay)};
  return p;
}

// The commit of `after` (the snapshot's sketch once updated) over `before`.
TopkCall Commit(const TopkSnapshot& before, const TopkSketch& after) {
  return TopkCommitCall(before, TopkAfter(before, after));
}

class TopkSnapshotTest : public ::testing::Test {
 protected:
  // Parses `answer` as the plan does; false when it is refused.
  bool Parse(const std::string& answer, TopkSnapshot* out) {
    decoded_ = decoder_.Decode(answer);
    if (decoded_ == nullptr || decoded_->type != REDIS_REPLY_ARRAY || decoded_->elements != 2) {
      ADD_FAILURE() << "not a snapshot answer";
      return false;
    }
    return ParseTopkSnapshot(decoded_->element[0], TopkAnswerFields(decoded_.get()), out);
  }
  bool Parses(const Parts& p) {
    TopkSnapshot s;
    return Parse(p.Answer(), &s);
  }

  // A decay-1 sketch with a few items: k 5, width 10, depth 3 (240 bytes of buckets).
  static TopkSketch Sample() {
    TopkSketch s = NewTopkSketch({5, 10, 3, 1.0});
    const std::vector<std::pair<std::string, uint32_t>> adds = {
        {"a", 3}, {"b", 1}, {"c\0d"s, 4}, {"e", 2}, {"f", 9}, {"g", 1}, {"a", 2}, {"h", 5}};
    for (const auto& [item, n] : adds) TopkAdd(&s, item, n, kNoRandom);
    return s;
  }

  protocol::ReplyDecoder decoder_;
  protocol::ReplyPtr decoded_;
};

void ExpectSameSketch(const TopkSketch& got, const TopkSketch& want) {
  EXPECT_EQ(got.params.k, want.params.k);
  EXPECT_EQ(got.params.width, want.params.width);
  EXPECT_EQ(got.params.depth, want.params.depth);
  EXPECT_EQ(got.params.decay, want.params.decay);
  ASSERT_EQ(got.buckets.size(), want.buckets.size());
  for (size_t j = 0; j < got.buckets.size(); ++j) {
    EXPECT_EQ(got.buckets[j].fp, want.buckets[j].fp) << "bucket " << j;
    EXPECT_EQ(got.buckets[j].count, want.buckets[j].count) << "bucket " << j;
  }
  ASSERT_EQ(got.heap.size(), want.heap.size());
  for (size_t s = 0; s < got.heap.size(); ++s) {
    EXPECT_EQ(got.heap[s].fp, want.heap[s].fp) << "slot " << s;
    EXPECT_EQ(got.heap[s].count, want.heap[s].count) << "slot " << s;
    EXPECT_EQ(got.heap[s].has_item, want.heap[s].has_item) << "slot " << s;
    EXPECT_EQ(got.heap[s].item, want.heap[s].item) << "slot " << s;
  }
  EXPECT_EQ(got.decay_table, want.decay_table);
}

// ---------------------------------------------------------------------------------------------
// ParseTopkSnapshot.

TEST_F(TopkSnapshotTest, BucketsAcrossSeveralShardsHeapAndItems) {
  const TopkSketch model = Sample();
  for (size_t shard : {size_t{240}, size_t{64}, size_t{8}, size_t{1024}}) {
    const Parts p = PartsOf(model, shard);
    TopkSnapshot s;
    ASSERT_TRUE(Parse(p.Answer(), &s)) << shard;
    EXPECT_EQ(s.id, kId);
    EXPECT_EQ(s.v, "7");
    EXPECT_EQ(s.shards, p.shards);
    EXPECT_EQ(s.heap, p.heap);
    ExpectSameSketch(s.sketch, model);
  }
  EXPECT_EQ(PartsOf(model, 64).shards.size(), 4u);  // 64, 64, 64, 48
}

TEST_F(TopkSnapshotTest, SlotsWithoutItemsAndItemsWithNuls) {
  TopkSketch model = NewTopkSketch({4, 20, 2, 1.0});
  TopkAdd(&model, "x\0y"s, 2, kNoRandom);
  Parts p = PartsOf(model, 64);
  ASSERT_EQ(p.items.size(), 1u);
  TopkSnapshot s;
  ASSERT_TRUE(Parse(p.Answer(), &s));
  ExpectSameSketch(s.sketch, model);
  size_t with_items = 0;
  for (const TopkSlot& slot : s.sketch.heap) {
    with_items += slot.has_item;
    if (slot.has_item) {
      EXPECT_EQ(slot.item, "x\0y"s);
    }
  }
  EXPECT_EQ(with_items, 1u);
  // An empty sketch: no items, every slot and bucket zero; v as the script answers it.
  p = PartsOf(NewTopkSketch({3, 8, 7, 0.9}), 1 << 20);
  p.v = "0";
  ASSERT_TRUE(Parse(p.Answer(), &s));
  EXPECT_EQ(s.v, "0");
  ExpectSameSketch(s.sketch, NewTopkSketch({3, 8, 7, 0.9}));
  // A decay other than 1 comes back exactly from its "%.17g" text.
  EXPECT_EQ(s.sketch.params.decay, 0.9);
}

TEST_F(TopkSnapshotTest, InconsistentSizesAreRejected) {
  const Parts good = PartsOf(Sample(), 64);
  ASSERT_TRUE(Parses(good));
  Parts p = good;
  p.shards.pop_back();  // a shard short
  EXPECT_FALSE(Parses(p));
  p = good;
  p.shards.push_back(std::string(8, '\0'));  // a bucket too many
  EXPECT_FALSE(Parses(p));
  p = good;
  p.shards[1].pop_back();
  EXPECT_FALSE(Parses(p));
  p = good;
  p.heap.pop_back();  // the heap a byte short
  EXPECT_FALSE(Parses(p));
  p = good;
  p.heap += std::string(8, '\0');  // a slot too many
  EXPECT_FALSE(Parses(p));
  p = good;
  p.shards.clear();  // no shard at all
  EXPECT_FALSE(Parses(p));
  p = good;
  p.shards[0] += p.shards[1];  // the right bytes in fewer shards than the sketch has
  p.shards.erase(p.shards.begin() + 1);
  EXPECT_TRUE(Parses(p));  // the sizes are the script's to check (tk_load)
  // Sizes that do not match the fields.
  p = good;
  p.fields[1] = "6";
  EXPECT_FALSE(Parses(p));
  p = good;
  p.fields[3] = "2";
  EXPECT_FALSE(Parses(p));
}

TEST_F(TopkSnapshotTest, BadItemsAreRejected) {
  const Parts good = PartsOf(Sample(), 64);
  Parts p = good;
  p.items.emplace_back("5", "z");  // slot k
  EXPECT_FALSE(Parses(p));
  p = good;
  p.items.emplace_back("x", "z");
  EXPECT_FALSE(Parses(p));
  p = good;
  p.items.emplace_back("-1", "z");
  EXPECT_FALSE(Parses(p));
  p = good;
  p.items.emplace_back("", "z");
  EXPECT_FALSE(Parses(p));
  // An odd number of elements, a nil item, an items element that is not an array.
  std::string answer = good.Answer();
  TopkSnapshot s;
  const std::string items_head = Array(2 * good.items.size());
  ASSERT_NE(answer.find(items_head), std::string::npos);
  std::string odd = answer;
  odd.replace(odd.find(items_head), items_head.size(),
              Array(2 * good.items.size() + 1) + Bulk("4"));
  EXPECT_FALSE(Parse(odd, &s));
  const std::string first_item = Bulk(good.items[0].first) + Bulk(good.items[0].second);
  std::string nil_item = answer;
  nil_item.replace(nil_item.find(first_item), first_item.size(), Bulk(good.items[0].first) + kNull);
  EXPECT_FALSE(Parse(nil_item, &s));
  Parts none = good;
  none.items.clear();
  std::string not_array = none.Answer();
  not_array.replace(not_array.find(Array(0)), Array(0).size(), Int(0));
  EXPECT_FALSE(Parse(not_array, &s));
}

TEST_F(TopkSnapshotTest, BadElementsAndFieldsAreRejected) {
  const Parts good = PartsOf(Sample(), 64);
  TopkSnapshot s;
  // v, the heap or a shard nil (a key the script found missing) or an integer.
  std::string answer = good.Answer();
  std::string v_int = answer;
  v_int.replace(v_int.find(Bulk("7")), Bulk("7").size(), Int(7));
  EXPECT_FALSE(Parse(v_int, &s));
  std::string heap_nil = answer;
  heap_nil.replace(heap_nil.find(Bulk(good.heap)), Bulk(good.heap).size(), kNull);
  EXPECT_FALSE(Parse(heap_nil, &s));
  std::string shard_nil = answer;
  shard_nil.replace(shard_nil.find(Bulk(good.shards[2])), Bulk(good.shards[2]).size(), kNull);
  EXPECT_FALSE(Parse(shard_nil, &s));
  // Fields that do not parse.
  for (size_t i = 0; i < 5; ++i) {
    for (const char* bad : {"", "x", "-1", "0"}) {
      if (i == 4 && std::string_view(bad) == "-1") continue;
      Parts p = good;
      p.fields[i] = bad;
      EXPECT_FALSE(Parses(p)) << "field " << i << " = '" << bad << "'";
    }
  }
  for (const char* decay : {"1.5", "abc", "0.5x", "-0.5", "nan", "1e-400"}) {
    Parts p = good;
    p.fields[4] = decay;
    EXPECT_FALSE(Parses(p)) << decay;
  }
  Parts p = good;
  p.fields.pop_back();
  EXPECT_FALSE(Parses(p));
  // No fields, no results.
  decoded_ = decoder_.Decode(answer);
  EXPECT_FALSE(ParseTopkSnapshot(decoded_->element[0], nullptr, &s));
  EXPECT_FALSE(ParseTopkSnapshot(nullptr, TopkAnswerFields(decoded_.get()), &s));
  EXPECT_FALSE(ParseTopkSnapshot(decoded_->element[1], TopkAnswerFields(decoded_.get()), &s));
}

TEST_F(TopkSnapshotTest, SketchesTooLargeToReadWholeAreRejected) {
  Parts p = PartsOf(NewTopkSketch({2, 8, 1, 1.0}), 64);
  ASSERT_TRUE(Parses(p));
  p.fields[1] = "1025";  // k > 1024 (the sizes no longer matter)
  EXPECT_FALSE(Parses(p));
  p = PartsOf(NewTopkSketch({2, 8, 1, 1.0}), 64);
  p.fields[2] = "131072";  // 1 MiB of buckets plus the heap
  EXPECT_FALSE(Parses(p));
}

// ---------------------------------------------------------------------------------------------
// TopkSnapshotFits, TopkSnapshotCall.

TEST(TopkSnapshotFits, Limits) {
  auto fits = [](uint32_t k, uint32_t width, uint32_t depth) {
    TopkMeta m;
    m.id = std::string(kId);
    m.k = k;
    m.width = width;
    m.depth = depth;
    m.decay = "1";
    return TopkSnapshotFits(m);
  };
  EXPECT_TRUE(fits(1, 1, 1));
  EXPECT_TRUE(fits(1024, 8, 7));
  EXPECT_FALSE(fits(1025, 8, 7));
  // Exactly 1 MiB of buckets and slots, and one slot more.
  EXPECT_TRUE(fits(1024, 130048, 1));
  EXPECT_TRUE(fits(1024, 65024, 2));
  EXPECT_FALSE(fits(1024, 130049, 1));
  EXPECT_FALSE(fits(1023, 130050, 1));
  EXPECT_FALSE(fits(10, 1u << 20, 1));
  EXPECT_FALSE(fits(10, 4294967295u, 4294967295u));
}

TEST_F(TopkSnapshotTest, ShardsThatSplitABucketAreRefused) {
  // Shards of 12 and 228 bytes (240 in all, a bucket split between them; every real shard is a
  // multiple of 8 bytes): were they accepted, TopkCommitCall would rewrite shard 0 as one
  // bucket and 4 zero bytes and shard 1 from bucket 1 on.
  Parts p = PartsOf(Sample(), 240);
  p.shards = {p.shards[0].substr(0, 12), p.shards[0].substr(12)};
  EXPECT_FALSE(Parses(p));
}

TEST(TopkSnapshotFits, BucketBytesPastTwoToTheSixtyFourDoNotFit) {
  // 8 * (width * depth + k) does not fit 64 bits for width 2^31, depth 2^30, k 1: 8 * (2^61 + 1)
  // = 2^64 + 8 would wrap to 8 bytes and the 16 EiB sketch "fit".
  TopkMeta m;
  m.id = std::string(kId);
  m.k = 1;
  m.width = 1u << 31;
  m.depth = 1u << 30;
  m.decay = "1";
  EXPECT_FALSE(TopkSnapshotFits(m));
}

TEST(TopkSnapshotCall, ReadsTheWholeSketchWithTheId) {
  TopkMeta m;
  m.id = std::string(kId);
  m.k = 3;
  m.width = 8;
  m.depth = 7;
  const TopkCall call = TopkSnapshotCall(m);
  EXPECT_EQ(call.script, &lua::kTopkRead);
  EXPECT_TRUE(call.read_only);
  EXPECT_EQ(call.argv, (std::vector<std::string>{std::string(kId), "0", "snapshot"}));
}

// ---------------------------------------------------------------------------------------------
// TopkCommitCall.

// The commit's arguments after the id and v: heap, items set, items deleted, shards.
struct CommitArgs {
  std::string heap;
  std::vector<std::pair<std::string, std::string>> set;
  std::vector<std::string> gone;
  std::vector<std::pair<std::string, std::string>> shards;
};

CommitArgs Split(const TopkCall& call) {
  CommitArgs out;
  const std::vector<std::string>& a = call.argv;
  EXPECT_GE(a.size(), 5u);
  if (a.size() < 5) return out;
  out.heap = a[2];
  size_t at = 3;
  const size_t n = std::stoul(a[at++]);
  for (size_t i = 0; i < n; ++i, at += 2) out.set.emplace_back(a[at], a[at + 1]);
  const size_t m = std::stoul(a[at++]);
  for (size_t i = 0; i < m; ++i) out.gone.push_back(a[at++]);
  EXPECT_EQ((a.size() - at) % 2, 0u);
  for (; at + 1 < a.size(); at += 2) out.shards.emplace_back(a[at], a[at + 1]);
  return out;
}

TEST_F(TopkSnapshotTest, CommitOfNothingChanged) {
  TopkSnapshot s;
  ASSERT_TRUE(Parse(PartsOf(Sample(), 64).Answer(), &s));
  const TopkCall call = Commit(s, s.sketch);
  EXPECT_EQ(call.script, &lua::kTopkCommit);
  EXPECT_FALSE(call.read_only);
  EXPECT_EQ(call.argv, (std::vector<std::string>{std::string(kId), "7", "", "0", "0"}));
}

TEST_F(TopkSnapshotTest, CommitSendsOnlyTheChangedShardsWhole) {
  const TopkSketch model = Sample();
  TopkSnapshot s;
  ASSERT_TRUE(Parse(PartsOf(model, 64).Answer(), &s));
  // Buckets 9 (shard 1: bytes 72..79) and 29 (shard 3, the short last one) change; not the heap.
  TopkSketch after = s.sketch;
  after.buckets[9] = {123, 456};
  after.buckets[29].count += 1;
  const TopkCall call = Commit(s, after);
  ASSERT_GE(call.argv.size(), 2u);
  EXPECT_EQ(call.argv[0], kId);
  EXPECT_EQ(call.argv[1], "7");
  const CommitArgs c = Split(call);
  EXPECT_EQ(c.heap, "");
  EXPECT_TRUE(c.set.empty());
  EXPECT_TRUE(c.gone.empty());
  const std::vector<std::string> shards = Split(BucketBytes(after), 64);
  ASSERT_EQ(c.shards.size(), 2u);
  EXPECT_EQ(c.shards[0].first, "1");
  EXPECT_EQ(c.shards[0].second, shards[1]);
  EXPECT_EQ(c.shards[0].second.size(), 64u);
  EXPECT_EQ(c.shards[1].first, "3");
  EXPECT_EQ(c.shards[1].second, shards[3]);
  EXPECT_EQ(c.shards[1].second.size(), 48u);
}

TEST_F(TopkSnapshotTest, CommitOfAnAddThatExpels) {
  TopkSketch model = NewTopkSketch({2, 100, 2, 1.0});
  TopkAdd(&model, "a", 1, kNoRandom);
  TopkAdd(&model, "b", 2, kNoRandom);
  TopkSnapshot s;
  ASSERT_TRUE(Parse(PartsOf(model, 1600).Answer(), &s));
  TopkSketch after = s.sketch;
  const TopkExpelled expelled = TopkAdd(&after, "c", 5, kNoRandom);
  ASSERT_TRUE(expelled.has_value());
  EXPECT_EQ(*expelled, "a");
  const CommitArgs c = Split(Commit(s, after));
  EXPECT_EQ(c.heap, HeapBytes(after));
  EXPECT_EQ(c.heap.size(), 16u);
  // c took a's place at slot 0 and sank below b: both slots' items changed.
  ASSERT_EQ(after.heap[0].item, "b");
  ASSERT_EQ(after.heap[1].item, "c");
  EXPECT_EQ(c.set, (std::vector<std::pair<std::string, std::string>>{{"0", "b"}, {"1", "c"}}));
  EXPECT_TRUE(c.gone.empty());
  ASSERT_EQ(c.shards.size(), 1u);
  EXPECT_EQ(c.shards[0].first, "0");
  EXPECT_EQ(c.shards[0].second, BucketBytes(after));
}

TEST_F(TopkSnapshotTest, CommitDeletesTheItemOfASlotThatLostIt) {
  // k 4: "a" with n 0 sinks one level to slot 1 (equal counts move once), above the empty slot
  // 3. Added again, its count 0 meets the empty slot 3's 0 and moves down again: slot 1 takes
  // the empty entry and has no item any more.
  TopkSketch model = NewTopkSketch({4, 50, 1, 1.0});
  TopkAdd(&model, "a", 0, kNoRandom);
  ASSERT_TRUE(model.heap[1].has_item);
  TopkSnapshot s;
  ASSERT_TRUE(Parse(PartsOf(model, 400).Answer(), &s));
  TopkSketch after = s.sketch;
  EXPECT_FALSE(TopkAdd(&after, "a", 0, kNoRandom).has_value());
  ASSERT_FALSE(after.heap[1].has_item);
  ASSERT_TRUE(after.heap[3].has_item);
  const TopkCall call = Commit(s, after);
  const CommitArgs c = Split(call);
  EXPECT_EQ(c.heap, HeapBytes(after));
  EXPECT_EQ(c.set, (std::vector<std::pair<std::string, std::string>>{{"3", "a"}}));
  EXPECT_EQ(c.gone, (std::vector<std::string>{"1"}));
  EXPECT_TRUE(c.shards.empty());  // the bucket was stamped with a's fp at the first add
  EXPECT_EQ(call.argv, (std::vector<std::string>{std::string(kId), "7", HeapBytes(after), "1", "3",
                                                 "a", "1", "1"}));
}

TEST_F(TopkSnapshotTest, AfterIsTheCommittedSketchReencodedWithVPlusOne) {
  TopkSnapshot s;
  ASSERT_TRUE(Parse(PartsOf(Sample(), 64).Answer(), &s));
  TopkSketch sketch = s.sketch;
  TopkAdd(&sketch, "zz", 30, kNoRandom);
  const TopkSnapshot after = TopkAfter(s, sketch);
  EXPECT_EQ(after.id, kId);
  EXPECT_EQ(after.v, "8");
  EXPECT_EQ(after.heap, HeapBytes(sketch));
  EXPECT_EQ(after.shards, Split(BucketBytes(sketch), 64));
  ExpectSameSketch(after.sketch, sketch);
  // What a snapshot of the committed sketch would read.
  Parts p = PartsOf(sketch, 64);
  p.v = "8";
  TopkSnapshot read;
  ASSERT_TRUE(Parse(p.Answer(), &read));
  EXPECT_EQ(read.heap, after.heap);
  EXPECT_EQ(read.shards, after.shards);
  ExpectSameSketch(read.sketch, after.sketch);
}

TEST_F(TopkSnapshotTest, CommitOfAnItemMovedWithinTheHeapSetsBothSlots) {
  TopkSketch model = NewTopkSketch({3, 100, 2, 1.0});
  TopkAdd(&model, "a", 5, kNoRandom);
  TopkAdd(&model, "b", 2, kNoRandom);
  TopkAdd(&model, "c", 3, kNoRandom);
  TopkSnapshot s;
  ASSERT_TRUE(Parse(PartsOf(model, 64).Answer(), &s));
  TopkSketch after = s.sketch;
  TopkAdd(&after, "b", 10, kNoRandom);  // b at slot 0 grows and sinks
  const CommitArgs c = Split(Commit(s, after));
  std::vector<std::pair<std::string, std::string>> want;
  for (size_t i = 0; i < 3; ++i) {
    if (after.heap[i].item != model.heap[i].item)
      want.emplace_back(std::to_string(i), after.heap[i].item);
  }
  ASSERT_FALSE(want.empty());
  EXPECT_EQ(c.set, want);
  EXPECT_TRUE(c.gone.empty());
  EXPECT_EQ(c.heap, HeapBytes(after));
  for (const auto& [index, bytes] : c.shards) {
    EXPECT_EQ(bytes, Split(BucketBytes(after), 64)[std::stoul(index)]);
  }
}

}  // namespace
}  // namespace bloomproxy::filters
