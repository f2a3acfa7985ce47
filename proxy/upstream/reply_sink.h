// Receives the replies of internal requests that are parts of a larger whole: the per-node
// parts of a command the cluster router split or fanned out (proxy/upstream/split_request.h), and
// the requests of a plan step on a cluster (proxy/sketch/plan_runner.h), each of which may be
// redirected on its own.
#pragma once

#include <cstdint>
#include <string_view>

namespace bloomproxy::proxy {

class ReplySink {
 public:
  virtual ~ReplySink() = default;
  // The reply to part `part` (an error reply when its connection failed).
  virtual void OnPart(uint32_t part, std::string_view frame) = 0;
  // The client whose shared connection the parts prefer (so they stay in order with the
  // client's other commands); any number.
  virtual size_t hint() const = 0;
  // The flavor of connection the parts take: the client's (a RESP3 client's get RESP3
  // replies).
  virtual uint16_t flavor() const { return 0; }
};

}  // namespace bloomproxy::proxy
