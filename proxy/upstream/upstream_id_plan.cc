#include "proxy/upstream/upstream_id_plan.h"

#include <climits>

#include "protocol/encoder.h"
#include "protocol/request_parser.h"
#include "proxy/client/client.h"
#include "proxy/server/server.h"
#include "proxy/sketch/plan_runner.h"
#include "proxy/upstream/cluster_router.h"
#include "proxy/upstream/pin_registry.h"
#include "proxy/upstream/upstream.h"

namespace bloomproxy::proxy {

UpstreamIdPlan::UpstreamIdPlan(std::vector<std::string> args, size_t id_arg, uint64_t client_id,
                               std::string address)
    : args_(std::move(args)),
      id_arg_(id_arg),
      client_id_(client_id),
      address_(std::move(address)) {}

void UpstreamIdPlan::Start(filters::PlanStep* step) {
  protocol::AppendCommand(&step->requests,
                          std::initializer_list<std::string_view>{"CLIENT", "LIST"});
  step->replies = 1;
}

void UpstreamIdPlan::OnReplies(filters::StepReplies& replies, filters::PlanStep* step) {
  if (listed_) {
    // The command's own reply, whatever it is.
    step->done = true;
    step->reply.assign(replies.empty() ? std::string_view("-ERR no reply\r\n") : replies.Frame(0));
    return;
  }
  listed_ = true;
  int64_t id = 0;
  const redisReply* list = replies.Get(0);
  if (list != nullptr && list->type == REDIS_REPLY_STRING) {
    id = FindId(std::string_view(list->str, list->len), address_);
  }
  if (id > 0) PinRegistry::LearnId(client_id_, address_, id);
  // Without a line (CLIENT LIST refused, the connection gone) the id is one Redis cannot know,
  // so the upstream answers as for any unknown client.
  args_[id_arg_] = std::to_string(id > 0 ? id : INT64_MAX);
  protocol::AppendCommand(&step->requests, args_);
  step->replies = 1;
}

int64_t UpstreamIdPlan::FindId(std::string_view list, std::string_view address) {
  // "id=5 addr=127.0.0.1:40000 laddr=... \n" per client.
  const std::string needle = " addr=" + std::string(address) + " ";
  size_t at = list.find(needle);
  if (address.empty() || at == std::string_view::npos) return 0;
  const size_t line = list.rfind('\n', at);
  const size_t start = line == std::string_view::npos ? 0 : line + 1;
  if (list.compare(start, 3, "id=") != 0) return 0;
  int64_t id = 0;
  return protocol::StringToInt64(list.substr(start + 3, at - start - 3), &id) ? id : 0;
}

// ---------------------------------------------------------------------------------------------
// The client's side: CLIENT UNBLOCK and CLIENT TRACKING ... REDIRECT.

bool Client::HoldConnectionForRedirects() {
  if (pinned_ == nullptr) {
    if (server_->router().cluster() || closing_) return false;
    UpstreamPool* pool = server_->router().masters().front();
    if (pool->Shared(&shared_slot_, flavor_) == nullptr || !pool->Reachable()) return false;
    // Its later commands go there too, after the ones in flight (TargetFor).
    pinned_ = pool->AcquirePinned(this, flavor_);
  }
  redirect_target_ = true;
  return true;
}

Client::Dispatched Client::SendWithUpstreamId(const protocol::Command& cmd, size_t id_arg,
                                              Outgoing& out) {
  int64_t id = 0;
  if (!protocol::StringToInt64(cmd.args[id_arg], &id)) return SendUpstream(cmd, out);
  // The named client's own connection, on whichever loop it lives (a client without one
  // cannot be blocked, and cannot receive invalidations).
  PinRegistry::Entry named;
  bool holds = id > 0 && PinRegistry::Find(static_cast<uint64_t>(id), &named);
  if (out.effect != protocol::Effect::kUnblock && id > 0) {
    // A REDIRECT target without a connection of its own (Redis sends invalidations to the
    // target's connection) gets one, and the command waits until it is open: once.
    const auto target = static_cast<uint64_t>(id);
    if (!holds && redirect_waited_ != target) {
      auto it = server_->clients().find(target);
      if (it != server_->clients().end() && it->second->HoldConnectionForRedirects()) {
        holds = PinRegistry::Find(target, &named);
      }
    }
    if (holds && named.address.empty() && named.upstream_id <= 0 && redirect_waited_ != target) {
      redirect_waited_ = target;
      server_->WaitForRedirectTarget(id_);
      Pause(kPauseRedirect);
      return Dispatched::kRetryLater;
    }
    redirect_waited_ = 0;
  }
  if (out.effect != protocol::Effect::kUnblock) {
    pending_redirect_ = holds ? static_cast<uint64_t>(id) : 0;
  }
  std::vector<std::string> args(cmd.args.begin(), cmd.args.end());
  if (!holds || named.upstream_id > 0 || named.address.empty()) {
    // Known, or nobody to find: an id the proxy does not know becomes one Redis cannot know
    // either, so the upstream answers with its own "no such client" reply.
    if (named.upstream_id <= 0) pending_redirect_ = 0;
    args[id_arg] = std::to_string(named.upstream_id > 0 ? named.upstream_id : INT64_MAX);
    out.rewritten.clear();
    protocol::AppendCommand(&out.rewritten, args);
    return SendUpstream(cmd, out);
  }
  Dispatched result = Dispatched::kDone;
  bool acquired = false;
  UpstreamConn* target = TargetFor(out.pool, out.own_conn, &result, &acquired);
  if (target == nullptr) return result;
  ApplyDispatchState(out.effect, out);
  Pending* p = NewPlanSlot(target);
  p->hook = out.hook;
  p->arg = out.arg;
  PlanRunner::Run(server_, {p}, UpstreamRef(target),
                  std::make_unique<UpstreamIdPlan>(std::move(args), id_arg,
                                                   static_cast<uint64_t>(id), named.address));
  return Dispatched::kDone;
}

}  // namespace bloomproxy::proxy
