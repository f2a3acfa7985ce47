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
#include <vector>

#include "protocol/reply_decoder.h"

namespace bloomproxy::filters {

// The replies to one step's requests, kept as the upstream's bytes and decoded on demand: the
// large BITFIELD replies of a batch (thousands of integers) are read without building a tree.
class StepReplies {
 public:
  // `decoder` decodes the replies Get() asks for; it outlives this.
  explicit StepReplies(protocol::ReplyDecoder* decoder) : decoder_(decoder) {}

  // Appends one complete reply (copied).
  void Add(std::string_view frame);
  // Drops the first n replies (those of trailing requests).
  void Skip(size_t n) { first_ = std::min(first_ + n, ends_.size()); }

  // The number of replies held, skipped ones left out.
  size_t size() const { return ends_.size() - first_; }
  // Whether no reply is held (or all were skipped).
  bool empty() const { return size() == 0; }
  // The raw bytes of reply i.
  std::string_view Frame(size_t i) const;
  // Whether reply i is an error reply (false when i is past the end).
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

// One command of several coalesced into one plan: its items are items[start, start + count),
// and it is a multi-item command (BF.MADD / BF.MEXISTS / CF.MEXISTS / CMS.*: an array reply) or a
// single-item one.
struct PlanMember {
  size_t start = 0;
  size_t count = 0;
  bool multi = false;
  bool nx = false;  // CF.ADDNX in a batch of CF.ADD: its item goes in only when absent
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

}  // namespace bloomproxy::filters
