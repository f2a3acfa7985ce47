// TOPK plans (filters/topk/topk_update_plan.h, topk_plan.h) stepped by hand with made-up upstream
// answers: the script path (topk_add.lua, hashes only for a sketch the proxy knows, EVAL with the
// body after NOSCRIPT), the fast path (the snapshot EVALSHA_RO, then a commit whose arguments are
// TopkCommitCall's, and member replies equal to what the model expels), CONFLICT (snapshot again,
// the script after 4 snapshots), failures given to every member, what the cache learns and
// forgets, the states a batch starts from, the argument layout of TopkAddCall and TopkReadCall,
// and reads behind a sharding proxy (EVALSHA, never EVALSHA_RO).
#include "filters/topk/topk_update_plan.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "filters/common/key_layout.h"
#include "filters/topk/topk.h"
#include "filters/topk/topk_add.lua.h"
#include "filters/topk/topk_args.h"
#include "filters/topk/topk_commit.lua.h"
#include "filters/topk/topk_plan.h"
#include "filters/topk/topk_read.lua.h"
#include "filters/topk/topk_snapshot.h"
#include "protocol/errors.h"
#include "protocol/reply_decoder.h"
#include "tests/unit/script_answers.h"

namespace bloomproxy::filters {
namespace {

using namespace script_answers;  // NOLINT: test-local helpers

constexpr std::string_view kId = "0123456789abcdef";
constexpr std::string_view kOtherId = "fedcba9876543210";

const TopkRandom kNoRandom = [] {
  ADD_FAILURE() << "random source drawn";
  return 0.5;
};

std::string Fields(const TopkParams& p, std::string_view id = kId) {
  return Array(5) + Bulk(id) + Bulk(std::to_string(p.k)) + Bulk(std::to_string(p.width)) +
         Bulk(std::to_string(p.depth)) + Bulk(TopkFormatDecay(p.decay));
}

void PutU32(std::string* out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<char>(v >> shift));
}

// topk_read.lua's "snapshot" answer for `s`: v, the heap, its items, the buckets in shards.
std::string SnapshotAnswer(const TopkSketch& s, std::string_view v, size_t shard_bytes,
                           std::string_view id = kId) {
  std::string heap;
  std::string items;
  size_t with_items = 0;
  for (size_t i = 0; i < s.heap.size(); ++i) {
    PutU32(&heap, s.heap[i].fp);
    PutU32(&heap, s.heap[i].count);
    if (!s.heap[i].has_item) continue;
    items += Bulk(std::to_string(i)) + Bulk(s.heap[i].item);
    ++with_items;
  }
  std::string buckets;
  for (const TopkBucket& b : s.buckets) {
    PutU32(&buckets, b.fp);
    PutU32(&buckets, b.count);
  }
  std::string shards;
  size_t n = 0;
  for (size_t at = 0; at < buckets.size(); at += shard_bytes, ++n) {
    shards += Bulk(buckets.substr(at, shard_bytes));
  }
  return Array(2) + Array(3 + n) + Bulk(v) + Bulk(heap) + Array(2 * with_items) + items + shards +
         Fields(s.params, id);
}

// The head of a structure script call on sketch "t": command, script, 1, name, marker, prefix.
Args Head(std::string_view command, std::string_view script) {
  const std::string prefix = DataKeyPrefix("t");
  return {std::string(command), std::string(script), "1", "t", TopkMarkerKey(prefix, "t"), prefix};
}

Args Call(std::string_view command, std::string_view script, const Args& argv) {
  Args out = Head(command, script);
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

Args ArgvOf(const Args& request) { return Args(request.begin() + 6, request.end()); }

// The sketch most tests start from: k 2, width 50, depth 4, decay 1, "a" (1) and "b" (2) in it.
TopkSketch Sample() {
  TopkSketch s = NewTopkSketch({2, 50, 4, 1.0});
  TopkAdd(&s, "a", 1, kNoRandom);
  TopkAdd(&s, "b", 2, kNoRandom);
  return s;
}

std::shared_ptr<TopkMeta> MetaOf(const TopkParams& p, std::string_view id = kId) {
  auto m = std::make_shared<TopkMeta>();
  m->id = std::string(id);
  m->k = p.k;
  m->width = p.width;
  m->depth = p.depth;
  m->decay = TopkFormatDecay(p.decay);
  return m;
}

class TopkUpdatePlanTest : public OneCallPlanTest {
 protected:
  std::unique_ptr<Plan> Update(std::vector<std::string> items, std::vector<uint32_t> increments,
                               std::vector<TopkAddMember> members, TopkStates* states = nullptr) {
    return MakeTopkUpdatePlan("t", std::move(items), std::move(increments), std::move(members),
                              &cache_, states, &config_);
  }
  std::unique_ptr<Plan> Command(std::vector<std::string> args) {
    args_ = std::move(args);
    std::vector<std::string_view> views(args_.begin(), args_.end());
    TopkRequest request;
    const std::string error = ParseTopkRequest(views, &request);
    EXPECT_TRUE(error.empty() || request.error_order != TopkErrorOrder::kNow) << error;
    return MakeTopkPlan(request, error, &cache_, &config_);
  }

  // The snapshot as the plan parses it.
  TopkSnapshot Snapshot(const std::string& answer) {
    protocol::ReplyPtr r = decoder_.Decode(answer);
    TopkSnapshot s;
    EXPECT_TRUE(ParseTopkSnapshot(r->element[0], TopkAnswerFields(r.get()), &s));
    return s;
  }

  TopkCache cache_;
  TopkConfig config_;
  std::vector<std::string> args_;
};

// ---------------------------------------------------------------------------------------------
// The script path.

TEST_F(TopkUpdatePlanTest, UnknownSketchSendsTopkAddWithoutHashesThenTheBodyAfterNoScript) {
  std::unique_ptr<Plan> plan = Update({"hello", "world"}, {1, 3}, {{1, 1, ""}, {1, 1, ""}});
  const Args first = Start(plan.get());
  ASSERT_EQ(first.size(), 21u);
  EXPECT_EQ(Args(first.begin(), first.begin() + 6), Head("EVALSHA", lua::kTopkAdd.sha1));
  EXPECT_EQ(first[4], "{t}:tk:m:t");
  EXPECT_EQ(first[5], "{t}");
  EXPECT_EQ(first[6], "");   // no id known
  EXPECT_EQ(first[7], "0");  // no hashes
  for (size_t i = 8; i < 11; ++i) EXPECT_LT(std::stoull(first[i]), 4294967087ull);
  for (size_t i = 11; i < 14; ++i) EXPECT_LT(std::stoull(first[i]), 4294944443ull);
  EXPECT_EQ(Args(first.begin() + 14, first.end()),
            (Args{"2", "1", "hello", "1", "1", "world", "3"}));
  // NOSCRIPT: the same call with the script's text.
  const Args again = Answer(plan.get(), kNoScript);
  EXPECT_EQ(again, Call("EVAL", lua::kTopkAdd.body, ArgvOf(first)));
  const TopkParams p{3, 8, 7, 0.9};
  EXPECT_EQ(Answer(plan.get(), Array(3) + Array(1) + kNull + Array(1) + Bulk("old") + Fields(p)),
            Args());
  EXPECT_EQ(step_.reply, Array(1) + kNull);
  EXPECT_EQ(plan->MemberReplies(), (Args{Array(1) + kNull, Array(1) + Bulk("old")}));
  // The cache learnt the sketch.
  const std::shared_ptr<TopkMeta> meta = cache_.Find("t");
  ASSERT_NE(meta, nullptr);
  EXPECT_EQ(meta->id, kId);
  EXPECT_EQ(meta->k, 3u);
  EXPECT_EQ(meta->width, 8u);
  EXPECT_EQ(meta->depth, 7u);
  EXPECT_EQ(meta->decay, "0.90000000000000002");
}

TEST_F(TopkUpdatePlanTest, ANoScriptAfterTheBodyIsTheReply) {
  std::unique_ptr<Plan> plan = Update({"x"}, {1}, {{1, 1, ""}});
  Start(plan.get());
  ASSERT_EQ(Answer(plan.get(), kNoScript)[0], "EVAL");
  EXPECT_EQ(Answer(plan.get(), kNoScript), Args());
  EXPECT_EQ(step_.reply, kNoScript);  // not an ERR: passed as the server said it
}

TEST_F(TopkUpdatePlanTest, SketchTooLargeToReadWholeTakesTheScriptWithHashes) {
  cache_.Put("t", MetaOf({2000, 8, 3, 1.0}));  // k > 1024
  std::unique_ptr<Plan> plan = Update({"x"}, {4}, {{1, 1, ""}});
  const Args first = Start(plan.get());
  ASSERT_EQ(first.size(), 6u + 8 + 1 + 1 + 2 + 4);
  EXPECT_EQ(first[0], "EVALSHA");
  EXPECT_EQ(first[1], lua::kTopkAdd.sha1);
  EXPECT_EQ(first[6], kId);
  EXPECT_EQ(first[7], "4");  // 1 + depth
  EXPECT_EQ(Args(first.begin() + 14, first.end()),
            (Args{"1", "1", "x", "4", std::to_string(TopkFingerprint("x")),
                  std::to_string(TopkRowHash("x", 0)), std::to_string(TopkRowHash("x", 1)),
                  std::to_string(TopkRowHash("x", 2))}));
}

// ---------------------------------------------------------------------------------------------
// The fast path.

TEST_F(TopkUpdatePlanTest, KnownSketchSnapshotThenCommitThenTheModelsReplies) {
  const TopkSketch model = Sample();
  cache_.Put("t", MetaOf(model.params));
  const std::vector<std::string> items = {"x", "a", "x"};
  const std::vector<uint32_t> incs = {5, 2, 1};
  const std::vector<TopkAddMember> members = {{2, 2, ""}, {1, 1, ""}};
  std::unique_ptr<Plan> plan = Update(items, incs, members);
  EXPECT_EQ(Start(plan.get()),
            Call("EVALSHA_RO", lua::kTopkRead.sha1, {std::string(kId), "0", "snapshot"}));
  const std::string snapshot = SnapshotAnswer(model, "41", 256);
  const Args commit = Answer(plan.get(), snapshot);
  // The model on the same sketch, decay 1: no random draw.
  TopkSketch after = model;
  std::vector<TopkExpelled> m0 = {TopkAdd(&after, "x", 5, kNoRandom),
                                  TopkAdd(&after, "a", 2, kNoRandom)};
  std::vector<TopkExpelled> m1 = {TopkAdd(&after, "x", 1, kNoRandom)};
  ASSERT_TRUE(m0[0].has_value());  // x expels a, then a expels b
  EXPECT_EQ(*m0[0], "a");
  const TopkSnapshot before = Snapshot(snapshot);
  EXPECT_EQ(commit, Call("EVALSHA", lua::kTopkCommit.sha1,
                         TopkCommitCall(before, TopkAfter(before, after)).argv));
  ASSERT_GE(commit.size(), 8u);
  EXPECT_EQ(commit[6], kId);
  EXPECT_EQ(commit[7], "41");
  EXPECT_EQ(Answer(plan.get(), "+OK\r\n"), Args());
  const Args want = {TopkAddMemberReply(m0, members[0]), TopkAddMemberReply(m1, members[1])};
  EXPECT_EQ(plan->MemberReplies(), want);
  EXPECT_EQ(step_.reply, want[0]);
  EXPECT_EQ(want[0], Array(2) + Bulk("a") + (m0[1] ? Bulk(*m0[1]) : kNull));
}

TEST_F(TopkUpdatePlanTest, NoScriptOnTheSnapshotAndOnTheCommit) {
  const TopkSketch model = Sample();
  cache_.Put("t", MetaOf(model.params));
  std::unique_ptr<Plan> plan = Update({"c"}, {3}, {{1, 1, ""}});
  const Args snapshot = Start(plan.get());
  EXPECT_EQ(Answer(plan.get(), kNoScript), Call("EVAL_RO", lua::kTopkRead.body, ArgvOf(snapshot)));
  const Args commit = Answer(plan.get(), SnapshotAnswer(model, "3", 64));
  EXPECT_EQ(commit[0], "EVALSHA");
  EXPECT_EQ(commit[1], lua::kTopkCommit.sha1);
  EXPECT_EQ(Answer(plan.get(), kNoScript), Call("EVAL", lua::kTopkCommit.body, ArgvOf(commit)));
  EXPECT_EQ(Answer(plan.get(), "+OK\r\n"), Args());
  TopkSketch after = model;
  EXPECT_EQ(step_.reply, TopkAddMemberReply({TopkAdd(&after, "c", 3, kNoRandom)}, {1, 1, ""}));
}

TEST_F(TopkUpdatePlanTest, ConflictSnapshotsAgainAndAfterFourSnapshotsTakesTheScript) {
  TopkSketch model = Sample();
  cache_.Put("t", MetaOf(model.params));
  std::unique_ptr<Plan> plan = Update({"q", "r"}, {1, 2}, {{2, 2, ""}});
  Args request = Start(plan.get());
  for (int round = 0; round < 4; ++round) {
    EXPECT_EQ(request, Call("EVALSHA_RO", lua::kTopkRead.sha1, {std::string(kId), "0", "snapshot"}))
        << round;
    // Another update came in between: each snapshot sees a different sketch.
    TopkAdd(&model, "other" + std::to_string(round), 3, kNoRandom);
    const std::string answer = SnapshotAnswer(model, std::to_string(10 + round), 64);
    request = Answer(plan.get(), answer);
    TopkSketch after = model;
    TopkAdd(&after, "q", 1, kNoRandom);
    TopkAdd(&after, "r", 2, kNoRandom);
    const TopkSnapshot before = Snapshot(answer);
    EXPECT_EQ(request, Call("EVALSHA", lua::kTopkCommit.sha1,
                            TopkCommitCall(before, TopkAfter(before, after)).argv))
        << round;
    request = Answer(plan.get(), "+CONFLICT\r\n");
  }
  // The script, with the hashes: the sketch is known.
  ASSERT_GE(request.size(), 14u);
  EXPECT_EQ(Args(request.begin(), request.begin() + 6), Head("EVALSHA", lua::kTopkAdd.sha1));
  EXPECT_EQ(request[6], kId);
  EXPECT_EQ(request[7], "5");
  Args items = {"1", "2", "q", "1", std::to_string(TopkFingerprint("q"))};
  for (uint32_t r = 0; r < 4; ++r) items.push_back(std::to_string(TopkRowHash("q", r)));
  items.insert(items.end(), {"r", "2", std::to_string(TopkFingerprint("r"))});
  for (uint32_t r = 0; r < 4; ++r) items.push_back(std::to_string(TopkRowHash("r", r)));
  EXPECT_EQ(Args(request.begin() + 14, request.end()), items);
  EXPECT_EQ(Answer(plan.get(), Array(2) + Array(2) + Bulk("zz") + kNull + Fields(model.params)),
            Args());
  EXPECT_EQ(step_.reply, Array(2) + Bulk("zz") + kNull);
}

TEST_F(TopkUpdatePlanTest, SnapshotFailuresGoToEveryMember) {
  const TopkParams p = Sample().params;
  struct Case {
    std::string answer;
    std::string reply;
    bool forgotten;
  };
  const std::vector<Case> cases = {
      {"+MISSING\r\n", "-TopK: key does not exist\r\n", true},
      {"+WRONGTYPE\r\n", std::string(kTopkErrWrongType), true},
      {"-LOADING Redis is loading the dataset in memory\r\n",
       "-LOADING Redis is loading the dataset in memory\r\n", false},
      {"-ERR Error running script\r\n",
       protocol::errors::UnexpectedUpstreamReply("EVALSHA", "ERR Error running script"), false},
      {"+DAMAGED heap\r\n",
       protocol::errors::UnexpectedUpstreamReply("EVALSHA", "the Top-K sketch is damaged: heap"),
       false},
  };
  for (const Case& c : cases) {
    cache_.Put("t", MetaOf(p));
    std::unique_ptr<Plan> plan = Update({"x", "y", "z"}, {1, 1, 1}, {{1, 1, ""}, {2, 2, ""}});
    ASSERT_EQ(Start(plan.get())[0], "EVALSHA_RO");
    EXPECT_EQ(Answer(plan.get(), c.answer), Args()) << c.answer;
    EXPECT_EQ(step_.reply, c.reply) << c.answer;
    EXPECT_EQ(plan->MemberReplies(), (Args{c.reply, c.reply})) << c.answer;
    EXPECT_EQ(cache_.Find("t") == nullptr, c.forgotten) << c.answer;
  }
}

TEST_F(TopkUpdatePlanTest, ASnapshotThatDoesNotParseTakesTheScript) {
  const TopkSketch model = Sample();
  cache_.Put("t", MetaOf(model.params));
  std::unique_ptr<Plan> plan = Update({"x"}, {1}, {{1, 1, ""}});
  Start(plan.get());
  std::string bad = SnapshotAnswer(model, "1", 400);
  // The heap is 16 bytes: one slot missing.
  std::string heap;
  for (const TopkSlot& s : model.heap) {
    PutU32(&heap, s.fp);
    PutU32(&heap, s.count);
  }
  bad.replace(bad.find(Bulk(heap)), Bulk(heap).size(), Bulk(heap.substr(0, 8)));
  const Args script = Answer(plan.get(), bad);
  ASSERT_GE(script.size(), 8u);
  EXPECT_EQ(script[1], lua::kTopkAdd.sha1);
  EXPECT_EQ(script[6], kId);
}

TEST_F(TopkUpdatePlanTest, UnexpectedCommitAnswersAreErrors) {
  const TopkSketch model = Sample();
  for (const std::string& answer : {std::string("+FOO\r\n"), Int(1), std::string("-ERR x\r\n")}) {
    cache_.Put("t", MetaOf(model.params));
    std::unique_ptr<Plan> plan = Update({"x"}, {1}, {{1, 1, ""}});
    Start(plan.get());
    ASSERT_EQ(Answer(plan.get(), SnapshotAnswer(model, "1", 64))[1], lua::kTopkCommit.sha1);
    EXPECT_EQ(Answer(plan.get(), answer), Args());
    EXPECT_EQ(step_.reply.rfind(protocol::errors::kUnexpectedUpstreamPrefix, 0), 0u)
        << answer << " -> " << step_.reply;
  }
}

TEST_F(TopkUpdatePlanTest, TheCacheFollowsTheIdTheAnswersCarry) {
  // The sketch was deleted and made again: the snapshot's fields name another id, which the
  // cache learns and the commit uses.
  TopkSketch model = Sample();
  cache_.Put("t", MetaOf(model.params, kOtherId));
  std::unique_ptr<Plan> plan = Update({"x"}, {1}, {{1, 1, ""}});
  EXPECT_EQ(Start(plan.get())[6], kOtherId);
  const Args commit = Answer(plan.get(), SnapshotAnswer(model, "0", 64, kId));
  EXPECT_EQ(commit[6], kId);
  EXPECT_EQ(cache_.Find("t")->id, kId);
  // MISSING on the script path forgets it.
  cache_.Put("t", MetaOf({5000, 8, 7, 0.9}));
  plan = Update({"x"}, {1}, {{1, 1, ""}});
  EXPECT_EQ(Start(plan.get())[1], lua::kTopkAdd.sha1);
  EXPECT_EQ(Answer(plan.get(), "+MISSING\r\n"), Args());
  EXPECT_EQ(step_.reply, kTopkErrKeyMissing);
  EXPECT_EQ(cache_.Find("t"), nullptr);
}

// ---------------------------------------------------------------------------------------------
// The states a sketch's batches start from.

TEST_F(TopkUpdatePlanTest, ABatchStartsFromTheStateTheLastOneCommitted) {
  TopkStates states;
  const TopkSketch model = Sample();
  cache_.Put("t", MetaOf(model.params));
  std::unique_ptr<Plan> plan = Update({"x"}, {5}, {{1, 1, ""}}, &states);
  ASSERT_EQ(Start(plan.get())[1], lua::kTopkRead.sha1);
  ASSERT_EQ(Answer(plan.get(), SnapshotAnswer(model, "41", 64))[1], lua::kTopkCommit.sha1);
  ASSERT_EQ(Answer(plan.get(), "+OK\r\n"), Args());
  TopkSketch after = model;
  TopkAdd(&after, "x", 5, kNoRandom);
  // The next batch commits at once, over v + 1.
  plan = Update({"y"}, {2}, {{1, 1, ""}}, &states);
  const Args commit = Start(plan.get());
  const TopkSnapshot state = Snapshot(SnapshotAnswer(after, "42", 64));
  TopkSketch next = after;
  const TopkExpelled expelled = TopkAdd(&next, "y", 2, kNoRandom);
  EXPECT_EQ(commit, Call("EVALSHA", lua::kTopkCommit.sha1,
                         TopkCommitCall(state, TopkAfter(state, next)).argv));
  // CONFLICT: the state is dropped, the batch reads a snapshot.
  EXPECT_EQ(Answer(plan.get(), "+CONFLICT\r\n"),
            Call("EVALSHA_RO", lua::kTopkRead.sha1, {std::string(kId), "0", "snapshot"}));
  EXPECT_EQ(states.Find("t"), nullptr);
  ASSERT_EQ(Answer(plan.get(), SnapshotAnswer(after, "50", 64))[7], "50");
  EXPECT_EQ(Answer(plan.get(), "+OK\r\n"), Args());
  EXPECT_EQ(step_.reply, TopkAddMemberReply({expelled}, {1, 1, ""}));
  ASSERT_NE(states.Find("t"), nullptr);
  EXPECT_EQ(states.Find("t")->v, "51");
}

TEST_F(TopkUpdatePlanTest, BatchPlanRepliesPerMember) {
  const TopkSketch model = Sample();
  cache_.Put("t", MetaOf(model.params));
  std::unique_ptr<Plan> plan = MakeTopkAddBatchPlan("t", {"x", "y", "x"}, {1, 1, 7},
                                                    {{0, 1}, {1, 2}}, &cache_, nullptr, &config_);
  Start(plan.get());
  Answer(plan.get(), SnapshotAnswer(model, "1", 64));
  EXPECT_EQ(Answer(plan.get(), "+OK\r\n"), Args());
  TopkSketch after = model;
  const TopkExpelled x = TopkAdd(&after, "x", 1, kNoRandom);
  const TopkExpelled y = TopkAdd(&after, "y", 1, kNoRandom);
  const TopkExpelled x7 = TopkAdd(&after, "x", 7, kNoRandom);
  EXPECT_EQ(plan->MemberReplies(),
            (Args{TopkAddMemberReply({x}, {1, 1, ""}), TopkAddMemberReply({y, x7}, {2, 2, ""})}));
}

// ---------------------------------------------------------------------------------------------
// MakeTopkPlan: INCRBY's short reply, reads.

TEST_F(TopkUpdatePlanTest, IncrByWithABadIncrementOnBothPaths) {
  const std::string error(kTopkErrIncrement);
  // The script path: the pairs before the bad one, then its error element.
  std::unique_ptr<Plan> plan = Command({"TOPK.INCRBY", "t", "a", "2", "b", "-1", "c", "3"});
  const Args script = Start(plan.get());
  EXPECT_EQ(Args(script.begin() + 14, script.end()), (Args{"1", "1", "a", "2"}));
  EXPECT_EQ(Answer(plan.get(), Array(2) + Array(1) + kNull + Fields(Sample().params)), Args());
  EXPECT_EQ(step_.reply, Array(3) + kNull + error);
  // The fast path, now that the sketch is known.
  const TopkSketch model = Sample();
  plan = Command({"TOPK.INCRBY", "t", "x", "9", "b", "100001"});
  EXPECT_EQ(Start(plan.get())[8], "snapshot");
  Answer(plan.get(), SnapshotAnswer(model, "1", 64));
  EXPECT_EQ(Answer(plan.get(), "+OK\r\n"), Args());
  TopkSketch after = model;
  const TopkExpelled x = TopkAdd(&after, "x", 9, kNoRandom);
  ASSERT_TRUE(x.has_value());
  EXPECT_EQ(step_.reply, Array(2) + Bulk(*x) + error);
}

TEST_F(TopkUpdatePlanTest, ReadsGoAsEvalShaRoWithHashesOnceTheSketchIsKnown) {
  std::unique_ptr<Plan> plan = Command({"TOPK.QUERY", "t", "a", "b"});
  EXPECT_EQ(Start(plan.get()),
            Call("EVALSHA_RO", lua::kTopkRead.sha1, {"", "0", "query", "a", "b"}));
  EXPECT_EQ(Answer(plan.get(), kNoScript),
            Call("EVAL_RO", lua::kTopkRead.body, {"", "0", "query", "a", "b"}));
  const TopkParams p{3, 8, 2, 1.0};
  EXPECT_EQ(Answer(plan.get(), Array(2) + Array(2) + Int(1) + Int(0) + Fields(p)), Args());
  EXPECT_EQ(step_.reply, Array(2) + Int(1) + Int(0));
  plan = Command({"TOPK.COUNT", "t", "a"});
  EXPECT_EQ(Start(plan.get()),
            Call("EVALSHA_RO", lua::kTopkRead.sha1,
                 {std::string(kId), "3", "count", "a", std::to_string(TopkFingerprint("a")),
                  std::to_string(TopkRowHash("a", 0)), std::to_string(TopkRowHash("a", 1))}));
  EXPECT_EQ(Answer(plan.get(), "+MISSING\r\n"), Args());
  EXPECT_EQ(step_.reply, kTopkErrKeyMissing);
  EXPECT_EQ(cache_.Find("t"), nullptr);
}

TEST_F(TopkUpdatePlanTest, BehindAShardingProxyReadsGoAsEvalSha) {
  config_.upstream = protocol::UpstreamKind::kShardingProxy;
  for (const char* command : {"TOPK.LIST", "TOPK.INFO"}) {
    std::unique_ptr<Plan> plan = Command({command, "t"});
    const Args read = Start(plan.get());
    EXPECT_EQ(read[0], "EVALSHA") << command;
    EXPECT_EQ(read[1], lua::kTopkRead.sha1);
    EXPECT_EQ(Answer(plan.get(), kNoScript)[0], "EVAL") << command;
  }
  // The snapshot too.
  const TopkSketch model = Sample();
  cache_.Put("t", MetaOf(model.params));
  std::unique_ptr<Plan> plan = Update({"x"}, {1}, {{1, 1, ""}});
  EXPECT_EQ(Start(plan.get()),
            Call("EVALSHA", lua::kTopkRead.sha1, {std::string(kId), "0", "snapshot"}));
  EXPECT_EQ(Answer(plan.get(), kNoScript)[0], "EVAL");
}

// ---------------------------------------------------------------------------------------------
// Argument layout.

TEST(TopkCalls, AddCallWithAndWithoutMeta) {
  const std::vector<TopkUpdate> updates = {{"a", 1}, {"bb", 0}, {"c", 100000}};
  TopkCall call = TopkAddCall(updates, {1, 2}, nullptr);
  EXPECT_EQ(call.script, &lua::kTopkAdd);
  EXPECT_FALSE(call.read_only);
  ASSERT_EQ(call.argv.size(), 2u + 6 + 1 + 1 + 2 + 1 + 4);
  EXPECT_EQ(call.argv[0], "");
  EXPECT_EQ(call.argv[1], "0");
  EXPECT_EQ(Args(call.argv.begin() + 8, call.argv.end()),
            (Args{"2", "1", "a", "1", "2", "bb", "0", "c", "100000"}));
  const std::shared_ptr<TopkMeta> meta = MetaOf({3, 100, 2, 0.9});
  call = TopkAddCall(updates, {1, 2}, meta.get());
  Args want = {"2"};
  size_t at = 0;
  for (size_t count : {size_t{1}, size_t{2}}) {
    want.push_back(std::to_string(count));
    for (size_t i = 0; i < count; ++i, ++at) {
      const std::string_view item = updates[at].item;
      want.insert(
          want.end(),
          {std::string(item), std::to_string(updates[at].n), std::to_string(TopkFingerprint(item)),
           std::to_string(TopkRowHash(item, 0)), std::to_string(TopkRowHash(item, 1))});
    }
  }
  EXPECT_EQ(call.argv[0], kId);
  EXPECT_EQ(call.argv[1], "3");
  EXPECT_EQ(Args(call.argv.begin() + 8, call.argv.end()), want);
  // Every call draws a fresh seed.
  const TopkCall other = TopkAddCall(updates, {1, 2}, meta.get());
  EXPECT_NE(Args(call.argv.begin() + 2, call.argv.begin() + 8),
            Args(other.argv.begin() + 2, other.argv.begin() + 8));
}

TEST(TopkCalls, ReadCallWithAndWithoutMeta) {
  const std::shared_ptr<TopkMeta> meta = MetaOf({3, 100, 3, 0.9});
  const std::vector<std::string_view> items = {"a", std::string_view("b\0c", 3)};
  auto hashes = [](std::string_view item) {
    Args out = {std::string(item), std::to_string(TopkFingerprint(item))};
    for (uint32_t r = 0; r < 3; ++r) out.push_back(std::to_string(TopkRowHash(item, r)));
    return out;
  };
  TopkCall call = TopkReadCall(TopkCommand::kQuery, items, nullptr);
  EXPECT_EQ(call.script, &lua::kTopkRead);
  EXPECT_TRUE(call.read_only);
  EXPECT_EQ(call.argv, (Args{"", "0", "query", "a", std::string("b\0c", 3)}));
  call = TopkReadCall(TopkCommand::kCount, {"a"}, meta.get());
  Args want = {std::string(kId), "4", "count"};
  const Args a = hashes("a");
  want.insert(want.end(), a.begin(), a.end());
  EXPECT_EQ(call.argv, want);
  EXPECT_EQ(TopkReadCall(TopkCommand::kList, items, meta.get()).argv,
            (Args{std::string(kId), "4", "list"}));
  EXPECT_EQ(TopkReadCall(TopkCommand::kInfo, {}, nullptr).argv, (Args{"", "0", "info"}));
}

}  // namespace
}  // namespace bloomproxy::filters
