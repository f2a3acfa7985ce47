#include "proxy/plan_runner.h"

#include "protocol/errors.h"
#include "proxy/client.h"
#include "proxy/server.h"
#include "proxy/upstream.h"

namespace bloomproxy::proxy {

PlanRunner::PlanRunner(Server* server, Client* client, Pending* slot, UpstreamConn* conn,
                       std::unique_ptr<filters::Plan> plan)
    : server_(server), slot_(slot), conn_(conn), plan_(std::move(plan)) {
  (void)client;
}

void PlanRunner::Run(Server* server, Client* client, Pending* slot, UpstreamConn* conn,
                     std::unique_ptr<filters::Plan> plan) {
  auto* runner = new PlanRunner(server, client, slot, conn, std::move(plan));
  slot->in_flight = true;  // a client that leaves now orphans the slot; the runner frees it
  filters::PlanStep step;
  runner->plan_->Start(&step);
  runner->Send(step);
}

void PlanRunner::Send(filters::PlanStep& step) {
  if (!step.requests.empty()) {
    // Requests of the last step are still sent (cleanup, counts); their replies are dropped
    // by an internal slot.
    if (!conn_->usable()) {
      if (!step.done) return Finish(protocol::errors::UpstreamUnavailable(conn_->last_error()));
    } else {
      auto* p = new Pending;
      p->frames_left = static_cast<int32_t>(step.replies);
      if (!step.done) p->plan = this;
      conn_->Send(step.requests, p);
    }
  }
  if (step.done) return Finish(std::move(step.reply));
  if (step.requests.empty()) Finish("-ERR internal error: plan step without requests\r\n");
}

void PlanRunner::OnFrame(std::string_view frame, bool last) {
  replies_.push_back(server_->decoder().Decode(frame));
  if (!last) return;
  std::vector<protocol::ReplyPtr> replies;
  replies.swap(replies_);
  filters::PlanStep step;
  plan_->OnReplies(replies, &step);
  Send(step);
}

void PlanRunner::OnFail(const std::string& error_reply) { Finish(error_reply); }

void PlanRunner::Finish(std::string reply) {
  Pending* slot = slot_;
  slot->in_flight = false;
  if (slot->client == nullptr) {
    delete slot;  // the client left
  } else {
    slot->client->OnPlanDone(slot, std::move(reply));
  }
  delete this;
}

}  // namespace bloomproxy::proxy
