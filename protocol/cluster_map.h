// What a Redis Cluster says about itself, parsed without sockets: the slot ranges of
// CLUSTER SLOTS, and the redirections a node answers instead of running a command
// (-MOVED, -ASK, -TRYAGAIN, -CLUSTERDOWN). The router (proxy/upstream/cluster_router.h) keeps the
// map and acts on the redirections.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace bloomproxy::protocol {

// One range of slots and the master serving it, as CLUSTER SLOTS lists it.
struct SlotRange {
  int start = 0;
  int end = 0;                        // inclusive
  std::string master;                 // "host:port" ("[v6]:port" for an IPv6 address)
  std::string master_id;              // node id (empty when the node did not say)
  std::vector<std::string> replicas;  // "host:port" each
};

// Parses the RESP2 bytes of a CLUSTER SLOTS reply: an array of [start, end, master, replica...],
// each node [endpoint, port, id?, metadata?] (Redis 7 adds the metadata, a flat key/value array
// in RESP2; older nodes send 2 or 3 elements; elements past the fourth are ignored). Endpoints:
//   null (cluster-preferred-endpoint-type unknown-endpoint) or "" (a node that does not know
//   its own address yet) -> `asked_host`, the host the question was sent to, as Redis's
//   documentation says;
//   "?" (hostname preferred, none announced) -> the metadata's "ip" when given, else `asked_host`.
// An empty array (no slot assigned yet) is a valid reply with no ranges. False with *error when
// the bytes are not a CLUSTER SLOTS reply (an error reply included: its text goes to *error).
bool ParseClusterSlots(std::string_view reply, std::string_view asked_host,
                       std::vector<SlotRange>* out, std::string* error);

// Whether `ranges` cover every slot 0..16383 exactly once.
bool CoversAllSlots(const std::vector<SlotRange>& ranges);

enum class RedirectKind : uint8_t {
  kNone,         // not a redirection: an ordinary reply
  kMoved,        // -MOVED <slot> <host:port>: the slot lives elsewhere for good
  kAsk,          // -ASK <slot> <host:port>: this once, ASKING + the command on that node
  kTryAgain,     // -TRYAGAIN ...: a multi-key command during a migration; retry shortly
  kClusterDown,  // -CLUSTERDOWN ...: the cluster cannot serve the slot now
};

struct Redirect {
  RedirectKind kind = RedirectKind::kNone;
  int slot = -1;
  std::string address;  // "host:port" as the node sent it (host may be empty: ":6380")
};

// Reads a reply frame (its bytes, "\r\n" included). Anything but the four error kinds above is
// kNone; so is a MOVED/ASK whose slot or address cannot be read. Redis prints the address with
// "%s:%d" (cluster.c clusterRedirectClient): an IPv6 address comes without brackets
// ("::1:6380"), an unknown endpoint as "" or "?" (":6380", "?:6380"). To compare it with a
// SlotRange's address, normalise it with SplitHostPort and JoinHostPort.
Redirect ParseRedirect(std::string_view frame);

// Splits "host:port" / "[v6]:port" / "v6:port" into host (brackets removed) and port: without
// brackets the port follows the last colon. The host may be empty; the port is 1..65535. False
// if malformed.
bool SplitHostPort(std::string_view address, std::string* host, int* port);

// "host:port", or "[host]:port" when the host holds a colon (IPv6) and is not bracketed yet.
std::string JoinHostPort(std::string_view host, int port);

}  // namespace bloomproxy::protocol
