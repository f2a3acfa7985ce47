#include "proxy/sketch/sweep.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <utility>

#include "filters/bloom/bf_meta.h"
#include "protocol/encoder.h"
#include "protocol/key_slot.h"
#include "proxy/client/client.h"
#include "proxy/server/log.h"
#include "proxy/server/server.h"
#include "proxy/upstream/cluster_router.h"

namespace bloomproxy::proxy {
namespace {

constexpr uint32_t kLockPart = UINT32_MAX;
// A pass sends at most one SCAN per master per pace tick.
constexpr uint64_t kPaceMs = 100;
constexpr uint64_t kTicksPerSecond = 1000 / kPaceMs;
// Keys of one script call: a short script, so the upstream is not held for long.
constexpr size_t kMaxEntriesPerCall = 256;
// Keys remembered as seen unowned: beyond this the others are noted on a later pass.
constexpr size_t kMaxSeen = 100000;

std::string Command(std::vector<std::string_view> args) {
  std::string out;
  protocol::AppendCommand(&out, args);
  return out;
}

}  // namespace

Sweep::Sweep(Server* server)
    : server_(server),
      interval_ms_(static_cast<uint64_t>(server->options().sweep_interval) * 1000),
      grace_ms_(static_cast<uint64_t>(server->options().sweep_grace) * 1000),
      count_(std::max<uint64_t>(
          1, static_cast<uint64_t>(server->options().sweep_rate) / kTicksPerSecond)),
      owner_(filters::NewId()) {}

Sweep::~Sweep() = default;

bool Sweep::Wanted(const Server& server) {
  return server.options().sweep_interval > 0 && !server.sharding_proxy() && server.emulated() != 0;
}

void Sweep::Start() {
  uv_timer_init(server_->loop(), &tick_);
  uv_timer_init(server_->loop(), &pace_);
  tick_.data = pace_.data = this;
  started_ = true;
  uv_timer_start(&tick_, OnTick, interval_ms_, interval_ms_);
}

void Sweep::Stop() {
  if (stopped_) return;
  stopped_ = true;
  if (started_) {
    uv_close(reinterpret_cast<uv_handle_t*>(&tick_), nullptr);
    uv_close(reinterpret_cast<uv_handle_t*>(&pace_), nullptr);
  }
  // Closing answers every request still waiting on the connection with an error, at once.
  for (Node& node : nodes_) {
    if (node.conn.open()) node.conn.conn->Close("proxy shutting down");
  }
}

void Sweep::OnTick(uv_timer_t* t) { static_cast<Sweep*>(t->data)->SendLock(); }

void Sweep::OnPace(uv_timer_t* t) {
  auto* self = static_cast<Sweep*>(t->data);
  for (size_t i = 0; i < self->nodes_.size(); ++i) {
    if (self->nodes_[i].ready) self->Scan(i);
  }
}

// The holder renews the lock on every tick, also while its pass runs: it keeps sweeping (and
// keeps what it saw) as long as it lives, and another proxy takes over three intervals after
// it stops.
void Sweep::SendLock() {
  if (lock_pending_ || stopped_) return;
  lock_pending_ = true;
  auto* p = new Pending;
  p->sink = this;
  p->part = kLockPart;
  filters::AppendSweepLock(&p->request, owner_, 3 * interval_ms_);
  if (server_->router().cluster()) p->cluster_slot = protocol::KeySlot(filters::kSweepLockKey);
  server_->router().SendOrHold(p);
}

void Sweep::OnLock(std::string_view frame) {
  lock_pending_ = false;
  if (stopped_) return;
  if (frame != ":1\r\n") {
    if (!frame.empty() && frame[0] == '-') {
      LOG_VERBOSE("sweep: no pass (lock: %.*s)", static_cast<int>(frame.size() - 2), frame.data());
    }
    return;
  }
  if (!running_) StartPass();
}

void Sweep::StartPass() {
  running_ = true;
  ++pass_;
  pass_started_ms_ = server_->NowMs();
  pass_checked_ = pass_deleted_ = 0;
  nodes_.clear();
  for (UpstreamPool* pool : server_->router().masters()) {
    nodes_.emplace_back();
    nodes_.back().pool = pool;
  }
  uv_timer_start(&pace_, OnPace, kPaceMs, kPaceMs);
  for (size_t i = 0; i < nodes_.size(); ++i) StartNode(i);
  MaybeEndPass();
}

// A new connection of its own: SELECT and CLIENT NO-TOUCH must not reach anyone else's
// commands, and clients' MONITORs do not show a background connection
// (proxy/client/monitor_filter.h).
void Sweep::StartNode(size_t i) {
  Node& node = nodes_[i];
  if (!node.pool->Reachable()) return Fail(i, "unreachable");
  UpstreamConn* conn = node.pool->OpenBackground();
  node.conn = UpstreamRef(conn);
  // Reading an owner's hash would move its LRU/LFU clock; Redis 7.2 has a switch against it.
  Send(i, Command({"CLIENT", "NO-TOUCH", "ON"}), Expect::kIgnore);
  std::string load;
  filters::AppendSweepLoad(&load);
  Send(i, load, Expect::kLoad);
  Send(i, Command({"INFO", "keyspace"}), Expect::kKeyspace);
}

void Sweep::Send(size_t i, const std::string& request, Expect expect, size_t group) {
  Node& node = nodes_[i];
  auto* p = new Pending;
  p->sink = this;
  p->part = static_cast<uint32_t>(i);
  node.expect.emplace_back(expect, group);
  node.conn.conn->Send(std::string_view(request), p);
}

void Sweep::OnPart(uint32_t part, std::string_view frame) {
  if (part == kLockPart) return OnLock(frame);
  if (part >= nodes_.size() || nodes_[part].expect.empty()) return;
  Node& node = nodes_[part];
  const auto [expect, group] = node.expect.front();
  node.expect.pop_front();
  if (stopped_ || node.failed || node.done) return MaybeEndPass();
  OnReply(part, expect, group, frame);
}

void Sweep::OnReply(size_t i, Expect expect, size_t group, std::string_view frame) {
  Node& node = nodes_[i];
  const bool error = !frame.empty() && frame[0] == '-';
  switch (expect) {
    case Expect::kIgnore:
      return;
    case Expect::kLoad: {
      protocol::ReplyPtr r = server_->decoder().Decode(frame);
      if (error || !r || r->type != REDIS_REPLY_STRING) return Fail(i, frame);
      node.sha.assign(r->str, r->len);
      return;
    }
    case Expect::kKeyspace: {
      protocol::ReplyPtr r = server_->decoder().Decode(frame);
      if (error || !r || r->type != REDIS_REPLY_STRING) return Fail(i, frame);
      node.dbs = filters::KeyspaceDatabases(std::string_view(r->str, r->len));
      node.db_index = 0;
      return NextDatabase(i);
    }
    case Expect::kSelect:
      if (error) return Fail(i, frame);
      return;
    case Expect::kScan:
      return OnScan(i, frame);
    case Expect::kCheck:
      return OnCheck(i, group, frame);
  }
}

void Sweep::NextDatabase(size_t i) {
  Node& node = nodes_[i];
  if (node.db_index >= node.dbs.size()) return FinishNode(i);
  if (!node.conn.open()) return Fail(i, "connection closed");
  const std::string db = std::to_string(node.dbs[node.db_index]);
  Send(i, Command({"SELECT", db}), Expect::kSelect);
  node.cursor = "0";
  Scan(i);
}

void Sweep::Scan(size_t i) {
  Node& node = nodes_[i];
  node.ready = false;
  if (!node.conn.open()) return Fail(i, "connection closed");
  const std::string count = std::to_string(count_);
  Send(i, Command({"SCAN", node.cursor, "MATCH", filters::kSweepMatch, "COUNT", count}),
       Expect::kScan);
}

std::string Sweep::SeenKey(const Node& node, std::string_view key) const {
  std::string out = std::to_string(node.dbs[node.db_index]);
  out.push_back('\n');
  out.append(key);
  return out;
}

// The internal keys of one SCAN reply, grouped into script calls: by slot on a cluster (a
// script's keys must share one), in one group otherwise.
void Sweep::OnScan(size_t i, std::string_view frame) {
  Node& node = nodes_[i];
  protocol::ReplyPtr r = server_->decoder().Decode(frame);
  std::vector<std::string_view> keys;
  if (!filters::ParseScanReply(r.get(), &node.cursor, &keys)) return Fail(i, frame);
  node.keys.clear();
  node.parsed.clear();
  node.groups.clear();
  filters::SweepKey parsed;
  for (std::string_view key : keys) {
    if (!filters::ParseSweepKey(key, &parsed)) continue;
    node.keys.emplace_back(key);
    node.parsed.push_back(std::move(parsed));
  }
  const bool cluster = server_->router().cluster();
  std::map<int, size_t> group_of_slot;
  for (size_t k = 0; k < node.keys.size(); ++k) {
    const int slot = cluster ? protocol::KeySlot(node.keys[k]) : 0;
    auto it = group_of_slot.find(slot);
    if (it == group_of_slot.end() || node.groups[it->second].size() >= kMaxEntriesPerCall) {
      group_of_slot[slot] = node.groups.size();
      node.groups.emplace_back();
      it = group_of_slot.find(slot);
    }
    node.groups[it->second].push_back(k);
  }
  const uint64_t now = server_->NowMs();
  node.groups_left = node.groups.size();
  for (size_t g = 0; g < node.groups.size(); ++g) {
    std::vector<filters::SweepEntry> entries;
    for (size_t k : node.groups[g]) {
      auto seen = seen_.find(SeenKey(node, node.keys[k]));
      const bool remove = seen != seen_.end() && now - seen->second.first_ms >= grace_ms_;
      entries.push_back({node.keys[k], &node.parsed[k], remove});
    }
    std::string request;
    filters::AppendSweepRequest(&request, node.sha, entries);
    Send(i, request, Expect::kCheck, g);
  }
  pass_checked_ += node.keys.size();
  if (node.groups.empty()) BatchDone(i);
}

void Sweep::OnCheck(size_t i, size_t group, std::string_view frame) {
  Node& node = nodes_[i];
  const std::vector<size_t>& entries = node.groups[group];
  protocol::ReplyPtr r = server_->decoder().Decode(frame);
  std::vector<filters::SweepVerdict> verdicts;
  // An error (the slot moved, the script cache was flushed) skips these keys until next pass.
  if (filters::ParseSweepReply(r.get(), entries.size(), &verdicts)) {
    const uint64_t now = server_->NowMs();
    for (size_t e = 0; e < entries.size(); ++e) {
      std::string key = SeenKey(node, node.keys[entries[e]]);
      switch (verdicts[e]) {
        case filters::SweepVerdict::kOrphan: {
          auto it = seen_.find(key);
          if (it != seen_.end()) {
            it->second.pass = pass_;
          } else if (seen_.size() < kMaxSeen) {
            seen_.emplace(std::move(key), Seen{now, pass_});
          }
          break;
        }
        case filters::SweepVerdict::kDeleted:
          ++pass_deleted_;
          seen_.erase(key);
          break;
        case filters::SweepVerdict::kLive:
        case filters::SweepVerdict::kGone:
          seen_.erase(key);
          break;
      }
    }
  } else {
    LOG_VERBOSE_F({{"upstream", node.pool->address().text}}, "sweep: check failed: %.*s",
                  static_cast<int>(std::min<size_t>(frame.size(), 200)), frame.data());
  }
  if (--node.groups_left == 0) BatchDone(i);
}

void Sweep::BatchDone(size_t i) {
  Node& node = nodes_[i];
  if (node.cursor != "0") {
    node.ready = true;  // paced: OnPace sends the next SCAN
    return;
  }
  ++node.db_index;
  NextDatabase(i);
}

void Sweep::Fail(size_t i, std::string_view why) {
  Node& node = nodes_[i];
  if (why.size() >= 2 && why.substr(why.size() - 2) == "\r\n") why.remove_suffix(2);
  // An upstream that is down is reported by the pools already.
  const auto level = why == "unreachable" ? conf::LogLevel::kVerbose : conf::LogLevel::kWarning;
  BP_LOG_F(level, {{"upstream", node.pool->address().text}}, "sweep of %s stopped: %.*s",
           node.pool->address().text.c_str(), static_cast<int>(std::min<size_t>(why.size(), 200)),
           why.data());
  node.failed = true;
  FinishNode(i);
}

void Sweep::FinishNode(size_t i) {
  Node& node = nodes_[i];
  node.done = true;
  node.ready = false;
  if (node.conn.open()) {
    UpstreamConn* conn = node.conn.conn;
    node.conn = UpstreamRef();
    // What it still owes is answered with errors, and ignored.
    conn->Close("sweep pass done");
  }
  MaybeEndPass();
}

void Sweep::MaybeEndPass() {
  if (!running_) return;
  bool failed = false;
  for (const Node& node : nodes_) {
    if (!node.done || !node.expect.empty()) return;
    failed = failed || node.failed;
  }
  running_ = false;
  if (!stopped_) uv_timer_stop(&pace_);
  // A key not seen unowned on this pass is no longer tracked (it went, or found an owner);
  // after a master failed, the keys it did not report are kept for the next pass.
  if (!failed) {
    for (auto it = seen_.begin(); it != seen_.end();) {
      it = it->second.pass < pass_ ? seen_.erase(it) : std::next(it);
    }
  }
  ++stats_.passes;
  stats_.checked += pass_checked_;
  stats_.deleted += pass_deleted_;
  const uint64_t ms = server_->NowMs() - pass_started_ms_;
  if (pass_deleted_ > 0) {
    LOG_NOTICE(
        "sweep pass %llu: %llu internal keys checked, %llu orphans deleted, %zu pending, "
        "%llu ms",
        static_cast<unsigned long long>(pass_), static_cast<unsigned long long>(pass_checked_),
        static_cast<unsigned long long>(pass_deleted_), seen_.size(),
        static_cast<unsigned long long>(ms));
  } else {
    LOG_VERBOSE(
        "sweep pass %llu: %llu internal keys checked, 0 orphans deleted, %zu pending, "
        "%llu ms",
        static_cast<unsigned long long>(pass_), static_cast<unsigned long long>(pass_checked_),
        seen_.size(), static_cast<unsigned long long>(ms));
  }
}

}  // namespace bloomproxy::proxy
