// Runs a plan (filters/bloom/bf_plan.h) for one client command, or for several coalesced ones:
// sends each step's requests on an upstream connection, decodes the replies, and gives the plan's
// replies to the commands' slots. The runner owns itself: it is deleted when the plan is over,
// also when clients left meanwhile (the plan still finishes, so a filter is never left
// half-written).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "filters/bloom/bf_plan.h"
#include "proxy/upstream/reply_sink.h"
#include "proxy/upstream/upstream.h"

namespace bloomproxy::proxy {

class Server;
struct Pending;

class PlanRunner : public ReplySink {
 public:
  // Starts `plan` for `slots` (one per command; marked in flight until the plan is done). With
  // several slots, slot i gets the plan's MemberReplies()[i]. `key_slot`: the cluster slot of
  // the plan's keys (a filter's keys share one), for the redirections of its requests.
  // `done`, if set, runs once the plan is over and its replies are delivered. `conn` may have
  // closed since it was chosen: the plan then ends with the connection's error reply.
  static void Run(Server* server, std::vector<Pending*> slots, UpstreamRef conn,
                  std::unique_ptr<filters::Plan> plan, int key_slot = -1,
                  std::function<void()> done = nullptr);

  // One reply frame of the current step (called by the upstream connection). `last` is true
  // for the step's last frame; the slot carrying the step is already off the connection.
  void OnFrame(std::string_view frame, bool last);
  // The connection failed: the plan ends with `error_reply`.
  void OnFail(const std::string& error_reply);

  // On a cluster each request of a step is a part of its own, redirected on its own (a
  // migration may have moved some of the filter's keys and not others); the step's replies
  // are put back in order once all are in.
  void OnPart(uint32_t part, std::string_view frame) override;
  size_t hint() const override { return hint_; }
  uint16_t flavor() const override { return flavor_; }

 private:
  PlanRunner(Server* server, std::vector<Pending*> slots, UpstreamRef conn,
             std::unique_ptr<filters::Plan> plan);
  void Send(filters::PlanStep& step);
  // Sends the step's requests one part each (cluster).
  void SendParts(filters::PlanStep& step);
  void Finish(std::string reply);

  Server* server_;
  std::vector<Pending*> slots_;
  UpstreamRef conn_;  // checked before each step: it may close between two
  std::unique_ptr<filters::Plan> plan_;
  std::unique_ptr<filters::StepReplies> replies_;
  int key_slot_ = -1;
  size_t hint_ = 0;
  uint16_t flavor_ = 0;
  std::vector<std::string> parts_;  // the replies of the step's parts, in request order
  size_t parts_left_ = 0;
  std::function<void()> done_;
};

}  // namespace bloomproxy::proxy
