// The pool: shared connections (one per slot, replaced after a capped backoff when they fail),
// idle pinned connections for reuse, and the stall check with its probe.
#include <algorithm>

#include "protocol/encoder.h"
#include "proxy/client/client.h"
#include "proxy/server/log.h"
#include "proxy/server/server.h"
#include "proxy/upstream/activity.h"
#include "proxy/upstream/cluster_router.h"
#include "proxy/upstream/upstream.h"

namespace bloomproxy::proxy {
namespace {

constexpr int kFirstBackoffMs = 50;
// While the upstream is down, commands start reconnect attempts at most this often per slot.
constexpr uint64_t kDemandRetryMs = 100;

}  // namespace

UpstreamPool::UpstreamPool(Server* server, UpstreamAddress address)
    : server_(server), address_(std::move(address)) {}

UpstreamPool::~UpstreamPool() = default;

void UpstreamPool::Start() { AddSlots(0); }

void UpstreamPool::AddSlots(uint16_t flavor) {
  if (flavor_slots_.size() <= flavor) flavor_slots_.resize(flavor + 1);
  const int n = std::max(1, server_->options().upstream_connections);
  for (int i = 0; i < n; ++i) {
    auto slot = std::make_unique<Slot>();
    slot->pool = this;
    slot->flavor = flavor;
    uv_timer_init(server_->loop(), &slot->timer);
    slot->timer.data = slot.get();
    flavor_slots_[flavor].push_back(slot.get());
    slots_.push_back(std::move(slot));
  }
  for (Slot* slot : flavor_slots_[flavor]) Connect(slot);
}

void UpstreamPool::Connect(Slot* slot) {
  slot->last_attempt_ms = uv_now(server_->loop());
  slot->conn = new UpstreamConn(this, UpstreamConn::Kind::kShared, slot->flavor);
}

void UpstreamPool::ReconnectOnDemand() {
  if (closing_) return;
  const uint64_t now = uv_now(server_->loop());
  for (auto& slot : slots_) {
    if (slot->conn != nullptr || now - slot->last_attempt_ms < kDemandRetryMs) continue;
    uv_timer_stop(&slot->timer);
    Connect(slot.get());
  }
}

void UpstreamPool::OnReconnect(uv_timer_t* t) {
  auto* slot = static_cast<Slot*>(t->data);
  if (slot->pool->closing_ || slot->conn != nullptr) return;
  slot->pool->Connect(slot);
}

UpstreamConn* UpstreamPool::Shared(size_t* hint, uint16_t flavor) {
  if (flavor >= flavor_slots_.size() || flavor_slots_[flavor].empty()) {
    if (closing_) return nullptr;
    AddSlots(flavor);
  }
  const std::vector<Slot*>& slots = flavor_slots_[flavor];
  const size_t n = slots.size();
  for (size_t i = 0; i < n; ++i) {
    size_t idx = (*hint + i) % n;
    UpstreamConn* c = slots[idx]->conn;
    if (c != nullptr && c->usable()) {
      *hint = idx;
      return c;
    }
  }
  ReconnectOnDemand();
  return nullptr;
}

UpstreamConn* UpstreamPool::AcquirePinned(Client* owner, uint16_t flavor) {
  UpstreamConn* conn = nullptr;
  for (size_t i = idle_pinned_.size(); i-- > 0 && conn == nullptr;) {
    UpstreamConn* c = idle_pinned_[i];
    if (c->usable() && c->flavor() != flavor) continue;
    idle_pinned_.erase(idle_pinned_.begin() + static_cast<ptrdiff_t>(i));
    if (c->usable()) conn = c;
  }
  if (conn == nullptr) conn = new UpstreamConn(this, UpstreamConn::Kind::kPinned, flavor);
  conn->set_owner(owner);
  conn->SyncName(owner != nullptr ? std::string_view(owner->name()) : std::string_view());
  conn->in_use_ = true;
  ++pinned_in_use_;
  return conn;
}

UpstreamConn* UpstreamPool::OpenBackground() {
  return new UpstreamConn(this, UpstreamConn::Kind::kBackground);
}

void UpstreamPool::ReleasePinned(UpstreamConn* conn) {
  if (conn->in_use_ && pinned_in_use_ > 0) --pinned_in_use_;
  conn->in_use_ = false;
  conn->set_owner(nullptr);
  const bool keep = !closing_ && conn->ready() && !conn->dirty() && !conn->tunnel() &&
                    conn->in_flight() == 0 &&
                    idle_pinned_.size() < static_cast<size_t>(server_->options().pinned_pool_size);
  if (keep) {
    conn->ReleaseIdleMemory();
    idle_pinned_.push_back(conn);
  } else if (conn->plan_in_flight()) {
    // A plan finishes even when its client left, so no filter is left half-written; a
    // blocking command, though, must not outlive its client (it could still pop a value).
    conn->CloseWhenIdle("released");
  } else {
    conn->Close("released");
  }
}

void UpstreamPool::OnConnClosed(UpstreamConn* conn) {
  if (conn == probe_) {
    probe_ = nullptr;
    if (probe_state_ == Probe::kWaiting) probe_state_ = Probe::kNotBusy;
    return;
  }
  if (!conn->shared()) {
    if (conn->in_use_ && pinned_in_use_ > 0) --pinned_in_use_;
    conn->in_use_ = false;
    auto it = std::find(idle_pinned_.begin(), idle_pinned_.end(), conn);
    if (it != idle_pinned_.end()) idle_pinned_.erase(it);
    return;
  }
  for (auto& slot : slots_) {
    if (slot->conn != conn) continue;
    slot->conn = nullptr;
    slot->last_error = conn->last_error();
    ++server_->stats().upstream_errors;
    server_->router().RefreshSoon();
    if (closing_) return;
    // A connection that worked restarts the backoff; repeated failures double it up to the cap.
    const int cap = std::max(kFirstBackoffMs, server_->options().reconnect_max_ms);
    slot->backoff_ms = conn->ever_ready_
                           ? kFirstBackoffMs
                           : std::min(cap, std::max(kFirstBackoffMs, slot->backoff_ms * 2));
    if (conn->ever_ready_) {
      LOG_WARNING_F({{"upstream", address_.text}}, "upstream %s connection lost: %s",
                    address_.text.c_str(), conn->last_error().c_str());
      logged_failure_.clear();
    } else {
      LogFailedAttempt(conn->last_error());
    }
    uv_timer_start(&slot->timer, OnReconnect, static_cast<uint64_t>(slot->backoff_ms), 0);
    return;
  }
}

void UpstreamPool::LogFailedAttempt(const std::string& reason) {
  const uint64_t now = server_->NowMs();
  if (reason == logged_failure_ && now - logged_failure_ms_ < kFailureLogMs) return;
  logged_failure_ = reason;
  logged_failure_ms_ = now;
  LOG_WARNING_F({{"upstream", address_.text}}, "upstream %s: connection failed: %s (retrying)",
                address_.text.c_str(), reason.c_str());
}

void UpstreamPool::OnSharedReady(UpstreamConn* conn) {
  for (auto& slot : slots_) {
    if (slot->conn == conn) slot->last_error.clear();
  }
}

bool UpstreamPool::Reachable() const {
  if (flavor_slots_.empty() || shared_count() > 0) return true;
  for (const Slot* slot : flavor_slots_[0]) {
    if (slot->last_error.empty()) return true;
  }
  return false;
}

void UpstreamPool::CheckTimeouts(uint64_t now, uint64_t timeout_ms) {
  // A stalled shared connection (the upstream is stopped, or a network path is black-holed)
  // fails its requests and is replaced. Pinned connections are exempt: a BLPOP may wait for
  // ever. While the upstream is busy on purpose, waiting is what Redis's own clients do, so the
  // clock restarts when it is over.
  const uint64_t mono = UpstreamActivity::MonotonicMs();
  if (UpstreamActivity::StallingCommandRunning() || UpstreamActivity::PauseActive(mono)) {
    spared_ms_ = now;
    EndProbe();
    return;
  }
  std::vector<UpstreamConn*> stalled;
  for (auto& slot : slots_) {
    UpstreamConn* c = slot->conn;
    if (c == nullptr || c->inflight_.empty()) continue;
    if (now - std::max(c->inflight_.front()->sent_ms, spared_ms_) > timeout_ms) {
      stalled.push_back(c);
    }
  }
  if (stalled.empty()) {
    EndProbe();
    return;
  }
  switch (probe_state_) {
    case Probe::kNone:
      return StartProbe(now);
    case Probe::kBusy:
      // Busy with someone else's script: the requests get Redis's -BUSY once it answers again.
      spared_ms_ = now;
      EndProbe();
      return;
    case Probe::kWaiting:
      if (now - probe_started_ms_ <= timeout_ms) return;
      break;
    case Probe::kNotBusy:
      break;
  }
  EndProbe();
  for (UpstreamConn* c : stalled) c->Close("command timeout");
}

void UpstreamPool::StartProbe(uint64_t now) {
  probe_state_ = Probe::kWaiting;
  probe_started_ms_ = now;
  probe_ = new UpstreamConn(this, UpstreamConn::Kind::kProbe);
  auto* p = new Pending;
  p->hook = Hook::kProbe;
  probe_->Send(std::string_view("*1\r\n$4\r\nPING\r\n"), p);
}

void UpstreamPool::OnProbeReply(std::string_view frame) {
  // -BUSY: a script, function or module command holds the server (and it answers the stalled
  // requests too now). -LOADING: it is loading its data. Anything else: the server answers, so
  // what waits on the stalled connection is stuck there (a write held by a pause that did not
  // go through this proxy, or a broken connection).
  const bool busy = frame.rfind("-BUSY", 0) == 0 || frame.rfind("-LOADING", 0) == 0;
  if (busy && probe_state_ == Probe::kWaiting) {
    LOG_VERBOSE_F({{"upstream", address_.text}},
                  "upstream %s is busy (%.*s): waiting connections are not stalled",
                  address_.text.c_str(), static_cast<int>(std::min<size_t>(frame.size(), 80) - 2),
                  frame.data());
  }
  if (probe_state_ == Probe::kWaiting) probe_state_ = busy ? Probe::kBusy : Probe::kNotBusy;
}

void UpstreamPool::EndProbe() {
  probe_state_ = Probe::kNone;
  if (probe_ == nullptr) return;
  UpstreamConn* probe = probe_;
  probe_ = nullptr;
  probe->Close("probe done");
}

std::string UpstreamPool::unavailable_reason() const {
  for (const auto& slot : slots_) {
    if (!slot->last_error.empty()) return slot->last_error;
  }
  return "not connected";
}

size_t UpstreamPool::shared_count() const {
  size_t n = 0;
  if (flavor_slots_.empty()) return 0;
  for (const Slot* slot : flavor_slots_[0]) n += slot->conn != nullptr && slot->conn->ready();
  return n;
}

size_t UpstreamPool::answered_count() const {
  size_t n = 0;
  if (flavor_slots_.empty()) return 0;
  for (const Slot* slot : flavor_slots_[0]) {
    n += slot->conn != nullptr && slot->conn->ready() && slot->conn->answered();
  }
  return n;
}

void UpstreamPool::CloseAll() {
  closing_ = true;
  EndProbe();
  for (auto& slot : slots_) {
    uv_timer_stop(&slot->timer);
    if (!uv_is_closing(reinterpret_cast<uv_handle_t*>(&slot->timer))) {
      uv_close(reinterpret_cast<uv_handle_t*>(&slot->timer), nullptr);
    }
    if (slot->conn != nullptr) slot->conn->Close("proxy shutting down");
  }
  std::vector<UpstreamConn*> idle;
  idle.swap(idle_pinned_);
  for (UpstreamConn* c : idle) c->Close("proxy shutting down");
}

}  // namespace bloomproxy::proxy
