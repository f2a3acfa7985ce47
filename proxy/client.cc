#include "proxy/client.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "protocol/command_table.h"
#include "protocol/encoder.h"
#include "protocol/errors.h"
#include "protocol/reply_framer.h"
#include "proxy/log.h"
#include "proxy/plan_runner.h"
#include "proxy/server.h"
#include "proxy/upstream.h"

namespace bloomproxy::proxy {

namespace errors = protocol::errors;
using protocol::Command;
using protocol::Route;

namespace {

constexpr size_t kReadChunk = 16 * 1024;
// A client may have this many commands upstream before the proxy stops reading from it; replies
// keep flowing meanwhile, so a client that writes a long pipeline before reading cannot
// deadlock against the proxy.
constexpr size_t kMaxInFlight = 8192;

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

}  // namespace

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

namespace {

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.substr(0, prefix.size()) == prefix;
}

}  // namespace

namespace {

// Freed slots of this thread, reused by the next commands.
struct PendingFreeList {
  std::vector<void*> blocks;
  ~PendingFreeList() {
    for (void* p : blocks) ::operator delete(p);
  }
};
thread_local PendingFreeList g_free_pending;
constexpr size_t kMaxFreePending = 4096;

}  // namespace

void* Pending::operator new(size_t size) {
  std::vector<void*>& blocks = g_free_pending.blocks;
  if (size == sizeof(Pending) && !blocks.empty()) {
    void* p = blocks.back();
    blocks.pop_back();
    return p;
  }
  return ::operator new(size);
}

void Pending::operator delete(void* p) {
  std::vector<void*>& blocks = g_free_pending.blocks;
  if (p != nullptr && blocks.size() < kMaxFreePending) {
    blocks.push_back(p);
  } else {
    ::operator delete(p);
  }
}

Client::Client(Server* server, uint64_t id, bool is_unix)
    : server_(server), id_(id), is_unix_(is_unix) {
  protocol::ParserLimits limits;
  limits.max_bulk_len = server->options().proto_max_bulk_len;
  parser_ = protocol::RequestParser(limits);
  if (is_unix) {
    uv_pipe_init(server->loop(), &sock_.pipe, 0);
  } else {
    uv_tcp_init(server->loop(), &sock_.tcp);
  }
  sock_.handle.data = this;
  write_req_.data = this;
  authenticated_ = !server->auth_required();
  created_ms_ = last_interaction_ms_ = server->NowMs();
  shared_slot_ = server->pool().NextSlot();
}

Client::~Client() {
  for (Pending* p : replies_) {
    if (p->in_flight) {
      p->client = nullptr;
    } else {
      delete p;
    }
  }
}

void Client::Start() {
  sockaddr_storage ss;
  int len = sizeof(ss);
  char host[64] = "";
  auto format = [&](const sockaddr_storage& a) {
    int port = 0;
    if (a.ss_family == AF_INET) {
      auto* in = reinterpret_cast<const sockaddr_in*>(&a);
      uv_ip4_name(in, host, sizeof(host));
      port = ntohs(in->sin_port);
    } else if (a.ss_family == AF_INET6) {
      auto* in6 = reinterpret_cast<const sockaddr_in6*>(&a);
      uv_ip6_name(in6, host, sizeof(host));
      port = ntohs(in6->sin6_port);
    }
    return std::string(host) + ":" + std::to_string(port);
  };
  if (is_unix_) {
    addr_ = laddr_ = server_->options().unixsocket + ":0";
  } else {
    if (uv_tcp_getpeername(&sock_.tcp, reinterpret_cast<sockaddr*>(&ss), &len) == 0) {
      addr_ = format(ss);
    }
    len = sizeof(ss);
    if (uv_tcp_getsockname(&sock_.tcp, reinterpret_cast<sockaddr*>(&ss), &len) == 0) {
      laddr_ = format(ss);
    }
    uv_tcp_nodelay(&sock_.tcp, 1);
  }
  if (uv_read_start(stream(), OnAlloc, OnRead) == 0) {
    reading_ = true;
  } else {
    Close();
  }
}

// ---------------------------------------------------------------------------------------------
// Reading and dispatch

void Client::OnAlloc(uv_handle_t* h, size_t, uv_buf_t* buf) {
  auto* self = static_cast<Client*>(h->data);
  size_t want = kReadChunk;
  // A big bulk announced by its header is read into one buffer reserved once.
  const size_t expected = self->parser_.expected_size();
  if (expected > self->in_.size() + want) want = expected - self->in_.size();
  char* p = self->in_.Reserve(want);
  *buf = uv_buf_init(p, static_cast<unsigned>(std::min<size_t>(self->in_.free_space(), 1u << 30)));
}

void Client::OnRead(uv_stream_t* s, ssize_t nread, const uv_buf_t*) {
  auto* self = static_cast<Client*>(s->data);
  if (nread == 0) return;
  if (nread < 0) {
    // Like Redis, a client that closes its side is gone: its pending replies are dropped.
    self->Close();
    return;
  }
  self->in_.Commit(static_cast<size_t>(nread));
  self->last_interaction_ms_ = self->server_->NowMs();
  self->ProcessInput();
}

void Client::ProcessInput() {
  processing_ = true;
  ProcessCommands();
  processing_ = false;
  // A pause lifted while the commands ran (a plan that finished at once) leaves reading
  // stopped: start it again.
  if (paused_ == 0 && !closing_ && !reading_ && !input_closed_) {
    if (uv_read_start(stream(), OnAlloc, OnRead) == 0) reading_ = true;
  }
}

void Client::ProcessCommands() {
  while (paused_ == 0 && !closing_ && !in_.empty()) {
    size_t consumed = 0;
    protocol::ParseStatus st = parser_.Parse(in_.view(), authenticated_, &consumed, &cmd_);
    if (st == protocol::ParseStatus::kNeedMore) {
      in_.Consume(consumed);
      break;
    }
    if (st == protocol::ParseStatus::kError) {
      ReplyProtocolError(parser_.error());
      return;
    }
    Dispatched d = Dispatch(cmd_);
    if (d == Dispatched::kRetryLater) {
      // The command is parsed again when the client resumes.
      parser_.Reset();
      break;
    }
    in_.Consume(consumed);
    if (d == Dispatched::kStop) break;
  }
  if (closing_) return;
  if (in_.size() > static_cast<size_t>(server_->options().client_query_buffer_limit)) {
    LOG_WARNING("Closing client that reached max query buffer length: id=%llu addr=%s",
                static_cast<unsigned long long>(id_), addr_.c_str());
    Close();
    return;
  }
  if (in_.empty()) in_.ShrinkIfIdle(kReadChunk * 4);
}

void Client::ReplyProtocolError(const std::string& error) {
  LOG_VERBOSE("Protocol error (%s) from client: id=%llu addr=%s", error.c_str(),
              static_cast<unsigned long long>(id_), addr_.c_str());
  std::string reply;
  protocol::AppendError(&reply, error);
  input_closed_ = true;
  Pause(kPauseClosing);
  in_.Consume(in_.size());
  ReplyLocal(reply, /*close_after=*/true);
}

bool Client::RejectMalformed(const Command& cmd, const protocol::CommandInfo& info,
                             const protocol::CommandInfo* sub) {
  if ((info.flags & protocol::kFlagContainer) && cmd.args.size() > 1 && sub == nullptr) {
    Refuse(errors::UnknownSubcommand(cmd.args[0], cmd.args[1]));
    return true;
  }
  const protocol::CommandInfo& checked = sub ? *sub : info;
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

Client::Dispatched Client::Dispatch(const Command& cmd) {
  if (cmd.args.empty()) return Dispatched::kDone;
  if (running_plans_ > 0 && !JoinsRunningBatches(cmd)) {
    // A plan of this client is not answered yet: what comes after it waits, so it sees the
    // plan's effects (and its reply keeps its place).
    Pause(kPausePlan);
    return Dispatched::kRetryLater;
  }
  ++server_->stats().commands_processed;
  char name_buf[32];
  std::string_view name = Lower(cmd.args[0], name_buf, sizeof(name_buf));
  const protocol::CommandInfo* info = protocol::LookupCommand(cmd.args[0]);
  const protocol::CommandInfo* sub = nullptr;
  if (info != nullptr && (info->flags & protocol::kFlagContainer) && cmd.args.size() > 1) {
    sub = protocol::LookupSubcommand(*info, cmd.args[1]);
  }
  last_cmd_ = sub ? sub->name : info ? info->name : std::string_view("NULL");
  if (in_multi_) ++multi_count_;

  if (name == "quit") {
    // Redis answers QUIT before anything else, authenticated or not, and closes after it.
    input_closed_ = true;
    Pause(kPauseClosing);
    ReplyLocal("+OK\r\n", /*close_after=*/true);
    return Dispatched::kStop;
  }
  if (!server_->options().denied_commands.empty() && server_->Denied(name)) {
    // As if renamed away in redis.conf: the command does not exist for clients.
    Refuse(errors::UnknownCommand(cmd.args[0], cmd.args.data() + 1, cmd.args.size() - 1));
    return Dispatched::kDone;
  }
  if (info != nullptr && info->route == Route::kCloseClient) {
    // Redis treats these as an HTTP request sent to a Redis port and closes silently.
    LOG_WARNING(
        "Possible SECURITY ATTACK detected. It looks like somebody is sending POST or "
        "Host: commands to bloomproxy. Connection aborted.");
    Close();
    return Dispatched::kStop;
  }
  if (!authenticated_) {
    // Redis checks existence and arity before authentication (src/server.c processCommand).
    filters::BfCommand bf;
    if (info == nullptr && server_->bf_emulate() && filters::LookupBfCommand(cmd.args[0], &bf)) {
      ReplyLocal(errors::kNoAuth);
      return Dispatched::kDone;
    }
    if (info == nullptr) {
      ReplyLocal(errors::UnknownCommand(cmd.args[0], cmd.args.data() + 1, cmd.args.size() - 1));
      return Dispatched::kDone;
    }
    if (RejectMalformed(cmd, *info, sub)) return Dispatched::kDone;
    if ((info->flags & protocol::kFlagNoAuth) == 0) {
      ReplyLocal(errors::kNoAuth);
      return Dispatched::kDone;
    }
  } else if (acl_ != nullptr && (info == nullptr || (info->flags & protocol::kFlagNoAuth) == 0)) {
    // The user's command rules, checked where Redis checks ACLs: after existence, arity and
    // authentication. AUTH, HELLO, RESET and QUIT are always allowed, as in Redis.
    std::string lower;
    std::string_view full = sub ? sub->name : name;
    if (full.empty()) {
      lower.assign(cmd.args[0]);
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      full = lower;
    }
    if (!acl_->Allows(full)) {
      filters::BfCommand bf;
      if (info == nullptr && full.find('.') == std::string_view::npos &&
          !filters::LookupBfCommand(full, &bf)) {
        // Not a command of Redis 7.0, the proxy or a module: Redis's own answer, unknown.
        Refuse(errors::UnknownCommand(cmd.args[0], cmd.args.data() + 1, cmd.args.size() - 1));
      } else if (info == nullptr || !RejectMalformed(cmd, *info, sub)) {
        Refuse(errors::NoPermission(full));
      }
      return Dispatched::kDone;
    }
  }
  if (name == "reset") {
    if (cmd.args.size() != 1) {
      ReplyLocal(errors::WrongArity(cmd.args[0]));
      return Dispatched::kDone;
    }
    return HandleReset();
  }

  // Inside a transaction, in pub/sub mode and while monitoring, the upstream decides what a
  // command means (queued, rejected, allowed), so everything goes to the pinned connection.
  if (pinned_ != nullptr && (in_multi_ || in_pubsub() || subscribing_ > 0 || monitor_)) {
    if (in_multi_ && info != nullptr && info->route == Route::kLocal && name != "ping" &&
        name != "echo") {
      // AUTH, CLIENT SETNAME, HELLO queued in a transaction change the upstream connection.
      pinned_->mark_dirty();
    }
  } else if (server_->bf_emulate()) {
    Dispatched d = HandleFilterCommand(cmd, name);
    if (d != Dispatched::kForward) return d;
  }
  if (pinned_ != nullptr && (in_multi_ || in_pubsub() || subscribing_ > 0 || monitor_)) {
    // As above: the pinned connection's.
  } else if (info != nullptr && info->route == Route::kLocal) {
    if (pinned_ != nullptr && (name == "ping" || name == "echo")) {
      // Forwarding keeps them in order with the pinned connection's replies.
    } else {
      if (!protocol::ArityOk(*info, cmd.args.size())) {
        ReplyLocal(errors::WrongArity(cmd.args[0]));
        return Dispatched::kDone;
      }
      Dispatched d = HandleLocal(cmd, name);
      if (d != Dispatched::kForward) return d;
    }
  }

  // Commands that start, end or depend on connection state.
  std::string rewritten;  // the request to send instead of the client's, when not empty
  Hook hook = Hook::kNone;
  int64_t arg = 0;
  bool pin = false;
  int32_t frames = 1;
  uint8_t sub_kind = 0;
  const Route route = info ? info->route : Route::kForward;
  if (route == Route::kPin || route == Route::kUnpin || route == Route::kBlocking) {
    if (name == "multi") {
      pin = true;
    } else if (name == "watch") {
      pin = true;
      hook = Hook::kWatch;
      arg = watching_;
    } else if (name == "unwatch") {
      hook = Hook::kUnwatch;
    } else if (name == "select") {
      int64_t db = 0;
      if (cmd.args.size() == 2 && protocol::StringToInt64(cmd.args[1], &db)) {
        if (db == 0 && pinned_ == nullptr) {
          ReplyLocal("+OK\r\n");
          return Dispatched::kDone;
        }
        pin = db != 0;
        hook = Hook::kSelect;
        arg = db;
      }
    } else if (name == "monitor") {
      pin = true;
      hook = Hook::kMonitor;
    } else if (name == "subscribe" || name == "psubscribe" || name == "ssubscribe" ||
               name == "unsubscribe" || name == "punsubscribe" || name == "sunsubscribe") {
      const bool subscribe = name.find("unsub") == std::string_view::npos;
      sub_kind = name[0] == 'p' ? 1 : (name[0] == 's' && name[1] != 'u' ? 2 : 0);
      if (name == "sunsubscribe") sub_kind = 2;
      hook = Hook::kSubscribe;
      frames = cmd.args.size() > 1 ? static_cast<int32_t>(cmd.args.size() - 1) : -1;
      pin = subscribe;
    } else if (route == Route::kBlocking) {
      pin = in_multi_ ? false : ((name != "xread" && name != "xreadgroup") || HasBlockOption(cmd));
    }
  } else if (name == "client" && cmd.args.size() > 1 &&
             (IEquals(cmd.args[1], "tracking") || IEquals(cmd.args[1], "caching"))) {
    // CLIENT TRACKING and CACHING belong to the connection that ran them.
    pin = true;
    if (IEquals(cmd.args[1], "tracking") && cmd.args.size() > 2) {
      hook = Hook::kTracking;
      arg = IEquals(cmd.args[2], "on") ? 1 : 0;
      if (arg == 1) RewriteTrackingRedirect(cmd, &rewritten);
    }
  } else if (name == "client" && cmd.args.size() > 2 && IEquals(cmd.args[1], "unblock")) {
    RewriteUnblock(cmd, &rewritten);
  } else if (name == "info" && InfoWantsProxySection(cmd)) {
    hook = Hook::kInfo;
  } else if (name == "command" && server_->bf_emulate()) {
    if (cmd.args.size() == 1 || (cmd.args.size() == 2 && IEquals(cmd.args[1], "list"))) {
      hook = Hook::kCommandAll;
    } else if (cmd.args.size() == 2 && IEquals(cmd.args[1], "count")) {
      hook = Hook::kCommandCount;
    } else if (cmd.args.size() > 2 && IEquals(cmd.args[1], "info")) {
      // The upstream answers nil for the BF.* names; their entries replace those nils.
      for (size_t i = 2; i < cmd.args.size() && i < 64 + 2; ++i) {
        filters::BfCommand bf;
        if (filters::LookupBfCommand(cmd.args[i], &bf)) arg |= int64_t{1} << (i - 2);
      }
      if (arg != 0) {
        hook = Hook::kCommandInfo;
        bf_names_.assign(cmd.args.begin() + 2, cmd.args.end());
      }
    }
  }

  UpstreamConn* target = pinned_;
  if (target == nullptr && pin) {
    if (inflight_ > 0) {
      Pause(kPauseBarrier);
      return Dispatched::kRetryLater;
    }
    pinned_ = server_->pool().AcquirePinned(this);
    target = pinned_;
  }
  if (target == nullptr) {
    target = server_->pool().Shared(&shared_slot_);
    if (target == nullptr) {
      ReplyLocal(errors::UpstreamUnavailable(server_->upstream_address().text + ": " +
                                             server_->pool().unavailable_reason()));
      return Dispatched::kDone;
    }
  }
  if (inflight_ > 0 && inflight_conn_ != target) {
    // Commands of one client execute in order: the new connection waits for the old one.
    Pause(kPauseBarrier);
    return Dispatched::kRetryLater;
  }

  // Dispatch-time state: later commands of the same pipeline are routed by it.
  if (name == "multi") {
    in_multi_ = true;
    multi_count_ = 0;
  } else if ((name == "exec" || name == "discard") && in_multi_) {
    in_multi_ = false;
    watching_ = false;
  } else if (name == "watch" && !in_multi_) {
    watching_ = true;
  } else if (name == "unwatch" && !in_multi_) {
    watching_ = false;
  } else if (hook == Hook::kSubscribe && pin) {
    ++subscribing_;
  }

  Pending* p = NewUpstreamSlot(target);
  p->hook = hook;
  p->arg = arg;
  p->frames_left = frames;
  p->sub_kind = sub_kind;
  p->subscribe = hook == Hook::kSubscribe && pin;
  if (!rewritten.empty()) {
    target->Send(rewritten, p);
  } else if (!cmd.raw.empty()) {
    target->Send(cmd.raw, p);
  } else {
    std::string& scratch = server_->scratch();
    scratch.clear();
    protocol::AppendCommand(&scratch, cmd.args);
    target->Send(scratch, p);
  }
  if (inflight_ >= MaxInFlight()) {
    Pause(kPauseBackpressure);
    return Dispatched::kStop;
  }
  return Dispatched::kDone;
}

void Client::RewriteTrackingRedirect(const Command& cmd, std::string* out) {
  // REDIRECT names a client by the proxy's CLIENT ID; the upstream knows that client by its
  // pinned connection's id. An id the proxy does not know becomes one Redis cannot know either,
  // so the upstream answers with its own "does not exist" error.
  std::vector<std::string_view> args(cmd.args.begin(), cmd.args.end());
  std::string upstream_id;
  pending_redirect_ = 0;
  for (size_t i = 3; i + 1 < args.size(); ++i) {
    if (!IEquals(args[i], "redirect")) continue;
    int64_t id = 0;
    if (!protocol::StringToInt64(args[i + 1], &id)) return;  // the upstream's error
    int64_t target = INT64_MAX;
    auto it = server_->clients().find(static_cast<uint64_t>(id));
    if (id > 0 && it != server_->clients().end() && it->second->pinned_ != nullptr &&
        it->second->pinned_->redis_client_id() > 0) {
      target = it->second->pinned_->redis_client_id();
      pending_redirect_ = static_cast<uint64_t>(id);
    }
    upstream_id = std::to_string(target);
    args[i + 1] = upstream_id;
    protocol::AppendCommand(out, args);
    return;
  }
}

// ---------------------------------------------------------------------------------------------
// Replies

Pending* Client::NewSlot() {
  auto* p = new Pending;
  p->client = this;
  if (reply_skip_) {
    p->suppress = true;
    reply_skip_ = false;
  } else if (reply_off_) {
    p->suppress = true;
  }
  return p;
}

void Client::Append(std::string_view bytes) {
  out_.pending().append(bytes);
  MarkDirty();
  const size_t size = out_.size();
  const conf::Options& o = server_->options();
  if (in_pubsub() && size > static_cast<size_t>(o.client_output_limit_pubsub)) {
    if (!close_asap_) {
      LOG_WARNING("Client id=%llu addr=%s closed for overcoming of output buffer limits.",
                  static_cast<unsigned long long>(id_), addr_.c_str());
    }
    close_asap_ = true;  // closed by Flush, outside whatever is delivering now
  } else if (size > static_cast<size_t>(o.client_output_pause) && (paused_ & kPauseOutput) == 0) {
    Pause(kPauseOutput);
  }
}

void Client::ReplyLocal(std::string_view bytes, bool close_after) {
  if (replies_.empty() && !close_after && !reply_off_ && !reply_skip_) {
    // Nothing ahead of it: straight to the output, no slot needed.
    Append(bytes);
    return;
  }
  Pending* p = NewSlot();
  p->data.assign(bytes);
  p->done = true;
  p->close_after = close_after;
  replies_.push_back(p);
  DeliverHead();
}

void Client::DeliverHead() {
  while (!replies_.empty()) {
    Pending* head = replies_.front();
    if (!head->data.empty()) {
      if (!head->suppress) Append(head->data);
      head->data.clear();
    }
    if (!head->done) break;
    replies_.pop_front();
    if (head->close_after) {
      close_when_drained_ = true;
      MarkDirty();
    }
    delete head;
  }
}

size_t Client::MaxInFlight() const {
  // Replies of commands in flight land in the output buffer whether or not the client reads,
  // and their sizes are unknown until they arrive. So a new client starts with a small window
  // that grows by one per reply (a pipeline of small replies soon runs at kMaxInFlight), and
  // with big replies fewer commands go upstream at once, sized by the largest recent reply,
  // so that the buffered replies stay near client-output-pause.
  const size_t by_size = static_cast<size_t>(server_->options().client_output_pause) /
                         std::max<size_t>(reply_peak_, 1);
  return std::clamp<size_t>(by_size, 16, window_);
}

bool Client::OnUpstreamFrame(UpstreamConn* conn, Pending* slot, std::string_view frame) {
  reply_peak_ = std::max(frame.size(), reply_peak_ - reply_peak_ / 64);
  if (window_ < kMaxInFlight) ++window_;
  const bool is_error = !frame.empty() && frame[0] == '-';
  if (slot->hook != Hook::kNone && slot->client != nullptr) ApplyHook(slot, frame);
  if (!slot->suppress) {
    if (slot->hook == Hook::kInfo && !is_error && !frame.empty() && frame[0] == '$') {
      // The upstream's INFO text plus this proxy's own section, as one bulk.
      protocol::ReplyPtr r = server_->decoder().Decode(frame);
      std::string body = r && r->type == REDIS_REPLY_STRING ? std::string(r->str, r->len) : "";
      body += "\r\n";
      body += server_->ProxySection();
      std::string bulk;
      protocol::AppendBulk(&bulk, body);
      slot->data.append(bulk);
    } else if ((slot->hook == Hook::kCommandAll || slot->hook == Hook::kCommandCount) &&
               !is_error) {
      slot->data.append(AddBfCommands(slot->hook, frame));
    } else if (slot->hook == Hook::kCommandInfo && !is_error) {
      slot->data.append(FillBfCommandInfo(slot->arg, frame));
    } else if (!replies_.empty() && replies_.front() == slot) {
      Append(frame);
    } else {
      slot->data.append(frame);
    }
  }
  if (slot->frames_left < 0) slot->frames_left = 1;
  if (!is_error && --slot->frames_left > 0) return false;

  slot->in_flight = false;
  slot->done = true;
  if (slot->subscribe && subscribing_ > 0) --subscribing_;
  if (inflight_ > 0) --inflight_;
  DeliverHead();
  if (inflight_ == 0) {
    MaybeReleasePin();
    if (paused_ & kPauseBarrier) Resume(kPauseBarrier);
  }
  if ((paused_ & kPauseBackpressure) && inflight_ <= MaxInFlight() / 2) {
    Resume(kPauseBackpressure);
  }
  (void)conn;
  return true;
}

std::string Client::AddBfCommands(Hook hook, std::string_view frame) {
  // COMMAND and COMMAND LIST: an array, to which the BF.* entries (or names) are appended;
  // COMMAND COUNT: an integer.
  std::vector<std::string> extra;
  if (hook == Hook::kCommandAll) {
    extra = filters::BfCommandEntries();
  }
  const size_t eol = frame.find("\r\n");
  int64_t n = 0;
  if (eol == std::string_view::npos || frame.size() < 2 ||
      !protocol::StringToInt64(frame.substr(1, eol - 1), &n)) {
    return std::string(frame);
  }
  const int64_t added = static_cast<int64_t>(filters::BfCommandEntries().size());
  std::string out;
  if (frame[0] == ':' && hook == Hook::kCommandCount) {
    protocol::AppendInteger(&out, n + added);
    return out;
  }
  if (frame[0] != '*') return std::string(frame);
  protocol::AppendArrayHeader(&out, n + added);
  out.append(frame.substr(eol + 2));
  // COMMAND LIST's elements are names; COMMAND's are entries.
  const bool names = frame.size() > eol + 2 && frame[eol + 2] == '$';
  for (const std::string& entry : extra) {
    if (names) {
      protocol::ReplyPtr r = server_->decoder().Decode(entry);
      protocol::AppendBulk(&out, r && r->elements > 0 ? protocol::ReplyString(r->element[0]) : "");
    } else {
      out += entry;
    }
  }
  return out;
}

std::string Client::FillBfCommandInfo(int64_t positions, std::string_view frame) {
  // Splits the array into its elements and puts a BF.* entry where a BF name was asked.
  const size_t eol = frame.find("\r\n");
  int64_t n = 0;
  if (frame.empty() || frame[0] != '*' || eol == std::string_view::npos ||
      !protocol::StringToInt64(frame.substr(1, eol - 1), &n)) {
    return std::string(frame);
  }
  std::string out(frame.substr(0, eol + 2));
  std::string_view rest = frame.substr(eol + 2);
  protocol::ReplyFramer framer;
  for (int64_t i = 0; i < n; ++i) {
    size_t len = 0;
    if (framer.Next(rest, &len) != protocol::FrameStatus::kComplete) return std::string(frame);
    std::string entry;
    if (i < 64 && ((positions >> i) & 1) && static_cast<size_t>(i) < bf_names_.size()) {
      entry = filters::BfCommandEntry(bf_names_[static_cast<size_t>(i)]);
    }
    out += entry.empty() ? std::string(rest.substr(0, len)) : entry;
    rest.remove_prefix(len);
  }
  return out;
}

void Client::ApplyHook(Pending* slot, std::string_view frame) {
  const bool ok = frame == "+OK\r\n";
  switch (slot->hook) {
    case Hook::kSelect:
      if (ok) db_ = slot->arg;
      break;
    case Hook::kWatch:
      if (!ok && slot->arg == 0 && !in_multi_) watching_ = false;
      break;
    case Hook::kMonitor:
      if (ok) monitor_ = true;
      break;
    case Hook::kTracking:
      if (ok) {
        tracking_ = slot->arg != 0;
        tracking_redirect_ = tracking_ ? pending_redirect_ : 0;
      }
      break;
    case Hook::kSubscribe:
      ApplySubscriptionFrame(slot, frame);
      break;
    default:
      break;
  }
}

void Client::ApplySubscriptionFrame(Pending* slot, std::string_view frame) {
  if (frame.empty() || frame[0] != '*') return;
  protocol::ReplyPtr r = server_->decoder().Decode(frame);
  if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
      r->element[0]->type != REDIS_REPLY_STRING || r->element[2]->type != REDIS_REPLY_INTEGER) {
    return;
  }
  std::string_view kind = protocol::ReplyString(r->element[0]);
  const int64_t count = r->element[2]->integer;
  if (slot->frames_left == -1) {
    // UNSUBSCRIBE without arguments answers once per subscription of its kind that the
    // connection had when it ran (at least once); frames arrive in execution order, so the
    // counts known now are the counts it saw.
    const int64_t had =
        slot->sub_kind == 1 ? patterns_ : (slot->sub_kind == 2 ? shard_channels_ : channels_);
    slot->frames_left = static_cast<int32_t>(std::max<int64_t>(1, had));
  }
  if (kind == "subscribe" || kind == "unsubscribe") {
    channels_ = std::max<int64_t>(0, count - patterns_);
  } else if (kind == "psubscribe" || kind == "punsubscribe") {
    patterns_ = std::max<int64_t>(0, count - channels_);
  } else if (kind == "ssubscribe" || kind == "sunsubscribe") {
    shard_channels_ = count;
  }
}

bool Client::OnPush(UpstreamConn* conn, std::string_view frame) {
  if (conn != pinned_) return false;
  bool push = false;
  if (monitor_ && frame.size() > 1 && frame[0] == '+' &&
      std::isdigit(static_cast<unsigned char>(frame[1]))) {
    push = true;
  } else if (in_pubsub() && (StartsWith(frame, "*3\r\n$7\r\nmessage\r\n") ||
                             StartsWith(frame, "*4\r\n$8\r\npmessage\r\n") ||
                             StartsWith(frame, "*3\r\n$8\r\nsmessage\r\n"))) {
    push = true;
  }
  if (!push) return false;
  // Every earlier reply of this connection has been delivered (the head of replies_ is waiting
  // for this connection), so writing the message now keeps Redis's order.
  if (!reply_off_) Append(frame);
  return true;
}

void Client::OnPinLost() {
  const bool had_state = NeedsPin();
  pinned_ = nullptr;
  in_multi_ = watching_ = monitor_ = tracking_ = false;
  db_ = channels_ = patterns_ = shard_channels_ = 0;
  subscribing_ = 0;
  if (had_state) {
    // The state lived in the lost connection (a transaction, subscriptions, a db). Like a
    // server going away, the client is closed once it has the error replies, so it reconnects
    // and rebuilds its state instead of running on without it.
    CloseWhenDrained();
  }
}

void Client::OnPlanDone(Pending* slot, std::string reply) {
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

Client::Dispatched Client::HandleFilterCommand(const Command& cmd, std::string_view name) {
  filters::BfCommand bf;
  if (filters::LookupBfCommand(cmd.args[0], &bf)) {
    filters::BfRequest request;
    std::string error = filters::ParseBfRequest(cmd.args, server_->bf_config().defaults, &request);
    // BF.INFO's field and BF.SCANDUMP's iterator are checked after the key, as RedisBloom does.
    const bool deferred = !error.empty() && !request.key.empty() &&
                          (request.command == filters::BfCommand::kInfo ||
                           request.command == filters::BfCommand::kScanDump);
    if (!error.empty() && !deferred) {
      ReplyLocal(error);
      return Dispatched::kDone;
    }
    if (!deferred && (bf == filters::BfCommand::kAdd || bf == filters::BfCommand::kMAdd)) {
      return JoinBatch(request, /*exists=*/false);
    }
    if (!deferred && (bf == filters::BfCommand::kExists || bf == filters::BfCommand::kMExists)) {
      return JoinBatch(request, /*exists=*/true);
    }
    return StartPlan(filters::MakeBfPlan(request, &server_->filter_cache(), &server_->bf_config(),
                                         deferred ? std::move(error) : std::string()));
  }
  if (name == "type" || name == "del" || name == "unlink" || name == "expire" ||
      name == "pexpire" || name == "expireat" || name == "pexpireat" || name == "persist" ||
      name == "rename" || name == "renamenx") {
    std::unique_ptr<filters::Plan> plan = filters::MakeKeyPlan(cmd.args, &server_->filter_cache());
    if (plan) return StartPlan(std::move(plan));
  }
  return Dispatched::kForward;
}

bool Client::JoinsRunningBatches(const Command& cmd) const {
  // Only when everything this client waits for is batches of the same kind on the same filter:
  // a later batch's bits are written after an earlier one's (same connection, in order), so
  // the client's commands still take effect in order.
  if (batch_members_ != running_plans_ || cmd.args.size() < 3) return false;
  filters::BfCommand bf;
  if (!filters::LookupBfCommand(cmd.args[0], &bf)) return false;
  const bool exists = bf == filters::BfCommand::kExists || bf == filters::BfCommand::kMExists;
  const bool add = bf == filters::BfCommand::kAdd || bf == filters::BfCommand::kMAdd;
  return (exists || add) && exists == batch_exists_ && cmd.args[1] == batch_key_;
}

UpstreamConn* Client::PlanConnection(Dispatched* result) {
  UpstreamConn* target = pinned_ ? pinned_ : server_->pool().Shared(&shared_slot_);
  if (target == nullptr) {
    ReplyLocal(errors::UpstreamUnavailable(server_->upstream_address().text + ": " +
                                           server_->pool().unavailable_reason()));
    *result = Dispatched::kDone;
    return nullptr;
  }
  if (inflight_ > 0 && inflight_conn_ != target) {
    Pause(kPauseBarrier);
    *result = Dispatched::kRetryLater;
    return nullptr;
  }
  return target;
}

Pending* Client::NewUpstreamSlot(UpstreamConn* target) {
  Pending* p = NewSlot();
  replies_.push_back(p);
  ++inflight_;
  inflight_conn_ = target;
  return p;
}

Pending* Client::NewPlanSlot(UpstreamConn* target) {
  ++running_plans_;
  return NewUpstreamSlot(target);
}

Client::Dispatched Client::JoinBatch(const filters::BfRequest& request, bool exists) {
  Dispatched result = Dispatched::kDone;
  UpstreamConn* target = PlanConnection(&result);
  if (target == nullptr) return result;
  if (batch_members_ > 0 &&
      (batch_exists_ != exists || batch_key_ != request.key || batch_conn_ != target)) {
    Pause(kPausePlan);
    return Dispatched::kRetryLater;
  }
  BfBatch* batch = server_->OpenBatch(exists, request.key, target);
  Pending* p = NewPlanSlot(target);
  p->in_flight = true;
  p->batch_member = true;
  if (batch_members_++ == 0) {
    batch_exists_ = exists;
    batch_key_.assign(request.key);
    batch_conn_ = target;
  }
  filters::BfMember member;
  member.start = batch->items.size();
  member.count = request.items.size();
  member.multi = request.command == filters::BfCommand::kMAdd ||
                 request.command == filters::BfCommand::kMExists;
  batch->items.insert(batch->items.end(), request.items.begin(), request.items.end());
  batch->members.push_back(member);
  batch->slots.push_back(p);
  return Dispatched::kDone;
}

Client::Dispatched Client::StartPlan(std::unique_ptr<filters::Plan> plan) {
  Dispatched result = Dispatched::kDone;
  UpstreamConn* target = PlanConnection(&result);
  if (target == nullptr) return result;
  // Later commands of this client wait for the plan (see Dispatch).
  Pending* p = NewPlanSlot(target);
  PlanRunner::Run(server_, {p}, target, std::move(plan));
  return Dispatched::kDone;
}

bool Client::NeedsPin() const {
  return in_multi_ || watching_ || monitor_ || tracking_ || db_ != 0 || in_pubsub() ||
         subscribing_ > 0;
}

void Client::MaybeReleasePin() {
  if (pinned_ == nullptr || inflight_ > 0 || NeedsPin()) return;
  UpstreamConn* conn = pinned_;
  pinned_ = nullptr;
  server_->pool().ReleasePinned(conn);
}

void Client::DropPin() {
  if (pinned_ == nullptr) return;
  UpstreamConn* conn = pinned_;
  pinned_ = nullptr;
  if (NeedsPin() || conn->in_flight() > 0) conn->mark_dirty();
  in_multi_ = watching_ = monitor_ = tracking_ = false;
  db_ = channels_ = patterns_ = shard_channels_ = 0;
  subscribing_ = 0;
  server_->pool().ReleasePinned(conn);
}

// ---------------------------------------------------------------------------------------------
// Writing and closing

void Client::MarkDirty() {
  if (!flush_queued_ && !closing_) {
    flush_queued_ = true;
    server_->QueueFlush(this);
  }
}

void Client::Flush() {
  flush_queued_ = false;
  if (closing_) return;
  if (close_asap_) {
    Close();
    return;
  }
  int rc = out_.Flush(stream(), &write_req_, OnWrite);
  if (rc != 0) {
    Close();
    return;
  }
  if (close_when_drained_ && replies_.empty() && out_.empty()) Close();
}

void Client::OnWrite(uv_write_t* req, int status) {
  auto* self = static_cast<Client*>(req->data);
  self->out_.OnWriteDone();
  if (status != 0) {
    if (status != UV_ECANCELED) self->Close();
    return;
  }
  self->last_interaction_ms_ = self->server_->NowMs();
  self->Flush();
  if ((self->paused_ & kPauseOutput) && !self->closing_ &&
      self->out_.size() <= static_cast<size_t>(self->server_->options().client_output_pause / 2)) {
    self->Resume(kPauseOutput);
  }
}

void Client::Pause(uint8_t reason) {
  paused_ |= reason;
  if (reading_) {
    uv_read_stop(stream());
    reading_ = false;
  }
}

void Client::Resume(uint8_t reason) {
  paused_ &= static_cast<uint8_t>(~reason);
  // Inside ProcessInput (a plan that finished at once) the loop there carries on by itself.
  if (paused_ != 0 || closing_ || processing_) return;
  ProcessInput();
  if (paused_ == 0 && !closing_ && !reading_) {
    if (uv_read_start(stream(), OnAlloc, OnRead) == 0) reading_ = true;
  }
}

void Client::CloseWhenDrained() {
  input_closed_ = true;
  Pause(kPauseClosing);
  close_when_drained_ = true;
  MarkDirty();
}

void Client::ReleaseIdleMemory() {
  if (closing_) return;
  if (in_.empty()) in_.ShrinkIfIdle(0);
  out_.ReleaseIfIdle();
}

bool Client::ExemptFromTimeout() const {
  // As Redis: pub/sub clients, monitors and clients blocked in a command are not timed out.
  return in_pubsub() || monitor_ || (pinned_ != nullptr && inflight_ > 0);
}

void Client::Close() {
  if (closing_) return;
  closing_ = true;
  for (Pending* p : replies_) {
    if (p->in_flight) {
      p->client = nullptr;  // the connection frees it when the reply comes
    } else {
      delete p;
    }
  }
  replies_.clear();
  inflight_ = 0;
  DropPin();
  if (reading_) uv_read_stop(stream());
  reading_ = false;
  uv_close(handle(), OnClose);
}

void Client::OnClose(uv_handle_t* h) {
  auto* self = static_cast<Client*>(h->data);
  self->server_->OnClientClosed(self);
}

}  // namespace bloomproxy::proxy
