// The CMS plan's state machine (filters/cms/cms_plan.h), one class whose methods are defined by
// concern: the metadata, creation and restarts (cms_plan.cc); INCRBY, QUERY and INFO
// (cms_plan_ops.cc); MERGE's
// read, computation and check-and-write (cms_plan_merge.cc). Internal to filters/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "filters/cms/cms.h"
#include "filters/cms/cms_args.h"
#include "filters/cms/cms_meta.h"
#include "filters/cms/cms_plan.h"
#include "filters/cms/cms_scripts.h"
#include "filters/common/plan_requests.h"

namespace bloomproxy::filters::cms_plan_internal {

// What a name held when the plan fetched it.
struct Fetched {
  enum class State { kMissing, kOtherType, kSketch } state = State::kMissing;
  std::shared_ptr<CmsMeta> meta;
};

class CmsPlan : public Plan {
 public:
  CmsPlan(const CmsRequest& request, std::string parse_error, CmsCache* cache,
          const CmsConfig* config, std::vector<PlanMember> members = {});

  // A batch (MakeCmsBatchPlan): INCRBY or QUERY, arguments already parsed and owned.
  CmsPlan(CmsCommand command, std::string key, std::vector<std::string> items,
          std::vector<uint64_t> increments, std::vector<PlanMember> members, CmsCache* cache,
          const CmsConfig* config);

  void Start(PlanStep* step) override;
  const std::vector<std::string>& MemberReplies() const override { return member_replies_; }
  void OnReplies(StepReplies& r, PlanStep* step) override;

 private:
  enum class Phase { kFetch, kCreate, kMain, kMergeRead, kMergeCommit };

  // --- steps, metadata, restarts (cms_plan.cc) --------------------------------------------

  Requests& BeginStep(PlanStep* step);
  void EndStep(PlanStep* step);
  void Finish(PlanStep* step, std::string reply);
  void Restart(PlanStep* step);
  bool ShardingProxy() const { return config_->upstream == protocol::UpstreamKind::kShardingProxy; }
  // The fetch step: what every name of `names_` holds.
  void Fetch(PlanStep* step);
  bool ReadFetched(StepReplies& r, std::string* error);
  void OnFetch(StepReplies& r, PlanStep* step);
  // The reply for a name that is no sketch, or "" when it is one.
  static std::string_view NotASketch(const Fetched& f);

  // --- creation (cms_plan.cc) -------------------------------------------------------------

  void Create(PlanStep* step);
  void OnCreate(StepReplies& r, PlanStep* step);

  // --- INCRBY, QUERY, INFO (cms_plan_ops.cc) ----------------------------------------------

  void Main(PlanStep* step);
  void AddDataRequest(Requests* req);  // the data command of Main's step
  void OnMain(StepReplies& r, PlanStep* step);
  // Whether the validation reply (HMGET name cms id) shows the sketch as cached; *error when
  // it is an error that ends the command.
  bool StillTheSketch(StepReplies& r, size_t at, std::string* error) const;
  // The integers the BITFIELD replies of the main step hold, in request order.
  bool CollectValues(StepReplies& r, std::vector<int64_t>* values, std::string* error);
  // The reply of the items [first, first + count).
  std::string ItemsReply(const std::vector<int64_t>& minima, size_t first, size_t count) const;
  void FinishItems(const std::vector<int64_t>& values, PlanStep* step);
  std::string InfoReply(const std::vector<int64_t>& values) const;

  // --- MERGE (cms_plan_merge.cc) ----------------------------------------------------------

  std::string MergeChecks() const;  // the reply for the first failed key check, or ""
  void MergeRead(PlanStep* step);
  void OnMergeRead(StepReplies& r, PlanStep* step);
  void OnMergeCommit(StepReplies& r, PlanStep* step);

  static constexpr int kMaxRestarts = 5;
  static constexpr std::string_view kBusy = "-ERR sketch keeps changing, try again\r\n";

  CmsCommand command_;
  std::string name_;
  std::string parse_error_;
  CmsErrorOrder error_order_;
  CmsCache* cache_;
  const CmsConfig* config_;
  Phase phase_ = Phase::kFetch;
  int restarts_ = 0;
  size_t skip_ = 0;
  Requests trailing_;
  Requests next_;
  std::vector<ReplyCheck> checks_;

  // INITBY*: the dimensions. INCRBY / QUERY: the items (and increments).
  uint64_t width_ = 0;
  uint64_t depth_ = 0;
  std::vector<std::string> items_;
  std::vector<uint64_t> increments_;

  // The names fetched (MERGE: the destination, then each distinct source), and what each held.
  std::vector<std::string> names_;
  std::vector<Fetched> fetched_;
  std::shared_ptr<CmsMeta> meta_;  // the sketch at name_

  // The main step on several parts: its BITFIELD replies' integers, concatenated in request
  // order, hold the value of row r of item i at positions_[i * depth + r] (CollectValues puts
  // them back in operation order; every other path reads them in that order).
  void PlanCells(bool write, std::vector<CmsPartOps>* parts);
  // One part (cms_plan_cells.cc): each distinct cell of the step once (a cell several commands
  // of a batch increment: GET, then one INCRBY of their sum), the values of the operations
  // worked out from those.
  struct Cell {
    uint64_t cell = 0;
    uint32_t count = 0;   // operations on it
    size_t first_op = 0;  // its first operation
    uint64_t sum = 0;     // their increments, capped at INT64_MAX (saturates a cell anyway)
    size_t at = 0;        // its first value in the reply (GET's when count > 1)
  };
  void GroupCells(bool write);
  void EncodeOnePart(bool write, std::string* out);
  bool OpValues(StepReplies& r, std::vector<int64_t>* values, std::string* error);
  std::vector<Cell> cells_;
  std::vector<uint32_t> op_cell_;  // per operation (item-major): its index in cells_
  bool deduped_ = false;
  bool CellsOfPart(StepReplies& r, std::vector<int64_t>* values, std::string* error);
  // A QUERY batch reads its part whole once its operations would cost more: about this many
  // bytes of request and reply per BITFIELD GET.
  static constexpr uint64_t kBytesPerRead = 32;
  std::vector<uint64_t> whole_part_;  // the cells of such a read, op-major per item
  std::vector<size_t> positions_;
  size_t values_expected_ = 0;
  size_t first_bitfield_ = 0;
  bool multi_part_ = false;
  size_t validation_at_ = 0;
  std::vector<std::string> written_;  // parts the step wrote (for the cleanup)
  // Coalesced commands (MakeCmsBatchPlan) and their replies once done.
  std::vector<PlanMember> members_;
  std::vector<std::string> member_replies_;

  // MERGE: per name fetched, the reply index of its first read (its parts for a source, part
  // 0's header for a destination that is no source).
  std::vector<size_t> read_at_;
  bool IsSource(size_t j) const;
  bool ReadSketch(const std::vector<std::string_view>& parts, size_t j, CmsSketch* sketch,
                  std::string* version, std::string* error) const;
  // A destination that changes between the read and the write makes MERGE read again.
  static constexpr int kMaxMergeRestarts = 50;
  int merge_restarts_ = 0;
  size_t merge_keys_ = 0;  // the keys the read script reads
  std::vector<std::pair<std::string, std::string>> DestParts(const CmsSketch& merged,
                                                             std::string_view version) const;
  std::vector<size_t> source_of_;  // per source: its index in names_
  std::vector<int64_t> weights_;
  size_t bad_weight_ = kCmsNoBadWeight;
};

}  // namespace bloomproxy::filters::cms_plan_internal
