// One client connection: reads commands, answers the ones that describe the connection itself,
// forwards the rest, and writes the replies back in the order the commands arrived.
//
//   socket ─► Buffer ─► RequestParser ─► Dispatch ─┬─ local reply ───────────────┐
//                                                  └─ UpstreamConn::Send ─ reply ┤
//   socket ◄─ Output ◄──── flush from the head while complete ◄─ replies_ (FIFO) ┘
//
// The client's code is split by concern: client.cc (I/O, reply slots, pinning), dispatch.cc
// (routing by the command table's rules), reply_hooks.cc (what replies change), transaction.cc
// (commands inside MULTI), tunnel.cc (raw byte tunnels), filter_commands.cc (BF.* and key
// commands on filters), local_commands.cc (commands the proxy answers).
#pragma once

#include <uv.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "filters/bloom/bf_plan.h"
#include "filters/common/multi_command.h"
#include "protocol/command_table.h"
#include "protocol/encoder.h"
#include "protocol/module_replies.h"
#include "protocol/request_parser.h"
#include "proxy/client/buffer.h"
#include "proxy/client/output.h"
#include "proxy/sketch/batch.h"

namespace bloomproxy::proxy {

class Client;
class CommandAcl;
class MonitorFilter;
class PlanRunner;
class ReplySink;
class Server;
struct SketchBatch;

class UpstreamConn;
class UpstreamPool;

// What the client must learn from a reply besides forwarding it.
enum class Hook : uint8_t {
  kNone,
  kInfo,              // INFO: cluster_enabled:1, and (`arg` 1) the "# Proxy" section appended
  kSelect,            // +OK: the connection's db is now `arg`
  kMulti,             // +OK: in a transaction (the commands queued from now on are counted)
  kExec,              // EXEC: the transaction and the watches are over; the proxy's answers and the
                      // effects of queued commands are taken from its reply (transaction.cc);
                      // `arg`: the transaction (multi_seq_)
  kDiscard,           // DISCARD: the transaction and the watches are over (`arg` as for kExec)
  kWatch,             // +OK: watching keys
  kUnwatch,           // +OK: no longer watching
  kSubscribe,         // (p|s)(un)subscribe: each frame carries the new subscription count
  kMonitor,           // +OK: every later "+<timestamp> ..." frame is monitor output
  kTracking,          // +OK: CLIENT TRACKING is now `arg` (1 on, 0 off)
  kNoEvict,           // +OK: CLIENT NO-EVICT is now `arg`
  kReadonly,          // +OK: READONLY (`arg` 1) or READWRITE (0)
  kAsking,            // +OK: the next command is ASKING's
  kPause,             // +OK: CLIENT PAUSE for `arg` ms (sub_kind 1: writes only)
  kUnpause,           // +OK: CLIENT UNPAUSE
  kQueued,            // +QUEUED of a command the proxy follows inside MULTI (`arg`: its entry)
  kReset,             // +RESET of a RESET sent upstream (monitor, pub/sub): the client is reset
  kAuthUpstream,      // internal: the proxy's own AUTH on a new upstream connection
  kHelloUpstream,     // internal: HELLO 3 on a new upstream connection of a RESP3 flavor
  kServerInfo,        // internal: INFO server/replication, to learn version, mode and role
  kUpstreamId,        // internal: CLIENT ID of a pinned connection (Unix socket upstream)
  kProbe,             // internal: the stall check's PING (UpstreamPool::CheckTimeouts)
  kCommandAll,        // COMMAND, COMMAND INFO, COMMAND LIST: the sketch commands join the list
  kCommandCount,      // COMMAND COUNT: plus the sketch commands
  kCommandInfo,       // COMMAND INFO name...: entries of the sketch names (`arg`: face_asks_'s key)
  kCommandList,       // COMMAND LIST FILTERBY ...: plus the sketch commands that pass (face_asks_)
  kCommandDocs,       // COMMAND DOCS [name...]: plus the sketch commands' docs (face_asks_)
  kModuleList,        // MODULE LIST: plus the module "bf" (module_face.cc)
  kHideKeys,          // KEYS (`arg` 0) or SCAN (1): filters' and sketches' internal keys taken out
  kClusterSlots,      // internal: CLUSTER SLOTS, to read the cluster's slot map (ClusterRouter)
  kClientAuth,        // auth-mode upstream: a client's AUTH (`arg` 0) or HELLO AUTH (1, then HELLO
                      // is answered here): +OK logs the client in as the pending user
  kResp3Pairs,        // a hash command run in a script, for a RESP3 client: the flat array of field
                      // and value is a map (`arg` 0, HGETALL) or an array of pairs (1, HRANDFIELD
                      // WITHVALUES), as Redis answers RESP3
  kTrackingInfo,      // CLIENT TRACKINGINFO: the redirect field names the proxy's client id
  kLatencyHistogram,  // LATENCY HISTOGRAM: the proxy's own commands joined (latency_asks_)
  kResetStat,         // +OK of CONFIG RESETSTAT: the proxy's own latencies are cleared too
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
  uint8_t sub_kind = 0;        // kSubscribe: 0 channel, 1 pattern, 2 shard; kPause: 1 = WRITE
  uint64_t sent_ms = 0;        // when its request went upstream (loop time)
  bool subscribe = false;      // a (P|S)SUBSCRIBE: the client enters pub/sub mode
  bool queued = false;         // sent inside MULTI: a +QUEUED reply takes a place in EXEC's
  bool stalls = false;         // may keep the whole upstream busy (UpstreamActivity) until done
  bool blocks = false;         // a blocking command (BLPOP, XREAD BLOCK, ...): CLIENT LIST's b
  bool shared_write = false;   // a write on a shared connection (UpstreamActivity) until done
  PlanRunner* plan = nullptr;  // upstream replies of a plan step go to this runner
  bool plan_step = false;      // a plan's step or trailing requests (internal)
  bool batch_member = false;   // a command answered by a batch plan
  // A BF.*/CMS.* reply for a RESP3 client: how it differs from the RESP2 reply the plan makes
  // (filters::Resp3Shape, filters/common/sketch_resp3.h); 0: it does not.
  uint8_t resp3_shape = 0;
  // Cluster routing (proxy/upstream/cluster_router.h): the request's bytes and its keys' slot (-1:
  // no keys), kept so that a redirection can send it again, and how often it was redirected.
  // `sink`/`part`: the reply goes to a ReplySink as its part `part`.
  bool asking = false;  // send ASKING first (an -ASK redirection)
  uint16_t redirects = 0;
  int32_t cluster_slot = -1;
  uint32_t part = 0;
  uint64_t first_sent_ms = 0;
  ReplySink* sink = nullptr;
  std::string request;
  // Metrics (proxy/server/metrics.h): the client command this slot answers (its id + 1; 0: none),
  // when the command was read (loop clock), and whether its reply is an error.
  uint16_t metric = 0;
  bool error_reply = false;
  uint64_t metric_start_ns = 0;

  Pending() = default;
  ~Pending();
  Pending(const Pending&) = delete;
  Pending& operator=(const Pending&) = delete;
  // Marks the slot as carrying a command that may stall the server, or a write on a shared
  // connection (each counted by UpstreamActivity until the slot is deleted).
  void MarkStalling();
  void MarkSharedWrite();

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
  // A client of the tls-port: its bytes go through a TLS session from the start.
  void UseTls(std::shared_ptr<TlsContext> ctx) { tls_ = TlsSession::Accepting(std::move(ctx)); }
  // Whether its TLS handshake has taken too long (checked by the server's cron).
  bool TlsHandshakeOverdue(uint64_t now_ms) const {
    return tls_ != nullptr && !tls_->established() && !closing_ &&
           now_ms - created_ms_ > kTlsHandshakeMs;
  }
  uv_handle_t* handle() { return &sock_.handle; }
  bool is_unix() const { return is_unix_; }
  // The protocol the client speaks: RESP2 until HELLO 3.
  protocol::Resp resp() const { return resp_; }
  // The flavor of upstream connection its commands take (ConnFlavor, Server::Flavor).
  uint16_t flavor() const { return flavor_; }

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
  // Bytes the upstream sent on this client's tunnel (tunnel.cc).
  void OnTunnelData(std::string_view bytes);
  // The tunnel's connection wrote what it had queued.
  void OnTunnelWritten();
  // A CLIENT PAUSE of this client waits for the writes on shared connections (kPauseDrain): the
  // server's timer calls this to look again.
  void RetryPause();

  // Writes what is queued (called once per loop turn by the server).
  void Flush();
  // The cluster's slot map is known (or the wait for it is over): commands may be routed.
  void OnTopologyKnown() { Resume(kPauseTopology); }

  // Gives back the input and output buffers while the client is idle (called from the cron),
  // so thousands of idle connections cost little memory.
  void ReleaseIdleMemory();

  // For CLIENT LIST / INFO and the idle timeout.
  uint64_t id() const { return id_; }
  // CLIENT SETNAME's name (empty: none).
  const std::string& name() const { return name_; }
  // The index of the shared connection this client prefers in any pool.
  size_t shared_hint() const { return shared_slot_; }
  uint64_t last_interaction_ms() const { return last_interaction_ms_; }
  bool ExemptFromTimeout() const;
  bool has_pending() const { return !replies_.empty() || !out_.empty(); }
  std::string InfoLine() const;
  bool in_pubsub() const { return channels_ + patterns_ + shard_channels_ > 0; }
  // SYNC or PSYNC went through its tunnel: Redis counts it as a replica (CLIENT LIST/KILL TYPE).
  bool is_replica() const { return replica_; }

 private:
  static void OnAlloc(uv_handle_t* h, size_t suggested, uv_buf_t* buf);
  static void OnRead(uv_stream_t* s, ssize_t nread, const uv_buf_t* buf);
  static void OnWrite(uv_write_t* req, int status);
  // A TLS client's read of `n` ciphertext bytes; false when the client was closed.
  bool OnTlsRead(size_t n);
  static void OnClose(uv_handle_t* h);

  // Why reading is paused (bits of paused_).
  static constexpr uint16_t kPauseBarrier = 1;       // replies awaited before switching connection
  static constexpr uint16_t kPauseBackpressure = 2;  // too many commands upstream
  static constexpr uint16_t kPauseClosing = 4;       // QUIT, protocol error or shutdown
  static constexpr uint16_t kPausePlan = 8;          // a plan runs: its steps come first
  static constexpr uint16_t kPauseOutput = 16;       // too much output the client has not read
  static constexpr uint16_t kPauseTunnel = 32;       // the tunnel's upstream side is backed up
  static constexpr uint16_t kPauseDrain = 64;        // CLIENT PAUSE WRITE waits for shared writes
  static constexpr uint16_t kPauseTopology = 128;    // the cluster's slot map is not read yet
  static constexpr uint16_t kPauseRedirect = 256;    // a REDIRECT target's connection opens

  // A client may have this many commands upstream before the proxy stops reading from it;
  // replies keep flowing meanwhile, so a client that writes a long pipeline before reading
  // cannot deadlock against the proxy.
  static constexpr size_t kMaxInFlight = 8192;

  enum class Dispatched {
    kDone,        // handled (forwarded or answered)
    kRetryLater,  // paused: parse the same command again on resume
    kStop,        // handled, and read no further commands now
    kForward,     // (local handlers) not for the proxy to answer: forward it
  };

  // What Dispatch sends upstream for one command, and what its reply changes.
  struct Outgoing {
    Hook hook = Hook::kNone;
    int64_t arg = 0;
    int32_t frames = 1;
    uint8_t sub_kind = 0;
    bool own_conn = false;    // needs a connection of the client's own (pinned or dedicated)
    bool stalls = false;      // may keep the whole upstream busy
    bool blocks = false;      // may block the client (Pending::blocks)
    bool up_to_date = false;  // WAIT: a newly taken connection runs a command first
    bool writes = false;      // held back by CLIENT PAUSE WRITE (a write, EVAL, PUBLISH, ...)
    protocol::Effect effect = protocol::Effect::kNone;
    std::string rewritten;         // the request to send instead of the client's, when not empty
    UpstreamPool* pool = nullptr;  // the node it goes to (ClusterRouter)
    int slot = -1;                 // its keys' slot; -1: no keys
  };

  // A command queued inside MULTI whose effect, or answer, the proxy supplies at EXEC.
  struct QueuedEntry {
    uint64_t id = 0;           // the kQueued slot's `arg`
    uint64_t transaction = 0;  // which MULTI it was queued in (multi_seq_)
    int64_t index = -1;        // its place in EXEC's reply (-1 until its +QUEUED arrives)
    // kTrack: what its reply changes, as the hook it would have outside MULTI.
    Hook hook = Hook::kNone;
    int64_t arg = 0;
    uint8_t sub_kind = 0;
    std::vector<std::string> args;  // kAtExec: the command the proxy answers at EXEC
    // A BF.* or CMS.* command: its script's answer becomes its reply
    // (filters/common/multi_command.h).
    std::shared_ptr<const filters::QueuedSketch> sketch;
    // A hash command run as a script: RESP3's shape of its reply, for a client speaking RESP3
    // when EXEC runs it (ScriptPairs).
    uint8_t pairs = 0;
    // HELLO 2|3, queued upstream as HELLO so that the transaction's connection switches
    // where Redis's would; the client's reply is still the proxy's (AnswerAtExec).
    bool hello_upstream = false;
  };

  void ProcessInput();
  void ProcessCommands();
  // How many commands of this client may be upstream at once.
  size_t MaxInFlight() const;

  // dispatch.cc
  Dispatched Dispatch(const protocol::Command& cmd);
  Dispatched DispatchCounted(const protocol::Command& cmd);  // Dispatch, once counted
  // HGETALL (1: a map) and HRANDFIELD ... WITHVALUES (2: pairs), whose scripts answer a flat
  // array; 0 for any other command.
  static uint8_t ScriptPairs(const protocol::Command& cmd);
  // The command's name in lower case (in `buf`; empty when longer), its row in the command
  // table and its subcommand's; sets last_cmd_.
  void LookUp(const protocol::Command& cmd, char (&buf)[32], std::string_view* name,
              const protocol::CommandInfo** info, const protocol::CommandInfo** sub);
  // The user's command rules (proxy/client/acl.h) allow `cmd`; *full gets the name they judged
  // (kept in *storage when it is not the table's or `name`).
  bool RulesAllow(const protocol::Command& cmd, const protocol::CommandInfo* info,
                  const protocol::CommandInfo* sub, std::string_view name, std::string* storage,
                  std::string_view* full) const;
  // The checks Redis makes before it runs a command (deny-command, authentication, ACL rules),
  // in Redis's order. True when the command was answered (refused).
  bool Refused(const protocol::Command& cmd, const protocol::CommandInfo* info,
               const protocol::CommandInfo* sub, std::string_view name);
  Dispatched HandleQuit(const protocol::Command& cmd);
  // The command table's rule for a command that passed Redis's checks.
  Dispatched RouteCommand(const protocol::Command& cmd, const protocol::CommandInfo* info,
                          const protocol::CommandInfo* sub, std::string_view name);
  // BF.* commands, commands the proxy answers, and tunnels; kForward for the rest.
  Dispatched HandleHere(const protocol::Command& cmd, const protocol::Route& route,
                        const protocol::CommandInfo* info, const protocol::CommandInfo* sub,
                        std::string_view name);
  // INFO gets the proxy's section, COMMAND the BF.* entries.
  void AddCompletionHook(const protocol::Command& cmd, std::string_view name, Outgoing* out);
  // The effect of a command on connection state: how it goes upstream. False when it was
  // answered here (SELECT 0).
  bool PrepareEffect(const protocol::Command& cmd, const protocol::Route& route,
                     const protocol::CommandInfo* info, Outgoing* out);
  bool SelectEffect(const protocol::Command& cmd, Outgoing* out);
  void SubscribeEffect(const protocol::Command& cmd, protocol::Effect effect, std::string_view name,
                       Outgoing* out);
  void PauseEffect(const protocol::Command& cmd, Outgoing* out);
  // Which connection it needs: its own (dedicated rows, writes during a known pause) or not.
  void PrepareConnection(const protocol::Route& route, const protocol::CommandInfo* info,
                         Outgoing* out);
  // Sends `cmd` (or out.rewritten) on the connection the command needs.
  Dispatched SendUpstream(const protocol::Command& cmd, Outgoing& out);
  // The connection for a command: the client's own one, a new own one (own_conn), or its
  // shared one. Null when the client must wait (kRetryLater) or the upstream is unavailable
  // (answered: kDone); *acquired says whether an own connection was just taken.
  UpstreamConn* TargetFor(UpstreamPool* pool, bool own_conn, Dispatched* result, bool* acquired);
  // CLIENT PAUSE WRITE: holds writes from now on and waits (kRetryLater) until the writes on
  // shared connections are answered, at most kPauseDrainMs; true when it may go upstream.
  bool PauseMayGo(uint64_t pause_ms);
  // Dispatch-time connection state: later commands of the same pipeline are routed by it.
  void ApplyDispatchState(protocol::Effect effect, const Outgoing& out);
  // Redis's checks before running a command: an unknown subcommand or a wrong number of
  // arguments is answered (true) as Redis answers it.
  bool RejectMalformed(const protocol::Command& cmd, const protocol::CommandInfo& info,
                       const protocol::CommandInfo* sub);
  // Answers a command the proxy refuses; inside a transaction, also makes the upstream's EXEC
  // fail with EXECABORT, as Redis does after rejecting a queued command.
  void Refuse(std::string_view error);
  void ReplyProtocolError(const std::string& error);
  void ReplyUnavailable(UpstreamPool* pool = nullptr);
  Dispatched HoldForNode(const protocol::Command& cmd, Outgoing& out);
  Dispatched DeferMulti();

  // sharding_dispatch.cc
  // Behind a sharding proxy: answers a command it would refuse with an error (true).
  bool RefusedByShardingProxy(const protocol::Command& cmd, const protocol::Route& route);
  // Answers a command after a refused MULTI (true): EXEC -EXECABORT, DISCARD +OK, MULTI
  // Redis's nesting error, anything else an error (it is not run).
  bool RefusedInTransaction(const protocol::Command& cmd, const protocol::Route& route);
  // Whether the command's keys (then in key_positions_) have several hash tags (a key without
  // a tag is its own), so that a sharding proxy may place them on several servers.
  bool KeysInSeveralTags(const protocol::Command& cmd, const protocol::CommandInfo* info);

  // cluster_dispatch.cc
  // On a cluster: true (paused) when in-flight commands were sent under another router epoch.
  bool WaitsForRouteEpoch();
  // Where a command goes on a Redis Cluster: out->pool and out->slot for one node (kForward),
  // or split per node, sent to every master, or answered here (-CROSSSLOT).
  Dispatched RouteInCluster(const protocol::Command& cmd, const protocol::CommandInfo* info,
                            const protocol::Route& route, Outgoing* out);
  // The slot of the command's keys (their positions in key_positions_); -1 without keys,
  // kSeveralSlots when they are in several.
  static constexpr int kSeveralSlots = -2;
  int CommandSlot(const protocol::Command& cmd, const protocol::CommandInfo* info);
  Dispatched SplitByNode(const protocol::Command& cmd, const protocol::CommandInfo* info,
                         const protocol::Route& route);
  Dispatched FanOut(const protocol::Command& cmd, const protocol::Route& route);
  Dispatched ScanMasters(const protocol::Command& cmd);
  // A reply slot, in flight, for a command whose requests the router sends (a SplitRequest, a
  // request held for its node).
  Pending* NewRoutedSlot();
  // Sends the MULTI that waited for the transaction's first command (on a cluster the
  // transaction lives on that command's node). False when `cmd` must wait (*result).
  bool StartDeferredMulti(const protocol::Command& cmd, const protocol::CommandInfo* info,
                          Dispatched* result);
  // Inside MULTI on a cluster, a command whose key is on another node than the transaction's:
  // *request (its place) and *extra (queued after it, reply dropped) make EXEC answer
  // -CROSSSLOT. False when the command is queued as it is.
  bool ForeignInMulti(const protocol::Command& cmd, const protocol::CommandInfo* info,
                      std::string* request, std::string* extra);
  // CLUSTER SLOTS, SHARDS, NODES, INFO, MYID, KEYSLOT: the proxy as a one-node cluster.
  Dispatched HandleCluster(const protocol::Command& cmd);

  // local_commands.cc
  Dispatched HandleLocal(const protocol::Command& cmd, std::string_view lower_name);
  Dispatched HandleClient(const protocol::Command& cmd);
  Dispatched HandleClientKill(const protocol::Command& cmd);
  Dispatched HandleHello(const protocol::Command& cmd);
  // HELLO's arguments (Redis's helloCommand reads them all before acting).
  struct HelloArgs {
    protocol::Resp resp = protocol::Resp::k2;
    bool have_auth = false, have_name = false;
    std::string user, password, name;
  };
  // Parses HELLO; false once an error is answered.
  bool ParseHello(const protocol::Command& cmd, HelloArgs* args);
  // After authentication: the name, the protocol switch and HELLO's reply (or its error).
  std::string FinishHello(const HelloArgs& args);
  // Whether the client may run commands (else -NOAUTH, and Redis's tighter request limits):
  // authenticated with the proxy, and logged in unless the upstream checks AUTH and its default
  // user needs a password the proxy's login does not give (Server::upstream_login_required).
  bool Authenticated() const;
  // auth-mode upstream: sends AUTH [user] password upstream on a connection of the client's
  // own; its +OK logs the client in (hook kClientAuth). `hello`: HELLO is answered then.
  Dispatched AuthUpstream(const protocol::Command& cmd, std::string_view user,
                          std::string_view password, bool hello);
  // The +OK of that AUTH: the client's commands now run as the pending user. Returns the reply
  // the client gets in its place (HELLO's for HELLO AUTH).
  std::string LoggedInUpstream(int64_t hello);
  // HELLO 3 is served when the upstream speaks RESP3 (Redis 6 or later, not a sharding proxy).
  bool UpstreamSpeaksResp3() const;
  // HELLO's protocol switch: later commands take connections of the new flavor.
  void SetProtocol(protocol::Resp resp);
  // Text as Redis's addReplyVerbatim writes it to this client (a bulk in RESP2).
  std::string Verbatim(std::string_view text) const;
  Dispatched HandleAuth(const protocol::Command& cmd);
  Dispatched HandleInfo(const protocol::Command& cmd);
  Dispatched HandleReset(const protocol::Command& cmd);
  // What RESET resets on the proxy's side (the upstream connection is the caller's business).
  void ResetClientState();
  static bool InfoWantsProxySection(const protocol::Command& cmd);
  void LogFailedAuth(std::string_view user) const;
  bool CheckUser(std::string_view user, std::string_view password) const;
  // CLIENT UNBLOCK and CLIENT TRACKING ... REDIRECT name a proxy client: the upstream knows it
  // by its own connection's id (looked up when not known yet, proxy/upstream/upstream_id_plan.h).
  Dispatched SendWithUpstreamId(const protocol::Command& cmd, size_t id_arg, Outgoing& out);
  // This client is named by another's CLIENT TRACKING ... REDIRECT: it takes a connection of
  // its own (kept while it lives), to which Redis can send the invalidations. False when it
  // cannot (a cluster, the upstream unreachable).
  bool HoldConnectionForRedirects();
  // Named for REDIRECT: the pause waits for its connection (kPauseRedirect).
  void ResumeRedirect() { Resume(kPauseRedirect); }

  // reply_hooks.cc
  void ApplyHook(Pending* slot, std::string_view frame);
  // The connection state a reply confirms (SELECT, CLIENT TRACKING/NO-EVICT/PAUSE/UNPAUSE,
  // READONLY, MONITOR), for a slot's reply and for a queued command's place in EXEC's reply.
  void ApplyStateReply(Hook hook, int64_t arg, uint8_t sub_kind, std::string_view reply);
  void ApplySubscriptionFrame(Pending* slot, std::string_view frame);
  std::string WithProxySection(std::string_view frame, bool proxy_section);
  std::string WithProxyRedirect(std::string_view frame) const;

  // module_face.cc: a client sees a server with RedisBloom's module "bf" while the proxy emulates
  // a sketch family (docs/compatibility.md, "The module's face").
  // The hook of COMMAND and MODULE LIST; false for other commands.
  bool FaceHook(const protocol::Command& cmd, std::string_view name, Outgoing* out);
  // The reply of a command with a face hook, completed; `frame` is the upstream's.
  std::string CompleteFace(Pending* slot, std::string_view frame);
  // COMMAND INFO name...: `args` the command as sent, `frame` the upstream's array.
  std::string FillCommandInfo(const std::vector<std::string>& args, std::string_view frame) const;
  // COMMAND GETKEYS / GETKEYSANDFLAGS of a sketch command, answered here (kForward: not one).
  Dispatched HandleGetKeys(const protocol::Command& cmd);
  // HELLO's "modules": the module's entry while a family is emulated.
  std::string HelloModules() const;
  // The module "bf" as INFO, MODULE LIST and HELLO show it.
  static protocol::ModuleFace BloomModule();

  // transaction.cc
  // A command inside MULTI: queued upstream, followed, answered at EXEC, or a tunnel.
  Dispatched QueueInMulti(const protocol::Command& cmd, const protocol::Route& route,
                          const protocol::CommandInfo* info, const protocol::CommandInfo* sub);
  // A BF.* or CMS.* command inside MULTI: its script goes in its place
  // (filters/common/multi_command.h); false when it was refused (arity), which aborts the
  // transaction as Redis would.
  bool QueueSketch(const protocol::Command& cmd, QueuedEntry* entry);
  // EXEC's reply with the proxy's answers in place and the queued effects applied.
  std::string CompleteExec(Pending* slot, std::string_view frame);

  // HELLO inside MULTI (QueuedEntry::hello_upstream): the request queued upstream, and the
  // answer at EXEC given the upstream's element.
  // CLIENT SETNAME / HELLO SETNAME (a valid name).
  void SetName(std::string_view name);
  // HELLO 2|3 on the pinned connection, its reply dropped.
  void SwitchPinnedProtocol(protocol::Resp resp);
  bool QueueHelloUpstream(const protocol::Command& cmd, std::string* request) const;
  std::string AnswerHelloAtExec(const QueuedEntry& entry, std::string_view upstream,
                                bool* close_after);
  std::string AnswerAtExec(const QueuedEntry& entry, bool* close_after);

  // tunnel.cc
  Dispatched EnterTunnel(const protocol::Command& cmd);
  // A command read while tunnelling: checked against deny-command and the user's rules, then
  // passed on as it is.
  void ForwardToTunnel(const protocol::Command& cmd);
  // The request bytes of `cmd`: its own when canonical, else re-encoded (server scratch).
  std::string_view RequestBytes(const protocol::Command& cmd);

  // filter_commands.cc
  // BF.* commands (filters/bloom/bf_plan.h); kForward when the command is not one.
  Dispatched HandleFilterCommand(const protocol::Command& cmd);
  Dispatched HandleCmsCommand(const protocol::Command& cmd);
  // cf_commands.cc: CF.* (filters/cuckoo/cf_plan.h), and the batch a CF command joins.
  Dispatched HandleCfCommand(const protocol::Command& cmd);
  bool CfBatchKindOf(const protocol::Command& cmd, BatchKind* kind) const;
  // topk_commands.cc: TOPK.* (filters/topk/topk_plan.h), and the batch TOPK.ADD / INCRBY join.
  Dispatched HandleTopkCommand(const protocol::Command& cmd);
  bool TopkBatchKindOf(const protocol::Command& cmd, BatchKind* kind) const;
  // filter_commands.cc: whether `key` and `sources` (a MERGE's) are on one server (replies the
  // error and returns false otherwise).
  bool OnOneServer(std::string_view key, const std::vector<std::string_view>& sources,
                   std::string_view not_one_server);
  // tdigest_commands.cc: TDIGEST.* (filters/tdigest/tdigest_plan.h), and the batch TDIGEST.ADD
  // joins.
  Dispatched HandleTdigestCommand(const protocol::Command& cmd);
  bool TdigestBatchKindOf(const protocol::Command& cmd, BatchKind* kind) const;
  // A BF.* command on a key a bf-layout rule names (filters/guava/guava_plan.h).
  Dispatched StartLayoutPlan(const filters::BfRequest& request, const filters::LayoutRule& rule,
                             std::string deferred_error, bool writes);
  // Whether an expanding filter's keys are all on the node of its name
  // (filters/guava/guava_plan.h).
  bool ExpandingKeysTogether(std::string_view name, const filters::LayoutRule& rule) const;
  // KEYS and SCAN (while sketches are emulated): their reply loses the internal keys (hook
  // kHideKeys; *scan is its arg).
  bool HidesInternalKeys(const protocol::Command& cmd, int64_t* scan) const;
  // A key command that must act on whole filters (DEL, EXPIRE, RENAME, TYPE, ...): *request gets
  // the Lua script request that runs it (filters/common/key_scripts.h). False for other commands.
  bool RewriteKeyCommand(const protocol::Command& cmd, std::string* request);
  Dispatched StartPlan(std::string_view key, std::unique_ptr<filters::Plan> plan, bool writes);
  // The connection a plan of this client runs on; null when the client must wait or the
  // upstream is unavailable (then *result says what Dispatch returns). `writes`: the plan
  // writes, so while the upstream holds writes back it takes a connection of its own.
  UpstreamConn* PlanConnection(std::string_view key, bool writes, Dispatched* result);
  // The same for a plan's reply (the plan counts as running until it is answered).
  Pending* NewPlanSlot(UpstreamConn* target);
  // BF.ADD/MADD/EXISTS/MEXISTS join the loop turn's batch for their filter.
  Dispatched JoinBatch(const filters::BfRequest& request, bool exists);
  // Joins this loop turn's batch of `kind` on `key` with one command's items (and increments).
  // `nx`: CF.ADDNX.
  Dispatched JoinAnyBatch(BatchKind kind, std::string_view key,
                          const std::vector<std::string_view>& items,
                          const std::vector<uint64_t>& increments, bool multi, bool nx = false);
  // True when `cmd` would join the batch this client has open (so it need not wait for it).
  bool JoinsRunningBatches(const protocol::Command& cmd) const;
  // The batch a command joins (BF.ADD/MADD/EXISTS/MEXISTS, CMS.INCRBY/QUERY); false for others.
  bool BatchKindOf(const protocol::Command& cmd, BatchKind* kind) const;

  // Metrics (client.cc): the command Dispatch is handling, counted once its reply is complete.
  // Its reply slot takes it over (NewSlot), or a reply written at once counts it then.
  void BeginMetric(const protocol::CommandInfo* info, std::string_view lower_name);
  // `slot` is not the command's reply (a MULTI sent ahead of it): the command keeps its metric.
  void TakeMetricBack(Pending* slot);
  void RecordMetric(uint16_t metric, uint64_t start_ns, bool error);

  // Reply slots (client.cc).
  Pending* NewSlot();
  // A reply slot, at the back of the client's FIFO, for a command sent to `target`.
  Pending* NewUpstreamSlot(UpstreamConn* target);
  void ReplyLocal(std::string_view bytes, bool close_after = false);
  void DeliverHead();
  void Append(std::string_view bytes);

  // Pinning (client.cc).
  bool NeedsPin() const;
  void MaybeReleasePin();
  void DropPin();
  void ClearConnectionState();

  void MarkDirty();
  void Pause(uint16_t reason);
  void Resume(uint16_t reason);

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
  UpstreamConn* pinned_ = nullptr;         // the client's own connection (state, dedicated, tunnel)
  UpstreamConn* inflight_conn_ = nullptr;  // where this client's in-flight commands are
  UpstreamPool* inflight_pool_ = nullptr;  // that connection's node
  bool inflight_shared_ = false;           // that connection is a shared one
  size_t inflight_ = 0;
  uint64_t route_epoch_ = 0;  // the router's epoch when the in-flight commands were sent
  // Cluster routing: the key positions of the command being routed, the MULTI that waits for
  // its node, and the slot of the transaction's keys.
  std::vector<size_t> key_positions_;
  bool deferred_multi_ = false;
  bool multi_aborted_ = false;  // a command of the deferred transaction found no node
  // Behind a sharding proxy: MULTI was refused, and the commands up to EXEC / DISCARD are
  // refused too, so that nothing meant to run atomically runs on its own.
  bool multi_refused_ = false;
  // A HELLO was queued in the transaction: the commands after EXEC wait for its reply, which
  // switches the client's protocol.
  bool hello_in_transaction_ = false;
  // Holds a connection because another client redirects its invalidations here.
  bool redirect_target_ = false;
  // The client a REDIRECT of this one waited for (kPauseRedirect): asked to hold a connection
  // once per command.
  uint64_t redirect_waited_ = 0;
  // The arguments of each LATENCY HISTOGRAM in flight (kLatencyHistogram), in order (a
  // vector: nothing allocated for the clients that never ask).
  std::vector<std::vector<std::string>> latency_asks_;
  int multi_slot_ = -1;

  // Connection state, as the proxy tracks it. Dispatch-time flags route commands; reply-time
  // ones decide when a pinned connection is clean again.
  bool in_multi_ = false;    // MULTI sent, EXEC/DISCARD not yet
  int64_t multi_count_ = 0;  // commands queued since MULTI (CLIENT LIST's multi=)
  int subscribing_ = 0;      // (P|S)SUBSCRIBE commands upstream
  bool watching_ = false;    // WATCH sent, not yet ended by EXEC/DISCARD/UNWATCH
  bool monitor_ = false;
  // What of the monitor's lines its client sees (the proxy's own traffic is hidden).
  std::shared_ptr<MonitorFilter> monitor_filter_;
  bool tracking_ = false;
  bool no_evict_ = false;           // CLIENT NO-EVICT on
  bool readonly_ = false;           // READONLY
  bool asking_ = false;             // ASKING sent, its command not yet
  bool replica_ = false;            // SYNC or PSYNC passed through the tunnel
  bool unknown_state_ = false;      // a CLIENT subcommand the proxy does not know went upstream
  bool tunnel_ = false;             // raw bytes both ways on pinned_ (tunnel.cc)
  bool replica_handshake_ = false;  // REPLCONF answered on pinned_, a tunnel to come
  uint64_t tracking_redirect_ = 0;  // proxy client id named by CLIENT TRACKING ... REDIRECT
  uint64_t pending_redirect_ = 0;   // the same, until the upstream accepts the command
  int64_t db_ = 0;                  // confirmed by the upstream
  int64_t channels_ = 0, patterns_ = 0, shard_channels_ = 0;
  bool reply_off_ = false;   // CLIENT REPLY OFF
  bool reply_skip_ = false;  // CLIENT REPLY SKIP: the next command's reply is dropped

  // Inside MULTI (transaction.cc): +QUEUED replies since MULTI's +OK, and the queued commands
  // the proxy answers or follows.
  int64_t queued_ = 0;
  uint64_t multi_seq_ = 0;  // MULTIs sent (a pipeline may hold several transactions)
  uint64_t queued_ids_ = 0;
  std::vector<QueuedEntry> queued_entries_;
  // While answering a command at EXEC, local replies are written here instead.
  std::string* capture_ = nullptr;
  bool capture_close_ = false;

  // Identity.
  protocol::Resp resp_ = protocol::Resp::k2;
  uint16_t flavor_ = 0;
  // auth-mode upstream: the login whose AUTH is upstream, and the HELLO that waits for it;
  // while such an AUTH is upstream, the commands after it wait for its answer.
  std::string pending_user_, pending_password_;
  HelloArgs pending_hello_;
  int auth_in_flight_ = 0;
  // Authenticated as the proxy decides it: no password asked when the client connected, or
  // logged in since (AUTH, HELLO AUTH); logged_in_: the latter. See Authenticated().
  bool authenticated_ = false;
  bool logged_in_ = false;
  std::string user_ = "default";
  const CommandAcl* acl_ = nullptr;  // user_'s command rules; nullptr: every command
  std::string name_;
  std::string lib_name_, lib_ver_;
  std::string_view last_cmd_ = "NULL";  // a name from the command table (static storage)
  std::string addr_, laddr_;
  uint64_t created_ms_ = 0;
  static constexpr uint64_t kTlsHandshakeMs = 5000;
  std::unique_ptr<TlsSession> tls_;  // tls-port clients
  uint64_t last_interaction_ms_ = 0;

  uint16_t paused_ = 0;  // kPause* bits
  bool reading_ = false;
  bool closing_ = false;
  bool close_when_drained_ = false;
  bool input_closed_ = false;  // QUIT or protocol error seen: later input is ignored
  bool flush_queued_ = false;
  bool processing_ = false;          // inside ProcessInput: Resume only clears pause bits
  bool close_asap_ = false;          // past the pub/sub output limit: closed at the next flush
  bool tunnel_read_paused_ = false;  // the tunnel's upstream side stopped: our output is full
  uint64_t pause_drain_since_ = 0;   // PauseMayGo: when the CLIENT PAUSE began to wait
  // Bound on the replies in flight (see MaxInFlight): the largest recent reply (bytes, decays
  // slowly) and a window that starts small and grows with every reply received.
  size_t reply_peak_ = 64;
  size_t window_ = 64;
  int running_plans_ = 0;  // plans and batch members of this client not yet answered
  int batch_members_ = 0;  // of which batch members
  // The batches the running members are in: same kind, filter and connection (a client's
  // further BF.ADDs to the same filter may join later batches without waiting).
  BatchKind batch_kind_ = BatchKind::kBfAdd;
  std::string batch_key_;
  UpstreamConn* batch_conn_ = nullptr;
  // The arguments of each COMMAND INFO, LIST or DOCS in flight (their slots' `arg`), kept until
  // its reply arrives: replies from several cluster nodes may come in another order.
  std::unordered_map<int64_t, std::vector<std::string>> face_asks_;
  int64_t face_seq_ = 0;
  uint16_t metric_ = 0;  // BeginMetric's command id + 1, until a reply takes it
  uint64_t metric_start_ns_ = 0;

  friend class Server;
};

}  // namespace bloomproxy::proxy
