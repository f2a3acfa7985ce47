// Coalesced CF.ADD / CF.ADDNX and CF.EXISTS / CF.MEXISTS (cf_plan.h), with the fast paths a known
// filter allows (cf_meta.h). Lua costs Redis far more per bucket than BITFIELD does, so for a
// filter whose shape the proxy has cached, the arithmetic is done here:
//
//   add:     EVALSHA cf_insert_fast.lua: fingerprints and bucket offsets passed in, the script
//            reads, checks and writes with one BITFIELD_RO and one BITFIELD per sub-filter; it
//            answers STALE (the name is not that filter) or SLOW (kicks, growth) without writing
//   exists:  no script: STRLEN + BITFIELD_RO GET of both buckets of every item, per sub-filter
//            from the newest to the oldest, then HMGET name cf id g
//
// and anything else (nothing cached, a shape the fast paths do not take, STALE, SLOW, a check
// that fails) goes to the general scripts (cf_insert.lua, cf_check.lua), whose answers carry the
// filter's fields for the cache.
//
// Why the direct reads answer as the filter was at one moment, though several commands: within a
// sub-filter a fingerprint moves (kicks) only between its item's own two buckets, read by one
// BITFIELD_RO; across sub-filters it moves (compaction) only from a newer to an older one, read
// after it; and the generation g, read after every bucket, changes whenever the set of
// sub-filters does. So an item there throughout the reads is found.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "filters/common/key_layout.h"
#include "filters/common/plan_requests.h"
#include "filters/cuckoo/cf_check.lua.h"
#include "filters/cuckoo/cf_insert.lua.h"
#include "filters/cuckoo/cf_insert_fast.lua.h"
#include "filters/cuckoo/cf_meta.h"
#include "filters/cuckoo/cf_plan.h"
#include "filters/cuckoo/cf_replies.h"
#include "protocol/encoder.h"

namespace bloomproxy::filters {
namespace {

// An item's fingerprint and, in a sub-filter of n buckets, its two buckets' bit offsets.
struct ItemPlace {
  CfItemHash hash;
  uint8_t fp() const { return hash.fingerprint(); }
  uint64_t Bit(int which, uint64_t n, uint64_t bs) const {
    return (which == 1 ? hash.h % n : hash.h2() % n) * bs * 8;
  }
};

class CfBatchPlan : public Plan {
 public:
  CfBatchPlan(bool insert, std::string key, std::vector<std::string> items,
              std::vector<PlanMember> members, CfCache* cache, const CfConfig* config)
      : insert_(insert),
        key_(std::move(key)),
        prefix_(DataKeyPrefix(key_)),
        items_(std::move(items)),
        members_(std::move(members)),
        cache_(cache),
        config_(config) {
    places_.reserve(items_.size());
    for (const std::string& item : items_) places_.push_back({CfHash(item)});
  }

  const std::vector<std::string>& MemberReplies() const override { return replies_; }

  void Start(PlanStep* step) override {
    meta_ = cache_->Find(key_);
    // (Six arguments per item and sub-filter: a batch near Redis's million arguments a command
    // goes to the general script, two per item.)
    if (meta_ != nullptr && meta_->Simple() &&
        6 * places_.size() * meta_->num_filters <= kMaxFastArgs) {
      return insert_ ? SendFastInsert(step, false) : SendDirectReads(step);
    }
    SendGeneral(step, false);
  }

  void OnReplies(StepReplies& r, PlanStep* step) override {
    switch (phase_) {
      case Phase::kFastInsert:
        return OnFastInsert(r, step);
      case Phase::kDirectReads:
        return OnDirectReads(r, step);
      case Phase::kGeneral:
        return OnGeneral(r, step);
    }
  }

 private:
  enum class Phase { kFastInsert, kDirectReads, kGeneral };
  static constexpr size_t kMaxFastArgs = 600000;

  void Finish(PlanStep* step) {
    step->done = true;
    step->reply = replies_.size() == 1 ? replies_[0] : std::string();
  }

  void Fallback(PlanStep* step) {
    cache_->Erase(key_);
    SendGeneral(step, false);
  }

  // --- the general scripts ------------------------------------------------------------------

  void SendGeneral(PlanStep* step, bool body) {
    phase_ = Phase::kGeneral;
    body_sent_ = body;
    const std::vector<std::string_view> views(items_.begin(), items_.end());
    const CfCall call =
        insert_ ? CfInsertCall(views, members_, *config_) : CfCheckCall(views, false);
    AppendCfCall(&step->requests, key_, call, body, config_->upstream);
    step->replies = 1;
  }

  void OnGeneral(StepReplies& r, PlanStep* step) {
    const std::string_view answer = r.size() == 1 ? r.Frame(0) : std::string_view();
    if (IsNoScript(answer) && !body_sent_) {
      return SendGeneral(step, true);
    }
    const redisReply* decoded = r.Get(0);
    replies_ = insert_ ? CfInsertReplies(answer, decoded, members_)
                       : CfCheckReplies(answer, decoded, members_);
    // The fields after the results: the filter as it is now.
    if (decoded != nullptr && decoded->type == REDIS_REPLY_ARRAY && decoded->elements > 0) {
      if (auto meta = CfMetaFromFields(decoded->element[decoded->elements - 1])) {
        cache_->Put(key_, std::move(meta));
      }
    }
    Finish(step);
  }

  // --- the fast insert ----------------------------------------------------------------------

  void SendFastInsert(PlanStep* step, bool body) {
    phase_ = Phase::kFastInsert;
    body_sent_ = body;
    const CfMeta& m = *meta_;
    const size_t n = items_.size();
    const std::string width = "u" + std::to_string(8 * m.bucket_size);
    std::string& out = step->requests;
    protocol::AppendArrayHeader(
        &out, static_cast<int64_t>(10 + 2 * members_.size() + n + 6 * n * m.num_filters));
    protocol::AppendBulk(&out, body ? "EVAL" : "EVALSHA");
    protocol::AppendBulk(&out, body ? lua::kCfInsertFast.body : lua::kCfInsertFast.sha1);
    protocol::AppendBulk(&out, "1");
    protocol::AppendBulk(&out, key_);
    protocol::AppendBulk(&out, CfMarkerKey(prefix_, key_));
    protocol::AppendBulk(&out, prefix_);
    protocol::AppendBulk(&out, m.id);
    protocol::AppendBulk(&out, U64(m.generation));
    protocol::AppendBulk(&out, U64(n));
    protocol::AppendBulk(&out, U64(members_.size()));
    for (const PlanMember& member : members_) {
      protocol::AppendBulk(&out, member.nx ? "1" : "0");
      protocol::AppendBulk(&out, U64(member.count));
    }
    for (const ItemPlace& p : places_) protocol::AppendBulk(&out, U64(p.fp()));
    for (uint64_t i = 0; i < m.num_filters; ++i) AppendGets(&out, i, width);
    step->replies = 1;
  }

  // BITFIELD_RO's GET operations of both buckets of every item in sub-filter i.
  void AppendGets(std::string* out, uint64_t i, std::string_view width) const {
    const uint64_t n = meta_->Buckets(i);
    for (const ItemPlace& p : places_) {
      for (int which = 1; which <= 2; ++which) {
        protocol::AppendBulk(out, "GET");
        protocol::AppendBulk(out, width);
        protocol::AppendBulk(out, U64(p.Bit(which, n, meta_->bucket_size)));
      }
    }
  }

  void OnFastInsert(StepReplies& r, PlanStep* step) {
    const std::string_view answer = r.size() == 1 ? r.Frame(0) : std::string_view();
    if (IsNoScript(answer) && !body_sent_) {
      return SendFastInsert(step, true);
    }
    const redisReply* a = r.Get(0);
    if (a == nullptr || a->type != REDIS_REPLY_ARRAY || a->elements != members_.size()) {
      // STALE, SLOW, or what the general script answers better (an error, WRONGTYPE, ...).
      return Fallback(step);
    }
    std::vector<std::string> replies(members_.size());
    for (size_t m = 0; m < members_.size(); ++m) {
      const redisReply* e = a->element[m];
      if (e->type != REDIS_REPLY_ARRAY || e->elements != members_[m].count) return Fallback(step);
      if (members_[m].multi) protocol::AppendArrayHeader(&replies[m], e->elements);
      for (size_t k = 0; k < e->elements; ++k) {
        if (e->element[k]->type != REDIS_REPLY_INTEGER) return Fallback(step);
        protocol::AppendInteger(&replies[m], e->element[k]->integer);
      }
    }
    replies_ = std::move(replies);
    Finish(step);
  }

  // --- the direct reads ---------------------------------------------------------------------

  void SendDirectReads(PlanStep* step) {
    phase_ = Phase::kDirectReads;
    const CfMeta& m = *meta_;
    const std::string width = "u" + std::to_string(8 * m.bucket_size);
    const bool ro = config_->upstream != protocol::UpstreamKind::kShardingProxy;
    std::string& out = step->requests;
    // Newest sub-filter first: a fingerprint only ever moves to an older one.
    for (uint64_t i = m.num_filters; i-- > 0;) {
      const std::string key = m.DataKey(prefix_, i);
      protocol::AppendCommand(&out, std::initializer_list<std::string_view>{"STRLEN", key});
      protocol::AppendArrayHeader(&out, static_cast<int64_t>(2 + 6 * places_.size()));
      protocol::AppendBulk(&out, ro ? "BITFIELD_RO" : "BITFIELD");
      protocol::AppendBulk(&out, key);
      AppendGets(&out, i, width);
    }
    protocol::AppendCommand(
        &out, std::initializer_list<std::string_view>{"HMGET", key_, "cf", "id", "g"});
    step->replies = 2 * m.num_filters + 1;
  }

  // The copies of fp in bucket value v of `bs` bytes.
  static bool Holds(int64_t v, uint8_t fp, uint64_t bs) {
    for (uint64_t j = 0; j < bs; ++j, v >>= 8) {
      if ((v & 0xff) == fp) return true;
    }
    return false;
  }

  bool StillTheFilter(StepReplies& r, size_t at) {
    const redisReply* h = r.Get(at);
    return h != nullptr && h->type == REDIS_REPLY_ARRAY && h->elements == 3 &&
           Str(h->element[0]) == "1" && Str(h->element[1]) == meta_->id &&
           Str(h->element[2]) == U64(meta_->generation);
  }

  void OnDirectReads(StepReplies& r, PlanStep* step) {
    const CfMeta& m = *meta_;
    const size_t f = m.num_filters;
    if (r.size() != 2 * f + 1 || !StillTheFilter(r, 2 * f)) return Fallback(step);
    std::vector<uint8_t> found(places_.size(), 0);
    for (uint64_t q = 0; q < f; ++q) {
      const uint64_t i = f - 1 - q;
      int64_t len = 0;
      const std::vector<int64_t>* v = r.Ints(2 * q + 1);
      if (!FrameInt(r.Frame(2 * q), &len) ||
          static_cast<uint64_t>(len) != m.Buckets(i) * m.bucket_size || v == nullptr ||
          v->size() != 2 * places_.size()) {
        return Fallback(step);
      }
      for (size_t k = 0; k < places_.size(); ++k) {
        const uint8_t fp = places_[k].fp();
        found[k] |=
            Holds((*v)[2 * k], fp, m.bucket_size) || Holds((*v)[2 * k + 1], fp, m.bucket_size);
      }
    }
    replies_.assign(members_.size(), std::string());
    for (size_t mm = 0; mm < members_.size(); ++mm) {
      const PlanMember& member = members_[mm];
      if (member.multi) protocol::AppendArrayHeader(&replies_[mm], member.count);
      for (size_t k = member.start; k < member.start + member.count; ++k) {
        protocol::AppendInteger(&replies_[mm], found[k]);
      }
    }
    Finish(step);
  }

  const bool insert_;
  std::string key_;
  std::string prefix_;
  std::vector<std::string> items_;
  std::vector<ItemPlace> places_;
  std::vector<PlanMember> members_;
  CfCache* cache_;
  const CfConfig* config_;
  std::shared_ptr<CfMeta> meta_;
  Phase phase_ = Phase::kGeneral;
  bool body_sent_ = false;
  std::vector<std::string> replies_;
};

}  // namespace

std::unique_ptr<Plan> MakeCfInsertBatchPlan(std::string key, std::vector<std::string> items,
                                            std::vector<PlanMember> members, CfCache* cache,
                                            const CfConfig* config) {
  return std::make_unique<CfBatchPlan>(true, std::move(key), std::move(items), std::move(members),
                                       cache, config);
}

std::unique_ptr<Plan> MakeCfCheckBatchPlan(std::string key, std::vector<std::string> items,
                                           std::vector<PlanMember> members, CfCache* cache,
                                           const CfConfig* config) {
  return std::make_unique<CfBatchPlan>(false, std::move(key), std::move(items), std::move(members),
                                       cache, config);
}

}  // namespace bloomproxy::filters
