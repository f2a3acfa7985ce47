// BF.* and CMS.* inside MULTI (docs/transactions.md). Outside a transaction a command is a plan
// of several round trips that reads, then writes, and starts over when another proxy changed the
// structure meanwhile; inside one, everything must happen when EXEC runs, atomically with the
// commands around it, and nothing can start over. So each such command is queued, in its place in
// the client's own transaction, as ONE script that does the whole command against whatever the
// keys hold when EXEC runs (creation, scaling, every link's bits, counts), and answers raw results;
// the proxy turns that answer into RedisBloom's reply in EXEC's array.
//
//   client:    MULTI   BF.ADD f a          SET s 1   EXEC
//   upstream:  MULTI   EVAL <bf script> 2 f <marker> ADD <hash of a> ...   SET s 1   EXEC
//   EXEC:      *2 [script's answer] +OK   ->   *2 :1 +OK
//
// Every script shares one prelude per family (the layout, the hash maths, creation); the parts
// that depend only on the arguments (an item's hashes, a new structure's parameters, a random id)
// are worked out here and passed as arguments. Pure; no sockets.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "filters/common/sketch_resp3.h"
#include "protocol/reply_decoder.h"

namespace bloomproxy::filters {

struct BfConfig;
struct CmsConfig;
struct CfConfig;
struct TopkConfig;
struct TdigestConfig;

// One BF.* or CMS.* command queued in a transaction.
class QueuedSketch {
 public:
  virtual ~QueuedSketch() = default;
  // What is queued upstream in the command's place (RESP): the script, or a PING when the
  // command's reply is already known (an argument error RedisBloom gives when EXEC runs it).
  const std::string& request() const { return request_; }
  // The command's reply, in RESP2 bytes, from `answer`: what its request answered in EXEC's
  // array (one complete frame). A reply that makes no sense gives an error reply, never a
  // made-up answer.
  virtual std::string Reply(std::string_view answer, protocol::ReplyDecoder* decoder) const = 0;

  // How the command's RESP3 reply differs from its RESP2 one (filters/common/sketch_resp3.h; kSame
  // unless set). Reply always makes the RESP2 reply; for a client speaking RESP3 when EXEC runs
  // the command, the caller rewrites it with ToResp3.
  Resp3Shape resp3_shape() const { return resp3_shape_; }
  void set_resp3_shape(Resp3Shape shape) { resp3_shape_ = shape; }

 protected:
  std::string request_;

 private:
  Resp3Shape resp3_shape_ = Resp3Shape::kSame;
};

// A command whose reply is known when it is queued: PING is queued in its place.
class KnownReply : public QueuedSketch {
 public:
  explicit KnownReply(std::string reply);
  std::string Reply(std::string_view answer, protocol::ReplyDecoder* decoder) const override;

 private:
  std::string reply_;
};

// A command whose arguments were refused before EXEC runs anything: Redis refuses a wrong
// arity (the sketch command table's) when it queues the command, and the transaction then aborts
// with EXECABORT (null, *refusal set to `error`); any other such error is the command's reply
// when EXEC runs it (a KnownReply).
std::unique_ptr<QueuedSketch> QueueRefused(const std::vector<std::string_view>& args,
                                           std::string error, std::string* refusal);

// Prepares BF.* command `args` (args[0] is the name, any case) for a transaction. Null with
// *refusal set when Redis refuses it when queueing it (a wrong number of arguments: the
// transaction then aborts at EXEC with EXECABORT).
std::unique_ptr<QueuedSketch> QueueBfCommand(const std::vector<std::string_view>& args,
                                             const BfConfig& config, std::string* refusal);
// The same for CMS.* commands.
std::unique_ptr<QueuedSketch> QueueCmsCommand(const std::vector<std::string_view>& args,
                                              const CmsConfig& config, std::string* refusal);
// The same for CF.* commands (filters/cuckoo/multi_cf.cc).
std::unique_ptr<QueuedSketch> QueueCfCommand(const std::vector<std::string_view>& args,
                                             const CfConfig& config, std::string* refusal);
// The same for TOPK.* commands (filters/topk/multi_topk.cc).
std::unique_ptr<QueuedSketch> QueueTopkCommand(const std::vector<std::string_view>& args,
                                               const TopkConfig& config, std::string* refusal);
// The same for TDIGEST.* commands (filters/tdigest/multi_tdigest.cc).
std::unique_ptr<QueuedSketch> QueueTdigestCommand(const std::vector<std::string_view>& args,
                                                  const TdigestConfig& config,
                                                  std::string* refusal);

}  // namespace bloomproxy::filters
