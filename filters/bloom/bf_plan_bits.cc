// The items' bits, for the BF plan (bf_plan_state.h): where an item's bits are in a link's
// shards, the BITFIELD (set) and BITFIELD_RO (read) commands that reach them grouped by shard,
// the STRLEN checks that the shards they touch have their size, and reading an item's bits
// back from the replies. Adding, BF.EXISTS and BF.LOADCHUNK use them.
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "filters/bloom/bf_plan_state.h"
#include "filters/bloom/bloom.h"
#include "filters/common/plan_requests.h"
#include "filters/common/sharding_requests.h"
#include "protocol/encoder.h"

namespace bloomproxy::filters::bf_plan_internal {
namespace {

// "$3\r\nSET\r\n$2\r\nu1\r\n$<d>\r\n<offset>\r\n$1\r\n1\r\n" (GET: without the value): an
// offset in a shard has at most 10 digits (shards are under 512 MB).
constexpr size_t kMaxOpBytes = 64;

// Writes one op at `p`; returns the end.
char* EncodeBitOp(char* p, bool set, uint64_t offset) {
  constexpr std::string_view kSet = "$3\r\nSET\r\n$2\r\nu1\r\n$";
  constexpr std::string_view kGet = "$3\r\nGET\r\n$2\r\nu1\r\n$";
  std::memcpy(p, set ? kSet.data() : kGet.data(), kSet.size());
  p += kSet.size();
  char digits[24];
  const auto res = std::to_chars(digits, digits + sizeof(digits), offset);
  const size_t n = static_cast<size_t>(res.ptr - digits);
  if (n >= 10) *p++ = static_cast<char>('0' + n / 10);
  *p++ = static_cast<char>('0' + n % 10);
  *p++ = '\r';
  *p++ = '\n';
  // All of `digits` (a copy of fixed size, inlined): the op's room (kMaxOpBytes) holds them.
  std::memcpy(p, digits, sizeof(digits));
  p += n;
  *p++ = '\r';
  *p++ = '\n';
  if (set) {
    std::memcpy(p, "$1\r\n1\r\n", 7);
    p += 7;
  }
  return p;
}

}  // namespace

// Bit offsets of item `item` in link `link`, of its bits `span` (all, the probe or the rest):
// appends (shard, offset in the shard).
void BfPlan::ItemOffsets(size_t item, size_t link, BitSpan span,
                         std::vector<std::pair<uint64_t, uint64_t>>* out) {
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
  const uint32_t from = span == BitSpan::kRest ? 1 : 0;
  const uint32_t to = span == BitSpan::kProbe ? std::min<uint32_t>(1, p.k) : p.k;
  for (uint32_t i = from; i < to; ++i) {
    const uint64_t offset = RedisBitOffset(BitPosition(hashes_[item], i, p.bits));
    out->emplace_back(offset / shard_bits, offset % shard_bits);
  }
}

// BitOps (bf_plan_state.h): where each item's bits are in the replies of a set of BITFIELD
// commands.

// The ops of one BITFIELD (SET u1 <off> 1 per bit) or BITFIELD_RO (GET u1 <off>) per shard
// of `link` that `items` touch, in item order: every bit of each item, or the bits `spans`
// says (indexed by item).
void BfPlan::PlanBits(size_t link, const std::vector<size_t>& items, BitOps* ops,
                      const std::vector<BitSpan>* spans) {
  std::vector<std::pair<uint64_t, uint64_t>> offs;
  ops->shards.clear();
  ops->ops.clear();
  ops->k = meta_->links[link].k;
  ops->command.clear();
  ops->index.clear();
  ops->offsets.clear();
  ops->starts.assign(1, 0);
  ops->starts.reserve(items.size() + 1);
  ops->command.reserve(items.size() * ops->k);
  ops->index.reserve(items.size() * ops->k);
  ops->offsets.reserve(items.size() * ops->k);
  for (size_t j = 0; j < items.size(); ++j) {
    offs.clear();
    ItemOffsets(items[j], link, spans == nullptr ? BitSpan::kAll : (*spans)[items[j]], &offs);
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
    ops->starts.push_back(static_cast<uint32_t>(ops->offsets.size()));
  }
}

// STRLEN of shards of `link`: each must have the size it was created with. A shard deleted
// or overwritten would otherwise read as zeros (BITFIELD_RO of a missing key), and BITFIELD
// would create it anew, small, answering "new" for items the filter had.
void BfPlan::AddShardLengths(Requests* req, size_t link,
                             const std::vector<uint64_t>& shards) const {
  if (CheckedOutside()) return;
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
void BfPlan::AddBitfields(Requests* req, size_t link, bool set, BitOps* ops) {
  ops->first = req->count();
  const std::string_view command = set ? "BITFIELD" : ReadBitsCommand(config_->upstream);
  for (size_t c = 0; c < ops->shards.size(); ++c) {
    const std::string key = meta_->BitsKey(link, ops->shards[c]);
    std::string& out = req->Begin(64 + key.size() + ops->ops[c] * kMaxOpBytes);
    protocol::AppendArrayHeader(&out, 2 + static_cast<int64_t>(ops->ops[c]) * (set ? 4 : 3));
    protocol::AppendBulk(&out, command);
    protocol::AppendBulk(&out, key);
    // Encoded straight to RESP in the request buffer: a batch may carry thousands of ops.
    const size_t at = out.size();
    out.resize(at + ops->ops[c] * kMaxOpBytes);
    char* p = out.data() + at;
    for (size_t x = 0; x < ops->offsets.size(); ++x) {
      if (ops->command[x] == c) p = EncodeBitOp(p, set, ops->offsets[x]);
    }
    out.resize(static_cast<size_t>(p - out.data()));
    req->End(command);
    ReplyCheck& check = req->Last();
    check.kind = ReplyCheck::Kind::kBits;
    check.role = ReplyCheck::Role::kShard;
    check.link = static_cast<uint32_t>(link);
    check.shard = ops->shards[c];
    check.n = ops->ops[c];
  }
}

// STRLEN of the shards `items` touch in `link`, then their BITFIELD commands (of the bits
// `spans` says, or all).
void BfPlan::AddBitReads(Requests* req, size_t link, const std::vector<size_t>& items, BitOps* ops,
                         const std::vector<BitSpan>* spans) {
  PlanBits(link, items, ops, spans);
  AddShardLengths(req, link, ops->shards);
  AddBitfields(req, link, /*set=*/false, ops);
}

// True when op `x` of `ops` reads 1 (GET's value, or SET's old value). The replies were
// checked (kBits).
bool BfPlan::OpIsOne(const BitOps& ops, size_t x, StepReplies& replies) {
  const std::vector<int64_t>* values = replies.Ints(ops.first + ops.command[x]);
  const size_t op = ops.index[x];
  return values != nullptr && op < values->size() && (*values)[op] == 1;
}

// True when every bit read of the j-th item reads 1.
bool BfPlan::AllOnes(const BitOps& ops, size_t j, StepReplies& replies) {
  if (j + 1 >= ops.starts.size()) return false;
  for (size_t x = ops.starts[j]; x < ops.starts[j + 1]; ++x) {
    if (!OpIsOne(ops, x, replies)) return false;
  }
  return true;
}

// True when the first bit read of the j-th item reads 1.
bool BfPlan::FirstOne(const BitOps& ops, size_t j, StepReplies& replies) {
  return j + 1 < ops.starts.size() && ops.starts[j] < ops.starts[j + 1] &&
         OpIsOne(ops, ops.starts[j], replies);
}

}  // namespace bloomproxy::filters::bf_plan_internal
