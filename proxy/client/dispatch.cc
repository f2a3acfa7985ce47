// Dispatch: Redis's checks before a command runs, then the command table's rule for it
// (protocol/command_routes.inc): answered here, queued in a transaction, turned into a plan on
// filters, a tunnel, or sent upstream on the connection its effect on connection state needs.
#include <cctype>
#include <chrono>

#include "filters/common/watch_plan.h"
#include "protocol/encoder.h"
#include "protocol/errors.h"
#include "proxy/client/acl.h"
#include "proxy/client/client.h"
#include "proxy/server/log.h"
#include "proxy/server/server.h"
#include "proxy/sketch/plan_runner.h"
#include "proxy/upstream/activity.h"
#include "proxy/upstream/cluster_router.h"
#include "proxy/upstream/upstream.h"

namespace bloomproxy::proxy {

namespace errors = protocol::errors;
using protocol::Command;
using protocol::CommandInfo;
using protocol::Conn;
using protocol::Effect;
using protocol::Route;

namespace {

// Lower-cases `s` into `buf` (size n); returns the view, empty if it does not fit.
std::string_view Lower(std::string_view s, char* buf, size_t n) {
  if (s.size() > n) return {};
  for (size_t i = 0; i < s.size(); ++i) {
    buf[i] = static_cast<char>(std::tolower(static_cast<unsigned char>(s[i])));
  }
  return {buf, s.size()};
}

// XREAD and XREADGROUP block only with a BLOCK option before STREAMS.
bool HasBlockOption(const Command& cmd) {
  for (size_t i = 1; i < cmd.args.size(); ++i) {
    if (IEquals(cmd.args[i], "streams")) return false;
    if (IEquals(cmd.args[i], "block")) return true;
  }
  return false;
}

// The position of the client id after REDIRECT in CLIENT TRACKING ON ..., or 0.
size_t RedirectArg(const Command& cmd) {
  if (cmd.args.size() < 3 || !IEquals(cmd.args[2], "on")) return 0;
  for (size_t i = 3; i + 1 < cmd.args.size(); ++i) {
    if (IEquals(cmd.args[i], "redirect")) return i + 1;
  }
  return 0;
}

}  // namespace

Client::Dispatched Client::Dispatch(const Command& cmd) {
  if (cmd.args.empty()) return Dispatched::kDone;
  if (running_plans_ > 0 && !JoinsRunningBatches(cmd)) {
    // A plan of this client is not answered yet: what comes after it waits, so it sees the
    // plan's effects (and its reply keeps its place).
    Pause(kPausePlan);
    return Dispatched::kRetryLater;
  }
  if (server_->router().cluster() && server_->router().WaitForMap(id_)) {
    // Right after start: which cluster node serves what is not known yet.
    Pause(kPauseTopology);
    return Dispatched::kRetryLater;
  }
  if (hello_in_transaction_ && !in_multi_ && inflight_ > 0) {
    // EXEC (or DISCARD) of a transaction with a HELLO is upstream: its reply sets the protocol
    // of what follows.
    Pause(kPauseBarrier);
    return Dispatched::kRetryLater;
  }
  // Counted once: a command sent back to wait (kRetryLater) comes through here again.
  ++server_->stats().commands_processed;
  const Dispatched d = DispatchCounted(cmd);
  if (d == Dispatched::kRetryLater) server_->stats().commands_processed.Sub(1);
  return d;
}

uint8_t Client::ScriptPairs(const Command& cmd) {
  // A script's table is an array: RESP3's map of HGETALL and pairs of HRANDFIELD come back.
  if (IEquals(cmd.args[0], "hgetall")) return 1;
  if (IEquals(cmd.args[0], "hrandfield") && cmd.args.size() == 4 &&
      IEquals(cmd.args[3], "withvalues")) {
    return 2;
  }
  return 0;
}

Client::Dispatched Client::DispatchCounted(const Command& cmd) {
  char name_buf[32];
  std::string_view name;
  const CommandInfo* info = nullptr;
  const CommandInfo* sub = nullptr;
  LookUp(cmd, name_buf, &name, &info, &sub);
  BeginMetric(info, name);
  if (deferred_multi_) {
    Dispatched d = Dispatched::kDone;
    if (!StartDeferredMulti(cmd, sub ? sub : info, &d)) return d;
    TakeMetricBack(replies_.back());  // the MULTI sent ahead of it answers nobody
  }
  if (in_multi_) ++multi_count_;

  if (name == "quit") return HandleQuit(cmd);
  if (info != nullptr && info->route.conn == Conn::kCloseClient) {
    // Redis treats these as an HTTP request sent to a Redis port and closes silently.
    LOG_WARNING_F({{"client", addr_}, {"client_id", id_}, {"command", name}},
                  "Possible SECURITY ATTACK detected. It looks like somebody is sending POST or "
                  "Host: commands to bloomproxy. Connection aborted.");
    Close();
    return Dispatched::kStop;
  }
  if (Refused(cmd, info, sub, name)) return Dispatched::kDone;
  if (name == "reset") {
    if (cmd.args.size() != 1) {
      ReplyLocal(errors::WrongArity(cmd.args[0]));
      return Dispatched::kDone;
    }
    return HandleReset(cmd);
  }
  return RouteCommand(cmd, info, sub, name);
}

Client::Dispatched Client::HandleQuit(const Command& cmd) {
  // Redis answers QUIT before anything else, authenticated or not, and closes after it.
  input_closed_ = true;
  Pause(kPauseClosing);
  if (pinned_ != nullptr && (monitor_ || in_pubsub() || subscribing_ > 0)) {
    // Monitor lines or messages may still come before the upstream runs QUIT: its +OK comes
    // after them.
    Pending* p = NewUpstreamSlot(pinned_);
    p->close_after = true;
    pinned_->Send(RequestBytes(cmd), p);
    return Dispatched::kStop;
  }
  ReplyLocal("+OK\r\n", /*close_after=*/true);
  return Dispatched::kStop;
}

Client::Dispatched Client::RouteCommand(const Command& cmd, const CommandInfo* info,
                                        const CommandInfo* sub, std::string_view name) {
  const Route route = sub ? sub->route : info ? info->route : Route{};
  if (pinned_ != nullptr && in_multi_ && route.effect != Effect::kExec &&
      route.effect != Effect::kDiscard && route.effect != Effect::kMulti &&
      route.effect != Effect::kWatch) {
    return QueueInMulti(cmd, route, info, sub);
  }
  // In RESP2's pub/sub mode and while monitoring the upstream decides what a command means
  // (allowed, or rejected with Redis's own error), so everything goes to the pinned connection.
  // In RESP3 every command is allowed in pub/sub mode: each is what it is outside it (CLIENT
  // REPLY answered here, as Redis would not answer it on the connection).
  const bool upstream_decides =
      pinned_ != nullptr &&
      ((resp_ == protocol::Resp::k2 && (in_pubsub() || subscribing_ > 0)) || monitor_);
  if (upstream_decides && !monitor_ && inflight_ > 0 && route.effect != Effect::kSubscribe &&
      route.effect != Effect::kUnsubscribe && name != "ping") {
    // An UNSUBSCRIBE in flight may end pub/sub mode before this command runs upstream, and
    // what it means (answered here, or refused there) depends on that: it waits to know.
    Pause(kPauseBarrier);
    return Dispatched::kRetryLater;
  }
  if (!upstream_decides && server_->router().cluster() && WaitsForRouteEpoch()) {
    return Dispatched::kRetryLater;
  }
  if (RefusedInTransaction(cmd, route)) return Dispatched::kDone;
  if (!upstream_decides) {
    const Dispatched d = HandleHere(cmd, route, info, sub, name);
    if (d != Dispatched::kForward) return d;
  }
  Outgoing out;
  if (!PrepareEffect(cmd, route, info, &out)) return Dispatched::kDone;
  if (route.effect == Effect::kMulti && pinned_ == nullptr && server_->router().cluster()) {
    return DeferMulti();
  }
  if (server_->router().cluster()) {
    const Dispatched d = RouteInCluster(cmd, sub ? sub : info, route, &out);
    if (d != Dispatched::kForward) return d;
  } else {
    out.pool = server_->router().masters().front();
    if (server_->sharding_proxy() && route.spread == protocol::Spread::kSplit &&
        KeysInSeveralTags(cmd, sub ? sub : info)) {
      return SplitByNode(cmd, sub ? sub : info, route);
    }
  }
  if (!upstream_decides && server_->emulated() != 0 && (route.traits & protocol::kTraitFilterKey)) {
    const uint8_t pairs = RewriteKeyCommand(cmd, &out.rewritten) && resp_ == protocol::Resp::k3
                              ? ScriptPairs(cmd)
                              : 0;
    if (pairs != 0) {
      out.hook = Hook::kResp3Pairs;
      out.arg = pairs - 1;
    }
  }
  AddCompletionHook(cmd, name, &out);
  if (!upstream_decides && route.effect == Effect::kUnblock && cmd.args.size() > 2) {
    return SendWithUpstreamId(cmd, 2, out);
  }
  if (!upstream_decides && route.effect == Effect::kTracking) {
    if (RedirectArg(cmd) != 0) return SendWithUpstreamId(cmd, RedirectArg(cmd), out);
    pending_redirect_ = 0;  // CLIENT TRACKING without REDIRECT ends a redirection
  }
  if (out.hook == Hook::kPause && out.sub_kind == 1 &&
      !PauseMayGo(static_cast<uint64_t>(out.arg))) {
    return Dispatched::kRetryLater;
  }
  return SendUpstream(cmd, out);
}

Client::Dispatched Client::HandleHere(const Command& cmd, const Route& route,
                                      const CommandInfo* info, const CommandInfo* sub,
                                      std::string_view name) {
  if (server_->emulated() != 0) {
    Dispatched d = HandleFilterCommand(cmd);
    if (d == Dispatched::kForward && name == "command") d = HandleGetKeys(cmd);
    if (d != Dispatched::kForward) return d;
  }
  // PING and ECHO on a pinned connection are forwarded, in order with its replies; and while a
  // command that may keep the server busy runs (a script, DEBUG SLEEP), so that they get
  // Redis's -BUSY as they would directly.
  const bool echoed_upstream = (name == "ping" || name == "echo") &&
                               (pinned_ != nullptr || UpstreamActivity::StallingCommandRunning());
  if (route.conn == Conn::kLocal && !echoed_upstream) {
    if (info != nullptr && !protocol::ArityOk(*info, cmd.args.size())) {
      ReplyLocal(errors::WrongArity(cmd.args[0]));
      return Dispatched::kDone;
    }
    if (inflight_ > 0 && name != "ping" && name != "echo" && name != "info") {
      // Its answer describes the connection as the commands before it leave it (CLIENT INFO
      // after SELECT, CLIENT GETNAME after a transaction that set it): it waits for them.
      Pause(kPauseBarrier);
      return Dispatched::kRetryLater;
    }
    const auto start = std::chrono::steady_clock::now();
    Dispatched d = HandleLocal(cmd, name);
    if (d != Dispatched::kForward) {
      // LATENCY HISTOGRAM's entry, under Redis's name ("client|id" for a subcommand).
      if (info != nullptr) {
        const auto took = std::chrono::steady_clock::now() - start;
        server_->local_latency().Record(
            sub != nullptr ? sub : info,
            static_cast<uint64_t>(
                std::chrono::duration_cast<std::chrono::nanoseconds>(took).count()));
      }
      return d;
    }
  }
  if (RefusedByShardingProxy(cmd, route)) return Dispatched::kDone;
  if (route.conn == Conn::kTunnel) return EnterTunnel(cmd);
  return Dispatched::kForward;
}

void Client::AddCompletionHook(const Command& cmd, std::string_view name, Outgoing* out) {
  if (HidesInternalKeys(cmd, &out->arg)) {
    out->hook = Hook::kHideKeys;
    return;
  }
  if (name == "info") {
    out->hook = Hook::kInfo;
    out->arg = InfoWantsProxySection(cmd);
    return;
  }
  if (name == "client" && cmd.args.size() == 2 && IEquals(cmd.args[1], "trackinginfo")) {
    out->hook = Hook::kTrackingInfo;
    return;
  }
  if (name == "latency" && cmd.args.size() >= 2 && IEquals(cmd.args[1], "histogram")) {
    out->hook = Hook::kLatencyHistogram;
    latency_asks_.emplace_back(cmd.args.begin() + 2, cmd.args.end());
    return;
  }
  if (name == "config" && cmd.args.size() == 2 && IEquals(cmd.args[1], "resetstat")) {
    out->hook = Hook::kResetStat;
    return;
  }
  if (server_->emulated() != 0) FaceHook(cmd, name, out);
}

void Client::LookUp(const Command& cmd, char (&buf)[32], std::string_view* name,
                    const CommandInfo** info, const CommandInfo** sub) {
  *name = Lower(cmd.args[0], buf, sizeof(buf));
  *info = protocol::LookupCommand(cmd.args[0]);
  *sub = nullptr;
  if (*info != nullptr && ((*info)->flags & protocol::kFlagContainer) && cmd.args.size() > 1) {
    *sub = protocol::LookupSubcommand(**info, cmd.args[1]);
  }
  last_cmd_ = *sub ? (*sub)->name : *info ? (*info)->name : std::string_view("NULL");
}

bool Client::Refused(const Command& cmd, const CommandInfo* info, const CommandInfo* sub,
                     std::string_view name) {
  if (!server_->options().denied_commands.empty() && server_->Denied(name)) {
    // As if renamed away in redis.conf: the command does not exist for clients.
    Refuse(errors::UnknownCommand(cmd.args[0], cmd.args.data() + 1, cmd.args.size() - 1));
    return true;
  }
  if (!Authenticated()) {
    // Redis checks existence and arity before authentication (src/server.c processCommand).
    filters::SketchFamily family;
    if (info == nullptr && filters::LookupSketchCommand(cmd.args[0], &family) &&
        server_->emulates(family)) {
      ReplyLocal(errors::kNoAuth);
      return true;
    }
    if (info == nullptr) {
      ReplyLocal(errors::UnknownCommand(cmd.args[0], cmd.args.data() + 1, cmd.args.size() - 1));
      return true;
    }
    if (RejectMalformed(cmd, *info, sub)) return true;
    if ((info->flags & protocol::kFlagNoAuth) == 0) {
      ReplyLocal(errors::kNoAuth);
      return true;
    }
    return false;
  }
  std::string storage;
  std::string_view full;
  if (RulesAllow(cmd, info, sub, name, &storage, &full)) return false;
  filters::SketchFamily family;
  if (info == nullptr && full.find('.') == std::string_view::npos &&
      !filters::LookupSketchCommand(full, &family)) {
    // Not a command of Redis 7.0, the proxy or a module: Redis's own answer, unknown.
    Refuse(errors::UnknownCommand(cmd.args[0], cmd.args.data() + 1, cmd.args.size() - 1));
  } else if (info == nullptr || !RejectMalformed(cmd, *info, sub)) {
    Refuse(errors::NoPermission(full));
  }
  return true;
}

bool Client::RulesAllow(const Command& cmd, const CommandInfo* info, const CommandInfo* sub,
                        std::string_view name, std::string* storage, std::string_view* full) const {
  // Checked where Redis checks ACLs: after existence, arity and authentication. AUTH, HELLO,
  // RESET and QUIT are always allowed, as in Redis.
  if (acl_ == nullptr || (info != nullptr && (info->flags & protocol::kFlagNoAuth) != 0)) {
    return true;
  }
  *full = sub != nullptr ? sub->name : name;
  if (full->empty()) {  // longer than Lower's buffer: not a Redis command, a module's may be
    storage->assign(cmd.args[0]);
    for (char& c : *storage) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    *full = *storage;
  }
  return acl_->Allows(*full);
}

bool Client::PrepareEffect(const Command& cmd, const Route& route, const CommandInfo* info,
                           Outgoing* out) {
  const size_t argc = cmd.args.size();
  out->effect = route.effect;
  switch (route.effect) {
    case Effect::kMulti:
    case Effect::kMonitor:
    case Effect::kAsking:
      out->own_conn = true;
      out->hook = route.effect == Effect::kMulti     ? Hook::kMulti
                  : route.effect == Effect::kMonitor ? Hook::kMonitor
                                                     : Hook::kAsking;
      break;
    case Effect::kExec:
    case Effect::kDiscard:
      out->hook = route.effect == Effect::kExec ? Hook::kExec : Hook::kDiscard;
      out->arg = static_cast<int64_t>(multi_seq_);
      break;
    case Effect::kWatch:
    case Effect::kUnwatch:
      out->own_conn = route.effect == Effect::kWatch;
      out->hook = route.effect == Effect::kWatch ? Hook::kWatch : Hook::kUnwatch;
      out->arg = watching_;
      break;
    case Effect::kSelect:
      return SelectEffect(cmd, out);
    case Effect::kSubscribe:
    case Effect::kUnsubscribe:
      SubscribeEffect(cmd, route.effect, info->name, out);
      break;
    case Effect::kTracking:
      // CLIENT TRACKING and CACHING belong to the connection that ran them.
      out->own_conn = true;
      if (argc > 2) {
        out->hook = Hook::kTracking;
        out->arg = IEquals(cmd.args[2], "on") ? 1 : 0;
      }
      break;
    case Effect::kNoEvict:
    case Effect::kReadonly:
    case Effect::kReadwrite:
      out->hook = route.effect == Effect::kNoEvict ? Hook::kNoEvict : Hook::kReadonly;
      out->arg = route.effect == Effect::kNoEvict ? (argc > 2 && IEquals(cmd.args[2], "on"))
                                                  : route.effect == Effect::kReadonly;
      out->own_conn = out->arg == 1;
      break;
    case Effect::kPause:
      PauseEffect(cmd, out);
      break;
    case Effect::kUnpause:
      out->hook = Hook::kUnpause;
      break;
    case Effect::kBlockOption:
      out->own_conn = HasBlockOption(cmd);
      break;
    case Effect::kWait:
      out->up_to_date = true;
      break;
    case Effect::kUnknownSub:
      // Not answered here, unknown to Redis 7.0's table: a newer server's connection state
      // (CLIENT NO-TOUCH ON) must not land on a shared connection. The client keeps a
      // connection of its own, never reused, until it leaves or sends RESET.
      out->own_conn = true;
      break;
    case Effect::kNone:
    case Effect::kUnblock:
    case Effect::kReplyMode:
      break;
  }
  PrepareConnection(route, info, out);
  return true;
}

bool Client::SelectEffect(const Command& cmd, Outgoing* out) {
  int64_t db = 0;
  if (cmd.args.size() == 2 && protocol::StringToInt64(cmd.args[1], &db)) {
    if (db != 0 && server_->router().cluster()) {
      ReplyLocal("-ERR SELECT is not allowed in cluster mode\r\n");
      return false;
    }
    if (db == 0 && pinned_ == nullptr) {
      ReplyLocal("+OK\r\n");  // already there: no connection of its own needed
      return false;
    }
    out->own_conn = db != 0;
    out->hook = Hook::kSelect;
    out->arg = db;
  }
  return true;  // (an invalid db: the upstream's error)
}

void Client::SubscribeEffect(const Command& cmd, Effect effect, std::string_view name,
                             Outgoing* out) {
  // One reply per channel, or per subscription held when UNSUBSCRIBE names none (-1).
  out->sub_kind = name[0] == 'p' ? 1 : (name == "ssubscribe" || name == "sunsubscribe") ? 2 : 0;
  out->hook = Hook::kSubscribe;
  out->frames = cmd.args.size() > 1 ? static_cast<int32_t>(cmd.args.size() - 1) : -1;
  out->own_conn = effect == Effect::kSubscribe;
}

void Client::PauseEffect(const Command& cmd, Outgoing* out) {
  // CLIENT PAUSE timeout [WRITE|ALL]; the upstream validates, +OK starts the pause.
  int64_t ms = 0;
  if (cmd.args.size() >= 3 && protocol::StringToInt64(cmd.args[2], &ms) && ms >= 0) {
    out->hook = Hook::kPause;
    out->arg = ms;
    out->sub_kind = cmd.args.size() > 3 && IEquals(cmd.args[3], "write") ? 1 : 0;
  }
}

void Client::PrepareConnection(const Route& route, const CommandInfo* info, Outgoing* out) {
  if (route.conn == Conn::kDedicated) out->own_conn = true;
  out->stalls = (route.traits & protocol::kTraitStallsServer) != 0;
  out->blocks = route.conn == Conn::kDedicated && !in_multi_ && info != nullptr &&
                (info->flags & protocol::kFlagBlocking) != 0;
  out->writes = info != nullptr && ((info->flags & protocol::kFlagWrite) ||
                                    (route.traits & protocol::kTraitMayReplicate));
  if (!out->own_conn && pinned_ == nullptr && out->writes && UpstreamActivity::WritesPaused()) {
    // The upstream holds writes back (CLIENT PAUSE WRITE): on a shared connection this one
    // would hold back every read queued behind it.
    out->own_conn = true;
  }
}

UpstreamConn* Client::TargetFor(UpstreamPool* pool, bool own_conn, Dispatched* result,
                                bool* acquired) {
  *acquired = false;
  UpstreamConn* target = pinned_;
  if (pool == nullptr) pool = pinned_ != nullptr ? pinned_->pool() : server_->router().Any();
  if (target != nullptr && target->pool() != pool) {
    // On a cluster, a command for another node than the one holding this client's connection
    // state: its shared connection there, unless it needs a connection of its own, which the
    // client cannot have on two nodes.
    if (own_conn) {
      ReplyLocal(errors::kCrossSlot);
      *result = Dispatched::kDone;
      return nullptr;
    }
    target = nullptr;
  } else if (target == nullptr && own_conn) {
    if (inflight_ > 0) {
      // Commands of one client execute in order: the new connection waits for the old one.
      Pause(kPauseBarrier);
      *result = Dispatched::kRetryLater;
      return nullptr;
    }
    if (pool->Shared(&shared_slot_, flavor_) == nullptr || !pool->Reachable()) {
      // The upstream is down: say so at once, as for any command, rather than open a
      // connection that fails and takes the client's state with it.
      ReplyUnavailable(pool);
      *result = Dispatched::kDone;
      return nullptr;
    }
    pinned_ = pool->AcquirePinned(this, flavor_);
    target = pinned_;
    *acquired = true;
  }
  if (target == nullptr) {
    target = pool->Shared(&shared_slot_, flavor_);
    if (target == nullptr) {
      ReplyUnavailable(pool);
      *result = Dispatched::kDone;
      return nullptr;
    }
  }
  // Commands of one client execute in order: a new connection waits for the old one, except
  // between shared connections to different cluster nodes (different keys: only their
  // replies' order matters, and the reply slots keep it).
  const bool other_node = inflight_shared_ && target->shared() && inflight_pool_ != pool;
  if (inflight_ > 0 && inflight_conn_ != target && !other_node) {
    Pause(kPauseBarrier);
    *result = Dispatched::kRetryLater;
    return nullptr;
  }
  return target;
}

void Client::ApplyDispatchState(Effect effect, const Outgoing& out) {
  switch (effect) {
    case Effect::kMulti:
      if (!in_multi_) {
        in_multi_ = true;
        multi_count_ = 0;
        ++multi_seq_;
      }
      break;
    case Effect::kExec:
    case Effect::kDiscard:
      if (in_multi_) in_multi_ = watching_ = false;
      break;
    case Effect::kWatch:
      if (!in_multi_) watching_ = true;
      break;
    case Effect::kUnwatch:
      if (!in_multi_) watching_ = false;
      break;
    case Effect::kSubscribe:
      if (out.own_conn) ++subscribing_;
      break;
    case Effect::kMonitor:
      // Later commands of the pipeline go to the monitor's connection, and QUIT and RESET after
      // its lines (the reply confirms it, or takes it back).
      monitor_ = true;
      break;
    case Effect::kUnknownSub:
      unknown_state_ = true;
      if (pinned_ != nullptr) pinned_->mark_dirty();
      break;
    default:
      break;
  }
  // ASKING holds for the one command after it.
  asking_ = effect == Effect::kAsking;
}

Client::Dispatched Client::SendUpstream(const Command& cmd, Outgoing& out) {
  Dispatched result = Dispatched::kDone;
  bool acquired = false;
  if (server_->router().cluster() && !out.own_conn && pinned_ == nullptr &&
      (out.pool == nullptr || !out.pool->Reachable())) {
    return HoldForNode(cmd, out);
  }
  UpstreamConn* target = TargetFor(out.pool, out.own_conn, &result, &acquired);
  if (target == nullptr) return result;
  ApplyDispatchState(out.effect, out);
  if (out.up_to_date && acquired) {
    // WAIT counts the replicas that acknowledged its connection's last write: a connection
    // taken for it has not written yet, so it runs a command first, which brings its write
    // offset to the server's (this client's earlier writes are in: it waited for them).
    target->Send(std::string_view("*1\r\n$4\r\nPING\r\n"), new Pending);
    target->NoteOwnCommand({"PING"});
  }
  if (out.effect == Effect::kWatch && !in_multi_ && server_->emulated() != 0 &&
      cmd.args.size() > 1) {
    // A filter's or sketch's data keys are watched with its name (filters/common/watch_plan.h).
    Pending* p = NewPlanSlot(target);
    p->hook = out.hook;
    p->arg = out.arg;
    PlanRunner::Run(server_, {p}, UpstreamRef(target),
                    filters::MakeWatchPlan({cmd.args.begin() + 1, cmd.args.end()}), out.slot);
    return Dispatched::kDone;
  }
  Pending* p = NewUpstreamSlot(target);
  p->hook = out.hook;
  p->arg = out.arg;
  p->frames_left = out.frames;
  p->sub_kind = out.sub_kind;
  p->subscribe = out.hook == Hook::kSubscribe && out.own_conn;
  if (out.stalls) p->MarkStalling();
  p->blocks = out.blocks;
  if (out.writes && target->shared()) p->MarkSharedWrite();
  const std::string_view bytes = out.rewritten.empty() ? RequestBytes(cmd) : out.rewritten;
  if (server_->router().cluster() && target->shared()) {
    // Kept for a redirection (ClusterRouter::Redirect).
    p->request.assign(bytes);
    p->cluster_slot = out.slot;
  }
  target->Send(bytes, p);
  if (inflight_ >= MaxInFlight()) {
    Pause(kPauseBackpressure);
    return Dispatched::kStop;
  }
  return Dispatched::kDone;
}

bool Client::PauseMayGo(uint64_t pause_ms) {
  // Writes already on shared connections would be held by the pause, and the reads queued
  // behind them with them, where Redis answers those reads at once. So from now on writes take
  // connections of their own, and the pause goes upstream once the shared ones have none left
  // (or after kPauseDrainMs: writes that keep coming from elsewhere do not hold it back).
  constexpr uint64_t kPauseDrainMs = 500;
  const uint64_t now = UpstreamActivity::MonotonicMs();
  if (pause_drain_since_ == 0) {
    pause_drain_since_ = now;
    UpstreamActivity::Paused(now, pause_ms + kPauseDrainMs, /*writes_only=*/true);
  }
  if (UpstreamActivity::SharedWrites() == 0 || now - pause_drain_since_ >= kPauseDrainMs) {
    pause_drain_since_ = 0;
    return true;
  }
  Pause(kPauseDrain);
  server_->WaitForSharedWrites(this);
  return false;
}

void Client::RetryPause() { Resume(kPauseDrain); }

std::string_view Client::RequestBytes(const Command& cmd) {
  if (!cmd.raw.empty()) return cmd.raw;
  std::string& scratch = server_->scratch();
  scratch.clear();
  protocol::AppendCommand(&scratch, cmd.args);
  return scratch;
}

bool Client::RejectMalformed(const Command& cmd, const CommandInfo& info, const CommandInfo* sub) {
  if ((info.flags & protocol::kFlagContainer) && cmd.args.size() > 1 && sub == nullptr) {
    Refuse(errors::UnknownSubcommand(cmd.args[0], cmd.args[1]));
    return true;
  }
  const CommandInfo& checked = sub ? *sub : info;
  if (!protocol::ArityOk(checked, cmd.args.size())) {
    Refuse(errors::WrongArity(sub ? sub->name : cmd.args[0]));
    return true;
  }
  return false;
}

void Client::Refuse(std::string_view error) {
  ReplyLocal(error);
  if (!in_multi_ || pinned_ == nullptr) return;
  // Redis flags the transaction of a client whose command it rejects, so that EXEC answers
  // EXECABORT. The upstream queued the transaction, so it must reject a command too: one it
  // cannot know, whose reply is dropped (the client has the proxy's).
  static constexpr std::string_view kUnknown = "*1\r\n$18\r\nbloomproxy-refused\r\n";
  Pending* p = NewUpstreamSlot(pinned_);
  p->suppress = true;
  pinned_->Send(kUnknown, p);
}

void Client::ReplyProtocolError(const std::string& error) {
  LOG_VERBOSE_F({{"client", addr_}, {"client_id", id_}},
                "Protocol error (%s) from client: id=%llu addr=%s", error.c_str(),
                static_cast<unsigned long long>(id_), addr_.c_str());
  std::string reply;
  protocol::AppendError(&reply, error);
  input_closed_ = true;
  Pause(kPauseClosing);
  in_.Consume(in_.size());
  ReplyLocal(reply, /*close_after=*/true);
}

void Client::ReplyUnavailable(UpstreamPool* pool) {
  if (server_->router().cluster()) {
    ReplyLocal(errors::kClusterDown);
    return;
  }
  if (pool == nullptr) pool = server_->router().Any();
  ReplyLocal(errors::UpstreamUnavailable(pool->address().text + ": " + pool->unavailable_reason()));
}

Client::Dispatched Client::HoldForNode(const Command& cmd, Outgoing& out) {
  // On a cluster, no reachable node serves the slot now (a failover, a map not read yet): the
  // router sends it once one does (or answers -CLUSTERDOWN after a while).
  Pending* p = NewRoutedSlot();
  p->request.assign(out.rewritten.empty() ? RequestBytes(cmd) : out.rewritten);
  p->cluster_slot = out.slot;
  ApplyDispatchState(out.effect, out);
  server_->router().SendOrHold(p);
  return Dispatched::kDone;
}

Client::Dispatched Client::DeferMulti() {
  // On a cluster the transaction lives on the node of its first command's keys: MULTI is
  // answered now, as Redis answers it, and sent with that command (StartDeferredMulti).
  if (in_multi_) {
    ReplyLocal(errors::kNestedMulti);
    return Dispatched::kDone;
  }
  ReplyLocal("+OK\r\n");
  deferred_multi_ = true;
  multi_slot_ = -1;
  Outgoing out;
  ApplyDispatchState(Effect::kMulti, out);
  return Dispatched::kDone;
}

}  // namespace bloomproxy::proxy
