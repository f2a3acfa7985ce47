#include "proxy/sketch/plan_runner.h"

#include "protocol/errors.h"
#include "protocol/reply_framer.h"
#include "proxy/client/client.h"
#include "proxy/server/server.h"
#include "proxy/upstream/cluster_router.h"
#include "proxy/upstream/upstream.h"

namespace bloomproxy::proxy {

PlanRunner::PlanRunner(Server* server, std::vector<Pending*> slots, UpstreamRef conn,
                       std::unique_ptr<filters::Plan> plan)
    : server_(server), slots_(std::move(slots)), conn_(std::move(conn)), plan_(std::move(plan)) {}

void PlanRunner::Run(Server* server, std::vector<Pending*> slots, UpstreamRef conn,
                     std::unique_ptr<filters::Plan> plan, int key_slot,
                     std::function<void()> done) {
  // A client that leaves now orphans its slot; the runner frees it.
  for (Pending* slot : slots) slot->in_flight = true;
  auto* runner = new PlanRunner(server, std::move(slots), std::move(conn), std::move(plan));
  runner->key_slot_ = key_slot;
  runner->done_ = std::move(done);
  if (!runner->slots_.empty() && runner->slots_[0]->client != nullptr) {
    runner->hint_ = runner->slots_[0]->client->shared_hint();
    runner->flavor_ = runner->slots_[0]->client->flavor();
  }
  filters::PlanStep step;
  runner->plan_->Start(&step);
  runner->Send(step);
}

void PlanRunner::Send(filters::PlanStep& step) {
  if (step.requests.empty()) {
    if (step.done) return Finish(std::move(step.reply));
    return Finish("-ERR internal error: plan step without requests\r\n");
  }
  if (!conn_.open()) {
    // Closed since the plan began, maybe freed: the error reply its slots got.
    if (step.done) return Finish(std::move(step.reply));
    return Finish(conn_.fate->reply);
  }
  if (server_->router().cluster() && conn_.conn->shared()) return SendParts(step);
  // Requests of the last step are still sent (cleanup, counts); their replies are dropped by an
  // internal slot.
  auto* p = new Pending;
  p->plan_step = true;
  p->frames_left = static_cast<int32_t>(step.replies);
  if (!step.done) p->plan = this;
  conn_.conn->Send(std::move(step.requests), p);
  if (step.done) Finish(std::move(step.reply));
}

void PlanRunner::OnFrame(std::string_view frame, bool last) {
  if (!replies_) replies_ = std::make_unique<filters::StepReplies>(&server_->decoder());
  replies_->Add(frame);
  if (!last) return;
  std::unique_ptr<filters::StepReplies> replies = std::move(replies_);
  filters::PlanStep step;
  plan_->OnReplies(*replies, &step);
  Send(step);
}

void PlanRunner::SendParts(filters::PlanStep& step) {
  std::string_view rest = step.requests;
  parts_.assign(step.replies, std::string());
  parts_left_ = step.replies;
  for (uint32_t i = 0; i < step.replies && !rest.empty(); ++i) {
    // Requests are RESP arrays, which the reply framer frames as well as a reply.
    protocol::ReplyFramer framer;
    size_t length = rest.size();
    if (framer.Next(rest, &length) != protocol::FrameStatus::kComplete) length = rest.size();
    auto* p = new Pending;
    p->plan_step = true;
    if (!step.done) p->sink = this;
    p->part = i;
    p->cluster_slot = key_slot_;
    p->request.assign(rest.substr(0, length));
    rest.remove_prefix(length);
    conn_.conn->Send(std::string_view(p->request), p);
  }
  if (step.done) Finish(std::move(step.reply));
}

void PlanRunner::OnPart(uint32_t part, std::string_view frame) {
  if (part < parts_.size()) parts_[part].assign(frame);
  if (parts_left_ == 0 || --parts_left_ > 0) return;
  auto replies = std::make_unique<filters::StepReplies>(&server_->decoder());
  for (const std::string& reply : parts_) replies->Add(reply);
  parts_.clear();
  filters::PlanStep step;
  plan_->OnReplies(*replies, &step);
  Send(step);
}

void PlanRunner::OnFail(const std::string& error_reply) { Finish(error_reply); }

void PlanRunner::Finish(std::string reply) {
  const std::vector<std::string>& own = plan_->MemberReplies();
  const bool per_member = slots_.size() > 1 && own.size() == slots_.size();
  for (size_t i = 0; i < slots_.size(); ++i) {
    Pending* slot = slots_[i];
    slot->in_flight = false;
    if (slot->client == nullptr) {
      delete slot;  // its client left
    } else {
      slot->client->OnPlanDone(slot, per_member ? own[i] : reply);
    }
  }
  std::function<void()> done = std::move(done_);
  delete this;
  if (done) done();
}

}  // namespace bloomproxy::proxy
