// The CMS plan (cms_plan_state.h): construction, the fetch of what names hold, creation, and
// INCRBY / QUERY / INFO, each one round trip once the sketch's metadata is cached:
//
//   INCRBY   BITFIELD <part 0> OVERFLOW WRAP INCRBY i64 0 <sum> INCRBY i64 64 1
//                              OVERFLOW SAT INCRBY u32 #<4 + cell> <v> ...      (one part), or
//            EVAL <multi-part BITFIELD script> ...                             (several parts)
//            HMGET <name> cms id                                               (validation)
//   QUERY    BITFIELD_RO <part 0> GET u32 #<4 + cell> ... (or the script), validation
//   INFO     BITFIELD_RO <part 0> GET i64 0, validation
//
// The validation follows the write: if it shows the name no longer holds the sketch, the parts
// the write reached belonged to a sketch that is gone (ids are never reused), so they are removed
// (a script that checks again) and the command starts over from the metadata.
#include "filters/cms/cms_plan.h"

#include <utility>

#include "filters/cms/cms.h"
#include "filters/cms/cms_plan_state.h"

namespace bloomproxy::filters {
namespace cms_plan_internal {

CmsPlan::CmsPlan(const CmsRequest& request, std::string parse_error, CmsCache* cache,
                 const CmsConfig* config, std::vector<PlanMember> members)
    : command_(request.command),
      name_(request.key),
      parse_error_(std::move(parse_error)),
      error_order_(request.error_order),
      cache_(cache),
      config_(config),
      width_(request.width),
      depth_(request.depth),
      members_(std::move(members)),
      weights_(request.weights),
      bad_weight_(request.bad_weight) {
  // The request's views point into the client's input buffer: keep copies.
  for (const CmsIncrement& inc : request.increments) {
    items_.emplace_back(inc.item);
    increments_.push_back(inc.value);
  }
  for (std::string_view item : request.items) items_.emplace_back(item);
  names_.push_back(name_);
  for (std::string_view source : request.sources) {
    size_t j = 0;
    while (j < names_.size() && names_[j] != source) ++j;
    if (j == names_.size()) names_.emplace_back(source);
    source_of_.push_back(j);
  }
}

CmsPlan::CmsPlan(CmsCommand command, std::string key, std::vector<std::string> items,
                 std::vector<uint64_t> increments, std::vector<PlanMember> members, CmsCache* cache,
                 const CmsConfig* config)
    : command_(command),
      name_(std::move(key)),
      error_order_(CmsErrorOrder::kNow),
      cache_(cache),
      config_(config),
      items_(std::move(items)),
      increments_(std::move(increments)),
      names_{name_},
      members_(std::move(members)) {}

void CmsPlan::Start(PlanStep* step) {
  switch (command_) {
    case CmsCommand::kInitByDim:
    case CmsCommand::kInitByProb:
      return parse_error_.empty() ? Create(step) : Fetch(step);
    case CmsCommand::kMerge:
      return Fetch(step);
    default:
      meta_ = cache_->Find(name_);
      return meta_ && parse_error_.empty() ? Main(step) : Fetch(step);
  }
}

void CmsPlan::OnReplies(StepReplies& r, PlanStep* step) {
  r.Skip(skip_);
  skip_ = 0;
  switch (phase_) {
    case Phase::kFetch:
      return OnFetch(r, step);
    case Phase::kCreate:
      return OnCreate(r, step);
    case Phase::kMain:
      return OnMain(r, step);
    case Phase::kMergeRead:
      return OnMergeRead(r, step);
    case Phase::kMergeCommit:
      return OnMergeCommit(r, step);
  }
}

Requests& CmsPlan::BeginStep(PlanStep* step) {
  trailing_.MoveTo(step);
  skip_ = step->replies;
  checks_.clear();
  return next_;
}

void CmsPlan::EndStep(PlanStep* step) { next_.MoveTo(step, &checks_); }

void CmsPlan::Finish(PlanStep* step, std::string reply) {
  step->done = true;
  step->reply = std::move(reply);
  trailing_.MoveTo(step);
}

void CmsPlan::Restart(PlanStep* step) {
  cache_->Erase(name_);
  meta_ = nullptr;
  if (++restarts_ > kMaxRestarts) return Finish(step, std::string(kBusy));
  Fetch(step);
}

// ---------------------------------------------------------------------------------------------
// What the names hold.

void CmsPlan::Fetch(PlanStep* step) {
  phase_ = Phase::kFetch;
  Requests& req = BeginStep(step);
  for (const std::string& name : names_) AddCmsFetch(&req, name, config_->upstream);
  EndStep(step);
}

bool CmsPlan::ReadFetched(StepReplies& r, std::string* error) {
  fetched_.assign(names_.size(), Fetched{});
  for (size_t i = 0; i < names_.size(); ++i) {
    const ReplyCheck check = Named("EVAL");
    if (i >= r.size()) {
      *error = Unexpected(check, "the reply is missing");
      return false;
    }
    if (r.IsErrorReply(i)) {
      *error = UpstreamError(r.Frame(i), check);
      return false;
    }
    int64_t v = 0;
    if (FrameInt(r.Frame(i), &v) && (v == 0 || v == 1)) {
      fetched_[i].state = v == 0 ? Fetched::State::kMissing : Fetched::State::kOtherType;
      continue;
    }
    switch (CmsMetaFromHmget(names_[i], r.Get(i), &fetched_[i].meta)) {
      case CmsFetched::kSketch:
        fetched_[i].state = Fetched::State::kSketch;
        break;
      case CmsFetched::kOtherType:
        fetched_[i].state = Fetched::State::kOtherType;
        break;
      case CmsFetched::kDamaged:
        *error = Unexpected(check, "the sketch's metadata is incomplete or does not parse, got " +
                                       DescribeFrame(r.Frame(i)));
        return false;
    }
  }
  return true;
}

std::string_view CmsPlan::NotASketch(const Fetched& f) {
  switch (f.state) {
    case Fetched::State::kMissing:
      return kCmsErrKeyMissing;
    case Fetched::State::kOtherType:
      return kCmsErrWrongType;
    case Fetched::State::kSketch:
      break;
  }
  return {};
}

void CmsPlan::OnFetch(StepReplies& r, PlanStep* step) {
  std::string error;
  if (!ReadFetched(r, &error)) return Finish(step, std::move(error));
  const Fetched& f = fetched_[0];
  switch (command_) {
    case CmsCommand::kInitByDim:
    case CmsCommand::kInitByProb:
      if (f.state != Fetched::State::kMissing) return Finish(step, std::string(kCmsErrKeyExists));
      return parse_error_.empty() ? Create(step) : Finish(step, parse_error_);
    case CmsCommand::kMerge: {
      std::string reply = MergeChecks();
      return reply.empty() ? MergeRead(step) : Finish(step, std::move(reply));
    }
    default:
      if (!NotASketch(f).empty()) return Finish(step, std::string(NotASketch(f)));
      if (!parse_error_.empty()) return Finish(step, parse_error_);
      meta_ = f.meta;
      cache_->Put(name_, meta_);
      return Main(step);
  }
}

// ---------------------------------------------------------------------------------------------
// Creation.

void CmsPlan::Create(PlanStep* step) {
  phase_ = Phase::kCreate;
  meta_ = NewCmsMeta(name_, width_, depth_, *config_);
  Requests& req = BeginStep(step);
  AddCmsCreate(&req, name_, *meta_);
  req.Last().kind = ReplyCheck::Kind::kInteger;
  EndStep(step);
}

void CmsPlan::OnCreate(StepReplies& r, PlanStep* step) {
  std::string error;
  if (!CheckReply(r, 0, checks_[0], &error)) return Finish(step, std::move(error));
  int64_t created = 0;
  FrameInt(r.Frame(0), &created);
  if (created != 1) return Finish(step, std::string(kCmsErrKeyExists));
  cache_->Put(name_, meta_);
  Finish(step, "+OK\r\n");
}

}  // namespace cms_plan_internal

std::unique_ptr<Plan> MakeCmsPlan(const CmsRequest& request, std::string parse_error,
                                  CmsCache* cache, const CmsConfig* config) {
  return std::make_unique<cms_plan_internal::CmsPlan>(request, std::move(parse_error), cache,
                                                      config);
}

std::unique_ptr<Plan> MakeCmsBatchPlan(CmsCommand command, std::string key,
                                       std::vector<std::string> items,
                                       std::vector<uint64_t> increments,
                                       std::vector<PlanMember> members, CmsCache* cache,
                                       const CmsConfig* config) {
  return std::make_unique<cms_plan_internal::CmsPlan>(command, std::move(key), std::move(items),
                                                      std::move(increments), std::move(members),
                                                      cache, config);
}

}  // namespace bloomproxy::filters
