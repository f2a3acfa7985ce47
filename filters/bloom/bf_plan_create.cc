// Creation, for the BF plan (bf_plan_state.h): a new filter (its shards and counts, then its
// metadata hash published under the name with RENAMENX, so that one creator wins), from the
// command's parameters or from a BF.LOADCHUNK dump header; and a new link of a scaling filter
// when the newest one is full, created by any number of proxies at once (RENAMENX of each
// shard, then HSETNX of the link's field) and given the name's TTL. Behind a sharding proxy, which
// refuses RENAMENX and PEXPIRETIME, and behind a cluster, where a redirected command may run
// after a later one of its step, the scripts of filters/common/sharding_requests.h do the same.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "filters/bloom/bf_plan_state.h"
#include "filters/bloom/bloom.h"
#include "filters/common/key_layout.h"
#include "filters/common/plan_requests.h"
#include "filters/common/sharding_requests.h"

namespace bloomproxy::filters::bf_plan_internal {

// --- creation ---------------------------------------------------------------------------

// A new filter: its bits and counts first, then its metadata, published with RENAMENX so
// that exactly one creator wins, whatever the name holds.
void BfPlan::Create(PlanStep* step) {
  phase_ = Phase::kCreate;
  auto meta = std::make_shared<FilterMeta>(NewFilterMeta(
      name_, req_, req_.command == BfCommand::kLoadChunk ? &header_ : nullptr, *config_));
  Requests& req = BeginStep(step);
  for (size_t l = 0; l < meta->links.size(); ++l) {
    AddLinkKeys(&req, *meta, l, meta->counts[l], /*shared=*/false);
  }
  AddPublish(&req, *meta);
  EndStep(step);
  pending_meta_ = meta;
}

// The metadata of a new filter, published under its name only if the name is free: written to
// a temporary key and moved with RENAMENX (a sharding proxy refuses RENAMENX, and in a cluster a
// RENAMENX held by a migration could run after the temporary key expired: a script does the same
// there). The last reply says whether it was published (1) or the name was taken (0).
void BfPlan::AddPublish(Requests* req, const FilterMeta& meta) const {
  if (ScriptedCreation()) return AddPublishIfFree(req, name_, MetaHashFields(meta));
  const std::string tmp = meta.prefix + ":bf:" + meta.id + ":new";
  std::vector<std::string> hset = {"HSET", tmp};
  for (std::string& f : MetaHashFields(meta)) hset.push_back(std::move(f));
  req->Add(hset);
  req->Last().kind = ReplyCheck::Kind::kInteger;
  AddExpireAt(req, tmp);  // RENAMENX keeps it
  req->Add({"RENAMENX", tmp, name_});
  req->Last().kind = ReplyCheck::Kind::kInteger;
}

// A link's shard keys, created at full size in one step each, and its count key.
// SETRANGE of the last byte on a missing key makes Redis allocate exactly the string's size,
// zeroed, without the zeros crossing the network (SETBIT and BITFIELD would grow the string
// greedily instead). Keys of a new filter carry an id nobody else knows yet, so they are
// written directly; a new link of a shared filter may be created by several proxies at once,
// so its shards are built under a private name and moved in place with RENAMENX (the first
// wins; a later one must not overwrite bits already set).
void BfPlan::AddLinkKeys(Requests* req, const FilterMeta& meta, size_t link, int64_t count,
                         bool shared) const {
  const uint64_t shards = meta.ShardCount(link);
  for (uint64_t s = 0; s < shards; ++s) {
    const uint64_t len = ShardSize(meta, link, s);
    const std::string key = meta.BitsKey(link, s);
    auto describe = [&](ReplyCheck::Kind kind) {
      ReplyCheck& c = req->Last();
      c.kind = kind;
      c.role = ReplyCheck::Role::kShard;
      c.link = static_cast<uint32_t>(link);
      c.shard = s;
      c.n = len;
    };
    if (!shared) {
      req->Add({"SETRANGE", key, U64(len - 1), std::string_view("\0", 1)});
      describe(ReplyCheck::Kind::kLength);
      AddExpireAt(req, key);
      continue;
    }
    if (ScriptedCreation()) {
      AddShardIfMissing(req, key, len);
      describe(ReplyCheck::Kind::kLength);
      continue;
    }
    const std::string tmp = key + ":" + NewId();
    req->Add({"SETRANGE", tmp, U64(len - 1), std::string_view("\0", 1)});
    describe(ReplyCheck::Kind::kLength);
    req->Add({"RENAMENX", tmp, key});
    describe(ReplyCheck::Kind::kInteger);
    req->Add({"UNLINK", tmp});
    describe(ReplyCheck::Kind::kNoError);
  }
  req->Add({"SET", meta.CountKey(link), std::to_string(count), "NX"});
  ReplyCheck& c = req->Last();
  c.kind = ReplyCheck::Kind::kNoError;
  c.role = ReplyCheck::Role::kCount;
  c.link = static_cast<uint32_t>(link);
  if (!shared) AddExpireAt(req, meta.CountKey(link));
}

// A windowed filter's slot: every key it creates ends with the slot (Redis drops it then); a new
// link's keys take the name's expiry (CreateLink), which is the same time.
void BfPlan::AddExpireAt(Requests* req, const std::string& key) const {
  if (req_.expire_at_ms <= 0) return;
  req->Add({"PEXPIREAT", key, std::to_string(req_.expire_at_ms)});
  req->Last().kind = ReplyCheck::Kind::kInteger;
}

void BfPlan::OnCreate(StepReplies& r, PlanStep* step) {
  std::shared_ptr<FilterMeta> meta = std::move(pending_meta_);
  std::string error;
  int64_t renamed = -1;
  if (CheckReplies(r, &error)) {
    FrameInt(r.Frame(checks_.size() - 1), &renamed);
    if (renamed != 0 && renamed != 1) {
      error =
          Unexpected(checks_.back(), "expected 0 or 1, got the integer " + std::to_string(renamed));
    }
  } else if (r.size() >= checks_.size()) {
    FrameInt(r.Frame(checks_.size() - 1), &renamed);
  }
  if (renamed != 1 || !error.empty()) {
    // Someone else holds the name, or a write failed: remove what was prepared. A filter
    // published with a write that failed is removed too (nobody used it yet: it is a round
    // trip old), so the name is as it was and the next command on it starts afresh.
    std::vector<std::string> args = {"UNLINK", meta->prefix + ":bf:" + meta->id + ":new"};
    for (std::string& k : meta->DataKeys()) args.push_back(std::move(k));
    if (renamed == 1) args.push_back(name_);
    trailing_.Add(args);
    if (!error.empty()) return Finish(step, error);
    if (++restarts_ > kMaxRestarts) return Finish(step, std::string(kBusy));
    return Fetch(step);
  }
  meta_ = meta;
  cache_->Put(name_, meta_);
  if (req_.expire_at_ms > 0) {
    // A windowed filter's slot has no marker (nobody names it); behind a sharding proxy the
    // publishing script set no expiry.
    if (ScriptedCreation()) trailing_.Add({"PEXPIREAT", name_, std::to_string(req_.expire_at_ms)});
  } else {
    // The name's marker (key_layout.h), once the name is this filter's: TYPE then knows it
    // without reading the hash.
    trailing_.Add({"SET", MarkerKey(meta_->prefix, name_), "1"});
  }
  if (req_.command == BfCommand::kReserve || req_.command == BfCommand::kLoadChunk) {
    return Finish(step, "+OK\r\n");
  }
  if (meta_->windowed()) return HandOver(step);
  Main(step);
}

// A new link when the newest one is full, in two steps. Its keys come first; only once they
// exist does the metadata field that names it follow (PublishLink), so that no reader, and no
// failed creation, ever meets a link without its shards. Concurrent creators agree: RENAMENX (or
// the shard script) keeps the first shard, SET NX the first count, HSETNX the first field (a
// link's parameters are the same for all of them).
void BfPlan::CreateLink(PlanStep* step) {
  phase_ = Phase::kCreateLink;
  const size_t l = meta_->links.size();
  auto next = std::make_shared<FilterMeta>(*meta_);
  next->links.push_back(ChainLink(meta_->error, meta_->capacity, meta_->expansion, false, l));
  next->counts.push_back(0);
  Requests& req = BeginStep(step);
  AddLinkKeys(&req, *next, l, 0, /*shared=*/true);
  EndStep(step);
  pending_meta_ = next;
}

void BfPlan::OnCreateLink(StepReplies& r, PlanStep* step) {
  std::string error;
  if (!CheckReplies(r, &error)) {
    pending_meta_.reset();
    return Finish(step, error);
  }
  PublishLink(step);
}

// The new link's field, its count (another proxy may have counted items in it already) and the
// name's TTL, which the link's keys then take.
void BfPlan::PublishLink(PlanStep* step) {
  phase_ = Phase::kPublishLink;
  const FilterMeta& next = *pending_meta_;
  const size_t l = next.links.size() - 1;
  Requests& req = BeginStep(step);
  req.Add({"HSETNX", name_, "l" + std::to_string(l), EncodeLink(next.links[l])});
  req.Last().kind = ReplyCheck::Kind::kInteger;
  req.Add({"GET", next.CountKey(l)});
  req.Last().kind = ReplyCheck::Kind::kCount;
  req.Last().role = ReplyCheck::Role::kCount;
  req.Last().link = static_cast<uint32_t>(l);
  if (ShardingProxy()) {
    AddExpireTime(&req, name_);
  } else {
    req.Add({"PEXPIRETIME", name_});
    req.Last().kind = ReplyCheck::Kind::kInteger;
  }
  EndStep(step);
}

void BfPlan::OnPublishLink(StepReplies& r, PlanStep* step) {
  std::shared_ptr<FilterMeta> next = std::move(pending_meta_);
  std::string error;
  if (!CheckReplies(r, &error)) return Finish(step, error);
  meta_ = next;
  const size_t l = meta_->links.size() - 1;
  const size_t n = checks_.size();
  int64_t count = 0, expire_at = -1;
  ParseCount(Str(r.Get(n - 2)), &count);
  FrameInt(r.Frame(n - 1), &expire_at);
  meta_->counts[l] = count;
  if (expire_at > 0) {
    for (uint64_t s = 0; s < meta_->ShardCount(l); ++s) {
      trailing_.Add({"PEXPIREAT", meta_->BitsKey(l, s), std::to_string(expire_at)});
    }
    trailing_.Add({"PEXPIREAT", meta_->CountKey(l), std::to_string(expire_at)});
  }
  link_full_ = meta_->counts[l] >= static_cast<int64_t>(meta_->links[l].capacity);
  cache_->Put(name_, meta_);
  Main(step);
}

}  // namespace bloomproxy::filters::bf_plan_internal
