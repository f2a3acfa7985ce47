// The commands the proxy answers itself: they describe the client's own connection (HELLO,
// AUTH, CLIENT, SELECT 0, RESET) or the proxy (INFO's "# Proxy" section), so they must not reach
// a shared upstream connection. Replies follow Redis 7's byte for byte.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <string>

#include "protocol/encoder.h"
#include "protocol/errors.h"
#include "proxy/client/client.h"
#include "proxy/server/log.h"
#include "proxy/server/server.h"
#include "proxy/upstream/upstream.h"

namespace bloomproxy::proxy {

namespace errors = protocol::errors;
using protocol::Command;

namespace {

// Client names and library attributes must be printable without spaces, so CLIENT LIST stays
// splittable on spaces (Redis validateClientAttr).
bool ValidClientAttr(std::string_view s) {
  for (char c : s) {
    if (c < '!' || c > '~') return false;
  }
  return true;
}

// CLIENT LIST / CLIENT KILL TYPE: the names Redis accepts, lower-cased into *out.
bool ParseClientType(std::string_view t, std::string* out) {
  for (const char* name : {"normal", "pubsub", "master", "replica", "slave"}) {
    if (IEquals(t, name)) {
      out->assign(name);
      return true;
    }
  }
  return false;
}

// The proxy's clients are "normal" or, while subscribed, "pubsub"; never master or replica.
bool MatchesClientType(const Client& c, const std::string& type) {
  if (type.empty()) return true;
  if (type == "normal") return !c.in_pubsub() && !c.is_replica();
  if (type == "pubsub") return c.in_pubsub() && !c.is_replica();
  if (type == "replica" || type == "slave") return c.is_replica();
  return false;
}

std::string Bulk(std::string_view s) {
  std::string out;
  protocol::AppendBulk(&out, s);
  return out;
}

std::string Integer(int64_t v) {
  std::string out;
  protocol::AppendInteger(&out, v);
  return out;
}

std::string Error(std::string_view text) {
  std::string out;
  protocol::AppendError(&out, text);
  return out;
}

}  // namespace

Client::Dispatched Client::HandleLocal(const Command& cmd, std::string_view name) {
  if (name == "ping") {
    if (cmd.args.size() > 2) {
      ReplyLocal(errors::WrongArity(cmd.args[0]));
      return Dispatched::kDone;
    }
    ReplyLocal(cmd.args.size() == 2 ? Bulk(cmd.args[1]) : std::string("+PONG\r\n"));
    return Dispatched::kDone;
  }
  if (name == "echo") {
    ReplyLocal(Bulk(cmd.args[1]));
    return Dispatched::kDone;
  }
  if (name == "hello") return HandleHello(cmd);
  if (name == "auth") return HandleAuth(cmd);
  if (name == "client") return HandleClient(cmd);
  if (name == "info") return HandleInfo(cmd);
  if (name == "cluster") return HandleCluster(cmd);
  return Dispatched::kForward;
}

bool Client::CheckUser(std::string_view user, std::string_view password) const {
  const conf::Options& o = server_->options();
  if (user == "default") {
    // Without requirepass the default user has "nopass": any password is accepted.
    return o.requirepass.empty() || password == o.requirepass;
  }
  for (const conf::User& u : o.users) {
    if (u.name == user && u.password == password) return true;
  }
  return false;
}

void Client::LogFailedAuth(std::string_view user) const {
  // Logged for the operator; never with the password.
  const std::string_view shown = user.substr(0, 64);
  LOG_NOTICE_F({{"client", addr_}, {"client_id", id_}, {"user", shown}},
               "AUTH failed for user '%.*s' from %s (client id=%llu)",
               static_cast<int>(shown.size()), shown.data(), addr_.c_str(),
               static_cast<unsigned long long>(id_));
}

Client::Dispatched Client::HandleAuth(const Command& cmd) {
  // Redis src/acl.c authCommand.
  if (cmd.args.size() > 3) {
    ReplyLocal(errors::kSyntax);
    return Dispatched::kDone;
  }
  if (server_->upstream_auth()) {
    return AuthUpstream(cmd, cmd.args.size() == 3 ? cmd.args[1] : std::string_view(),
                        cmd.args.back(), false);
  }
  std::string_view user = "default";
  std::string_view password = cmd.args[1];
  if (cmd.args.size() == 2) {
    if (server_->options().requirepass.empty()) {
      ReplyLocal(errors::kAuthNoPassword);
      return Dispatched::kDone;
    }
  } else {
    user = cmd.args[1];
    password = cmd.args[2];
  }
  if (!CheckUser(user, password)) {
    LogFailedAuth(user);
    ReplyLocal(errors::kWrongPass);
    return Dispatched::kDone;
  }
  authenticated_ = logged_in_ = true;
  user_.assign(user);
  acl_ = server_->acl(user_);
  ReplyLocal("+OK\r\n");
  return Dispatched::kDone;
}

bool Client::UpstreamSpeaksResp3() const {
  // HELLO came with Redis 6. A sharding proxy closes the connection on HELLO.
  if (server_->sharding_proxy()) return false;
  const std::string& v = server_->upstream_info().version;
  int64_t major = 0;
  return protocol::StringToInt64(std::string_view(v).substr(0, v.find('.')), &major) && major >= 6;
}

bool Client::ParseHello(const Command& cmd, HelloArgs* args) {
  // Redis src/networking.c helloCommand.
  size_t next = 1;
  args->resp = resp_;
  if (cmd.args.size() >= 2) {
    int64_t ver = 0;
    if (!protocol::StringToInt64(cmd.args[1], &ver)) {
      ReplyLocal(errors::kBadProtoVersion);
      return false;
    }
    if (ver < 2 || ver > 3) {
      ReplyLocal(errors::kUnsupportedProto);
      return false;
    }
    if (ver == 3 && !UpstreamSpeaksResp3()) {
      ReplyLocal(errors::kNoProto);
      return false;
    }
    args->resp = ver == 3 ? protocol::Resp::k3 : protocol::Resp::k2;
    next = 2;
  }
  for (size_t j = next; j < cmd.args.size(); ++j) {
    const size_t more = cmd.args.size() - 1 - j;
    if (IEquals(cmd.args[j], "auth") && more >= 2) {
      args->user.assign(cmd.args[j + 1]);
      args->password.assign(cmd.args[j + 2]);
      args->have_auth = true;
      j += 2;
    } else if (IEquals(cmd.args[j], "setname") && more >= 1) {
      args->name.assign(cmd.args[j + 1]);
      args->have_name = true;
      j += 1;
    } else {
      ReplyLocal(Error("ERR Syntax error in HELLO option '" + std::string(cmd.args[j]) + "'"));
      return false;
    }
  }
  return true;
}

Client::Dispatched Client::HandleHello(const Command& cmd) {
  HelloArgs args;
  if (!ParseHello(cmd, &args)) return Dispatched::kDone;
  if (args.have_auth && server_->upstream_auth()) {
    pending_hello_ = args;
    return AuthUpstream(cmd, args.user, args.password, true);
  }
  if (args.have_auth) {
    if (!CheckUser(args.user, args.password)) {
      LogFailedAuth(args.user);
      ReplyLocal(errors::kWrongPass);
      return Dispatched::kDone;
    }
    authenticated_ = logged_in_ = true;
    user_ = args.user;
    acl_ = server_->acl(user_);
  }
  ReplyLocal(FinishHello(args));
  return Dispatched::kDone;
}

std::string Client::FinishHello(const HelloArgs& args) {
  if (!Authenticated()) {
    return Error(
        "NOAUTH HELLO must be called with the client already authenticated, otherwise the "
        "HELLO AUTH <user> <pass> option can be used to authenticate the client and select the "
        "RESP protocol version at the same time");
  }
  if (args.have_name) {
    if (!ValidClientAttr(args.name)) return std::string(errors::kBadClientName);
    SetName(args.name);
  }
  SetProtocol(args.resp);
  const UpstreamInfo& up = server_->upstream_info();
  std::string r;
  protocol::AppendMapHeader(&r, 7, resp_);
  protocol::AppendBulk(&r, "server");
  protocol::AppendBulk(&r, "redis");
  protocol::AppendBulk(&r, "version");
  protocol::AppendBulk(&r, up.version);
  protocol::AppendBulk(&r, "proto");
  protocol::AppendInteger(&r, static_cast<int64_t>(resp_));
  protocol::AppendBulk(&r, "id");
  protocol::AppendInteger(&r, static_cast<int64_t>(id_));
  protocol::AppendBulk(&r, "mode");
  protocol::AppendBulk(&r, up.mode);
  protocol::AppendBulk(&r, "role");
  protocol::AppendBulk(&r, up.role);
  protocol::AppendBulk(&r, "modules");
  r += HelloModules();
  return r;
}

Client::Dispatched Client::AuthUpstream(const Command& cmd, std::string_view user,
                                        std::string_view password, bool hello) {
  if (capture_ != nullptr) {
    // Answered at EXEC, after the transaction ran as the user it was queued under.
    ReplyLocal(
        Error("ERR bloomproxy: AUTH and HELLO AUTH inside MULTI are not supported with "
              "auth-mode upstream"));
    return Dispatched::kDone;
  }
  pending_user_.assign(user.empty() ? std::string_view("default") : user);
  pending_password_.assign(password);
  // The command goes as sent (MONITOR shows it as Redis does, redacted); HELLO's reply is then
  // replaced by the proxy's own.
  Outgoing out;
  out.own_conn = true;
  out.hook = Hook::kClientAuth;
  out.arg = hello ? 1 : 0;
  const Dispatched result = SendUpstream(cmd, out);
  if (!replies_.empty() && replies_.back()->hook == out.hook && replies_.back()->in_flight) {
    ++auth_in_flight_;  // until its reply (OnUpstreamFrame)
  }
  // The connection now belongs to whoever the AUTH logs in: never reused by another flavor.
  if (pinned_ != nullptr) pinned_->mark_dirty();
  return result;
}

std::string Client::LoggedInUpstream(int64_t hello) {
  authenticated_ = logged_in_ = true;
  user_ = pending_user_;
  acl_ = nullptr;  // the upstream applies the user's ACL
  flavor_ = server_->Flavor(resp_, true, pending_user_, pending_password_);
  pending_password_.clear();
  if (hello == 0) return "+OK\r\n";
  return FinishHello(pending_hello_);
}

std::string Client::Verbatim(std::string_view text) const {
  std::string out;
  protocol::AppendVerbatim(&out, text, resp_);
  return out;
}

void Client::SetProtocol(protocol::Resp resp) {
  if (resp == resp_) return;
  resp_ = resp;
  const ConnFlavor login = server_->flavor(flavor_);  // a copy: Flavor may add one
  flavor_ = server_->Flavor(resp, login.client_user, login.user, login.password);
  if (pinned_ != nullptr) {
    // The state on the client's own connection stays: that connection switches too (its
    // reply is the client's HELLO's, answered here), and is not reused by another flavor.
    SwitchPinnedProtocol(resp);
    pinned_->mark_dirty();
  }
}

void Client::SetName(std::string_view name) {
  name_.assign(name);
  // Its own connection carries it too, for the upstream's SLOWLOG.
  if (pinned_ != nullptr) pinned_->SyncName(name_);
}

void Client::SwitchPinnedProtocol(protocol::Resp resp) {
  std::string hello;
  protocol::AppendCommand(&hello, std::initializer_list<std::string_view>{
                                      "HELLO", resp == protocol::Resp::k3 ? "3" : "2"});
  Pending* p = NewUpstreamSlot(pinned_);
  p->suppress = true;
  pinned_->Send(hello, p);
}

Client::Dispatched Client::HandleClient(const Command& cmd) {
  std::string_view sub = cmd.args[1];
  const size_t argc = cmd.args.size();
  if (IEquals(sub, "id") && argc == 2) {
    ReplyLocal(Integer(static_cast<int64_t>(id_)));
  } else if (IEquals(sub, "getname") && argc == 2) {
    if (name_.empty()) {
      std::string null;
      protocol::AppendNull(&null, resp_);
      ReplyLocal(null);
    } else {
      ReplyLocal(Bulk(name_));
    }
  } else if (IEquals(sub, "setname") && argc == 3) {
    if (!ValidClientAttr(cmd.args[2])) {
      ReplyLocal(errors::kBadClientName);
    } else {
      SetName(cmd.args[2]);
      ReplyLocal("+OK\r\n");
    }
  } else if (IEquals(sub, "setinfo") && argc == 4) {
    std::string_view attr = cmd.args[2];
    std::string* dest = IEquals(attr, "lib-name")  ? &lib_name_
                        : IEquals(attr, "lib-ver") ? &lib_ver_
                                                   : nullptr;
    if (dest == nullptr) {
      ReplyLocal(Error("ERR Unrecognized option '" + std::string(attr) + "'"));
    } else if (!ValidClientAttr(cmd.args[3])) {
      ReplyLocal(Error("ERR " + std::string(attr) +
                       " cannot contain spaces, newlines or special characters."));
    } else {
      dest->assign(cmd.args[3]);
      ReplyLocal("+OK\r\n");
    }
  } else if (IEquals(sub, "getredir") && argc == 2) {
    // -1: tracking off; 0: on without redirection; else the proxy id of the redirect client.
    ReplyLocal(Integer(!tracking_ ? -1 : static_cast<int64_t>(tracking_redirect_)));
  } else if (IEquals(sub, "info") && argc == 2) {
    ReplyLocal(Verbatim(InfoLine() + "\n"));
  } else if (IEquals(sub, "list")) {
    // CLIENT LIST [TYPE normal|master|replica|pubsub] [ID id [id ...]]
    std::string type;
    std::vector<uint64_t> ids;
    for (size_t j = 2; j < argc; ++j) {
      if (IEquals(cmd.args[j], "type") && j + 1 < argc) {
        if (!ParseClientType(cmd.args[++j], &type)) {
          ReplyLocal(Error("ERR Unknown client type '" + std::string(cmd.args[j]) + "'"));
          return Dispatched::kDone;
        }
      } else if (IEquals(cmd.args[j], "id") && j + 1 < argc) {
        for (++j; j < argc; ++j) {
          int64_t id = 0;
          if (!protocol::StringToInt64(cmd.args[j], &id) || id <= 0) {
            ReplyLocal(Error("ERR Invalid client ID"));
            return Dispatched::kDone;
          }
          ids.push_back(static_cast<uint64_t>(id));
        }
      } else {
        ReplyLocal(errors::kSyntax);
        return Dispatched::kDone;
      }
    }
    std::string text;
    auto add = [&](const Client* c) {
      if (c == nullptr || c->closing_) return;
      if (!MatchesClientType(*c, type)) return;
      text += c->InfoLine();
      text += '\n';
    };
    if (!ids.empty()) {
      for (uint64_t id : ids) {
        auto it = server_->clients().find(id);
        if (it != server_->clients().end()) add(it->second);
      }
    } else {
      std::vector<const Client*> all;
      for (const auto& [id, c] : server_->clients()) all.push_back(c);
      std::sort(all.begin(), all.end(),
                [](const Client* a, const Client* b) { return a->id_ < b->id_; });
      for (const Client* c : all) add(c);
    }
    ReplyLocal(Verbatim(text));
  } else if (IEquals(sub, "kill") && argc >= 3) {
    return HandleClientKill(cmd);
  } else if (IEquals(sub, "reply") && argc == 3) {
    // Handled here rather than upstream: on a shared connection, replies the upstream skipped
    // would break the matching of replies to clients.
    if (IEquals(cmd.args[2], "on")) {
      reply_off_ = reply_skip_ = false;
      ReplyLocal("+OK\r\n");
    } else if (IEquals(cmd.args[2], "off")) {
      reply_off_ = true;
    } else if (IEquals(cmd.args[2], "skip")) {
      if (!reply_off_) reply_skip_ = true;
    } else {
      ReplyLocal(errors::kSyntax);
    }
  } else {
    // Subcommands Redis 7.0 does not have, and arity errors: the upstream's.
    return Dispatched::kForward;
  }
  return Dispatched::kDone;
}

Client::Dispatched Client::HandleClientKill(const Command& cmd) {
  // CLIENT KILL acts on this proxy's clients, the ones CLIENT LIST shows (Redis
  // src/networking.c clientKillCommand): the old form "CLIENT KILL addr" replies +OK or an
  // error and may kill the caller; the filter form replies the number killed and skips the
  // caller unless SKIPME no.
  const size_t argc = cmd.args.size();
  std::string_view addr, laddr, user;
  bool have_addr = false, have_laddr = false, have_user = false;
  int64_t id = 0;
  std::string type;
  bool skipme = true;
  if (argc == 3) {
    addr = cmd.args[2];
    have_addr = true;
    skipme = false;
  } else {
    for (size_t i = 2; i < argc; i += 2) {
      const bool more = i + 1 < argc;
      std::string_view opt = cmd.args[i];
      if (IEquals(opt, "id") && more) {
        if (!protocol::StringToInt64(cmd.args[i + 1], &id) || id < 1) {
          ReplyLocal(Error("ERR client-id should be greater than 0"));
          return Dispatched::kDone;
        }
      } else if (IEquals(opt, "type") && more) {
        if (!ParseClientType(cmd.args[i + 1], &type)) {
          ReplyLocal(Error("ERR Unknown client type '" + std::string(cmd.args[i + 1]) + "'"));
          return Dispatched::kDone;
        }
      } else if (IEquals(opt, "addr") && more) {
        addr = cmd.args[i + 1];
        have_addr = true;
      } else if (IEquals(opt, "laddr") && more) {
        laddr = cmd.args[i + 1];
        have_laddr = true;
      } else if (IEquals(opt, "user") && more) {
        user = cmd.args[i + 1];
        bool known = user == "default";
        for (const conf::User& u : server_->options().users) known = known || u.name == user;
        if (!known) {
          ReplyLocal(Error("ERR No such user '" + std::string(user) + "'"));
          return Dispatched::kDone;
        }
        have_user = true;
      } else if (IEquals(opt, "skipme") && more) {
        if (IEquals(cmd.args[i + 1], "yes")) {
          skipme = true;
        } else if (IEquals(cmd.args[i + 1], "no")) {
          skipme = false;
        } else {
          ReplyLocal(errors::kSyntax);
          return Dispatched::kDone;
        }
      } else {
        ReplyLocal(errors::kSyntax);
        return Dispatched::kDone;
      }
    }
  }
  std::vector<Client*> victims;
  bool kill_self = false;
  for (const auto& [cid, c] : server_->clients()) {
    if (c->closing_) continue;
    if (have_addr && c->addr_ != addr) continue;
    if (have_laddr && c->laddr_ != laddr) continue;
    if (!MatchesClientType(*c, type)) continue;
    if (id != 0 && c->id_ != static_cast<uint64_t>(id)) continue;
    if (have_user && c->user_ != user) continue;
    if (c == this) {
      if (skipme) continue;
      kill_self = true;
    } else {
      victims.push_back(c);
    }
  }
  for (Client* c : victims) c->Close();
  const size_t killed = victims.size() + (kill_self ? 1 : 0);
  std::string reply;
  if (argc == 3) {
    reply = killed == 0 ? Error("ERR No such client") : std::string("+OK\r\n");
  } else {
    reply = Integer(static_cast<int64_t>(killed));
  }
  if (kill_self) {
    input_closed_ = true;
    Pause(kPauseClosing);
    ReplyLocal(reply, /*close_after=*/true);
    return Dispatched::kStop;
  }
  ReplyLocal(reply);
  return Dispatched::kDone;
}

bool Client::InfoWantsProxySection(const Command& cmd) {
  if (cmd.args.size() == 1) return true;
  for (size_t i = 1; i < cmd.args.size(); ++i) {
    if (IEquals(cmd.args[i], "all") || IEquals(cmd.args[i], "everything") ||
        IEquals(cmd.args[i], "default") || IEquals(cmd.args[i], "proxy")) {
      return true;
    }
  }
  return false;
}

Client::Dispatched Client::HandleInfo(const Command& cmd) {
  if (cmd.args.size() == 2 && IEquals(cmd.args[1], "proxy")) {
    ReplyLocal(Verbatim(server_->ProxySection()));
    return Dispatched::kDone;
  }
  return Dispatched::kForward;
}

Client::Dispatched Client::HandleReset(const Command& cmd) {
  if (pinned_ != nullptr && (monitor_ || in_pubsub() || subscribing_ > 0)) {
    // Monitor lines or messages may still come before the upstream runs RESET: it goes
    // upstream, in order with them, and the client is reset when its +RESET arrives (the
    // connection is then a clean one again).
    Outgoing out;
    out.hook = Hook::kReset;
    return SendUpstream(cmd, out);
  }
  // RESET runs after the commands before it, as it would on a single Redis connection.
  if (inflight_ > 0) {
    Pause(kPauseBarrier);
    return Dispatched::kRetryLater;
  }
  // A pinned connection still held here has state; it is closed, not reused (DropPin).
  DropPin();
  // CLIENT REPLY SKIP skips RESET's own reply (RESET clears OFF before it replies, not SKIP).
  const bool skipped = reply_skip_;
  ResetClientState();
  if (!skipped) ReplyLocal("+RESET\r\n");
  return Dispatched::kDone;
}

void Client::ResetClientState() {
  ClearConnectionState();
  multi_refused_ = false;
  name_.clear();
  user_ = "default";
  acl_ = nullptr;
  authenticated_ = !server_->auth_required();
  logged_in_ = false;
  // RESET speaks RESP2 again, as the default user (the one of a new connection).
  resp_ = protocol::Resp::k2;
  flavor_ = server_->DefaultFlavor(resp_);
  reply_off_ = reply_skip_ = false;
}

std::string Client::InfoLine() const {
  const uint64_t now = server_->NowMs();
  // Redis's letters, in its order.
  std::string flags;
  if (monitor_) {
    flags += 'O';
  } else if (replica_) {
    flags += 'S';
  }
  if (in_pubsub()) flags += 'P';
  if (in_multi_) flags += 'x';
  const bool blocked = std::any_of(replies_.begin(), replies_.end(),
                                   [](const Pending* p) { return p->blocks && p->in_flight; });
  if (blocked) flags += 'b';
  if (tracking_) flags += 't';
  if (readonly_) flags += 'r';
  if (no_evict_) flags += 'e';
  if (flags.empty()) flags = "N";
  const int fd = [&] {
    uv_os_fd_t f = -1;
    return uv_fileno(reinterpret_cast<const uv_handle_t*>(&sock_.handle), &f) == 0 ? f : -1;
  }();
  char buf[512];
  std::snprintf(
      buf, sizeof(buf),
      "id=%llu addr=%s laddr=%s fd=%d name=%s age=%llu idle=%llu flags=%s db=%lld sub=%lld "
      "psub=%lld ssub=%lld multi=%lld qbuf=%zu qbuf-free=%zu argv-mem=0 multi-mem=0 rbs=%zu rbp=0 "
      "obl=0 oll=%zu omem=%zu tot-mem=%zu events=%s cmd=%s user=%s redir=%lld resp=%d",
      static_cast<unsigned long long>(id_), addr_.c_str(), laddr_.c_str(), fd, name_.c_str(),
      static_cast<unsigned long long>((now - created_ms_) / 1000),
      static_cast<unsigned long long>((now - last_interaction_ms_) / 1000), flags.c_str(),
      static_cast<long long>(db_), static_cast<long long>(channels_),
      static_cast<long long>(patterns_), static_cast<long long>(shard_channels_),
      static_cast<long long>(in_multi_ ? multi_count_ : -1), in_.size(), in_.free_space(),
      in_.capacity(), replies_.size(), out_.size(), sizeof(Client) + in_.capacity() + out_.size(),
      out_.empty() ? "r" : "rw", std::string(last_cmd_).c_str(), user_.c_str(),
      static_cast<long long>(!tracking_ ? -1 : static_cast<int64_t>(tracking_redirect_)),
      static_cast<int>(resp_));
  std::string line(buf);
  line += " lib-name=" + lib_name_ + " lib-ver=" + lib_ver_;
  return line;
}

}  // namespace bloomproxy::proxy
