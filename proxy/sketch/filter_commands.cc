// BF.* and CMS.* commands: plans (filters/) run on the client's connection, BF.ADD/EXISTS join the
// loop turn's batch for their filter, and the client's later commands wait until the plan has
// answered. Key commands on a filter's name (the command table's kTraitFilterKey) are one Lua
// script each (filters/common/key_scripts.h), sent like any command.
#include "filters/bloom/window/window_rules.h"
#include "filters/cms/cms_plan.h"
#include "filters/common/key_layout.h"
#include "filters/common/sketch_resp3.h"
#include "filters/guava/guava_plan.h"
#include "protocol/errors.h"
#include "protocol/internal_keys.h"
#include "protocol/key_slot.h"
#include "proxy/client/client.h"
#include "proxy/server/server.h"
#include "proxy/sketch/plan_runner.h"
#include "proxy/upstream/activity.h"
#include "proxy/upstream/cluster_router.h"
#include "proxy/upstream/upstream.h"

namespace bloomproxy::proxy {

using filters::BfCommand;
using protocol::Command;

namespace {

constexpr std::string_view kNotOneServer =
    "-ERR bloomproxy: behind a sharding proxy CMS.MERGE needs the destination and every source "
    "under one {hash tag}, so that they are on one server\r\n";

// The shape of a BF.*/CMS.* command's reply for a client speaking `resp` (0: as the plan makes
// it, in RESP2).
uint8_t Resp3ShapeFor(protocol::Resp resp, const Command& cmd) {
  if (resp != protocol::Resp::k3) return 0;
  return static_cast<uint8_t>(filters::Resp3ShapeOf(cmd.args));
}

bool Writes(BfCommand c) {
  return c == BfCommand::kReserve || c == BfCommand::kAdd || c == BfCommand::kMAdd ||
         c == BfCommand::kInsert || c == BfCommand::kLoadChunk;
}

}  // namespace

void Client::OnPlanDone(Pending* slot, std::string reply) {
  // A RESP3 client's BF.*/CMS.* reply: the plan made the RESP2 one.
  if (slot->resp3_shape != 0) {
    reply = filters::ToResp3(static_cast<filters::Resp3Shape>(slot->resp3_shape), reply);
  }
  if (slot->hook == Hook::kHideKeys) reply = protocol::HideInternalKeys(reply, slot->arg != 0);
  if (slot->hook != Hook::kNone) ApplyHook(slot, reply);
  slot->done = true;
  if (!slot->suppress) slot->data = std::move(reply);
  if (inflight_ > 0) --inflight_;
  if (running_plans_ > 0) --running_plans_;
  if (slot->batch_member && batch_members_ > 0) --batch_members_;
  DeliverHead();
  if (inflight_ == 0) MaybeReleasePin();
  if (running_plans_ == 0) Resume(kPausePlan);
  if (inflight_ == 0 && (paused_ & kPauseBarrier)) Resume(kPauseBarrier);
}

Client::Dispatched Client::HandleFilterCommand(const Command& cmd) {
  if (server_->bf_emulate()) {
    // A key command on an expanding Guava filter's name, which is no Redis key.
    const filters::LayoutRule* rule = nullptr;
    bool writes = false;
    if (std::unique_ptr<filters::Plan> plan =
            filters::MakeExpandingKeyPlan(cmd.args, server_->bf_config().layouts, &rule, &writes)) {
      if (!ExpandingKeysTogether(cmd.args[1], *rule)) {
        ReplyLocal(protocol::errors::kCrossSlot);
        return Dispatched::kDone;
      }
      return StartPlan(cmd.args[1], std::move(plan), writes);
    }
  }
  filters::SketchFamily family;
  if (!filters::LookupSketchCommand(cmd.args[0], &family) || !server_->emulates(family)) {
    return Dispatched::kForward;
  }
  if (family == filters::SketchFamily::kCms) return HandleCmsCommand(cmd);
  if (family == filters::SketchFamily::kCuckoo) return HandleCfCommand(cmd);
  if (family == filters::SketchFamily::kTopk) return HandleTopkCommand(cmd);
  if (family == filters::SketchFamily::kTdigest) return HandleTdigestCommand(cmd);
  BfCommand bf;
  if (filters::LookupBfCommand(cmd.args[0], &bf)) {
    filters::BfRequest request;
    const filters::BfConfig& config = server_->bf_config();
    std::string error =
        filters::ParseBfRequestWithWindows(cmd.args, config.defaults, config.windows, &request);
    // BF.INFO's field and BF.SCANDUMP's iterator are checked after the key, as RedisBloom does.
    // (Its arity is right then: three arguments. The key may be empty.)
    const bool deferred =
        !error.empty() && cmd.args.size() == 3 &&
        (request.command == BfCommand::kInfo || request.command == BfCommand::kScanDump);
    if (!error.empty() && !deferred) {
      ReplyLocal(error);
      return Dispatched::kDone;
    }
    if (const filters::LayoutRule* rule = server_->bf_config().layouts.Match(request.key)) {
      return StartLayoutPlan(request, *rule, deferred ? std::move(error) : std::string(),
                             Writes(bf));
    }
    if (server_->sharding_proxy() && !filters::KeptWholeBehindShardingProxy(request.key)) {
      ReplyLocal(protocol::errors::kNotKeptWhole);
      return Dispatched::kDone;
    }
    if (!deferred && (bf == BfCommand::kAdd || bf == BfCommand::kMAdd)) {
      return JoinBatch(request, /*exists=*/false);
    }
    if (!deferred && (bf == BfCommand::kExists || bf == BfCommand::kMExists)) {
      return JoinBatch(request, /*exists=*/true);
    }
    return StartPlan(request.key,
                     filters::MakeBfPlan(request, &server_->filter_cache(), &server_->bf_config(),
                                         deferred ? std::move(error) : std::string()),
                     Writes(bf));
  }
  return Dispatched::kForward;
}

bool Client::ExpandingKeysTogether(std::string_view name, const filters::LayoutRule& rule) const {
  // On a cluster or behind a sharding proxy, an expanding filter's keys (NAME-0 .. NAME-c and
  // the cursor) are on one node only under one hash tag.
  if (!server_->router().cluster() && !server_->sharding_proxy()) return true;
  bool tagged = false;
  bool cursor_tagged = false;
  const std::string cursor = rule.CursorKey(name);
  const std::string_view tag = protocol::HashTag(name, &tagged);
  return tagged && protocol::HashTag(cursor, &cursor_tagged) == tag && cursor_tagged;
}

Client::Dispatched Client::StartLayoutPlan(const filters::BfRequest& request,
                                           const filters::LayoutRule& rule,
                                           std::string deferred_error, bool writes) {
  if (rule.expanding() && !ExpandingKeysTogether(request.key, rule)) {
    ReplyLocal(protocol::errors::kCrossSlot);
    return Dispatched::kDone;
  }
  return StartPlan(request.key,
                   filters::MakeGuavaPlan(request, rule, server_->bf_config().upstream,
                                          std::move(deferred_error)),
                   writes);
}

bool Client::OnOneServer(std::string_view key, const std::vector<std::string_view>& sources,
                         std::string_view not_one_server) {
  // A multi-key command's keys must be in one slot on Redis Cluster, and under one hash tag
  // behind a sharding proxy; each name's own keys follow its slot (filters/common/key_layout.h).
  std::vector<std::string_view> names = {key};
  names.insert(names.end(), sources.begin(), sources.end());
  bool has_tag = false;
  for (std::string_view name : names) {
    if (server_->sharding_proxy() &&
        (!filters::KeptWholeBehindShardingProxy(name) ||
         protocol::HashTag(name, &has_tag) != protocol::HashTag(key, &has_tag))) {
      ReplyLocal(name == key ? protocol::errors::kNotKeptWhole : not_one_server);
      return false;
    }
    if (server_->router().cluster() && protocol::KeySlot(name) != protocol::KeySlot(key)) {
      ReplyLocal(protocol::errors::kCrossSlot);
      return false;
    }
  }
  return true;
}

Client::Dispatched Client::HandleCmsCommand(const Command& cmd) {
  filters::CmsRequest request;
  std::string error = filters::ParseCmsRequest(cmd.args, &request, server_->cms_config().max_bytes);
  if (!error.empty() && request.error_order == filters::CmsErrorOrder::kNow) {
    ReplyLocal(error);
    return Dispatched::kDone;
  }
  // Every key a plan touches is in its sketches' slot (filters/cms/cms_meta.h).
  if (!OnOneServer(request.key, request.sources, kNotOneServer)) return Dispatched::kDone;
  // INCRBY and QUERY join this loop turn's batch on the sketch (one BITFIELD for all); a
  // command with an error still to report after the key check runs alone.
  if (error.empty() && request.command == filters::CmsCommand::kQuery) {
    return JoinAnyBatch(BatchKind::kCmsQuery, request.key, request.items, {}, true);
  }
  if (error.empty() && request.command == filters::CmsCommand::kIncrBy) {
    std::vector<std::string_view> items;
    std::vector<uint64_t> increments;
    for (const filters::CmsIncrement& inc : request.increments) {
      items.push_back(inc.item);
      increments.push_back(inc.value);
    }
    return JoinAnyBatch(BatchKind::kCmsIncrBy, request.key, items, increments, true);
  }
  const bool writes = request.command != filters::CmsCommand::kQuery &&
                      request.command != filters::CmsCommand::kInfo;
  return StartPlan(request.key,
                   filters::MakeCmsPlan(request, std::move(error), &server_->cms_cache(),
                                        &server_->cms_config()),
                   writes);
}

bool Client::HidesInternalKeys(const Command& cmd, int64_t* scan) const {
  const bool scanning = IEquals(cmd.args[0], "scan");
  if (server_->emulated() == 0 || !(scanning || IEquals(cmd.args[0], "keys"))) return false;
  *scan = scanning ? 1 : 0;
  return true;
}

bool Client::RewriteKeyCommand(const Command& cmd, std::string* request) {
  if (!filters::KeyCommandRequest(cmd.args, request, server_->bf_config().upstream)) return false;
  // The names may stop being (or become) filters: the cache learns them again when used.
  for (std::string_view name : filters::KeyCommandNames(cmd.args)) {
    server_->filter_cache().Erase(name);
    server_->cms_cache().Erase(name);
    server_->cf_cache().Erase(name);
    server_->topk_cache().Erase(name);
  }
  return true;
}

bool Client::JoinsRunningBatches(const Command& cmd) const {
  // Only when everything this client waits for is batches of the same kind on the same filter:
  // a later batch's bits are written after an earlier one's (same connection, in order), so
  // the client's commands still take effect in order.
  if (batch_members_ != running_plans_ || cmd.args.size() < 3) return false;
  BatchKind kind;
  return BatchKindOf(cmd, &kind) && kind == batch_kind_ && cmd.args[1] == batch_key_;
}

bool Client::BatchKindOf(const Command& cmd, BatchKind* kind) const {
  BfCommand bf;
  filters::CmsCommand cms;
  if (server_->bf_emulate() && filters::LookupBfCommand(cmd.args[0], &bf)) {
    if (bf == BfCommand::kExists || bf == BfCommand::kMExists) *kind = BatchKind::kBfExists;
    if (bf == BfCommand::kAdd || bf == BfCommand::kMAdd) *kind = BatchKind::kBfAdd;
    return bf == BfCommand::kExists || bf == BfCommand::kMExists || bf == BfCommand::kAdd ||
           bf == BfCommand::kMAdd;
  }
  if (server_->cms_emulate() && filters::LookupCmsCommand(cmd.args[0], &cms)) {
    *kind = cms == filters::CmsCommand::kIncrBy ? BatchKind::kCmsIncrBy : BatchKind::kCmsQuery;
    return cms == filters::CmsCommand::kIncrBy || cms == filters::CmsCommand::kQuery;
  }
  if (server_->cf_emulate() && CfBatchKindOf(cmd, kind)) return true;
  if (server_->emulates(filters::SketchFamily::kTdigest) && TdigestBatchKindOf(cmd, kind)) {
    return true;
  }
  return server_->emulates(filters::SketchFamily::kTopk) && TopkBatchKindOf(cmd, kind);
}

UpstreamConn* Client::PlanConnection(std::string_view key, bool writes, Dispatched* result) {
  // A filter's keys are all in its name's slot (filters/common/key_layout.h): its node runs the
  // plan.
  UpstreamPool* pool = server_->router().ForSlot(protocol::KeySlot(key));
  // While the upstream holds writes back (CLIENT PAUSE WRITE), a writing plan on a shared
  // connection would hold back every read queued behind it.
  const bool own = writes && pinned_ == nullptr && UpstreamActivity::WritesPaused();
  bool acquired = false;
  return TargetFor(pool, own, result, &acquired);
}

Pending* Client::NewPlanSlot(UpstreamConn* target) {
  ++running_plans_;
  return NewUpstreamSlot(target);
}

Client::Dispatched Client::JoinBatch(const filters::BfRequest& request, bool exists) {
  const bool multi = request.command == BfCommand::kMAdd || request.command == BfCommand::kMExists;
  return JoinAnyBatch(exists ? BatchKind::kBfExists : BatchKind::kBfAdd, request.key, request.items,
                      {}, multi);
}

Client::Dispatched Client::JoinAnyBatch(BatchKind kind, std::string_view key,
                                        const std::vector<std::string_view>& items,
                                        const std::vector<uint64_t>& increments, bool multi,
                                        bool nx) {
  const bool writes = kind == BatchKind::kBfAdd || kind == BatchKind::kCmsIncrBy ||
                      kind == BatchKind::kCfAdd || kind == BatchKind::kTopkAdd ||
                      kind == BatchKind::kTdigestAdd;
  Dispatched result = Dispatched::kDone;
  UpstreamConn* target = PlanConnection(key, writes, &result);
  if (target == nullptr) return result;
  if (batch_members_ > 0 && (batch_kind_ != kind || batch_key_ != key || batch_conn_ != target)) {
    Pause(kPausePlan);
    return Dispatched::kRetryLater;
  }
  SketchBatch* batch = server_->OpenBatch(kind, key, target);
  Pending* p = NewPlanSlot(target);
  p->in_flight = true;
  // Batches are joined only while Dispatch handles cmd_, the command this slot answers.
  p->resp3_shape = Resp3ShapeFor(resp_, cmd_);
  p->batch_member = true;
  if (writes && target->shared()) p->MarkSharedWrite();
  if (batch_members_++ == 0) {
    batch_kind_ = kind;
    batch_key_.assign(key);
    batch_conn_ = target;
  }
  filters::BfMember member;
  member.start = batch->items.size();
  member.count = items.size();
  member.multi = multi;
  member.nx = nx;
  batch->items.insert(batch->items.end(), items.begin(), items.end());
  batch->increments.insert(batch->increments.end(), increments.begin(), increments.end());
  batch->members.push_back(member);
  batch->slots.push_back(p);
  return Dispatched::kDone;
}

Client::Dispatched Client::StartPlan(std::string_view key, std::unique_ptr<filters::Plan> plan,
                                     bool writes) {
  Dispatched result = Dispatched::kDone;
  UpstreamConn* target = PlanConnection(key, writes, &result);
  if (target == nullptr) return result;
  // Later commands of this client wait for the plan (see Dispatch).
  Pending* p = NewPlanSlot(target);
  // Plans start only while Dispatch handles cmd_, the command this slot answers; the shape is
  // set before the plan runs, as it may answer at once.
  p->resp3_shape = Resp3ShapeFor(resp_, cmd_);
  if (writes && target->shared()) p->MarkSharedWrite();
  PlanRunner::Run(server_, {p}, UpstreamRef(target), std::move(plan), protocol::KeySlot(key));
  return Dispatched::kDone;
}

}  // namespace bloomproxy::proxy
