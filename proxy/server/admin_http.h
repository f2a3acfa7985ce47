// The admin port (admin-port, admin-bind): GET or HEAD of /metrics (Prometheus text 0.0.4),
// /healthz and /readyz, for Kubernetes probes and scrapers. It runs on the first event loop,
// never blocks it, and is a small HTTP/1.x responder of our own: one request per connection,
// answered with `Connection: close`. Debian packages no HTTP parser that fits here (llhttp is
// not packaged; libhttp-parser is deprecated upstream, and the embeddable servers — libmicrohttpd,
// civetweb — bring their own threads or loop), and three fixed GET paths need only the request
// line. See docs/operations.md.
//
//   accept ─ (more than kMaxConnections open: 503, close)
//     └ read ≤ kMaxHeadBytes until the blank line ─ (larger: 431; malformed: 400)
//         └ route: method (405) ─ path (404) ─ 200 / 503
//             └ write, then FIN; the peer's EOF (or kTimeoutMs after accept) closes it
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace bloomproxy::proxy {

class Server;

namespace admin {

inline constexpr size_t kMaxHeadBytes = 8192;  // request line + headers
inline constexpr size_t kMaxConnections = 16;  // open admin connections
inline constexpr uint64_t kTimeoutMs = 5000;   // from accept to the connection's close

enum class HeadStatus {
  kNeedMore,  // no blank line yet, and still within kMaxHeadBytes
  kComplete,  // *head is filled (views into the input)
  kTooLarge,  // no complete head within kMaxHeadBytes: 431
  kBad,       // not an HTTP/1.x request line: 400
};

struct RequestHead {
  std::string_view method;
  std::string_view path;  // without "?query"; the path of an absolute-form target
  std::string_view version;
};

// Parses the request line of the head at the start of `in` (headers are read past: nothing
// here needs them). Pure: no sockets.
HeadStatus ParseRequestHead(std::string_view in, RequestHead* head);

struct Response {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::string extra_headers;  // complete "Name: value\r\n" lines
};

// The bytes of `r` as HTTP/1.1 with Content-Length and `Connection: close`; without the body
// when `head_only` (a HEAD request).
std::string SerializeResponse(const Response& r, bool head_only);

// The answer to a parsed request: /metrics gets `metrics()`, /readyz 200 when `not_ready()`
// is empty, else 503 with it as the body (each called only for its path), /healthz 200.
Response Route(const RequestHead& head, const std::function<std::string()>& not_ready,
               const std::function<std::string()>& metrics);

}  // namespace admin

// The listener and its connections, owned by the first Server and living on its loop.
class AdminServer {
 public:
  explicit AdminServer(Server* server);
  ~AdminServer();
  AdminServer(const AdminServer&) = delete;
  AdminServer& operator=(const AdminServer&) = delete;

  // Listens on admin-bind:admin-port. False (after logging why) when it cannot.
  bool Start();
  // Closes the listener and every connection (their memory goes in the close callbacks, which
  // run before the loop ends). Safe to call twice.
  void Close();

  // The loops whose metrics /metrics adds up (every Server of --threads N). Set once by main
  // after all have started and before any runs; read only on the first loop's thread.
  static void SetLoops(std::vector<Server*> loops);

  // Why the proxy is not ready, or "" when it is (/readyz).
  std::string NotReadyReason() const;
  std::string MetricsText() const;

 private:
  struct Conn;
  static void OnConnection(uv_stream_t* listener, int status);
  static void OnTimer(uv_timer_t* t);
  void Accept();
  void OnRequest(Conn* c);
  void Send(Conn* c, const std::string& bytes);
  void CloseConn(Conn* c);

  Server* server_;
  uv_tcp_t listener_;
  uv_timer_t timer_;
  bool open_ = false;
  uint64_t started_ms_ = 0;
  std::vector<Conn*> conns_;
};

}  // namespace bloomproxy::proxy
