#include "proxy/upstream/cluster_router.h"

#include <algorithm>

#include "protocol/encoder.h"
#include "protocol/errors.h"
#include "proxy/client/client.h"
#include "proxy/server/log.h"
#include "proxy/server/server.h"
#include "proxy/upstream/reply_sink.h"

namespace bloomproxy::proxy {
namespace {

constexpr std::string_view kAsking = "*1\r\n$6\r\nASKING\r\n";
constexpr std::string_view kClusterSlots = "*2\r\n$7\r\nCLUSTER\r\n$5\r\nSLOTS\r\n";

std::string HostOf(const UpstreamAddress& a) {
  std::string host;
  int port = 0;
  protocol::SplitHostPort(a.text, &host, &port);
  return host;
}

}  // namespace

ClusterRouter::ClusterRouter(Server* server) : server_(server) {}

ClusterRouter::~ClusterRouter() = default;

bool ClusterRouter::Start(std::string* error) {
  const conf::Options& o = server_->options();
  cluster_ = !o.upstream_cluster.empty();
  const std::vector<std::string> addresses =
      cluster_ ? o.upstream_cluster : std::vector<std::string>{o.upstream};
  for (const std::string& text : addresses) {
    UpstreamAddress address;
    if (!ResolveUpstream(text, &address, error)) {
      *error = "'" + text + "': " + *error;
      return false;
    }
    auto pool = std::make_unique<UpstreamPool>(server_, std::move(address));
    seeds_.push_back(pool.get());
    pools_.emplace(text, std::move(pool));
  }
  for (UpstreamPool* seed : seeds_) seed->Start();
  if (!cluster_) {
    // One node serves every slot.
    slots_.fill(seeds_.front());
    masters_ = {seeds_.front()};
    map_known_ = true;
    return true;
  }
  started_ms_ = server_->NowMs();
  uv_timer_init(server_->loop(), &timer_);
  timer_.data = this;
  uv_timer_start(&timer_, OnTick, kTickMs, kTickMs);
  timer_started_ = true;
  return true;
}

void ClusterRouter::CloseAll() {
  closing_ = true;
  if (timer_started_) {
    uv_timer_stop(&timer_);
    uv_close(reinterpret_cast<uv_handle_t*>(&timer_), nullptr);
    timer_started_ = false;
  }
  std::deque<Held> held;
  held.swap(held_);
  for (Held& h : held) Deliver(h.slot, protocol::errors::kClusterDown);
  for (auto& [text, pool] : pools_) pool->CloseAll();
}

UpstreamPool* ClusterRouter::Any() const {
  for (UpstreamPool* pool : masters_) {
    if (pool->Reachable()) return pool;
  }
  if (!masters_.empty()) return masters_.front();
  for (UpstreamPool* pool : seeds_) {
    if (pool->Reachable()) return pool;
  }
  return seeds_.empty() ? nullptr : seeds_.front();
}

int ClusterRouter::OtherSlotOf(const UpstreamPool* pool, int avoid) const {
  for (int s = 0; s < protocol::kClusterSlots; ++s) {
    if (s != avoid && slots_[static_cast<size_t>(s)] == pool) return s;
  }
  return -1;
}

std::vector<UpstreamPool*> ClusterRouter::pools() const {
  std::vector<UpstreamPool*> all;
  for (const auto& [text, pool] : pools_) all.push_back(pool.get());
  return all;
}

UpstreamPool* ClusterRouter::ForAddress(const std::string& address, const UpstreamAddress* asked) {
  std::string host;
  int port = 0;
  if (!protocol::SplitHostPort(address, &host, &port)) return nullptr;
  if (host.empty() && asked != nullptr) host = HostOf(*asked);
  const std::string text = host.find(':') != std::string::npos
                               ? "[" + host + "]:" + std::to_string(port)
                               : host + ":" + std::to_string(port);
  auto it = pools_.find(text);
  if (it != pools_.end()) return it->second.get();
  UpstreamAddress resolved;
  std::string error;
  if (!ResolveUpstream(text, &resolved, &error)) {
    LOG_WARNING_F({{"upstream", text}}, "cluster node %s: %s", text.c_str(), error.c_str());
    return nullptr;
  }
  auto pool = std::make_unique<UpstreamPool>(server_, std::move(resolved));
  UpstreamPool* raw = pool.get();
  pools_.emplace(text, std::move(pool));
  raw->Start();
  LOG_VERBOSE_F({{"upstream", text}}, "cluster node %s added", text.c_str());
  return raw;
}

bool ClusterRouter::WaitForMap(uint64_t id) {
  if (map_known_ || closing_ || server_->NowMs() - started_ms_ >= kHoldMs) return false;
  waiting_.push_back(id);
  return true;
}

void ClusterRouter::WakeWaiting() {
  std::vector<uint64_t> waiting;
  waiting.swap(waiting_);
  for (uint64_t id : waiting) {
    auto it = server_->clients().find(id);
    if (it != server_->clients().end()) it->second->OnTopologyKnown();
  }
}

void ClusterRouter::OnTick(uv_timer_t* t) { static_cast<ClusterRouter*>(t->data)->Tick(); }

void ClusterRouter::Tick() {
  if (closing_) return;
  const uint64_t now = server_->NowMs();
  if (now >= next_refresh_ms_) Refresh(now);
  if (!waiting_.empty() && (map_known_ || now - started_ms_ >= kHoldMs)) WakeWaiting();
  if (!held_.empty()) RetryHeld(now);
}

bool ClusterRouter::Degraded() const {
  if (!map_known_) return true;
  for (const UpstreamPool* pool : masters_) {
    if (!pool->Reachable()) return true;
  }
  return false;
}

void ClusterRouter::RefreshSoon() {
  if (cluster_) next_refresh_ms_ = 0;
}

void ClusterRouter::Refresh(uint64_t now) {
  if (refreshing_ && now - refresh_started_ms_ < kRefreshTimeoutMs) return;
  refreshing_ = false;
  // Ask the masters first (they know the newest map), then the seeds, one node per attempt,
  // moving on to the next node each time.
  std::vector<UpstreamPool*> candidates = masters_;
  for (UpstreamPool* seed : seeds_) {
    if (std::find(candidates.begin(), candidates.end(), seed) == candidates.end()) {
      candidates.push_back(seed);
    }
  }
  next_refresh_ms_ = now + kDegradedRefreshMs;
  for (size_t i = 0; i < candidates.size(); ++i) {
    UpstreamPool* pool = candidates[(refresh_cursor_ + i) % candidates.size()];
    size_t hint = 0;
    UpstreamConn* conn = pool->Shared(&hint);
    if (conn == nullptr || !conn->ready()) continue;
    refresh_cursor_ = (refresh_cursor_ + i + 1) % candidates.size();
    auto* p = new Pending;
    p->hook = Hook::kClusterSlots;
    conn->Send(kClusterSlots, p);
    conn->NoteOwnCommand({"CLUSTER", "SLOTS"});
    refreshing_ = true;
    refresh_started_ms_ = now;
    return;
  }
}

void ClusterRouter::OnSlotsReply(UpstreamConn* conn, std::string_view frame) {
  refreshing_ = false;
  std::vector<protocol::SlotRange> ranges;
  std::string error;
  if (!protocol::ParseClusterSlots(frame, HostOf(conn->address()), &ranges, &error) ||
      ranges.empty()) {
    LOG_WARNING_F({{"upstream", conn->address().text}}, "cluster node %s: no slot map (%s)",
                  conn->address().text.c_str(), error.empty() ? "no slots" : error.c_str());
    next_refresh_ms_ = server_->NowMs() + kDegradedRefreshMs;
    return;
  }
  ApplyRanges(ranges);
  next_refresh_ms_ = server_->NowMs() + (Degraded() ? kDegradedRefreshMs : kRefreshMs);
  if (!held_.empty()) RetryHeld(server_->NowMs());
}

void ClusterRouter::ApplyRanges(const std::vector<protocol::SlotRange>& ranges) {
  std::array<UpstreamPool*, protocol::kClusterSlots> slots{};
  std::vector<UpstreamPool*> masters;
  for (const protocol::SlotRange& r : ranges) {
    UpstreamPool* pool = ForAddress(r.master, nullptr);
    if (pool == nullptr) continue;
    for (int s = std::max(0, r.start); s <= r.end && s < protocol::kClusterSlots; ++s) {
      slots[static_cast<size_t>(s)] = pool;
    }
    if (std::find(masters.begin(), masters.end(), pool) == masters.end()) masters.push_back(pool);
  }
  std::sort(masters.begin(), masters.end(), [](const UpstreamPool* a, const UpstreamPool* b) {
    return a->address().text < b->address().text;
  });
  if (masters != masters_) {
    std::string list;
    for (const UpstreamPool* m : masters) list += (list.empty() ? "" : " ") + m->address().text;
    LOG_NOTICE("cluster masters: %s", list.c_str());
  }
  if (slots != slots_) ++epoch_;
  slots_ = slots;
  masters_ = std::move(masters);
  map_known_ = true;
}

bool ClusterRouter::Redirect(UpstreamConn* from, Pending* slot, const protocol::Redirect& redirect,
                             std::string_view frame) {
  if (closing_ || ++slot->redirects > kMaxRedirects) return false;
  if (slot->first_sent_ms == 0) slot->first_sent_ms = server_->NowMs();
  switch (redirect.kind) {
    case protocol::RedirectKind::kMoved:
    case protocol::RedirectKind::kAsk: {
      UpstreamPool* pool = ForAddress(redirect.address, &from->address());
      if (pool == nullptr) return false;
      const bool moved = redirect.kind == protocol::RedirectKind::kMoved;
      if (moved && redirect.slot >= 0 && redirect.slot < protocol::kClusterSlots) {
        UpstreamPool*& owner = slots_[static_cast<size_t>(redirect.slot)];
        if (owner != pool) ++epoch_;
        owner = pool;
        RefreshSoon();
      }
      slot->asking = !moved;
      if (!SendTo(pool, slot)) Hold(slot, kTickMs, {});
      return true;
    }
    case protocol::RedirectKind::kTryAgain:
      // Some keys of a multi-key request have moved, some not yet: the migration of the slot
      // ends shortly.
      Hold(slot, std::min<uint64_t>(100, 10u << std::min<uint16_t>(slot->redirects, 4)), frame);
      return true;
    case protocol::RedirectKind::kClusterDown:
      RefreshSoon();
      Hold(slot, 50, frame);
      return true;
    case protocol::RedirectKind::kNone:
      break;
  }
  return false;
}

void ClusterRouter::SendOrHold(Pending* slot) {
  if (slot->first_sent_ms == 0) slot->first_sent_ms = server_->NowMs();
  UpstreamPool* pool = slot->cluster_slot >= 0 ? ForSlot(slot->cluster_slot) : Any();
  if (pool == nullptr || !pool->Reachable() || !SendTo(pool, slot)) Hold(slot, kTickMs, {});
}

bool ClusterRouter::SendTo(UpstreamPool* pool, Pending* slot) {
  size_t hint = slot->sink != nullptr     ? slot->sink->hint()
                : slot->client != nullptr ? slot->client->shared_hint()
                                          : 0;
  const uint16_t flavor = slot->sink != nullptr     ? slot->sink->flavor()
                          : slot->client != nullptr ? slot->client->flavor()
                                                    : 0;
  UpstreamConn* conn = pool->Shared(&hint, flavor);
  if (conn == nullptr) return false;
  if (slot->asking) {
    auto* p = new Pending;
    p->suppress = true;
    conn->Send(kAsking, p);
    slot->asking = false;
  }
  conn->Send(std::string_view(slot->request), slot);
  return true;
}

void ClusterRouter::Hold(Pending* slot, uint64_t delay_ms, std::string_view error) {
  ++epoch_;  // what a client sends from now on must not overtake it
  held_.push_back({slot, server_->NowMs() + delay_ms, std::string(error)});
}

void ClusterRouter::RetryHeld(uint64_t now) {
  std::deque<Held> held;
  held.swap(held_);
  for (Held& h : held) {
    if (h.due_ms > now) {
      held_.push_back(std::move(h));
      continue;
    }
    Pending* slot = h.slot;
    UpstreamPool* pool = slot->cluster_slot >= 0 ? ForSlot(slot->cluster_slot) : Any();
    if (pool != nullptr && pool->Reachable() && SendTo(pool, slot)) continue;
    if (now - slot->first_sent_ms < kHoldMs) {
      h.due_ms = now + kTickMs;
      held_.push_back(std::move(h));
      continue;
    }
    if (!h.error.empty()) {
      Deliver(slot, h.error);
    } else {
      Deliver(slot,
              pool == nullptr ? protocol::errors::kSlotNotServed : protocol::errors::kClusterDown);
    }
  }
}

void ClusterRouter::Deliver(Pending* slot, std::string_view frame) {
  if (slot->sink != nullptr) {
    ReplySink* sink = slot->sink;
    const uint32_t part = slot->part;
    delete slot;
    sink->OnPart(part, frame);
    return;
  }
  if (slot->client == nullptr) {
    delete slot;
    return;
  }
  slot->client->OnUpstreamFrame(nullptr, slot, frame);
}

}  // namespace bloomproxy::proxy
