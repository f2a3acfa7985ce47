// The BF plan's state machine (filters/bloom/bf_plan.h), as one class whose methods are defined by
// concern: fetching and validating a filter's metadata, and the dispatch of a step's replies
// (bf_plan.cc); creating a filter or a new link (bf_plan_create.cc); the items' bits and the
// BITFIELD commands that read and set them (bf_plan_bits.cc); BF.ADD / BF.MADD / BF.INSERT
// rounds and the members' replies (bf_plan_add.cc); their set step (bf_plan_set.cc); BF.EXISTS /
// BF.MEXISTS, BF.CARD and BF.INFO (bf_plan_read.cc); BF.SCANDUMP and BF.LOADCHUNK
// (bf_plan_dump.cc). Internal to filters/: everything else goes through MakeBfPlan and
// MakeBatchPlan.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "filters/bloom/bf_plan.h"
#include "filters/bloom/bf_replies.h"
#include "filters/bloom/bloom.h"
#include "filters/common/plan_requests.h"
#include "protocol/errors.h"

namespace bloomproxy::filters::bf_plan_internal {

constexpr std::string_view kWrongType = protocol::errors::kWrongType;
using filters::kItemExists;
using filters::kNotFound;
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

// BF.LOADCHUNK's header (iterator 1): "" and *header, or the error reply (bad data, or a dump of
// a RedisBloom 1.x filter, whose bit maths differ).
std::string LoadHeaderError(std::string_view data, DumpHeader* header);

// The size of shard `shard` of link `link`: every shard is created at this size, and never
// changes size afterwards.
inline uint64_t ShardSize(const FilterMeta& meta, size_t link, uint64_t shard) {
  return std::min(meta.shard_bytes, meta.links[link].bytes - shard * meta.shard_bytes);
}

class BfPlan : public Plan {
 public:
  BfPlan(const BfRequest& request, FilterCache* cache, const BfConfig* config,
         std::string deferred_error, std::vector<BfMember> members = {});

  void Start(PlanStep* step) override;
  const std::vector<std::string>& MemberReplies() const override;
  void OnReplies(StepReplies& r, PlanStep* step) override;

 private:
  enum class Phase { kFetch, kCounts, kCreate, kCreateLink, kPublishLink, kMain };
  enum class AddStage { kCheck, kSet, kResolve };

  // --- steps, replies, restarts (bf_plan.cc) ----------------------------------------------

  // A windowed filter's command goes on in a window plan (filters/bloom/window/), which gets
  // the step and every reply from now on.
  void HandOver(PlanStep* step);

  bool Creates() const;         // the command creates the filter when the name is free
  bool NeedsCounts() const;     // the command reads the counts before its own round
  bool Adding() const;          // BF.ADD / BF.MADD / BF.INSERT
  bool ShardingProxy() const {  // the upstream refuses some commands (sharding_requests.h)
    return config_->upstream == protocol::UpstreamKind::kShardingProxy;
  }
  // Keys are created by single-key scripts (sharding_requests.h), whose effect does not depend
  // on the order a step's commands run in: behind a sharding proxy, or a cluster (BfConfig).
  // A lookup whose caller checks the filter and its shards (BfRequest::checked_outside).
  bool CheckedOutside() const {
    return req_.checked_outside &&
           (req_.command == BfCommand::kExists || req_.command == BfCommand::kMExists);
  }
  bool ScriptedCreation() const { return ShardingProxy() || config_->cluster; }
  Requests& BeginStep(PlanStep* step);
  void EndStep(PlanStep* step);
  void Finish(PlanStep* step, std::string reply);
  bool CheckReplies(StepReplies& r, std::string* error) const;
  void Restart(PlanStep* step);
  bool ReplyForAbsent(KeyState state, PlanStep* step);

  // --- metadata (bf_plan.cc) --------------------------------------------------------------

  void Fetch(PlanStep* step);  // TYPE and HGETALL of the name
  KeyState Classify(StepReplies& r, std::shared_ptr<FilterMeta>* meta, std::string* error);
  void OnFetch(StepReplies& r, PlanStep* step);
  void FetchCounts(PlanStep* step);  // validation and the counts, before the command's round
  void AddCounts(Requests* req) const;
  void ApplyCounts(const redisReply* r);
  void OnCounts(StepReplies& r, PlanStep* step);

  // Validation at the head of every round on a known filter: the name must still be this
  // filter (same id), and no link beyond the known ones may exist yet. One HMGET says it all:
  // WRONGTYPE for another type, nils for a missing key (or a hash that is no filter: the
  // reload that follows tells them apart with TYPE).
  static constexpr size_t kValidationReplies = 1;
  void AddValidation(Requests* req);
  // `at`: the reply's index in the step (a set step validates again after its write).
  KeyState Validate(StepReplies& r, std::string* error, size_t at = 0);

  // --- the command itself: its round, by command (bf_plan.cc) -----------------------------

  void Main(PlanStep* step);
  void OnMain(StepReplies& r, PlanStep* step);

  // --- creation (bf_plan_create.cc) -------------------------------------------------------

  void Create(PlanStep* step);
  void AddPublish(Requests* req, const FilterMeta& meta) const;
  void AddLinkKeys(Requests* req, const FilterMeta& meta, size_t link, int64_t count,
                   bool shared) const;
  void AddExpireAt(Requests* req, const std::string& key) const;
  void OnCreate(StepReplies& r, PlanStep* step);
  void CreateLink(PlanStep* step);
  void OnCreateLink(StepReplies& r, PlanStep* step);
  void PublishLink(PlanStep* step);
  void OnPublishLink(StepReplies& r, PlanStep* step);

  // --- the items' bits (bf_plan_bits.cc) --------------------------------------------------

  // Which of an item's bits a read covers: all k, the probe (its first bit), or the rest.
  enum class BitSpan : uint8_t { kAll, kProbe, kRest };

  // Where each item's bits are in the replies of a set of BITFIELD commands.
  struct BitOps {
    std::vector<uint64_t> shards;   // the shard of each command
    std::vector<uint32_t> ops;      // the number of ops of each command
    uint32_t k = 0;                 // ops per item
    std::vector<uint32_t> command;  // per op, item-major: the command holding it
    std::vector<uint32_t> index;    // per op: its position in that command
    std::vector<uint64_t> offsets;  // per op: its bit offset in its shard
    std::vector<uint32_t> starts;   // per item, its first op; then one past the last op
    size_t first = 0;               // the step's reply index of the first command
  };

  void ItemOffsets(size_t item, size_t link, BitSpan span,
                   std::vector<std::pair<uint64_t, uint64_t>>* out);
  void PlanBits(size_t link, const std::vector<size_t>& items, BitOps* ops,
                const std::vector<BitSpan>* spans = nullptr);
  void AddShardLengths(Requests* req, size_t link, const std::vector<uint64_t>& shards) const;
  void AddBitfields(Requests* req, size_t link, bool set, BitOps* ops);
  void AddBitReads(Requests* req, size_t link, const std::vector<size_t>& items, BitOps* ops,
                   const std::vector<BitSpan>* spans = nullptr);
  static bool OpIsOne(const BitOps& ops, size_t x, StepReplies& replies);
  static bool AllOnes(const BitOps& ops, size_t j, StepReplies& replies);
  static bool FirstOne(const BitOps& ops, size_t j, StepReplies& replies);

  // --- adding (bf_plan_add.cc) ------------------------------------------------------------

  void ReleaseAfterError(StepReplies& r);
  void AddRound(PlanStep* step);
  void CheckLinks(PlanStep* step, size_t links);  // the check step
  void Release(int64_t n);
  void OnAddRound(StepReplies& r, PlanStep* step);

  // --- the set step of adding (bf_plan_set.cc) --------------------------------------------

  void SetBits(PlanStep* step);
  void SetPlain(Requests* req);
  void SetByScript(Requests* req);
  void OnSetStep(StepReplies& r, PlanStep* step);
  void OnPlainSet(StepReplies& r, PlanStep* step);
  void OnScriptSet(StepReplies& r, PlanStep* step);
  bool ResumeAfterReload(PlanStep* step);  // a set step waiting for fresh metadata
  void Resolve(PlanStep* step);
  void OnResolve(StepReplies& r, PlanStep* step);
  void ForgetOrphanBits();             // a plain set step wrote to a filter that is gone
  size_t MemberOf(size_t item) const;  // the member whose items hold `item`
  void FinishMembers(PlanStep* step);

  // --- reading (bf_plan_read.cc) ----------------------------------------------------------

  void ExistsRound(PlanStep* step);
  void OnExistsRound(StepReplies& r, PlanStep* step);
  void ExistsRest(PlanStep* step);
  void OnExistsRest(StepReplies& r, PlanStep* step);
  void CountsRound(PlanStep* step);
  void OnCountsRound(StepReplies& r, PlanStep* step);

  // --- dump and load (bf_plan_dump.cc) ----------------------------------------------------

  void DumpRound(PlanStep* step);
  void OnDumpRound(StepReplies& r, PlanStep* step);
  void LoadRound(PlanStep* step);

  static constexpr int kMaxRestarts = 5;
  static constexpr std::string_view kBusy = "-ERR filter metadata keeps changing, try again\r\n";

  std::unique_ptr<Plan> delegate_;  // a windowed filter's window plan
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
  bool reload_ = false;
  bool link_full_ = false;   // the upstream showed the newest link full
  int64_t reserve_ = 0;      // places asked for in the newest link this round
  int64_t placed_ = 0;       // places granted and used by items to set
  size_t count_len_at_ = 0;  // check step: the reply of STRLEN of the newest count key
  size_t incr_at_ = 0;       // check step: the reply of its INCRBY
  size_t set_at_ = 0;        // set step: the reply of the add script
  size_t target_ = 0;        // the link where the round's places are reserved
  // Set steps (bf_plan_set.cc): plain (one BITFIELD) or by the add script; the reply of the
  // validation after a plain write; the filter's id while the step waits for fresh metadata
  // (to resume a script, or to resolve the items in doubt after a plain write).
  bool plain_set_ = false;
  size_t post_at_ = 0;
  std::string resume_id_;
  std::vector<size_t> doubt_;  // items a plain write found new while a newer link existed

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
  // EXISTS state: the bits of each item the step in flight reads (the probe, then the rest);
  // whether that step reads the rest of the probed items' bits, and which items it reads, by
  // link.
  std::vector<BitSpan> spans_;
  bool exists_rest_ = false;
  std::vector<std::vector<size_t>> rest_items_;
  ChunkPos chunk_;
};

}  // namespace bloomproxy::filters::bf_plan_internal
