// Batches (proxy/sketch/batch.h): opened by the commands of a loop turn, launched when the turn
// ends.
//
// A CMS or CF batch waits while the previous batch of the same kind on the same structure and
// connection is still upstream, and the commands of the turns meanwhile join it: under load the
// batches grow with the upstream's latency instead of piling up as many small ones, and a bigger
// batch repeats more cells, which the plan touches once each (filters/cms/cms_plan_cells.cc).
// Commands still take effect in order: a held batch goes upstream right after the one before it is
// answered.
#include "proxy/sketch/batch.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "filters/bloom/bf_plan.h"
#include "filters/bloom/window/window_rules.h"
#include "filters/cms/cms_plan.h"
#include "filters/cuckoo/cf_plan.h"
#include "filters/tdigest/tdigest_plan.h"
#include "filters/topk/topk_plan.h"
#include "protocol/key_slot.h"
#include "proxy/server/server.h"
#include "proxy/sketch/plan_runner.h"

namespace bloomproxy::proxy {
namespace {

// A batch that waits for the one before it on the same structure and connection (a BF batch
// goes at once: its plan validates and retries on its own).
bool IsHeld(BatchKind kind) { return kind != BatchKind::kBfAdd && kind != BatchKind::kBfExists; }

// A held batch goes upstream anyway past this many items (a bound on one request's size).
constexpr size_t kMaxHeldItems = 65536;
// A TDIGEST.ADD batch's script holds the server about 2 us per value (its compressions
// included): past this many values the batch goes upstream, so that one script holds the server
// for milliseconds, not the tens of milliseconds of 20,000 values.
constexpr size_t kMaxHeldTdigestValues = 4096;

size_t MaxHeldItems(BatchKind kind) {
  return kind == BatchKind::kTdigestAdd ? kMaxHeldTdigestValues : kMaxHeldItems;
}

}  // namespace

std::string SketchBatch::Id() const {
  return std::to_string(static_cast<int>(kind)) + ":" + std::to_string(conn_id) + ":" + key;
}

void SketchBatch::Append(SketchBatch&& later) {
  for (filters::PlanMember m : later.members) {
    m.start += items.size();
    members.push_back(m);
  }
  items.insert(items.end(), std::make_move_iterator(later.items.begin()),
               std::make_move_iterator(later.items.end()));
  increments.insert(increments.end(), later.increments.begin(), later.increments.end());
  slots.insert(slots.end(), later.slots.begin(), later.slots.end());
}

SketchBatch* Server::OpenBatch(BatchKind kind, std::string_view key, UpstreamConn* conn) {
  for (auto& b : batches_) {
    if (b->kind == kind && b->conn_id == conn->id() && b->key == key) return b.get();
  }
  auto b = std::make_unique<SketchBatch>();
  b->kind = kind;
  b->key.assign(key);
  b->conn = UpstreamRef(conn);
  b->conn_id = conn->id();
  batches_.push_back(std::move(b));
  return batches_.back().get();
}

void Server::LaunchBatches() {
  std::vector<std::unique_ptr<SketchBatch>> batches;
  batches.swap(batches_);
  for (auto& b : batches) {
    if (b->kind == BatchKind::kTopkAdd) {
      QueueTopkBatch(std::move(b));
      continue;
    }
    if (!IsHeld(b->kind)) {
      LaunchBfBatch(std::move(b));
      continue;
    }
    std::string id = b->Id();
    auto held = held_batches_.find(id);
    if (held == held_batches_.end()) {
      LaunchHeldBatch(std::move(b), std::move(id));
    } else if (held->second == nullptr) {
      held->second = std::move(b);  // waits for the one upstream
    } else {
      held->second->Append(std::move(*b));
      if (held->second->items.size() > MaxHeldItems(held->second->kind)) {
        LaunchHeldBatch(std::move(held->second), std::move(id));
      }
    }
  }
}

void Server::LaunchBfBatch(std::unique_ptr<SketchBatch> b) {
  filters::BfRequest request;
  request.command =
      b->kind == BatchKind::kBfExists ? filters::BfCommand::kMExists : filters::BfCommand::kMAdd;
  request.key = b->key;
  request.error_rate = bf_config_.defaults.error_rate;
  request.capacity = bf_config_.defaults.capacity;
  request.expansion = bf_config_.defaults.expansion;
  request.items.assign(b->items.begin(), b->items.end());
  // The batch's members are BF.ADD and BF.MADD of one name, parsed with the same rule: the
  // request that creates the filter must carry it too.
  if (const filters::WindowRule* rule = bf_config_.windows.For(request)) {
    filters::ApplyWindowRule(*rule, &request);
  }
  std::unique_ptr<filters::Plan> plan =
      filters::MakeBatchPlan(request, std::move(b->members), &filter_cache_, &bf_config_);
  PlanRunner::Run(this, std::move(b->slots), b->conn, std::move(plan), protocol::KeySlot(b->key));
}

std::unique_ptr<filters::Plan> Server::HeldBatchPlan(SketchBatch* b) {
  switch (b->kind) {
    case BatchKind::kCfAdd:
      return filters::MakeCfInsertBatchPlan(b->key, std::move(b->items), std::move(b->members),
                                            &cf_cache_, &cf_config_);
    case BatchKind::kCfExists:
      return filters::MakeCfCheckBatchPlan(b->key, std::move(b->items), std::move(b->members),
                                           &cf_cache_, &cf_config_);
    case BatchKind::kTdigestAdd:
      return filters::MakeTdigestAddBatchPlan(b->key, std::move(b->items), std::move(b->members),
                                              &tdigest_config_);
    case BatchKind::kTopkAdd:
      return filters::MakeTopkAddBatchPlan(b->key, std::move(b->items), std::move(b->increments),
                                           std::move(b->members), &topk_cache_, &topk_states_,
                                           &topk_config_);
    default: {
      const filters::CmsCommand command = b->kind == BatchKind::kCmsIncrBy
                                              ? filters::CmsCommand::kIncrBy
                                              : filters::CmsCommand::kQuery;
      return filters::MakeCmsBatchPlan(command, b->key, std::move(b->items),
                                       std::move(b->increments), std::move(b->members), &cms_cache_,
                                       &cms_config_);
    }
  }
}

void Server::LaunchHeldBatch(std::unique_ptr<SketchBatch> b, std::string id) {
  std::unique_ptr<filters::Plan> plan = HeldBatchPlan(b.get());
  // Upstream now: until it is answered, the next batch of its kind on the sketch waits.
  held_batches_.try_emplace(id);
  PlanRunner::Run(this, std::move(b->slots), b->conn, std::move(plan), protocol::KeySlot(b->key),
                  [this, id = std::move(id)] { BatchDone(id); });
}

void Server::QueueTopkBatch(std::unique_ptr<SketchBatch> b) {
  auto queue = topk_queues_.find(b->key);
  if (queue == topk_queues_.end()) {
    topk_queues_.try_emplace(b->key);
    return LaunchTopkBatch(std::move(b));
  }
  // A connection's commands stay in order: a later batch joins the one of its connection.
  for (auto& waiting : queue->second) {
    if (waiting->conn_id == b->conn_id && waiting->items.size() <= kMaxHeldItems) {
      waiting->Append(std::move(*b));
      return;
    }
  }
  queue->second.push_back(std::move(b));
}

void Server::LaunchTopkBatch(std::unique_ptr<SketchBatch> b) {
  std::unique_ptr<filters::Plan> plan = HeldBatchPlan(b.get());
  PlanRunner::Run(this, std::move(b->slots), b->conn, std::move(plan), protocol::KeySlot(b->key),
                  [this, key = b->key] { TopkBatchDone(key); });
}

void Server::TopkBatchDone(const std::string& key) {
  auto queue = topk_queues_.find(key);
  if (queue == topk_queues_.end()) return;
  if (queue->second.empty()) {
    topk_queues_.erase(queue);
    return;
  }
  std::unique_ptr<SketchBatch> next = std::move(queue->second.front());
  queue->second.pop_front();
  LaunchTopkBatch(std::move(next));
}

void Server::BatchDone(std::string id) {
  auto held = held_batches_.find(id);
  if (held == held_batches_.end()) return;
  std::unique_ptr<SketchBatch> next = std::move(held->second);
  held_batches_.erase(held);
  if (next != nullptr) LaunchHeldBatch(std::move(next), std::move(id));
}

}  // namespace bloomproxy::proxy
