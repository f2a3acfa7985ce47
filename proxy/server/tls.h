// TLS for client and upstream connections: OpenSSL over memory BIOs, so libuv streams stay the
// I/O. A connection with a TlsSession reads ciphertext into the session's buffer, and the
// session turns it into plaintext for the connection's input buffer; replies and requests are
// appended as plaintext and sealed into ciphertext when the socket is flushed
// (proxy/client/output.h). The only file that includes OpenSSL is tls.cc.
//
//   socket ─► ReadBuffer() ─► OnRead(): handshake / SSL_read ─► Buffer (plaintext) ─► parser
//   Output::pending() (plaintext) ─► Seal(): SSL_write ─► ciphertext ─► socket
//
// A TlsContext holds the settings and certificates of one side (what clients of the tls-port
// get; what the proxy presents and trusts upstream). SIGHUP builds new contexts from the files
// (Server::ReloadTls): new connections take them, open ones keep the context they started with.
#pragma once

#include <uv.h>

#include <memory>
#include <string>
#include <vector>

#include "conf/options.h"
#include "proxy/client/buffer.h"

struct ssl_st;
struct ssl_ctx_st;
struct bio_st;

namespace bloomproxy::proxy {

class TlsContext {
 public:
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // The tls-port's side: tls-cert-file, tls-key-file (+ pass), tls-ca-cert-file/dir,
  // tls-auth-clients, tls-protocols, tls-ciphers, tls-ciphersuites,
  // tls-prefer-server-ciphers, tls-session-caching. Null and *error when a file does not load.
  static std::shared_ptr<TlsContext> ForClients(const conf::Options& o, std::string* error);
  // The upstream side: upstream-tls-ca-cert-file/dir (else the system's store), and the
  // client certificate upstream-tls-cert-file / upstream-tls-key-file.
  static std::shared_ptr<TlsContext> ForUpstream(const conf::Options& o, std::string* error);

  ssl_ctx_st* ctx() const { return ctx_; }

 private:
  explicit TlsContext(ssl_ctx_st* ctx) : ctx_(ctx) {}
  ssl_ctx_st* ctx_;
};

class TlsSession {
 public:
  // Accepting (a client of the tls-port) or connecting (upstream, verifying `peer_name`: a
  // DNS name, or an IP literal checked against the certificate's IP addresses).
  static std::unique_ptr<TlsSession> Accepting(std::shared_ptr<TlsContext> ctx);
  static std::unique_ptr<TlsSession> Connecting(std::shared_ptr<TlsContext> ctx,
                                                const std::string& peer_name);
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  // Where the socket's next read goes.
  uv_buf_t ReadBuffer();
  // Takes `n` bytes read into ReadBuffer(): advances the handshake, appends the plaintext to
  // *plain and what must be sent back (handshake messages, alerts) to *cipher. False when the
  // session failed (error() says why); closed() when the peer ended it.
  bool OnRead(size_t n, Buffer* plain, std::string* cipher);
  // Connecting side: the first handshake message, appended to *cipher.
  bool Start(std::string* cipher);
  // Once the handshake is done, encrypts *plain (then emptied) into *cipher; before, leaves it.
  bool Seal(std::string* plain, std::string* cipher);

  bool established() const { return established_; }
  bool closed() const { return closed_; }
  const std::string& error() const { return error_; }

 private:
  TlsSession(std::shared_ptr<TlsContext> ctx, bool accepting);
  bool Handshake();
  bool Fail(int ret, const char* what);
  void Drain(std::string* cipher);

  std::shared_ptr<TlsContext> ctx_;
  ssl_st* ssl_ = nullptr;
  bio_st* in_ = nullptr;   // ciphertext from the socket (read by OpenSSL)
  bio_st* out_ = nullptr;  // ciphertext for the socket (written by OpenSSL)
  std::vector<char> read_buf_;
  bool established_ = false;
  bool closed_ = false;
  std::string error_;
};

}  // namespace bloomproxy::proxy
