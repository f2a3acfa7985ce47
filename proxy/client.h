// One client connection: reads commands, answers the ones that describe the connection itself,
// forwards the rest, and writes the replies back in the order the commands arrived.
//
//   socket ─► Buffer ─► RequestParser ─► Dispatch ─┬─ local reply ───────────────┐
//                                                  └─ UpstreamConn::Send ─ reply ┤
//   socket ◄─ Output ◄──── flush from the head while complete ◄─ replies_ (FIFO) ┘
#pragma once

#include <uv.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "filters/bf_plan.h"
#include "protocol/command_table.h"
#include "protocol/request_parser.h"
#include "proxy/buffer.h"
#include "proxy/output.h"

namespace bloomproxy::proxy {

class Client;
class CommandAcl;
class PlanRunner;
class Server;
struct BfBatch;
class UpstreamConn;

// What the client must learn from a reply besides forwarding it.
enum class Hook : uint8_t {
  kNone,
  kInfo,          // append the "# Proxy" section to the upstream's INFO
  kSelect,        // +OK: the connection's db is now `arg`
  kMulti,         // +OK: in a transaction
  kExec,          // EXEC/DISCARD: the transaction and the watches are over
  kWatch,         // +OK: watching keys
  kUnwatch,       // +OK: no longer watching
  kSubscribe,     // (p|s)(un)subscribe: each frame carries the new subscription count
  kMonitor,       // +OK: every later "+<timestamp> ..." frame is monitor output
  kTracking,      // +OK: CLIENT TRACKING is now `arg` (1 on, 0 off)
  kAuthUpstream,  // internal: the proxy's own AUTH on a new upstream connection
  kServerInfo,    // internal: INFO server/replication, to learn version, mode and role
  kUpstreamId,    // internal: CLIENT ID of a pinned connection
  kCommandAll,    // COMMAND / COMMAND LIST: the BF.* commands join the upstream's list
  kCommandCount,  // COMMAND COUNT: plus the BF.* commands
  kCommandInfo,   // COMMAND INFO: entries of the BF.* names (`arg`: their positions)
};

// A reply slot. It sits in its client's FIFO and, while its command is upstream, in that
// connection's FIFO too. When the client leaves first, `client` is cleared and the connection
// frees the slot when the reply arrives (the reply is dropped, the connection kept).
struct Pending {
  Client* client = nullptr;
  std::string data;         // reply bytes gathered before the slot reached the head
  int32_t frames_left = 1;  // replies still owed; -1 = one per subscription (UNSUBSCRIBE)
  int64_t arg = 0;          // hook argument
  Hook hook = Hook::kNone;
  bool in_flight = false;      // the command is upstream
  bool done = false;           // all replies are in `data`
  bool close_after = false;    // close the connection once this reply is written
  bool suppress = false;       // CLIENT REPLY OFF/SKIP: the reply is not written
  uint8_t sub_kind = 0;        // kSubscribe: 0 channel, 1 pattern, 2 shard
  uint64_t sent_ms = 0;        // when its request went upstream (loop time)
  bool subscribe = false;      // a (P|S)SUBSCRIBE: the client enters pub/sub mode
  PlanRunner* plan = nullptr;  // upstream replies of a plan step go to this runner
  bool batch_member = false;   // a command answered by a batch plan

  // Slots come and go once per command: freed ones are kept for reuse (per thread).
  static void* operator new(size_t size);
  static void operator delete(void* p);
};

// Case-insensitive ASCII comparison.
bool IEquals(std::string_view a, std::string_view b);

class Client {
 public:
  // Takes an accepted stream handle (`handle` was initialised on the server's loop).
  Client(Server* server, uint64_t id, bool is_unix);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  uv_stream_t* stream() { return &sock_.stream; }
  uv_handle_t* handle() { return &sock_.handle; }
  bool is_unix() const { return is_unix_; }

  // Starts reading after a successful accept.
  void Start();

  // Closes the connection now (pending replies are dropped).
  void Close();
  // Stops reading and closes once every pending reply is written (shutdown, QUIT).
  void CloseWhenDrained();
  bool closing() const { return closing_; }

  // An upstream reply frame for `slot` (the head of `conn`'s FIFO). Returns true when the slot
  // is complete and must be popped from the connection's FIFO.
  bool OnUpstreamFrame(UpstreamConn* conn, Pending* slot, std::string_view frame);
  // A frame nobody asked for: pub/sub messages and MONITOR output on the pinned connection.
  // Returns false if `frame` is not one (then it is a reply).
  bool OnPush(UpstreamConn* conn, std::string_view frame);
  // The pinned connection died; the connection state it held is gone.
  void OnPinLost();
  // A plan started for `slot` is over; `reply` is the client's reply.
  void OnPlanDone(Pending* slot, std::string reply);

  // Writes what is queued (called once per loop turn by the server).
  void Flush();

  // Gives back the input and output buffers while the client is idle (called from the cron),
  // so thousands of idle connections cost little memory.
  void ReleaseIdleMemory();

  // For CLIENT LIST / INFO and the idle timeout.
  uint64_t id() const { return id_; }
  uint64_t last_interaction_ms() const { return last_interaction_ms_; }
  bool ExemptFromTimeout() const;
  bool has_pending() const { return !replies_.empty() || !out_.empty(); }
  std::string InfoLine() const;
  bool in_pubsub() const { return channels_ + patterns_ + shard_channels_ > 0; }

 private:
  static void OnAlloc(uv_handle_t* h, size_t suggested, uv_buf_t* buf);
  static void OnRead(uv_stream_t* s, ssize_t nread, const uv_buf_t* buf);
  static void OnWrite(uv_write_t* req, int status);
  static void OnClose(uv_handle_t* h);

  // Why reading is paused (bits of paused_).
  static constexpr uint8_t kPauseBarrier = 1;       // replies awaited before switching connection
  static constexpr uint8_t kPauseBackpressure = 2;  // too many commands upstream
  static constexpr uint8_t kPauseClosing = 4;       // QUIT, protocol error or shutdown
  static constexpr uint8_t kPausePlan = 8;          // a plan runs: its steps come first
  static constexpr uint8_t kPauseOutput = 16;       // too much output the client has not read

  enum class Dispatched {
    kDone,        // handled (forwarded or answered)
    kRetryLater,  // paused: parse the same command again on resume
    kStop,        // handled, and read no further commands now
    kForward,     // (local handlers) not for the proxy to answer: forward it
  };

  void ProcessInput();
  void ProcessCommands();
  std::string AddBfCommands(Hook hook, std::string_view frame);
  // How many commands of this client may be upstream at once.
  size_t MaxInFlight() const;
  std::string FillBfCommandInfo(int64_t positions, std::string_view frame);
  Dispatched Dispatch(const protocol::Command& cmd);
  // Redis's checks before running a command: an unknown subcommand or a wrong number of
  // arguments is answered (true) as Redis answers it.
  bool RejectMalformed(const protocol::Command& cmd, const protocol::CommandInfo& info,
                       const protocol::CommandInfo* sub);
  // Answers a command the proxy refuses; inside a transaction, also makes the upstream's EXEC
  // fail with EXECABORT, as Redis does after rejecting a queued command.
  void Refuse(std::string_view error);
  Dispatched HandleLocal(const protocol::Command& cmd, std::string_view lower_name);
  Dispatched HandleClient(const protocol::Command& cmd);
  Dispatched HandleClientKill(const protocol::Command& cmd);
  // Replaces the proxy client id of CLIENT UNBLOCK by the upstream id of that client's pinned
  // connection; leaves *out empty when the id is not an integer (the upstream's error).
  void RewriteUnblock(const protocol::Command& cmd, std::string* out);
  Dispatched HandleHello(const protocol::Command& cmd);
  Dispatched HandleAuth(const protocol::Command& cmd);
  Dispatched HandleInfo(const protocol::Command& cmd);
  Dispatched HandleReset();
  // BF.* commands and key-level commands on filters (filters/bf_plan.h); kForward when the
  // command is not one of them.
  Dispatched HandleFilterCommand(const protocol::Command& cmd, std::string_view lower_name);
  Dispatched StartPlan(std::unique_ptr<filters::Plan> plan);
  // The connection a plan of this client runs on; null when the client must wait or the
  // upstream is unavailable (then *result says what Dispatch returns).
  UpstreamConn* PlanConnection(Dispatched* result);
  // A reply slot, at the back of the client's FIFO, for a command sent to `target`.
  Pending* NewUpstreamSlot(UpstreamConn* target);
  // The same for a plan's reply (the plan counts as running until it is answered).
  Pending* NewPlanSlot(UpstreamConn* target);
  // BF.ADD/MADD/EXISTS/MEXISTS join the loop turn's batch for their filter.
  Dispatched JoinBatch(const filters::BfRequest& request, bool exists);
  // True when `cmd` would join the batch this client has open (so it need not wait for it).
  bool JoinsRunningBatches(const protocol::Command& cmd) const;
  void ReplyProtocolError(const std::string& error);
  static bool InfoWantsProxySection(const protocol::Command& cmd);
  // Replaces the proxy client id after REDIRECT by the upstream id of that client's pinned
  // connection; leaves *out empty when there is nothing to rewrite.
  void RewriteTrackingRedirect(const protocol::Command& cmd, std::string* out);
  void LogFailedAuth(std::string_view user) const;
  bool CheckUser(std::string_view user, std::string_view password) const;

  // Reply slots.
  Pending* NewSlot();
  void ReplyLocal(std::string_view bytes, bool close_after = false);
  void CompleteSlot(Pending* slot);
  void DeliverHead();
  void Append(std::string_view bytes);

  // Pinning.
  bool NeedsPin() const;
  void MaybeReleasePin();
  void DropPin();
  void ApplyHook(Pending* slot, std::string_view frame);
  void ApplySubscriptionFrame(Pending* slot, std::string_view frame);

  void MarkDirty();
  void Pause(uint8_t reason);
  void Resume(uint8_t reason);

  Server* server_;
  const uint64_t id_;
  const bool is_unix_;
  union {
    uv_tcp_t tcp;
    uv_pipe_t pipe;
    uv_handle_t handle;
    uv_stream_t stream;
  } sock_;
  uv_write_t write_req_;

  Buffer in_;
  Output out_;
  protocol::RequestParser parser_;
  protocol::Command cmd_;
  std::deque<Pending*> replies_;

  // Upstream routing.
  size_t shared_slot_ = 0;
  UpstreamConn* pinned_ = nullptr;
  UpstreamConn* inflight_conn_ = nullptr;  // where this client's in-flight commands are
  size_t inflight_ = 0;

  // Connection state, as the proxy tracks it. Dispatch-time flags route commands; reply-time
  // ones decide when a pinned connection is clean again.
  bool in_multi_ = false;    // MULTI sent, EXEC/DISCARD not yet
  int64_t multi_count_ = 0;  // commands queued since MULTI (CLIENT LIST's multi=)
  int subscribing_ = 0;      // (P|S)SUBSCRIBE commands upstream
  bool watching_ = false;    // WATCH sent, not yet ended by EXEC/DISCARD/UNWATCH
  bool monitor_ = false;
  bool tracking_ = false;
  uint64_t tracking_redirect_ = 0;  // proxy client id named by CLIENT TRACKING ... REDIRECT
  uint64_t pending_redirect_ = 0;   // the same, until the upstream accepts the command
  int64_t db_ = 0;                  // confirmed by the upstream
  int64_t channels_ = 0, patterns_ = 0, shard_channels_ = 0;
  bool reply_off_ = false;   // CLIENT REPLY OFF
  bool reply_skip_ = false;  // CLIENT REPLY SKIP: the next command's reply is dropped

  // Identity.
  bool authenticated_ = false;
  std::string user_ = "default";
  const CommandAcl* acl_ = nullptr;  // user_'s command rules; nullptr: every command
  std::string name_;
  std::string lib_name_, lib_ver_;
  std::string_view last_cmd_ = "NULL";  // a name from the command table (static storage)
  std::string addr_, laddr_;
  uint64_t created_ms_ = 0;
  uint64_t last_interaction_ms_ = 0;

  uint8_t paused_ = 0;  // kPause* bits
  bool reading_ = false;
  bool closing_ = false;
  bool close_when_drained_ = false;
  bool input_closed_ = false;  // QUIT or protocol error seen: later input is ignored
  bool flush_queued_ = false;
  bool processing_ = false;
  bool close_asap_ = false;  // past the pub/sub output limit: closed at the next flush
  // Bound on the replies in flight (see MaxInFlight): the largest recent reply (bytes, decays
  // slowly) and a window that starts small and grows with every reply received.
  size_t reply_peak_ = 64;
  size_t window_ = 64;
  int running_plans_ = 0;  // plans and batch members of this client not yet answered
  int batch_members_ = 0;  // of which batch members
  // The batches the running members are in: same kind, filter and connection (a client's
  // further BF.ADDs to the same filter may join later batches without waiting).
  bool batch_exists_ = false;
  std::string batch_key_;
  UpstreamConn* batch_conn_ = nullptr;
  std::vector<std::string> bf_names_;  // the names of the COMMAND INFO in flight  // inside
                                       // ProcessInput: Resume only clears pause bits

  friend class Server;
};

}  // namespace bloomproxy::proxy
