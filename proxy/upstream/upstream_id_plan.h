// CLIENT UNBLOCK <id> and CLIENT TRACKING ON ... REDIRECT <id> name a client by its proxy id;
// the upstream knows that client's connection by its own CLIENT ID. When the proxy does not know
// that id yet, this plan finds it without a command that shows in MONITOR:
//
//   CLIENT LIST  ─► the line whose addr= is the connection's local address ─► id=N
//   <the command, with N in place of the proxy id>  ─► its reply is the client's
//
// (CLIENT LIST is an admin command: Redis does not show admin commands to MONITOR. CLIENT ID is
// not one, so a proxy that asked every new connection its id showed up in every MONITOR.)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "filters/common/plan.h"

namespace bloomproxy::proxy {

class UpstreamIdPlan : public filters::Plan {
 public:
  // `args`: the command as the client sent it; args[id_arg] is replaced by the upstream id of
  // the connection whose local address is `address`, or by one Redis cannot know when there is
  // no such line. The id found is remembered for proxy client `client_id` (PinRegistry) while
  // it keeps that connection.
  UpstreamIdPlan(std::vector<std::string> args, size_t id_arg, uint64_t client_id,
                 std::string address);

  void Start(filters::PlanStep* step) override;
  void OnReplies(filters::StepReplies& replies, filters::PlanStep* step) override;

  // The id= of the CLIENT LIST line whose addr= is `address`; 0 when there is none.
  static int64_t FindId(std::string_view client_list, std::string_view address);

 private:
  std::vector<std::string> args_;
  size_t id_arg_;
  uint64_t client_id_;
  std::string address_;
  bool listed_ = false;
};

}  // namespace bloomproxy::proxy
