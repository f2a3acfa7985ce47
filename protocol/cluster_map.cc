#include "protocol/cluster_map.h"

#include <bitset>

#include "protocol/key_slot.h"
#include "protocol/reply_decoder.h"

namespace bloomproxy::protocol {
namespace {

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.substr(0, prefix.size()) == prefix;
}

// A decimal of digits only (no sign, no spaces) within [lo, hi].
bool ParseBoundedInt(std::string_view s, int lo, int hi, int* out) {
  if (s.empty() || s.size() > 9) return false;
  int v = 0;
  for (const char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  if (v < lo || v > hi) return false;
  *out = v;
  return true;
}

bool IsString(const redisReply* r) {
  return r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS;
}

// The value of `key` in a node's metadata (a flat key/value array in RESP2), or "".
std::string_view MetadataValue(const redisReply* meta, std::string_view key) {
  if (meta == nullptr || meta->type != REDIS_REPLY_ARRAY) return {};
  for (size_t i = 0; i + 1 < meta->elements; i += 2) {
    const redisReply* k = meta->element[i];
    const redisReply* v = meta->element[i + 1];
    if (IsString(k) && IsString(v) && ReplyString(k) == key) return ReplyString(v);
  }
  return {};
}

// One node of a slot range: [endpoint, port, id?, metadata?]. Writes "host:port" and the id.
bool ParseNode(const redisReply* node, std::string_view asked_host, std::string* address,
               std::string* id, std::string* error) {
  if (node->type != REDIS_REPLY_ARRAY || node->elements < 2) {
    *error = "CLUSTER SLOTS: a node is not an array of endpoint and port";
    return false;
  }
  const redisReply* endpoint = node->element[0];
  const redisReply* port = node->element[1];
  if ((endpoint->type != REDIS_REPLY_NIL && !IsString(endpoint)) ||
      port->type != REDIS_REPLY_INTEGER || port->integer < 1 || port->integer > 65535) {
    *error = "CLUSTER SLOTS: a node's endpoint or port is malformed";
    return false;
  }
  id->clear();
  if (node->elements >= 3) {
    if (!IsString(node->element[2])) {
      *error = "CLUSTER SLOTS: a node id is not a string";
      return false;
    }
    *id = std::string(ReplyString(node->element[2]));
  }
  std::string_view host = endpoint->type == REDIS_REPLY_NIL ? "" : ReplyString(endpoint);
  if (host == "?") {
    // Hostnames are preferred but this node announced none; Redis 7 still sends its ip.
    host = MetadataValue(node->elements >= 4 ? node->element[3] : nullptr, "ip");
  }
  if (host.empty()) host = asked_host;
  *address = JoinHostPort(host, static_cast<int>(port->integer));
  return true;
}

bool ParseRange(const redisReply* entry, std::string_view asked_host, SlotRange* range,
                std::string* error) {
  if (entry->type != REDIS_REPLY_ARRAY || entry->elements < 3 ||
      entry->element[0]->type != REDIS_REPLY_INTEGER ||
      entry->element[1]->type != REDIS_REPLY_INTEGER) {
    *error = "CLUSTER SLOTS: an entry is not [start, end, master, replicas...]";
    return false;
  }
  const long long start = entry->element[0]->integer;
  const long long end = entry->element[1]->integer;
  if (start < 0 || end < start || end >= kClusterSlots) {
    *error = "CLUSTER SLOTS: slot range out of bounds";
    return false;
  }
  range->start = static_cast<int>(start);
  range->end = static_cast<int>(end);
  if (!ParseNode(entry->element[2], asked_host, &range->master, &range->master_id, error)) {
    return false;
  }
  range->replicas.clear();
  for (size_t i = 3; i < entry->elements; ++i) {
    std::string address;
    std::string id;
    if (!ParseNode(entry->element[i], asked_host, &address, &id, error)) return false;
    range->replicas.push_back(std::move(address));
  }
  return true;
}

}  // namespace

bool ParseClusterSlots(std::string_view reply, std::string_view asked_host,
                       std::vector<SlotRange>* out, std::string* error) {
  out->clear();
  ReplyDecoder decoder;
  ReplyPtr r = decoder.Decode(reply);
  if (!r) {
    *error = "CLUSTER SLOTS: reply cannot be decoded";
    return false;
  }
  if (r->type == REDIS_REPLY_ERROR) {
    *error = std::string(ReplyString(r.get()));
    return false;
  }
  if (r->type != REDIS_REPLY_ARRAY) {
    *error = "CLUSTER SLOTS: reply is not an array";
    return false;
  }
  out->resize(r->elements);
  for (size_t i = 0; i < r->elements; ++i) {
    if (!ParseRange(r->element[i], asked_host, &(*out)[i], error)) {
      out->clear();
      return false;
    }
  }
  return true;
}

bool CoversAllSlots(const std::vector<SlotRange>& ranges) {
  std::bitset<kClusterSlots> seen;
  size_t count = 0;
  for (const SlotRange& r : ranges) {
    if (r.start < 0 || r.end < r.start || r.end >= kClusterSlots) return false;
    for (int slot = r.start; slot <= r.end; ++slot) {
      if (seen.test(static_cast<size_t>(slot))) return false;
      seen.set(static_cast<size_t>(slot));
      ++count;
    }
  }
  return count == kClusterSlots;
}

Redirect ParseRedirect(std::string_view frame) {
  if (frame.size() >= 2 && frame.substr(frame.size() - 2) == "\r\n") {
    frame.remove_suffix(2);
  }
  Redirect out;
  // Redis: "-TRYAGAIN Multiple keys request during rehashing of slot", "-CLUSTERDOWN The
  // cluster is down", "-CLUSTERDOWN Hash slot not served", ... The word alone decides.
  struct Word {
    std::string_view text;
    RedirectKind kind;
  };
  for (const Word& w : {Word{"-TRYAGAIN", RedirectKind::kTryAgain},
                        Word{"-CLUSTERDOWN", RedirectKind::kClusterDown}}) {
    if (StartsWith(frame, w.text) &&
        (frame.size() == w.text.size() || frame[w.text.size()] == ' ')) {
      out.kind = w.kind;
      return out;
    }
  }
  // Redis: "-MOVED %d %s:%d" / "-ASK %d %s:%d" (cluster.c clusterRedirectClient).
  RedirectKind kind = RedirectKind::kNone;
  if (StartsWith(frame, "-MOVED ")) {
    kind = RedirectKind::kMoved;
    frame.remove_prefix(7);
  } else if (StartsWith(frame, "-ASK ")) {
    kind = RedirectKind::kAsk;
    frame.remove_prefix(5);
  } else {
    return out;
  }
  const size_t space = frame.find(' ');
  int slot = 0;
  if (space == std::string_view::npos ||
      !ParseBoundedInt(frame.substr(0, space), 0, kClusterSlots - 1, &slot)) {
    return out;
  }
  const std::string_view address = frame.substr(space + 1);
  std::string host;
  int port = 0;
  if (address.find(' ') != std::string_view::npos || !SplitHostPort(address, &host, &port)) {
    return out;
  }
  out.kind = kind;
  out.slot = slot;
  out.address = std::string(address);
  return out;
}

bool SplitHostPort(std::string_view address, std::string* host, int* port) {
  std::string_view h;
  std::string_view p;
  if (StartsWith(address, "[")) {
    const size_t close = address.find(']');
    if (close == std::string_view::npos || close + 1 >= address.size() ||
        address[close + 1] != ':') {
      return false;
    }
    h = address.substr(1, close - 1);
    p = address.substr(close + 2);
  } else {
    // Redis writes IPv6 addresses unbracketed ("::1:6380"): the port is after the last colon.
    const size_t colon = address.rfind(':');
    if (colon == std::string_view::npos) return false;
    h = address.substr(0, colon);
    p = address.substr(colon + 1);
  }
  int v = 0;
  if (!ParseBoundedInt(p, 1, 65535, &v)) return false;
  *host = std::string(h);
  *port = v;
  return true;
}

std::string JoinHostPort(std::string_view host, int port) {
  std::string out;
  const bool bracket = host.find(':') != std::string_view::npos && !StartsWith(host, "[");
  if (bracket) out += '[';
  out += host;
  if (bracket) out += ']';
  out += ':';
  out += std::to_string(port);
  return out;
}

}  // namespace bloomproxy::protocol
