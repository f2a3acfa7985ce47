// Connections to the upstream Redis and the pool that owns them.
//
//   clients ──┐                     ┌── shared conn 0 ──┐
//   clients ──┼── (each client is ──┤                   ├── upstream Redis
//   clients ──┘    assigned one)    └── shared conn 1 ──┤
//   client in MULTI/SUBSCRIBE/BLPOP ─── pinned conn ────┘  (taken from / returned to the pool)
//
// A shared connection carries the pipelined commands of many clients; its replies come back in
// the order the commands were written, so a FIFO of reply slots (Pending) matches each reply to
// its client. A pinned connection serves one client while that client holds connection state
// or runs a command that holds its connection (BLPOP, a script); a tunnel is a pinned
// connection whose bytes pass unframed (a replication link). Which command takes which kind of
// connection: protocol/command_routes.inc and docs/connections.md.
#pragma once

#include <uv.h>

#include <cstdint>
#include <deque>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/encoder.h"
#include "protocol/reply_framer.h"
#include "proxy/client/buffer.h"
#include "proxy/client/output.h"
#include "proxy/server/tls.h"

namespace bloomproxy::proxy {

class Client;
class Server;
class UpstreamPool;
struct Pending;

// Where the upstream lives, resolved once at start-up.
struct UpstreamAddress {
  bool is_unix = false;
  std::string path;  // unix socket path
  sockaddr_storage addr{};
  std::string text;  // as configured, for messages
};

// Parses "HOST:PORT", "[V6]:PORT" or "unix:/path" and resolves the host. False + *error on
// failure.
bool ResolveUpstream(const std::string& spec, UpstreamAddress* out, std::string* error);

// What outlives a connection, for whoever holds on to it across loop turns (a batch waiting for
// its turn to end, a plan between two steps): whether it closed, and the error reply its slots got
// then. A closed connection is freed once libuv lets go of its handles, so its pointer must not
// be followed after `closed`.
struct ConnFate {
  bool closed = false;
  std::string reply;  // the error reply of UpstreamConn::Close
};

// How a connection is opened: the protocol it speaks (HELLO 3 ends its handshake) and the user
// it logs in as. Flavor 0 is RESP2 with the proxy's own upstream-user/upstream-password; a
// pool keeps shared and idle pinned connections per flavor, so that clients of one flavor
// share connections (Server::Flavor numbers them).
struct ConnFlavor {
  protocol::Resp resp = protocol::Resp::k2;
  // auth-mode upstream: logs in as `user` (AUTH user password); otherwise with the proxy's own
  // credentials.
  bool client_user = false;
  std::string user, password;
};

class UpstreamConn;

// A connection held across loop turns: the pointer, and its fate to check before following it.
struct UpstreamRef {
  UpstreamRef() = default;
  explicit UpstreamRef(UpstreamConn* c);
  UpstreamConn* conn = nullptr;
  std::shared_ptr<const ConnFate> fate;
  // Still open (false once closed, and so before it may be freed).
  bool open() const { return conn != nullptr && !fate->closed; }
};

class UpstreamConn {
 public:
  enum class State { kConnecting, kReady, kClosed };
  enum class Kind {
    kShared,      // multiplexed, owned by a pool slot
    kPinned,      // one client's (pool of idle ones)
    kProbe,       // the pool's liveness check: PING on a fresh connection (CheckTimeouts)
    kBackground,  // the proxy's own work (a sweep pass), never pooled
  };

  // Starts connecting at once, to `pool`'s address, as Server::flavor(flavor).
  UpstreamConn(UpstreamPool* pool, Kind kind, uint16_t flavor = 0);
  ~UpstreamConn();
  UpstreamConn(const UpstreamConn&) = delete;
  UpstreamConn& operator=(const UpstreamConn&) = delete;

  // Queues a request whose reply goes to `slot` (may be null only for internal requests that
  // use a Pending without client). Requests may be queued while connecting; they are written
  // once connected. The caller must check usable() first.
  void Send(std::string_view request_bytes, Pending* slot);
  // The same, taking the bytes over (no copy when nothing else is queued).
  void Send(std::string&& request_bytes, Pending* slot);

  // Closes the connection; every slot still waiting gets an error reply. Safe to call twice.
  void Close(const std::string& reason);
  // Closes it once nothing is in flight any more (at once when nothing is).
  void CloseWhenIdle(const std::string& reason);
  // A step of a plan (or its trailing requests) is in flight: closing now could leave a filter
  // half-written.
  bool plan_in_flight() const;

  // Writes what is queued (called once per loop turn by the server).
  void Flush();

  bool usable() const { return state_ != State::kClosed; }
  bool ready() const { return state_ == State::kReady; }
  // Whether the upstream has answered on this connection (a reply to its handshake or to any
  // request): connected is not enough for readiness.
  bool answered() const { return answered_; }
  bool shared() const { return kind_ == Kind::kShared; }
  Kind kind() const { return kind_; }
  uint16_t flavor() const { return flavor_; }

  // Makes this (pinned) connection a tunnel: once the replies already owed are in, every byte
  // the upstream sends goes to the owner unframed (Client::OnTunnelData), and the connection is
  // never reused. Requests are still queued with Send(bytes, nullptr).
  void StartTunnel();
  bool tunnel() const { return tunnel_; }
  // Stops and restarts reading (a tunnel whose client does not keep up).
  void PauseReading();
  void ResumeReading();
  // Request bytes not yet written to the socket.
  size_t pending_output() const { return out_.size(); }
  // Gives back its buffers while nothing is pending (an idle pooled connection).
  void ReleaseIdleMemory() {
    if (in_.empty()) in_.ShrinkIfIdle(0);
    out_.ReleaseIfIdle();
  }

  // The upstream's name in OwnConnections: its resolved address ("127.0.0.1:6379").
  std::string upstream_key() const;
  // Records in OwnConnections a command the proxy sends for itself on a connection that carries
  // clients' commands (the PING before WAIT, CLUSTER SLOTS): clients' MONITORs do not show it.
  void NoteOwnCommand(std::initializer_list<std::string_view> args);

  // This end's address as the upstream's CLIENT LIST shows it ("addr=" of this connection):
  // "127.0.0.1:40000", "[::1]:40000"; empty for a Unix socket or before the connection is made.
  const std::string& local_address() const { return local_address_; }
  size_t in_flight() const { return inflight_.size(); }
  const std::string& last_error() const { return last_error_; }
  Server* server() const { return server_; }
  UpstreamPool* pool() const { return pool_; }
  const UpstreamAddress& address() const;

  // The client that has this connection pinned, or null.
  Client* owner() const { return owner_; }
  // Gives the connection the name of the client holding it (CLIENT SETNAME, whose reply is
  // dropped), so that the upstream's SLOWLOG names the client for what runs on its own
  // connection. Nothing is sent when the upstream already knows it by that name, nor to a
  // sharding proxy.
  void SyncName(std::string_view name);
  // Also tells the PinRegistry which client holds this connection.
  void set_owner(Client* c);

  // Set when a command may have left state on the connection that the proxy did not track
  // (AUTH or CLIENT SETNAME inside MULTI, MONITOR, ...): such a connection is closed instead of
  // being returned to the pool.
  bool dirty() const { return dirty_; }
  void mark_dirty() { dirty_ = true; }

  // Identifier in logs.
  uint64_t id() const { return id_; }
  // Shared with the UpstreamRefs held on this connection.
  const std::shared_ptr<ConnFate>& fate() const { return fate_; }

 private:
  // The upstream's CLIENT ID of this connection, published with its owner in the PinRegistry
  // (CLIENT UNBLOCK and CLIENT TRACKING REDIRECT name connections by it). Over TCP it is
  // learned only when needed, from CLIENT LIST (an admin command, which MONITOR does not show:
  // proxy/upstream/upstream_id_plan.h); over a Unix socket, where CLIENT LIST cannot tell
  // connections apart, a pinned connection asks CLIENT ID when it opens.
  void set_redis_client_id(int64_t id);
  static void OnConnect(uv_connect_t* req, int status);
  static void OnAlloc(uv_handle_t* h, size_t suggested, uv_buf_t* buf);
  static void OnRead(uv_stream_t* s, ssize_t nread, const uv_buf_t* buf);
  static void OnWrite(uv_write_t* req, int status);
  static void OnClose(uv_handle_t* h);
  static void OnConnectTimeout(uv_timer_t* t);

  void StartHandshake();
  // Enters the connection in OwnConnections (once connected over TCP).
  void Register();
  // A request was appended to the output: `slot` (if any) waits for its reply.
  void Queued(Pending* slot);
  // Publishes the owner's entry in the PinRegistry (address and id as known now).
  void PublishOwner();
  void OnFrame(std::string_view frame);
  // A reply to a request the proxy made for itself (handshake, probe), or to a client that left.
  void OnInternalReply(Pending* slot, std::string_view frame);
  // Whether its handshake logs in with no password (the upstream's default user).
  bool LogsInWithoutPassword() const;
  void FailAll(const std::string& reply);

  Server* server_;
  UpstreamPool* pool_;
  const Kind kind_;
  const uint16_t flavor_;
  const uint64_t id_;
  State state_ = State::kConnecting;
  Client* owner_ = nullptr;
  bool dirty_ = false;
  bool ever_ready_ = false;  // connected at least once (restarts the pool's backoff)
  bool answered_ = false;    // a reply came on this connection
  bool tunnel_ = false;
  bool reading_ = false;
  bool read_paused_ = false;
  bool in_use_ = false;          // counted in the pool's pinned connections in use
  std::string close_when_idle_;  // CloseWhenIdle's reason, until it closes
  int64_t redis_client_id_ = 0;
  std::string local_address_;
  uint64_t own_id_ = 0;        // in OwnConnections, once registered
  std::string upstream_name_;  // the name the upstream knows this connection by (SyncName)
  bool flush_queued_ = false;
  int open_handles_ = 0;
  std::string last_error_;
  std::shared_ptr<ConnFate> fate_ = std::make_shared<ConnFate>();

  union {
    uv_tcp_t tcp;
    uv_pipe_t pipe;
    uv_handle_t handle;
    uv_stream_t stream;
  } sock_;
  std::unique_ptr<TlsSession> tls_;  // upstream-tls
  uv_timer_t timer_;
  uv_connect_t connect_req_;
  uv_write_t write_req_;

  Buffer in_;
  Output out_;
  protocol::ReplyFramer framer_;
  std::deque<Pending*> inflight_;

  friend class Server;
  friend class UpstreamPool;
};

// The shared connections and the idle pinned ones. Shared connections that fail are replaced
// after a capped exponential backoff; while a slot is down, commands for it fail at once.
class UpstreamPool {
 public:
  // A pool for the Redis at `address` (one per cluster master; one in standalone mode).
  UpstreamPool(Server* server, UpstreamAddress address);
  ~UpstreamPool();

  Server* server() const { return server_; }
  const UpstreamAddress& address() const { return address_; }

  void Start();

  // A usable shared connection of `flavor`, preferring `hint` (the client's slot) so one
  // client's commands stay on one connection and keep their order. Null when the upstream is
  // unavailable. A flavor's first use opens its shared connections.
  UpstreamConn* Shared(size_t* hint, uint16_t flavor = 0);
  size_t NextSlot() { return next_slot_++ % flavor_slots_[0].size(); }

  // A connection of `flavor` for one client's exclusive use (idle one from the pool, or a new
  // one).
  UpstreamConn* AcquirePinned(Client* owner, uint16_t flavor = 0);
  // A new connection for the proxy's own background work (Kind::kBackground), to Close when done.
  UpstreamConn* OpenBackground();
  // Returns a pinned connection: kept for reuse when clean and idle, closed otherwise.
  void ReleasePinned(UpstreamConn* conn);

  // Called by a connection when it closes (any reason), and by a shared one once it is up.
  void OnConnClosed(UpstreamConn* conn);
  void OnSharedReady(UpstreamConn* conn);
  // False when the upstream is known to be down: no shared connection is up, and the last
  // attempt of one failed. (Before the first attempt ends it counts as reachable.)
  bool Reachable() const;

  // The stall check, every upstream-timeout-ms / 10. A shared connection whose oldest request
  // has waited `timeout_ms` is closed (its requests get error replies) and replaced, unless the
  // upstream is busy on purpose: a stalling command or a pause sent through the proxy
  // (UpstreamActivity), or a script run by someone else, which a PING on a fresh connection
  // finds out (Redis answers -BUSY once the script has run past busy-reply-threshold).
  void CheckTimeouts(uint64_t now, uint64_t timeout_ms);
  // The probe's reply.
  void OnProbeReply(std::string_view frame);

  // Why the upstream is unavailable, for error replies.
  std::string unavailable_reason() const;

  void CloseAll();

  size_t shared_count() const;
  // Shared connections the upstream has answered on (the admin port's /readyz).
  size_t answered_count() const;
  size_t pinned_count() const { return pinned_in_use_; }
  size_t idle_pinned_count() const { return idle_pinned_.size(); }

 private:
  struct Slot {
    UpstreamConn* conn = nullptr;
    uint16_t flavor = 0;
    uv_timer_t timer;
    int backoff_ms = 0;
    uint64_t last_attempt_ms = 0;  // loop time of the last connection attempt
    std::string last_error;
    UpstreamPool* pool = nullptr;
  };
  static void OnReconnect(uv_timer_t* t);
  void Connect(Slot* slot);
  // Opens the shared connections of a flavor (flavor 0's at Start).
  void AddSlots(uint16_t flavor);
  // A command found no usable connection: slots waiting out their backoff try again now, unless
  // they tried in the last kDemandRetryMs.
  void ReconnectOnDemand();
  void StartProbe(uint64_t now);
  void EndProbe();

  Server* server_;
  const UpstreamAddress address_;
  std::vector<std::unique_ptr<Slot>> slots_;      // every flavor's
  std::vector<std::vector<Slot*>> flavor_slots_;  // by flavor; empty until first used
  std::vector<UpstreamConn*> idle_pinned_;
  size_t pinned_in_use_ = 0;
  size_t next_slot_ = 0;
  bool closing_ = false;
  // The stall check's probe.
  enum class Probe { kNone, kWaiting, kBusy, kNotBusy };
  UpstreamConn* probe_ = nullptr;
  Probe probe_state_ = Probe::kNone;
  // Failed connection attempts are logged when their reason changes, and then at most once
  // per kFailureLogMs (a TLS upstream that does not verify would otherwise log every retry).
  static constexpr uint64_t kFailureLogMs = 10000;
  std::string logged_failure_;
  uint64_t logged_failure_ms_ = 0;
  void LogFailedAttempt(const std::string& reason);
  uint64_t probe_started_ms_ = 0;
  uint64_t spared_ms_ = 0;  // requests sent before this waited while the upstream was busy
};

}  // namespace bloomproxy::proxy
