// Plans: one client command (a BF.* command, or a key-level command on a filter's name) turned
// into rounds of upstream commands, and the replies folded back into the client's reply.
//
// A plan is a state machine without sockets. The proxy asks for the first step, sends its
// requests upstream on the client's connection, decodes the replies and hands them back, until
// the plan is done:
//
//   Start() ─► step{requests, n} ─► upstream ─► n replies ─► OnReplies() ─► step ... ─► done
//
// A finished step may still carry requests (cleanup, count updates): the proxy sends them
// before the client's next command and drops their replies.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "filters/bf_args.h"
#include "filters/bloom.h"
#include "protocol/reply_decoder.h"

namespace bloomproxy::filters {

// The settings plans need (from the proxy's configuration).
struct BfConfig {
  BfDefaults defaults;
  uint64_t max_shard_bytes = 64ULL * 1024 * 1024 - 16;
};

// What the proxy knows of one filter: its parameters (immutable once created) and links.
// The metadata lives in the filter's name, a Redis hash:
//
//   bloomproxy  "1"        marks the hash as a filter (layout version)
//   id          hex        random, part of every data key name
//   error capacity expansion options shard      the chain's parameters
//   l0 l1 ...   "bytes bits capacity k n2 error bpe"   one field per link (doubles as hex bits)
//
// and each link's item count in its count key (INCRBY), its bits in its shard keys.
struct FilterMeta {
  std::string id;
  std::string prefix;  // DataKeyPrefix(name)
  double error = 0;
  uint64_t capacity = 0;
  uint32_t expansion = 0;
  uint32_t options = kOptionsScaling;
  uint64_t shard_bytes = 0;
  std::vector<LinkParams> links;
  std::vector<int64_t> counts;  // items per link, as last seen (other proxies may add more)

  bool nonscaling() const { return (options & kOptNoScaling) != 0; }
  uint64_t ShardCount(size_t link) const;
  std::string BitsKey(size_t link, size_t shard) const;
  std::string CountKey(size_t link) const;
  // Every data key of the filter (bits and counts), for DEL, EXPIRE and RENAME.
  std::vector<std::string> DataKeys() const;
};

// Filters this proxy has seen, by name. Plans validate what they use on every round trip
// (the id and whether a newer link exists), so a stale entry costs a retry, never a wrong
// answer.
class FilterCache {
 public:
  std::shared_ptr<FilterMeta> Find(std::string_view name) const;
  void Put(std::string_view name, std::shared_ptr<FilterMeta> meta);
  void Erase(std::string_view name);
  size_t size() const { return map_.size(); }

 private:
  std::unordered_map<std::string, std::shared_ptr<FilterMeta>> map_;
};

// The replies to one step's requests, kept as the upstream's bytes and decoded on demand: the
// large BITFIELD replies of a batch (thousands of integers) are read without building a tree.
class StepReplies {
 public:
  explicit StepReplies(protocol::ReplyDecoder* decoder) : decoder_(decoder) {}

  // Appends one complete reply (copied).
  void Add(std::string_view frame);
  // Drops the first n replies (those of trailing requests).
  void Skip(size_t n) { first_ = std::min(first_ + n, ends_.size()); }

  size_t size() const { return ends_.size() - first_; }
  bool empty() const { return size() == 0; }
  // The raw bytes of reply i.
  std::string_view Frame(size_t i) const;
  bool IsErrorReply(size_t i) const { return i < size() && Frame(i)[0] == '-'; }
  // Reply i decoded by hiredis, on first use; null if it cannot be decoded or i is past the end.
  const redisReply* Get(size_t i);
  // Reply i when it is an array of integers, parsed once; null otherwise.
  const std::vector<int64_t>* Ints(size_t i);

 private:
  protocol::ReplyDecoder* decoder_;
  std::string bytes_;
  std::vector<size_t> ends_;
  size_t first_ = 0;
  std::vector<protocol::ReplyPtr> decoded_;
  std::vector<std::unique_ptr<std::vector<int64_t>>> ints_;
};

struct PlanStep {
  std::string requests;  // RESP requests to send upstream, in order
  size_t replies = 0;    // how many replies they produce
  bool done = false;     // the plan is over: `reply` goes to the client
  std::string reply;
};

class Plan {
 public:
  virtual ~Plan() = default;
  // For a plan that answers several coalesced commands: their replies, in member order, once
  // the plan is done without an error that concerns them all (then empty: the final step's
  // reply goes to every member).
  virtual const std::vector<std::string>& MemberReplies() const {
    static const std::vector<std::string> kNone;
    return kNone;
  }
  // Fills the first step.
  virtual void Start(PlanStep* step) = 0;
  // `replies` answer the previous step's requests, in order (a null entry could not be
  // decoded). Fills the next step.
  virtual void OnReplies(StepReplies& replies, PlanStep* step) = 0;
};

// One command of several coalesced into one plan: its items are items[start, start + count),
// and it is a multi-item command (BF.MADD / BF.MEXISTS: an array reply) or a single-item one.
struct BfMember {
  size_t start = 0;
  size_t count = 0;
  bool multi = false;
};

// A plan for a parsed BF command. `cache` and `config` outlive the plan. `deferred_error`,
// when not empty, is an argument error RedisBloom reports only once the key is known to be a
// filter (BF.INFO's field, BF.SCANDUMP's iterator): "not found" and WRONGTYPE come first.
std::unique_ptr<Plan> MakeBfPlan(const BfRequest& request, FilterCache* cache,
                                 const BfConfig* config, std::string deferred_error = {});

// One plan for several BF.ADD/BF.MADD (request.command kMAdd) or BF.EXISTS/BF.MEXISTS
// (kMExists) commands on the same filter, whose items are request.items split by `members`.
// The items are processed as the commands one after the other would be; each member gets the
// reply its own command would have had (MemberReplies()).
std::unique_ptr<Plan> MakeBatchPlan(const BfRequest& request, std::vector<BfMember> members,
                                    FilterCache* cache, const BfConfig* config);

// Key-level commands that must act on a whole filter when a key is one: DEL, UNLINK, TYPE,
// EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT, PERSIST, RENAME, RENAMENX. Returns null for any
// other command (then it is forwarded as it is).
std::unique_ptr<Plan> MakeKeyPlan(const std::vector<std::string_view>& args, FilterCache* cache);

// COMMAND entries of the BF.* commands (RESP2 arrays, Redis 7 layout), for the proxy to add to
// the upstream's COMMAND output.
std::vector<std::string> BfCommandEntries();

// The BF.* commands the proxy answers (lower case) and whether each writes: its COMMAND entry's
// ACL category is @write, else @read (both with @bloom).
struct BfCommandName {
  std::string_view name;
  bool writes;
};
std::vector<BfCommandName> BfCommandNames();
// The entry of one BF command by name (any case), or empty.
std::string BfCommandEntry(std::string_view name);

}  // namespace bloomproxy::filters
