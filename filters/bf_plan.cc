#include "filters/bf_plan.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "filters/bloom.h"
#include "filters/key_layout.h"
#include "filters/plan_requests.h"
#include "protocol/encoder.h"

namespace bloomproxy::filters {
namespace {

constexpr std::string_view kWrongType =
    "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
constexpr std::string_view kNotFound = "-ERR not found\r\n";
constexpr std::string_view kItemExists = "-ERR item exists\r\n";
constexpr std::string_view kBadData = "-ERR received bad data\r\n";
constexpr std::string_view kNoLink = "-ERR invalid offset - no link found\r\n";
constexpr std::string_view kFullError = "-ERR non scaling filter is full\r\n";
constexpr std::string_view kTooBig = "-ERR invalid chunk - Too big for current filter\r\n";
constexpr std::string_view kOldDump =
    "-ERR bloomproxy cannot load dumps of filters with 32-bit hashes (RedisBloom 1.x)\r\n";

// ---------------------------------------------------------------------------------------------
// BF plans.
//
// Every round on a known filter starts with a validation reply, HMGET name bloomproxy id l<n>:
// the name must still be a filter with the same id, and no link beyond the ones known may
// exist. Otherwise the cached metadata is dropped and the command starts over from the
// metadata (writes made in the stale round went to keys of the old id, which are removed).
//
// Every other reply of a step is checked against what its request must answer (ReplyCheck)
// before any is used: a data key missing, of another type or overwritten, a count that is no
// integer, a reply of the wrong type or length, or an error in the middle of the pipeline ends
// the command with an error reply, never with an answer made of it.

enum class KeyState {
  kMissing,    // no such key
  kOtherType,  // a key that is not a filter
  kFilter,     // the filter as cached
  kNewLink,    // the same filter, with a link the cache does not know yet
  kReplaced,   // a filter recreated under the same name (another id)
  kError,      // the reply makes no sense, or is an error: the command ends with it
};

// The size of shard `shard` of link `link`: every shard is created at this size, and never
// changes size afterwards.
uint64_t ShardSize(const FilterMeta& meta, size_t link, uint64_t shard) {
  return std::min(meta.shard_bytes, meta.links[link].bytes - shard * meta.shard_bytes);
}

class BfPlan : public Plan {
 public:
  BfPlan(const BfRequest& request, FilterCache* cache, const BfConfig* config,
         std::string deferred_error, std::vector<BfMember> members = {})
      : req_(request),
        name_(request.key),
        deferred_error_(std::move(deferred_error)),
        cache_(cache),
        config_(config),
        members_(std::move(members)) {
    if (members_.empty()) {
      const bool multi = request.command == BfCommand::kMAdd ||
                         request.command == BfCommand::kInsert ||
                         request.command == BfCommand::kMExists;
      members_.push_back({0, request.items.size(), multi});
    }
    // The request's views point into the client's input buffer, which changes while the plan
    // runs: keep copies.
    items_.reserve(request.items.size());
    for (std::string_view item : request.items) items_.emplace_back(item);
    data_.assign(request.data);
    req_.items.clear();
    req_.data = {};
    req_.key = name_;
  }

  void Start(PlanStep* step) override {
    if (!deferred_error_.empty()) return Fetch(step);
    meta_ = cache_->Find(name_);
    const bool creating = req_.command == BfCommand::kReserve ||
                          (req_.command == BfCommand::kLoadChunk && req_.iterator == 1);
    if (!meta_ || creating) return Fetch(step);
    Main(step);
  }

  const std::vector<std::string>& MemberReplies() const override { return member_replies_; }

  void OnReplies(StepReplies& r, PlanStep* step) override {
    // Replies of trailing requests (cleanup, counts) sent with the last step come first.
    r.Skip(skip_);
    skip_ = 0;
    switch (phase_) {
      case Phase::kFetch:
        return OnFetch(r, step);
      case Phase::kCounts:
        return OnCounts(r, step);
      case Phase::kCreate:
        return OnCreate(r, step);
      case Phase::kCreateLink:
        return OnCreateLink(r, step);
      case Phase::kMain:
        return OnMain(r, step);
    }
  }

 private:
  enum class Phase { kFetch, kCounts, kCreate, kCreateLink, kMain };
  enum class AddStage { kCheck, kSet };

  bool Creates() const {
    switch (req_.command) {
      case BfCommand::kReserve:
      case BfCommand::kAdd:
      case BfCommand::kMAdd:
        return true;
      case BfCommand::kInsert:
        return !req_.nocreate;
      case BfCommand::kLoadChunk:
        return req_.iterator == 1;
      default:
        return false;
    }
  }
  bool NeedsCounts() const {
    switch (req_.command) {
      case BfCommand::kExists:
      case BfCommand::kMExists:
      case BfCommand::kLoadChunk:
        return false;
      case BfCommand::kScanDump:
        return req_.iterator == 0;
      default:
        return true;
    }
  }
  bool Adding() const {
    return req_.command == BfCommand::kAdd || req_.command == BfCommand::kMAdd ||
           req_.command == BfCommand::kInsert;
  }

  // Every step starts with the trailing requests of the previous one; their replies are
  // skipped.
  Requests& BeginStep(PlanStep* step) {
    trailing_.MoveTo(step);
    skip_ = step->replies;
    checks_.clear();
    return next_requests_;
  }
  void EndStep(PlanStep* step) { next_requests_.MoveTo(step, &checks_); }

  void Finish(PlanStep* step, std::string reply) {
    step->done = true;
    step->reply = std::move(reply);
    trailing_.MoveTo(step);
  }

  // Every reply of the step as its request must answer it; false and *error (the reply for
  // the client) at the first that is not.
  bool CheckReplies(StepReplies& r, std::string* error) const {
    for (size_t i = 0; i < checks_.size(); ++i) {
      if (!CheckReply(r, i, checks_[i], error)) return false;
    }
    return true;
  }

  // The metadata is read again from the name (it changed, or the cache was stale).
  void Restart(PlanStep* step) {
    cache_->Erase(name_);
    meta_ = nullptr;
    if (++restarts_ > kMaxRestarts) return Finish(step, std::string(kBusy));
    Fetch(step);
  }

  // The reply for a key that is missing or of another type; false when the command creates
  // the filter instead.
  bool ReplyForAbsent(KeyState state, PlanStep* step) {
    if (req_.command == BfCommand::kExists || req_.command == BfCommand::kMExists) {
      // BF.EXISTS and BF.MEXISTS answer 0 for a missing key and for another type.
      results_.assign(items_.size(), kRes0);
      FinishMembers(step);
      return true;
    }
    if (state == KeyState::kOtherType) {
      Finish(step, std::string(kWrongType));
      return true;
    }
    if (req_.command == BfCommand::kCard) {
      Finish(step, Integer(0));
      return true;
    }
    if (!Creates()) {
      Finish(step, std::string(kNotFound));
      return true;
    }
    return false;
  }

  // --- metadata ---------------------------------------------------------------------------

  void Fetch(PlanStep* step) {
    phase_ = Phase::kFetch;
    Requests& req = BeginStep(step);
    req.Add({"TYPE", name_});
    req.Add({"HGETALL", name_});
    EndStep(step);
  }

  // What the name holds, from TYPE and HGETALL. A hash with the filter marker whose fields do
  // not parse is damaged: kError, not "another type" (BF.EXISTS would answer 0 for it).
  KeyState Classify(StepReplies& r, std::shared_ptr<FilterMeta>* meta, std::string* error) {
    if (r.size() < checks_.size()) {
      *error = Unexpected(checks_[r.size()], "the reply is missing");
      return KeyState::kError;
    }
    if (r.IsErrorReply(0)) {
      *error = UpstreamError(r.Frame(0), checks_[0]);
      return KeyState::kError;
    }
    const redisReply* type = r.Get(0);
    if (type == nullptr || (type->type != REDIS_REPLY_STATUS && type->type != REDIS_REPLY_STRING)) {
      *error = Unexpected(checks_[0], "expected a type name, got " + Described(type, r.Frame(0)));
      return KeyState::kError;
    }
    const std::string_view t = Str(type);
    if (t == "none") return KeyState::kMissing;
    if (t != "hash") return KeyState::kOtherType;
    if (r.IsErrorReply(1)) {
      *error = UpstreamError(r.Frame(1), checks_[1]);
      return KeyState::kError;
    }
    const redisReply* hash = r.Get(1);
    if (hash == nullptr || hash->type != REDIS_REPLY_ARRAY || hash->elements % 2 != 0) {
      *error = Unexpected(
          checks_[1], "expected an array of field-value pairs, got " + Described(hash, r.Frame(1)));
      return KeyState::kError;
    }
    std::vector<std::pair<std::string_view, std::string_view>> fields;
    fields.reserve(hash->elements / 2);
    for (size_t i = 0; i < hash->elements; i += 2) {
      if (hash->element[i]->type != REDIS_REPLY_STRING ||
          hash->element[i + 1]->type != REDIS_REPLY_STRING) {
        *error = Unexpected(checks_[1], "expected fields and values as bulk strings");
        return KeyState::kError;
      }
      fields.emplace_back(Str(hash->element[i]), Str(hash->element[i + 1]));
    }
    std::string problem;
    switch (MetaFromFields(name_, fields, /*strict=*/true, meta, &problem)) {
      case MetaStatus::kFilter:
        return KeyState::kFilter;
      case MetaStatus::kNotFilter:
        return KeyState::kOtherType;
      case MetaStatus::kDamaged:
        break;
    }
    *error = Unexpected(checks_[1], problem);
    return KeyState::kError;
  }

  void OnFetch(StepReplies& r, PlanStep* step) {
    std::shared_ptr<FilterMeta> meta;
    std::string error;
    const KeyState state = Classify(r, &meta, &error);
    if (state != KeyState::kFilter) {
      cache_->Erase(name_);
      meta_ = nullptr;
      if (state == KeyState::kError) return Finish(step, error);
      if (ReplyForAbsent(state, step)) return;
      if (req_.command == BfCommand::kLoadChunk) {
        // The header is looked at once the key is known to be free, as RedisBloom does.
        if (!DecodeDumpHeader(data_, &header_)) return Finish(step, std::string(kBadData));
        // Dumps of very old RedisBloom filters (32-bit hash, power-of-two modulus) would need
        // other bit maths.
        bool old_format = (header_.options & kOptHash64) == 0;
        for (const DumpLink& l : header_.links) old_format = old_format || l.params.n2 != 0;
        if (old_format) return Finish(step, std::string(kOldDump));
        // A scaling chain whose new links would take no items (RedisBloom never writes one:
        // BF.RESERVE refuses a capacity or expansion of 0) would add links for ever.
        if ((header_.options & kOptNoScaling) == 0 &&
            (header_.expansion == 0 || header_.links[0].params.capacity == 0)) {
          return Finish(step, std::string(kBadData));
        }
      }
      return Create(step);
    }
    if (req_.command == BfCommand::kReserve) return Finish(step, std::string(kItemExists));
    if (req_.command == BfCommand::kLoadChunk && req_.iterator == 1) {
      return Finish(step, std::string(kBadData));
    }
    meta_ = meta;
    cache_->Put(name_, meta_);
    if (!deferred_error_.empty()) return Finish(step, deferred_error_);
    if (NeedsCounts()) return FetchCounts(step);
    Main(step);
  }

  void FetchCounts(PlanStep* step) {
    phase_ = Phase::kCounts;
    Requests& req = BeginStep(step);
    AddValidation(&req);
    AddCounts(&req);
    EndStep(step);
  }

  // MGET of the count keys: each must hold an integer >= 0 (nil is a count key missing or of
  // another type: the filter is damaged, and 0 would be a made-up count).
  void AddCounts(Requests* req) const {
    std::vector<std::string> args = {"MGET"};
    for (size_t l = 0; l < meta_->links.size(); ++l) args.push_back(meta_->CountKey(l));
    req->Add(args);
    ReplyCheck& c = req->Last();
    c.kind = ReplyCheck::Kind::kCounts;
    c.role = ReplyCheck::Role::kCounts;
    c.n = meta_->links.size();
  }

  // The MGET reply, already checked (kCounts).
  void ApplyCounts(const redisReply* r) {
    for (size_t l = 0; l < meta_->links.size(); ++l) {
      int64_t v = 0;
      ParseCount(Str(r->element[l]), &v);
      meta_->counts[l] = v;
    }
    const size_t last = meta_->links.size() - 1;
    link_full_ = meta_->counts[last] >= static_cast<int64_t>(meta_->links[last].capacity);
  }

  void OnCounts(StepReplies& r, PlanStep* step) {
    std::string error;
    const KeyState state = Validate(r, &error);
    if (state == KeyState::kError) return Finish(step, error);
    if (state != KeyState::kFilter) return Restart(step);
    if (!CheckReplies(r, &error)) return Finish(step, error);
    ApplyCounts(r.Get(kValidationReplies));
    Main(step);
  }

  // Validation at the head of every round on a known filter: the name must still be this
  // filter (same id), and no link beyond the known ones may exist yet. One HMGET says it all:
  // WRONGTYPE for another type, nils for a missing key (or a hash that is no filter: the
  // reload that follows tells them apart with TYPE).
  static constexpr size_t kValidationReplies = 1;
  void AddValidation(Requests* req) {
    req->Add({"HMGET", name_, kMarkerField, "id", "l" + std::to_string(meta_->links.size())});
  }
  KeyState Validate(StepReplies& r, std::string* error) {
    const ReplyCheck& c = checks_[0];
    if (r.empty()) {
      *error = Unexpected(c, "the reply is missing");
      return KeyState::kError;
    }
    const std::string_view f = r.Frame(0);
    if (r.IsErrorReply(0)) {
      if (f.substr(0, 10) == "-WRONGTYPE") return KeyState::kOtherType;
      *error = UpstreamError(f, c);
      return KeyState::kError;
    }
    const redisReply* hmget = r.Get(0);
    if (hmget == nullptr || hmget->type != REDIS_REPLY_ARRAY || hmget->elements != 3) {
      *error = Unexpected(c, "expected an array of 3, got " + Described(hmget, f));
      return KeyState::kError;
    }
    for (size_t i = 0; i < 3; ++i) {
      const int t = hmget->element[i]->type;
      if (t != REDIS_REPLY_NIL && t != REDIS_REPLY_STRING) {
        *error = Unexpected(c, "expected bulk strings or nils, got other values");
        return KeyState::kError;
      }
    }
    if (IsNil(hmget->element[0])) return KeyState::kMissing;
    if (Str(hmget->element[0]) != kMarkerValue) return KeyState::kOtherType;
    if (Str(hmget->element[1]) != meta_->id) return KeyState::kReplaced;
    if (!IsNil(hmget->element[2])) return KeyState::kNewLink;
    return KeyState::kFilter;
  }

  // --- creation ---------------------------------------------------------------------------

  // A new filter: its bits and counts first, then its metadata, published with RENAMENX so
  // that exactly one creator wins, whatever the name holds.
  void Create(PlanStep* step) {
    phase_ = Phase::kCreate;
    auto meta = std::make_shared<FilterMeta>();
    meta->id = NewId();
    meta->prefix = DataKeyPrefix(name_);
    meta->shard_bytes = config_->max_shard_bytes;
    if (req_.command == BfCommand::kLoadChunk) {
      meta->options = header_.options;
      meta->expansion = header_.expansion;
      meta->error = header_.links[0].params.error;
      meta->capacity = header_.links[0].params.capacity;
      for (const DumpLink& l : header_.links) {
        meta->links.push_back(l.params);
        meta->counts.push_back(static_cast<int64_t>(l.items));
      }
      // The chain's own error rate: the first link of a scaling chain has half of it.
      if (!meta->nonscaling()) meta->error *= 2;
    } else {
      meta->error = req_.error_rate;
      meta->capacity = req_.capacity;
      meta->expansion = req_.nonscaling ? 0 : req_.expansion;
      meta->options = req_.nonscaling ? kOptionsNonScaling : kOptionsScaling;
      meta->links.push_back(
          ChainLink(meta->error, meta->capacity, meta->expansion, req_.nonscaling, 0));
      meta->counts.push_back(0);
    }
    Requests& req = BeginStep(step);
    for (size_t l = 0; l < meta->links.size(); ++l) {
      AddLinkKeys(&req, *meta, l, meta->counts[l], /*shared=*/false);
    }
    const std::string tmp = meta->prefix + ":bf:" + meta->id + ":new";
    std::vector<std::string> hset = {"HSET",
                                     tmp,
                                     std::string(kMarkerField),
                                     std::string(kMarkerValue),
                                     "id",
                                     meta->id,
                                     "error",
                                     DoubleBits(meta->error),
                                     "capacity",
                                     U64(meta->capacity),
                                     "expansion",
                                     U64(meta->expansion),
                                     "options",
                                     U64(meta->options),
                                     "shard",
                                     U64(meta->shard_bytes)};
    for (size_t l = 0; l < meta->links.size(); ++l) {
      hset.push_back("l" + std::to_string(l));
      hset.push_back(EncodeLink(meta->links[l]));
    }
    req.Add(hset);
    req.Last().kind = ReplyCheck::Kind::kInteger;
    req.Add({"RENAMENX", tmp, name_});
    req.Last().kind = ReplyCheck::Kind::kInteger;
    EndStep(step);
    pending_meta_ = meta;
  }

  // A link's shard keys, created at full size in one step each, and its count key.
  // SETRANGE of the last byte on a missing key makes Redis allocate exactly the string's size,
  // zeroed, without the zeros crossing the network (SETBIT and BITFIELD would grow the string
  // greedily instead). Keys of a new filter carry an id nobody else knows yet, so they are
  // written directly; a new link of a shared filter may be created by several proxies at once,
  // so its shards are built under a private name and moved in place with RENAMENX (the first
  // wins; a later one must not overwrite bits already set).
  static void AddLinkKeys(Requests* req, const FilterMeta& meta, size_t link, int64_t count,
                          bool shared) {
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
  }

  void OnCreate(StepReplies& r, PlanStep* step) {
    std::shared_ptr<FilterMeta> meta = std::move(pending_meta_);
    std::string error;
    int64_t renamed = -1;
    if (CheckReplies(r, &error)) {
      FrameInt(r.Frame(checks_.size() - 1), &renamed);
      if (renamed != 0 && renamed != 1) {
        error = Unexpected(checks_.back(),
                           "expected 0 or 1, got the integer " + std::to_string(renamed));
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
    // The name's marker (key_layout.h), once the name is this filter's: TYPE then knows it
    // without reading the hash.
    trailing_.Add({"SET", MarkerKey(meta_->prefix, name_), "1"});
    if (req_.command == BfCommand::kReserve || req_.command == BfCommand::kLoadChunk) {
      return Finish(step, "+OK\r\n");
    }
    Main(step);
  }

  // A new link when the newest one is full. Its keys come first, then the metadata field that
  // names it: HSETNX makes concurrent creators agree (a link's parameters are the same for
  // all of them). The name's TTL, if any, is given to the new keys.
  void CreateLink(PlanStep* step) {
    phase_ = Phase::kCreateLink;
    const size_t l = meta_->links.size();
    auto next = std::make_shared<FilterMeta>(*meta_);
    next->links.push_back(ChainLink(meta_->error, meta_->capacity, meta_->expansion, false, l));
    next->counts.push_back(0);
    Requests& req = BeginStep(step);
    AddLinkKeys(&req, *next, l, 0, /*shared=*/true);
    req.Add({"HSETNX", name_, "l" + std::to_string(l), EncodeLink(next->links[l])});
    req.Last().kind = ReplyCheck::Kind::kInteger;
    req.Add({"GET", next->CountKey(l)});
    req.Last().kind = ReplyCheck::Kind::kCount;
    req.Last().role = ReplyCheck::Role::kCount;
    req.Last().link = static_cast<uint32_t>(l);
    req.Add({"PEXPIRETIME", name_});
    req.Last().kind = ReplyCheck::Kind::kInteger;
    EndStep(step);
    pending_meta_ = next;
  }

  void OnCreateLink(StepReplies& r, PlanStep* step) {
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

  // --- the command itself -----------------------------------------------------------------

  void Main(PlanStep* step) {
    phase_ = Phase::kMain;
    switch (req_.command) {
      case BfCommand::kAdd:
      case BfCommand::kMAdd:
      case BfCommand::kInsert:
        return AddRound(step);
      case BfCommand::kExists:
      case BfCommand::kMExists:
        return ExistsRound(step);
      case BfCommand::kCard:
      case BfCommand::kInfo:
        return CountsRound(step);
      case BfCommand::kScanDump:
        return req_.iterator == 0 ? CountsRound(step) : DumpRound(step);
      case BfCommand::kLoadChunk:
        return LoadRound(step);
      case BfCommand::kReserve:
        return Finish(step, std::string(kItemExists));
    }
  }

  void OnMain(StepReplies& r, PlanStep* step) {
    std::string error;
    const KeyState state = Validate(r, &error);
    const bool adding = Adding();
    if (state == KeyState::kError) {
      if (adding) ReleaseAfterError(r);
      return Finish(step, error);
    }
    if (state == KeyState::kNewLink && adding && add_stage_ == AddStage::kSet) {
      // Another proxy added a link: this round's bits went into a link that is now older,
      // which keeps the items findable. Count them there and reload before the next round.
      reload_ = true;
    } else if (state != KeyState::kFilter) {
      if (adding && add_stage_ == AddStage::kCheck && state == KeyState::kNewLink) {
        Release(reserve_);  // the same filter: its count must not keep this round's places
      }
      if (round_wrote_ && state != KeyState::kNewLink) {
        // The name was deleted or recreated: the bits this round set belong to no filter.
        std::vector<std::string> args = {"UNLINK"};
        for (uint64_t shard : set_ops_.shards) {
          args.push_back(meta_->BitsKey(meta_->links.size() - 1, shard));
        }
        trailing_.Add(args);
      }
      round_wrote_ = false;
      return Restart(step);
    }
    if (!CheckReplies(r, &error)) {
      if (adding) ReleaseAfterError(r);
      return Finish(step, error);
    }
    switch (req_.command) {
      case BfCommand::kAdd:
      case BfCommand::kMAdd:
      case BfCommand::kInsert:
        return OnAddRound(r, step);
      case BfCommand::kExists:
      case BfCommand::kMExists:
        return OnExistsRound(r, step);
      case BfCommand::kScanDump:
        if (req_.iterator != 0) return OnDumpRound(r, step);
        return OnCountsRound(r, step);
      case BfCommand::kCard:
      case BfCommand::kInfo:
        return OnCountsRound(r, step);
      case BfCommand::kLoadChunk:
        return Finish(step, "+OK\r\n");
      case BfCommand::kReserve:
        return Finish(step, std::string(kItemExists));
    }
  }

  // An add round that ends with an error gives back the places it reserved. A count key that
  // was missing (STRLEN 0, and INCRBY answered just this round's reservation) was created by
  // the INCRBY: it is removed again, so the filter stays visibly damaged instead of going on
  // with a count that restarted from nothing.
  void ReleaseAfterError(StepReplies& r) {
    if (add_stage_ == AddStage::kSet) {
      Release(placed_);
      return;
    }
    int64_t after = 0;
    if (incr_at_ >= r.size() || !FrameInt(r.Frame(incr_at_), &after)) return;  // nothing reserved
    if (after == reserve_ && count_len_at_ < r.size() && r.Frame(count_len_at_) == ":0\r\n") {
      trailing_.Add({"UNLINK", meta_->CountKey(meta_->links.size() - 1)});
      return;
    }
    Release(reserve_);
  }

  // Bit offsets of item `item` in link `link`: appends (shard, offset in the shard).
  void ItemOffsets(size_t item, size_t link, std::vector<std::pair<uint64_t, uint64_t>>* out) {
    if (hashes_.size() != items_.size()) {
      hashes_.resize(items_.size());
      hashed_.assign(items_.size(), false);
    }
    if (!hashed_[item]) {
      hashes_[item] = HashItem(items_[item]);
      hashed_[item] = true;
    }
    const LinkParams& p = meta_->links[link];
    const uint64_t shard_bits = meta_->shard_bytes * 8;
    for (uint32_t i = 0; i < p.k; ++i) {
      const uint64_t offset = RedisBitOffset(BitPosition(hashes_[item], i, p.bits));
      out->emplace_back(offset / shard_bits, offset % shard_bits);
    }
  }

  // Where each item's bits are in the replies of a set of BITFIELD commands.
  struct BitOps {
    std::vector<uint64_t> shards;   // the shard of each command
    std::vector<uint32_t> ops;      // the number of ops of each command
    uint32_t k = 0;                 // ops per item
    std::vector<uint32_t> command;  // per op, item-major: the command holding it
    std::vector<uint32_t> index;    // per op: its position in that command
    std::vector<uint64_t> offsets;  // per op: its bit offset in its shard
    size_t first = 0;               // the step's reply index of the first command
  };

  // The ops of one BITFIELD (SET u1 <off> 1 per bit) or BITFIELD_RO (GET u1 <off>) per shard
  // of `link` that `items` touch, in item order.
  void PlanBits(size_t link, const std::vector<size_t>& items, BitOps* ops) {
    std::vector<std::pair<uint64_t, uint64_t>> offs;
    ops->shards.clear();
    ops->ops.clear();
    ops->k = meta_->links[link].k;
    ops->command.clear();
    ops->index.clear();
    ops->offsets.clear();
    ops->command.reserve(items.size() * ops->k);
    ops->index.reserve(items.size() * ops->k);
    ops->offsets.reserve(items.size() * ops->k);
    for (size_t j = 0; j < items.size(); ++j) {
      offs.clear();
      ItemOffsets(items[j], link, &offs);
      for (const auto& [shard, off] : offs) {
        size_t c = 0;
        while (c < ops->shards.size() && ops->shards[c] != shard) ++c;
        if (c == ops->shards.size()) {
          ops->shards.push_back(shard);
          ops->ops.push_back(0);
        }
        ops->command.push_back(static_cast<uint32_t>(c));
        ops->index.push_back(ops->ops[c]++);
        ops->offsets.push_back(off);
      }
    }
  }

  // STRLEN of shards of `link`: each must have the size it was created with. A shard deleted
  // or overwritten would otherwise read as zeros (BITFIELD_RO of a missing key), and BITFIELD
  // would create it anew, small, answering "new" for items the filter had.
  void AddShardLengths(Requests* req, size_t link, const std::vector<uint64_t>& shards) const {
    for (uint64_t s : shards) {
      req->Add({"STRLEN", meta_->BitsKey(link, s)});
      ReplyCheck& c = req->Last();
      c.kind = ReplyCheck::Kind::kLength;
      c.role = ReplyCheck::Role::kShard;
      c.link = static_cast<uint32_t>(link);
      c.shard = s;
      c.n = ShardSize(*meta_, link, s);
    }
  }

  // The BITFIELD (set) or BITFIELD_RO commands of `ops`; each must answer an array of its
  // ops' bits.
  void AddBitfields(Requests* req, size_t link, bool set, BitOps* ops) {
    // Encoded straight to RESP, one append per op: a batch may carry thousands of ops.
    ops->first = req->count();
    std::string out;
    // "$3\r\nSET\r\n$2\r\nu1\r\n$<d>\r\n<offset>\r\n$1\r\n1\r\n"; an offset in a shard has
    // at most 10 digits (shards are under 512 MB).
    const std::string_view head = set ? "$3\r\nSET\r\n$2\r\nu1\r\n$" : "$3\r\nGET\r\n$2\r\nu1\r\n$";
    char op[64];
    std::memcpy(op, head.data(), head.size());
    for (size_t c = 0; c < ops->shards.size(); ++c) {
      out.clear();
      out.reserve(64 + ops->ops[c] * 40);
      protocol::AppendArrayHeader(&out, 2 + static_cast<int64_t>(ops->ops[c]) * (set ? 4 : 3));
      protocol::AppendBulk(&out, set ? "BITFIELD" : "BITFIELD_RO");
      protocol::AppendBulk(&out, meta_->BitsKey(link, ops->shards[c]));
      for (size_t x = 0; x < ops->offsets.size(); ++x) {
        if (ops->command[x] != c) continue;
        char digits[24];
        const auto res = std::to_chars(digits, digits + sizeof(digits), ops->offsets[x]);
        const size_t n = static_cast<size_t>(res.ptr - digits);
        char* p = op + head.size();
        if (n >= 10) *p++ = static_cast<char>('0' + n / 10);
        *p++ = static_cast<char>('0' + n % 10);
        *p++ = '\r';
        *p++ = '\n';
        std::memcpy(p, digits, n);
        p += n;
        *p++ = '\r';
        *p++ = '\n';
        if (set) {
          std::memcpy(p, "$1\r\n1\r\n", 7);
          p += 7;
        }
        out.append(op, static_cast<size_t>(p - op));
      }
      req->AddEncoded(out, set ? "BITFIELD" : "BITFIELD_RO");
      ReplyCheck& check = req->Last();
      check.kind = ReplyCheck::Kind::kBits;
      check.role = ReplyCheck::Role::kShard;
      check.link = static_cast<uint32_t>(link);
      check.shard = ops->shards[c];
      check.n = ops->ops[c];
    }
  }

  // STRLEN of the shards `items` touch in `link`, then their BITFIELD commands.
  void AddBitReads(Requests* req, size_t link, const std::vector<size_t>& items, BitOps* ops) {
    PlanBits(link, items, ops);
    AddShardLengths(req, link, ops->shards);
    AddBitfields(req, link, /*set=*/false, ops);
  }

  // True when every bit of the j-th item reads 1 (GET's value, or SET's old value). The
  // replies were checked (kBits).
  static bool AllOnes(const BitOps& ops, size_t j, StepReplies& replies) {
    for (size_t x = j * ops.k; x < (j + 1) * ops.k && x < ops.command.size(); ++x) {
      const std::vector<int64_t>* values = replies.Ints(ops.first + ops.command[x]);
      const size_t op = ops.index[x];
      if (values == nullptr || op >= values->size() || (*values)[op] != 1) return false;
    }
    return true;
  }

  // ADD / MADD / INSERT, in rounds of two steps.
  //
  // The check step reserves room in the newest link: INCRBY of its count by the number of
  // items the proxy expects to fit. The new count says how many of them really fit, whatever
  // other proxies are adding at the same time, so a link never takes more than its capacity
  // (which keeps the chain's error bound). When older links exist, the step also reads the
  // items' bits there: RedisBloom adds nothing for an item an older link has. It also checks
  // (STRLEN) that the count key and the shards the set step will write are there, at their
  // size, before anything is written to them.
  // The set step sets the bits of the items that fit, one BITFIELD per shard of the newest
  // link: the old values it returns say, item by item and in order, whether each is new,
  // atomically. The reservation left unused (items that were not new) is given back with
  // DECRBY. A full link gets a successor before the next round.
  void AddRound(PlanStep* step) {
    round_wrote_ = false;
    if (reload_) {
      reload_ = false;
      meta_ = nullptr;
      cache_->Erase(name_);
      return Fetch(step);
    }
    if (next_ >= items_.size()) return FinishMembers(step);
    const size_t last = meta_->links.size() - 1;
    const int64_t room = static_cast<int64_t>(meta_->links[last].capacity) - meta_->counts[last];
    if (room <= 0 && link_full_ && !meta_->nonscaling()) return CreateLink(step);
    const size_t remaining = items_.size() - next_;
    reserve_ = room > 0 ? std::min<int64_t>(room, static_cast<int64_t>(remaining)) : 0;
    window_.clear();
    const size_t want = reserve_ > 0 ? static_cast<size_t>(reserve_) : 1;
    for (size_t i = next_; i < items_.size() && window_.size() < want; ++i) window_.push_back(i);
    found_.assign(window_.size(), false);
    // A full non-scaling filter still answers 0 for an item it has: then every link is read.
    CheckLinks(step, room <= 0 && meta_->nonscaling() ? last + 1 : last);
  }

  void CheckLinks(PlanStep* step, size_t links) {
    add_stage_ = AddStage::kCheck;
    const size_t last = meta_->links.size() - 1;
    Requests& req = BeginStep(step);
    AddValidation(&req);
    count_len_at_ = req.count();
    req.Add({"STRLEN", meta_->CountKey(last)});
    req.Last().kind = ReplyCheck::Kind::kPresent;
    req.Last().role = ReplyCheck::Role::kCount;
    req.Last().link = static_cast<uint32_t>(last);
    if (reserve_ > 0) {
      // The shards of the newest link the set step may write.
      if (meta_->ShardCount(last) == 1) {
        AddShardLengths(&req, last, {0});
      } else {
        BitOps planned;
        PlanBits(last, window_, &planned);
        AddShardLengths(&req, last, planned.shards);
      }
    }
    incr_at_ = req.count();
    req.Add({"INCRBY", meta_->CountKey(last), std::to_string(reserve_)});
    req.Last().kind = ReplyCheck::Kind::kInteger;
    req.Last().role = ReplyCheck::Role::kCount;
    req.Last().link = static_cast<uint32_t>(last);
    check_ops_.assign(links, {});
    for (size_t l = 0; l < links; ++l) AddBitReads(&req, l, window_, &check_ops_[l]);
    EndStep(step);
  }

  // The set step, for the window's items not found in older links.
  void SetBits(PlanStep* step) {
    add_stage_ = AddStage::kSet;
    set_items_.clear();
    for (size_t j = 0; j < window_.size(); ++j) {
      if (!found_[j]) set_items_.push_back(window_[j]);
    }
    const size_t last = meta_->links.size() - 1;
    Requests& req = BeginStep(step);
    AddValidation(&req);
    PlanBits(last, set_items_, &set_ops_);
    AddBitfields(&req, last, /*set=*/true, &set_ops_);
    round_wrote_ = true;
    EndStep(step);
  }

  // Gives back `n` reserved places of the newest link.
  void Release(int64_t n) {
    if (n <= 0) return;
    const size_t last = meta_->links.size() - 1;
    meta_->counts[last] -= n;
    trailing_.Add({"DECRBY", meta_->CountKey(last), std::to_string(n)});
  }

  // The replies were checked (CheckReplies).
  void OnAddRound(StepReplies& r, PlanStep* step) {
    const size_t last = meta_->links.size() - 1;
    const int64_t capacity = static_cast<int64_t>(meta_->links[last].capacity);
    if (add_stage_ == AddStage::kCheck) {
      int64_t after = 0;
      FrameInt(r.Frame(incr_at_), &after);
      if (after < reserve_) {
        Release(reserve_);
        return Finish(step, Unexpected(checks_[incr_at_], "the count was negative"));
      }
      meta_->counts[last] = after;
      // Of the places reserved, those below the capacity are this round's.
      int64_t granted = std::clamp<int64_t>(capacity - (after - reserve_), 0, reserve_);
      const int64_t unused_before = reserve_ - granted;
      // Items in order: one found in an older link answers 0 and takes no place; the others
      // take the granted places; the round ends at the first that has none.
      size_t take = 0;
      int64_t placed = 0;
      for (size_t j = 0; j < window_.size(); ++j) {
        for (size_t l = 0; l < check_ops_.size() && !found_[j]; ++l) {
          found_[j] = AllOnes(check_ops_[l], j, r);
        }
        if (!found_[j]) {
          if (granted == 0) break;
          --granted;
          ++placed;
        }
        take = j + 1;
      }
      window_.resize(take);
      found_.resize(take);
      Release(unused_before + granted);  // what neither overflowed nor was used
      placed_ = placed;
      link_full_ = after - reserve_ >= capacity;
      if (placed == 0) {
        for (size_t j = 0; j < take; ++j) results_.push_back(kRes0);
        next_ += take;
        if (take == 0) {
          link_full_ = true;
          if (meta_->nonscaling() && check_ops_.size() == meta_->links.size()) {
            // Full, and the next item is not there: RedisBloom stops the command with an error;
            // the command's later items are not looked at.
            results_.push_back(kResFull);
            const BfMember& m = members_[MemberOf(next_)];
            for (size_t i = next_ + 1; i < m.start + m.count; ++i) results_.push_back(kResSkipped);
            next_ = m.start + m.count;
            return AddRound(step);
          }
        }
        return AddRound(step);
      }
      return SetBits(step);
    }
    // The set step.
    int64_t added = 0;
    size_t s = 0;
    for (size_t j = 0; j < window_.size(); ++j) {
      if (found_[j]) {
        results_.push_back(kRes0);
        continue;
      }
      const bool existed = AllOnes(set_ops_, s++, r);
      results_.push_back(existed ? kRes0 : kRes1);
      added += existed ? 0 : 1;
    }
    next_ = window_.back() + 1;
    Release(placed_ - added);
    AddRound(step);
  }

  size_t MemberOf(size_t item) const {
    auto it = std::upper_bound(members_.begin(), members_.end(), item,
                               [](size_t i, const BfMember& m) { return i < m.start; });
    return static_cast<size_t>(it - members_.begin()) - 1;
  }

  // Each member's reply from the per-item results: a single item's own, or an array of the
  // member's results up to (and including) an error that ended it.
  void FinishMembers(PlanStep* step) {
    auto append = [](std::string* out, int8_t code) {
      out->append(code == kRes1   ? std::string_view(":1\r\n")
                  : code == kRes0 ? std::string_view(":0\r\n")
                                  : kFullError);
    };
    member_replies_.clear();
    member_replies_.reserve(members_.size());
    for (const BfMember& m : members_) {
      std::string out;
      if (!m.multi) {
        append(&out, m.start < results_.size() ? results_[m.start] : kResFull);
      } else {
        size_t n = 0;
        while (n < m.count && m.start + n < results_.size() &&
               results_[m.start + n] != kResSkipped) {
          ++n;
        }
        out.reserve(8 + 4 * n);
        protocol::AppendArrayHeader(&out, static_cast<int64_t>(n));
        for (size_t i = m.start; i < m.start + n; ++i) append(&out, results_[i]);
      }
      member_replies_.push_back(std::move(out));
    }
    Finish(step, members_.size() == 1 ? member_replies_[0] : std::string());
  }

  // EXISTS / MEXISTS: one BITFIELD_RO per link and shard for all the items (each shard's size
  // checked in the same pipeline).
  void ExistsRound(PlanStep* step) {
    Requests& req = BeginStep(step);
    AddValidation(&req);
    std::vector<size_t> all(items_.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    check_ops_.assign(meta_->links.size(), {});
    for (size_t l = 0; l < meta_->links.size(); ++l) AddBitReads(&req, l, all, &check_ops_[l]);
    EndStep(step);
  }

  // The replies were checked (CheckReplies).
  void OnExistsRound(StepReplies& r, PlanStep* step) {
    results_.clear();
    for (size_t j = 0; j < items_.size(); ++j) {
      bool found = false;
      for (size_t l = 0; l < check_ops_.size() && !found; ++l) {
        found = AllOnes(check_ops_[l], j, r);
      }
      results_.push_back(found ? kRes1 : kRes0);
    }
    FinishMembers(step);
  }

  // CARD / INFO / SCANDUMP's header: the counts.
  void CountsRound(PlanStep* step) {
    Requests& req = BeginStep(step);
    AddValidation(&req);
    AddCounts(&req);
    EndStep(step);
  }

  // The replies were checked (CheckReplies).
  void OnCountsRound(StepReplies& r, PlanStep* step) {
    ApplyCounts(r.Get(kValidationReplies));
    int64_t total = 0;
    uint64_t capacity = 0, bytes = 0;
    bool counts_overflow = false, sizes_overflow = false;
    for (size_t l = 0; l < meta_->links.size(); ++l) {
      counts_overflow = counts_overflow || __builtin_add_overflow(total, meta_->counts[l], &total);
      sizes_overflow = sizes_overflow ||
                       __builtin_add_overflow(capacity, meta_->links[l].capacity, &capacity) ||
                       __builtin_add_overflow(bytes, meta_->links[l].bytes, &bytes);
    }
    if (counts_overflow) {
      return Finish(
          step, Unexpected(checks_[kValidationReplies], "the counts add up to more than 2^63 - 1"));
    }
    // BF.INFO: RedisBloom's Size counts its structures (32 bytes + 64 per link) and the bits.
    const uint64_t size = 32 + 64 * meta_->links.size() + bytes;
    constexpr uint64_t kMaxInt = static_cast<uint64_t>(INT64_MAX);
    if (sizes_overflow || capacity > kMaxInt || size > kMaxInt || size < bytes) {
      return Finish(step, Unexpected(Named("HGETALL"),
                                     "the filter's link capacities or sizes add up to more "
                                     "than 2^63 - 1"));
    }
    if (req_.command == BfCommand::kCard) return Finish(step, Integer(total));
    if (req_.command == BfCommand::kScanDump) {
      DumpHeader h;
      h.total_items = static_cast<uint64_t>(total);
      h.options = meta_->options;
      h.expansion = meta_->expansion;
      for (size_t l = 0; l < meta_->links.size(); ++l) {
        h.links.push_back({meta_->links[l], static_cast<uint64_t>(meta_->counts[l])});
      }
      std::string out = "*2\r\n:1\r\n";
      protocol::AppendBulk(&out, EncodeDumpHeader(h));
      return Finish(step, out);
    }
    const int64_t filters = static_cast<int64_t>(meta_->links.size());
    auto expansion = [&](std::string* o) {
      if (meta_->nonscaling()) {
        protocol::AppendNullBulk(o);
      } else {
        protocol::AppendInteger(o, meta_->expansion);
      }
    };
    std::string out;
    switch (req_.info_field) {
      case InfoField::kAll:
        out = "*10\r\n";
        protocol::AppendSimple(&out, "Capacity");
        protocol::AppendInteger(&out, static_cast<int64_t>(capacity));
        protocol::AppendSimple(&out, "Size");
        protocol::AppendInteger(&out, static_cast<int64_t>(size));
        protocol::AppendSimple(&out, "Number of filters");
        protocol::AppendInteger(&out, filters);
        protocol::AppendSimple(&out, "Number of items inserted");
        protocol::AppendInteger(&out, total);
        protocol::AppendSimple(&out, "Expansion rate");
        expansion(&out);
        break;
      case InfoField::kCapacity:
        out = "*1\r\n" + Integer(static_cast<int64_t>(capacity));
        break;
      case InfoField::kSize:
        out = "*1\r\n" + Integer(static_cast<int64_t>(size));
        break;
      case InfoField::kFilters:
        out = "*1\r\n" + Integer(filters);
        break;
      case InfoField::kItems:
        out = "*1\r\n" + Integer(total);
        break;
      case InfoField::kExpansion:
        out = "*1\r\n";
        expansion(&out);
        break;
    }
    Finish(step, out);
  }

  // SCANDUMP with an iterator: the chunk's bytes, with GETRANGE from the shards it spans.
  void DumpRound(PlanStep* step) {
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
  void OnDumpRound(StepReplies& r, PlanStep* step) {
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
  void LoadRound(PlanStep* step) {
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

  static constexpr int kMaxRestarts = 5;
  static constexpr std::string_view kBusy = "-ERR filter metadata keeps changing, try again\r\n";

  BfRequest req_;
  std::string name_;
  std::string deferred_error_;
  std::vector<std::string> items_;
  std::string data_;
  FilterCache* cache_;
  const BfConfig* config_;
  std::shared_ptr<FilterMeta> meta_;
  std::shared_ptr<FilterMeta> pending_meta_;
  DumpHeader header_;
  Phase phase_ = Phase::kFetch;
  size_t skip_ = 0;
  Requests trailing_;               // sent with the next step; replies skipped
  Requests next_requests_;          // the step being built
  std::vector<ReplyCheck> checks_;  // what each reply of the step in flight must be
  int restarts_ = 0;
  bool round_wrote_ = false;
  bool reload_ = false;
  bool link_full_ = false;   // the upstream showed the newest link full
  int64_t reserve_ = 0;      // places asked for in the newest link this round
  int64_t placed_ = 0;       // places granted and used by items to set
  size_t count_len_at_ = 0;  // check step: the reply of STRLEN of the newest count key
  size_t incr_at_ = 0;       // check step: the reply of its INCRBY

  // ADD state.
  std::vector<ItemHash> hashes_;
  std::vector<bool> hashed_;
  // Per item: 0, 1, the full error, or not processed (its command stopped at an error).
  static constexpr int8_t kRes0 = 0, kRes1 = 1, kResFull = 2, kResSkipped = -1;
  std::vector<int8_t> results_;
  std::vector<BfMember> members_;
  std::vector<std::string> member_replies_;
  size_t next_ = 0;
  std::vector<size_t> window_;
  std::vector<bool> found_;
  std::vector<size_t> set_items_;
  AddStage add_stage_ = AddStage::kSet;
  std::vector<BitOps> check_ops_;
  BitOps set_ops_;
  ChunkPos chunk_;
};

}  // namespace

std::unique_ptr<Plan> MakeBfPlan(const BfRequest& request, FilterCache* cache,
                                 const BfConfig* config, std::string deferred_error) {
  return std::make_unique<BfPlan>(request, cache, config, std::move(deferred_error));
}

std::unique_ptr<Plan> MakeBatchPlan(const BfRequest& request, std::vector<BfMember> members,
                                    FilterCache* cache, const BfConfig* config) {
  return std::make_unique<BfPlan>(request, cache, config, std::string(), std::move(members));
}

}  // namespace bloomproxy::filters
