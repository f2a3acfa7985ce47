// Batches: commands on one filter or sketch, gathered during one loop turn from any number of
// clients (Client::JoinAnyBatch), that go upstream as one plan when the turn ends
// (Server::LaunchBatches).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "filters/common/plan.h"
#include "proxy/upstream/upstream.h"

namespace bloomproxy::proxy {

struct Pending;

// What a batch gathers: commands of one kind on one structure.
enum class BatchKind : uint8_t {
  kBfAdd,       // BF.ADD / BF.MADD
  kBfExists,    // BF.EXISTS / BF.MEXISTS
  kCmsIncrBy,   // CMS.INCRBY
  kCmsQuery,    // CMS.QUERY
  kCfAdd,       // CF.ADD / CF.ADDNX
  kCfExists,    // CF.EXISTS / CF.MEXISTS
  kTopkAdd,     // TOPK.ADD / TOPK.INCRBY
  kTdigestAdd,  // TDIGEST.ADD
};

// Commands of one kind on one filter or sketch, gathered during one loop turn from any number of
// clients, that go upstream as one plan when the turn ends: one BITFIELD per shard or part for
// all their items instead of one per command.
struct SketchBatch {
  BatchKind kind = BatchKind::kBfAdd;
  std::string key;
  UpstreamRef conn;      // may close (and be freed) before the batch goes upstream
  uint64_t conn_id = 0;  // conn's id(): a freed connection's address may be reused
  std::vector<std::string> items;
  std::vector<uint64_t> increments;  // CMS.INCRBY, TOPK.ADD / INCRBY: one per item
  std::vector<filters::PlanMember> members;
  std::vector<Pending*> slots;  // one per member

  // The same kind, sketch and connection: what a held batch is found by (Server::LaunchBatches).
  std::string Id() const;
  // Adds a later batch's commands after this one's.
  void Append(SketchBatch&& later);
};

}  // namespace bloomproxy::proxy
