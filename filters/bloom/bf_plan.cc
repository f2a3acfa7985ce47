// The BF plan (bf_plan_state.h) itself: its construction, the dispatch of a step's replies by
// phase and of the command's round by command, the metadata (TYPE and HGETALL of the name, the
// counts, the validation HMGET at the head of every round and what it says of the name), the
// end of the command and the trailing requests sent with it, and the restarts from the
// metadata when the name changed under the plan. MakeBfPlan and MakeBatchPlan make it.
#include "filters/bloom/bf_plan.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "filters/bloom/bf_plan_state.h"
#include "filters/bloom/bloom.h"
#include "filters/bloom/window/window_plan.h"
#include "filters/common/plan_requests.h"

namespace bloomproxy::filters::bf_plan_internal {

BfPlan::BfPlan(const BfRequest& request, FilterCache* cache, const BfConfig* config,
               std::string deferred_error, std::vector<BfMember> members)
    : req_(request),
      name_(request.key),
      deferred_error_(std::move(deferred_error)),
      cache_(cache),
      config_(config),
      members_(std::move(members)) {
  if (members_.empty()) members_.push_back(WholeCommand(request));
  // The request's views point into the client's input buffer, which changes while the plan
  // runs: keep copies.
  items_.reserve(request.items.size());
  for (std::string_view item : request.items) items_.emplace_back(item);
  data_.assign(request.data);
  req_.items.clear();
  req_.data = {};
  req_.key = name_;
}

void BfPlan::Start(PlanStep* step) {
  if (!deferred_error_.empty()) return Fetch(step);
  meta_ = cache_->Find(name_);
  const bool creating = req_.command == BfCommand::kReserve ||
                        (req_.command == BfCommand::kLoadChunk && req_.iterator == 1);
  if (!meta_ || creating) return Fetch(step);
  if (meta_->windowed()) return HandOver(step);
  if (req_.ttl_ms > 0) return Finish(step, std::string(kErrBadTtl));
  Main(step);
}

const std::vector<std::string>& BfPlan::MemberReplies() const {
  return delegate_ ? delegate_->MemberReplies() : member_replies_;
}

void BfPlan::HandOver(PlanStep* step) {
  std::vector<std::string_view> views(items_.begin(), items_.end());
  BfRequest request = req_;
  request.items = views;
  delegate_ = MakeWindowPlan(request, members_, meta_, cache_, config_);
  trailing_.MoveTo(step);
  skip_ = step->replies;
  delegate_->Start(step);
}

void BfPlan::OnReplies(StepReplies& r, PlanStep* step) {
  // Replies of trailing requests (cleanup, counts) sent with the last step come first.
  r.Skip(skip_);
  skip_ = 0;
  if (delegate_) return delegate_->OnReplies(r, step);
  switch (phase_) {
    case Phase::kFetch:
      return OnFetch(r, step);
    case Phase::kCounts:
      return OnCounts(r, step);
    case Phase::kCreate:
      return OnCreate(r, step);
    case Phase::kCreateLink:
      return OnCreateLink(r, step);
    case Phase::kPublishLink:
      return OnPublishLink(r, step);
    case Phase::kMain:
      return OnMain(r, step);
  }
}

bool BfPlan::Creates() const { return CreatesFilter(req_); }

bool BfPlan::NeedsCounts() const {
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

bool BfPlan::Adding() const {
  return req_.command == BfCommand::kAdd || req_.command == BfCommand::kMAdd ||
         req_.command == BfCommand::kInsert;
}

// Every step starts with the trailing requests of the previous one; their replies are
// skipped.
Requests& BfPlan::BeginStep(PlanStep* step) {
  trailing_.MoveTo(step);
  skip_ = step->replies;
  checks_.clear();
  return next_requests_;
}

void BfPlan::EndStep(PlanStep* step) { next_requests_.MoveTo(step, &checks_); }

void BfPlan::Finish(PlanStep* step, std::string reply) {
  step->done = true;
  step->reply = std::move(reply);
  trailing_.MoveTo(step);
}

// Every reply of the step as its request must answer it; false and *error (the reply for
// the client) at the first that is not.
bool BfPlan::CheckReplies(StepReplies& r, std::string* error) const {
  for (size_t i = 0; i < checks_.size(); ++i) {
    if (!CheckReply(r, i, checks_[i], error)) return false;
  }
  return true;
}

// The metadata is read again from the name (it changed, or the cache was stale).
void BfPlan::Restart(PlanStep* step) {
  cache_->Erase(name_);
  meta_ = nullptr;
  if (++restarts_ > kMaxRestarts) return Finish(step, std::string(kBusy));
  Fetch(step);
}

// The reply for a key that is missing or of another type; false when the command creates
// the filter instead.
bool BfPlan::ReplyForAbsent(KeyState state, PlanStep* step) {
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

void BfPlan::Fetch(PlanStep* step) {
  phase_ = Phase::kFetch;
  Requests& req = BeginStep(step);
  req.Add({"TYPE", name_});
  req.Add({"HGETALL", name_});
  EndStep(step);
}

// What the name holds, from TYPE and HGETALL. A hash with the filter marker whose fields do
// not parse is damaged: kError, not "another type" (BF.EXISTS would answer 0 for it).
KeyState BfPlan::Classify(StepReplies& r, std::shared_ptr<FilterMeta>* meta, std::string* error) {
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

void BfPlan::OnFetch(StepReplies& r, PlanStep* step) {
  std::shared_ptr<FilterMeta> meta;
  std::string error;
  const KeyState state = Classify(r, &meta, &error);
  if (state != KeyState::kFilter) {
    cache_->Erase(name_);
    meta_ = nullptr;
    if (state == KeyState::kError) return Finish(step, error);
    if (ReplyForAbsent(state, step)) return;
    if (req_.ttl_ms > 0 && req_.window_ms == 0) return Finish(step, std::string(kErrBadTtl));
    if (req_.command == BfCommand::kLoadChunk) {
      // The header is looked at once the key is known to be free, as RedisBloom does.
      std::string error = LoadHeaderError(data_, &header_);
      if (!error.empty()) return Finish(step, std::move(error));
    }
    return Create(step);
  }
  if (req_.command == BfCommand::kReserve) return Finish(step, std::string(kItemExists));
  if (req_.command == BfCommand::kLoadChunk && req_.iterator == 1 && !meta->windowed()) {
    return Finish(step, std::string(kBadData));
  }
  meta_ = meta;
  cache_->Put(name_, meta_);
  if (meta_->windowed()) return HandOver(step);
  if (req_.ttl_ms > 0) return Finish(step, std::string(kErrBadTtl));
  if (!deferred_error_.empty()) return Finish(step, deferred_error_);
  if (NeedsCounts()) return FetchCounts(step);
  Main(step);
}

void BfPlan::FetchCounts(PlanStep* step) {
  phase_ = Phase::kCounts;
  Requests& req = BeginStep(step);
  AddValidation(&req);
  AddCounts(&req);
  EndStep(step);
}

// MGET of the count keys: each must hold an integer >= 0 (nil is a count key missing or of
// another type: the filter is damaged, and 0 would be a made-up count).
void BfPlan::AddCounts(Requests* req) const {
  std::vector<std::string> args = {"MGET"};
  for (size_t l = 0; l < meta_->links.size(); ++l) args.push_back(meta_->CountKey(l));
  req->Add(args);
  ReplyCheck& c = req->Last();
  c.kind = ReplyCheck::Kind::kCounts;
  c.role = ReplyCheck::Role::kCounts;
  c.n = meta_->links.size();
}

// The MGET reply, already checked (kCounts).
void BfPlan::ApplyCounts(const redisReply* r) {
  for (size_t l = 0; l < meta_->links.size(); ++l) {
    int64_t v = 0;
    ParseCount(Str(r->element[l]), &v);
    meta_->counts[l] = v;
  }
  const size_t last = meta_->links.size() - 1;
  link_full_ = meta_->counts[last] >= static_cast<int64_t>(meta_->links[last].capacity);
}

void BfPlan::OnCounts(StepReplies& r, PlanStep* step) {
  std::string error;
  const KeyState state = Validate(r, &error);
  if (state == KeyState::kError) return Finish(step, error);
  if (state != KeyState::kFilter) return Restart(step);
  if (!CheckReplies(r, &error)) return Finish(step, error);
  ApplyCounts(r.Get(kValidationReplies));
  Main(step);
}

// Validation at the head of every round on a known filter: see kValidationReplies.

void BfPlan::AddValidation(Requests* req) {
  if (CheckedOutside()) return;
  req->Add({"HMGET", name_, kMarkerField, "id", "l" + std::to_string(meta_->links.size())});
}

KeyState BfPlan::Validate(StepReplies& r, std::string* error, size_t at) {
  if (CheckedOutside()) return KeyState::kFilter;
  const ReplyCheck& c = checks_[at];
  if (at >= r.size()) {
    *error = Unexpected(c, "the reply is missing");
    return KeyState::kError;
  }
  const std::string_view f = r.Frame(at);
  if (r.IsErrorReply(at)) {
    if (IsWrongType(f)) return KeyState::kOtherType;
    *error = UpstreamError(f, c);
    return KeyState::kError;
  }
  const redisReply* hmget = r.Get(at);
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

// --- the command itself -----------------------------------------------------------------

void BfPlan::Main(PlanStep* step) {
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
    case BfCommand::kDebug:
      return CountsRound(step);
    case BfCommand::kScanDump:
      return req_.iterator == 0 ? CountsRound(step) : DumpRound(step);
    case BfCommand::kLoadChunk:
      return LoadRound(step);
    case BfCommand::kReserve:
      return Finish(step, std::string(kItemExists));
  }
}

void BfPlan::OnMain(StepReplies& r, PlanStep* step) {
  std::string error;
  const KeyState state = Validate(r, &error);
  const bool adding = Adding();
  if (state == KeyState::kError) {
    if (adding) ReleaseAfterError(r);
    return Finish(step, error);
  }
  if (state == KeyState::kNewLink && adding && add_stage_ == AddStage::kSet) {
    // Another proxy added a link: the set step's own reading after its write (or its script)
    // says what became of the items (bf_plan_set.cc).
  } else if (state != KeyState::kFilter) {
    if (adding && add_stage_ == AddStage::kCheck && state == KeyState::kNewLink) {
      Release(reserve_);  // the same filter: its count must not keep this round's places
    }
    if (adding && add_stage_ == AddStage::kSet) ForgetOrphanBits();
    if (adding && add_stage_ == AddStage::kResolve) resume_id_ = meta_->id;  // still in doubt
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
    case BfCommand::kDebug:
      return OnCountsRound(r, step);
    case BfCommand::kLoadChunk:
      return Finish(step, "+OK\r\n");
    case BfCommand::kReserve:
      return Finish(step, std::string(kItemExists));
  }
}

}  // namespace bloomproxy::filters::bf_plan_internal

namespace bloomproxy::filters {

std::unique_ptr<Plan> MakeBfPlan(const BfRequest& request, FilterCache* cache,
                                 const BfConfig* config, std::string deferred_error) {
  return std::make_unique<bf_plan_internal::BfPlan>(request, cache, config,
                                                    std::move(deferred_error));
}

std::unique_ptr<Plan> MakeBatchPlan(const BfRequest& request, std::vector<BfMember> members,
                                    FilterCache* cache, const BfConfig* config) {
  return std::make_unique<bf_plan_internal::BfPlan>(request, cache, config, std::string(),
                                                    std::move(members));
}

}  // namespace bloomproxy::filters
