// Commands inside MULTI. The upstream queues the transaction on the client's pinned connection,
// so most commands are simply queued there. Three kinds need more (the command table's InMulti
// column):
//
//   kAtExec  commands the proxy answers (CLIENT ID, CLIENT KILL, AUTH, HELLO, ...): a PING is
//            queued in their place, and when EXEC's reply arrives the proxy answers them then,
//            as Redis would have run them then, and puts its answer in place of the PONG.
//   kTrack   commands that change connection state the proxy follows (SELECT, READONLY,
//            CLIENT NO-EVICT, CLIENT PAUSE): their effect is taken from their place in EXEC's
//            reply.
//   kTunnel  commands whose replies inside EXEC cannot be followed (SUBSCRIBE answers once per
//            channel inside EXEC's array, REPLCONF ACK not at all): the connection becomes a
//            tunnel, and the upstream's bytes reach the client as they are.
//
// A command's place in EXEC's reply is learned from the +QUEUED replies: commands Redis does
// not queue (WATCH inside MULTI, a nested MULTI) answer otherwise and take no place.
#include <cctype>

#include "filters/common/multi_command.h"
#include "filters/common/sketch_commands.h"
#include "filters/common/sketch_resp3.h"
#include "protocol/encoder.h"
#include "protocol/errors.h"
#include "protocol/reply_framer.h"
#include "protocol/resp3.h"
#include "proxy/client/client.h"
#include "proxy/server/server.h"
#include "proxy/upstream/activity.h"
#include "proxy/upstream/cluster_router.h"
#include "proxy/upstream/upstream.h"

namespace bloomproxy::proxy {

using protocol::Command;
using protocol::CommandInfo;
using protocol::Effect;
using protocol::InMulti;
using protocol::Route;

namespace {

constexpr std::string_view kPing = "*1\r\n$4\r\nPING\r\n";

// A queued BF.*/CMS.* command's reply from its script's answer in EXEC's array, in `resp`. A
// RESP3 client's transaction runs on a RESP3 connection, where the answer may come in RESP3 form
// (a Lua false is `#f` there, `$-1` in RESP2): the sketch reads it as its RESP2 form, and its
// RESP2 reply becomes RedisBloom's RESP3 one for a RESP3 client.
std::string SketchReply(const filters::QueuedSketch& sketch, std::string_view answer,
                        protocol::ReplyDecoder* decoder, protocol::Resp resp) {
  std::string resp2;
  if (protocol::Resp3ToResp2(answer, &resp2)) answer = resp2;
  std::string reply = sketch.Reply(answer, decoder);
  if (resp != protocol::Resp::k3) return reply;
  return filters::ToResp3(sketch.resp3_shape(), reply);
}

}  // namespace

Client::Dispatched Client::QueueInMulti(const Command& cmd, const Route& route,
                                        const CommandInfo* info, const CommandInfo* sub) {
  if (route.in_multi == InMulti::kTunnel) return EnterTunnel(cmd);
  QueuedEntry entry;
  entry.transaction = multi_seq_;
  std::string_view request = RequestBytes(cmd);
  if (info == nullptr && server_->emulated() != 0 && !QueueSketch(cmd, &entry)) {
    return Dispatched::kDone;  // refused when queued: the transaction aborts
  }
  if (entry.sketch != nullptr) request = entry.sketch->request();
  std::string script;
  if (server_->emulated() != 0 && (route.traits & protocol::kTraitFilterKey) &&
      RewriteKeyCommand(cmd, &script)) {
    // Queued as the script that acts on whole filters; its reply in EXEC's is the command's.
    request = script;
    entry.pairs = ScriptPairs(cmd);
  }
  std::string foreign, extra;
  if (server_->router().cluster() && route.in_multi == InMulti::kQueue &&
      ForeignInMulti(cmd, sub ? sub : info, &foreign, &extra)) {
    request = foreign;
  }
  if (route.in_multi == InMulti::kAtExec) {
    // Redis checks the arity when it queues a command; a wrong one aborts the transaction.
    if (info != nullptr && RejectMalformed(cmd, *info, sub)) return Dispatched::kDone;
    entry.args.assign(cmd.args.begin(), cmd.args.end());
    request = kPing;
    if (QueueHelloUpstream(cmd, &script)) {
      entry.hello_upstream = true;
      hello_in_transaction_ = true;
      request = script;
    }
  } else if (route.in_multi == InMulti::kTrack) {
    // The hook its reply would have outside MULTI, applied to its place in EXEC's reply.
    Outgoing out;
    PrepareEffect(cmd, route, info, &out);
    entry.hook = out.hook;
    entry.arg = out.arg;
    entry.sub_kind = out.sub_kind;
  }
  Pending* p = NewUpstreamSlot(pinned_);
  p->queued = true;
  if (route.in_multi != InMulti::kQueue || entry.sketch != nullptr || entry.pairs != 0) {
    entry.id = ++queued_ids_;
    p->hook = Hook::kQueued;
    p->arg = static_cast<int64_t>(entry.id);
    queued_entries_.push_back(std::move(entry));
  }
  pinned_->Send(request, p);
  if (!extra.empty()) {
    Pending* x = NewUpstreamSlot(pinned_);
    x->suppress = true;
    pinned_->Send(extra, x);
  }
  if (inflight_ >= MaxInFlight()) {
    Pause(kPauseBackpressure);
    return Dispatched::kStop;
  }
  return Dispatched::kDone;
}

bool Client::QueueSketch(const Command& cmd, QueuedEntry* entry) {
  filters::SketchFamily family;
  if (!filters::LookupSketchCommand(cmd.args[0], &family) || !server_->emulates(family)) {
    return true;  // queued as it is: the upstream's module, or its unknown command error
  }
  std::string refusal;
  std::unique_ptr<filters::QueuedSketch> sketch;
  switch (family) {
    case filters::SketchFamily::kCms:
      sketch = filters::QueueCmsCommand(cmd.args, server_->cms_config(), &refusal);
      break;
    case filters::SketchFamily::kCuckoo:
      sketch = filters::QueueCfCommand(cmd.args, server_->cf_config(), &refusal);
      break;
    case filters::SketchFamily::kBloom:
      sketch = filters::QueueBfCommand(cmd.args, server_->bf_config(), &refusal);
      break;
    case filters::SketchFamily::kTopk:
      sketch = filters::QueueTopkCommand(cmd.args, server_->topk_config(), &refusal);
      break;
    case filters::SketchFamily::kTdigest:
      sketch = filters::QueueTdigestCommand(cmd.args, server_->tdigest_config(), &refusal);
      break;
  }
  if (sketch == nullptr) {
    Refuse(refusal);
    return false;
  }
  // Whether its reply takes the RESP3 shape is decided when EXEC runs it, as Redis writes each
  // reply in the protocol of that moment (a HELLO earlier in the transaction may switch it).
  sketch->set_resp3_shape(filters::Resp3ShapeOf(cmd.args));
  entry->sketch = std::move(sketch);
  return true;
}

std::string Client::CompleteExec(Pending* slot, std::string_view frame) {
  // An error (EXECABORT) or a nil (a watched key changed): nothing ran.
  const size_t eol = frame.find("\r\n");
  int64_t n = 0;
  if (frame.empty() || frame[0] != '*' || eol == std::string_view::npos ||
      !protocol::StringToInt64(frame.substr(1, eol - 1), &n) || n < 0) {
    return std::string(frame);
  }
  std::string out(frame.substr(0, eol + 2));
  std::string_view rest = frame.substr(eol + 2);
  protocol::ReplyFramer framer;
  bool close_after = false;
  for (int64_t i = 0; i < n; ++i) {
    size_t len = 0;
    if (framer.Next(rest, &len) != protocol::FrameStatus::kComplete) return std::string(frame);
    const std::string_view element = rest.substr(0, len);
    rest.remove_prefix(len);
    const QueuedEntry* entry = nullptr;
    for (const QueuedEntry& e : queued_entries_) {
      if (e.index == i && e.transaction == static_cast<uint64_t>(slot->arg)) entry = &e;
    }
    if (entry == nullptr) {
      out.append(element);
    } else if (entry->sketch != nullptr) {
      out += SketchReply(*entry->sketch, element, &server_->decoder(), resp_);
    } else if (entry->hello_upstream) {
      out += AnswerHelloAtExec(*entry, element, &close_after);
    } else if (!entry->args.empty()) {
      out += AnswerAtExec(*entry, &close_after);
    } else if (entry->pairs != 0 && resp_ == protocol::Resp::k3) {
      out += protocol::PairsToResp3(element, entry->pairs == 2);
    } else {
      ApplyStateReply(entry->hook, entry->arg, entry->sub_kind, element);
      out.append(element);
    }
  }
  out.append(rest);
  if (close_after) slot->close_after = true;
  return out;
}

bool Client::QueueHelloUpstream(const Command& cmd, std::string* request) const {
  // HELLO 2|3 [options]: the upstream switches its side where the transaction has it (a
  // connection that cannot speak RESP3 gets PING, and the proxy's answer says NOPROTO).
  if (cmd.args.size() < 2 || !IEquals(cmd.args[0], "hello")) return false;
  const std::string_view ver = cmd.args[1];
  if ((ver != "2" && ver != "3") || !UpstreamSpeaksResp3()) return false;
  protocol::AppendCommand(request, std::initializer_list<std::string_view>{"HELLO", ver});
  return true;
}

std::string Client::AnswerHelloAtExec(const QueuedEntry& entry, std::string_view upstream,
                                      bool* close_after) {
  const protocol::Resp before = resp_;
  std::string reply = AnswerAtExec(entry, close_after);
  if (!reply.empty() && reply[0] == '-' && !upstream.empty() && upstream[0] != '-' &&
      pinned_ != nullptr) {
    // The proxy refused it (its AUTH, its SETNAME) where the upstream switched: switch back.
    SwitchPinnedProtocol(before);
  }
  return reply;
}

std::string Client::AnswerAtExec(const QueuedEntry& entry, bool* close_after) {
  Command cmd;
  cmd.args.assign(entry.args.begin(), entry.args.end());
  std::string lower(entry.args[0]);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string reply;
  capture_ = &reply;
  capture_close_ = false;
  const Dispatched d = HandleLocal(cmd, lower);
  capture_ = nullptr;
  *close_after = *close_after || capture_close_;
  if (d == Dispatched::kForward || reply.empty()) {
    // Every kAtExec row is answered by the proxy; an empty answer would break EXEC's array.
    return std::string(protocol::errors::kSyntax);
  }
  return reply;
}

}  // namespace bloomproxy::proxy
