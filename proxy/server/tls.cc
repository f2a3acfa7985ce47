#include "proxy/server/tls.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <strings.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <sstream>
#include <utility>

namespace bloomproxy::proxy {
namespace {

constexpr size_t kReadChunk = 16 * 1024;  // one TLS record

// The text of the oldest error in OpenSSL's queue (empty if none); the queue is cleared.
std::string OpenSslError() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return {};
  const char* reason = ERR_reason_error_string(e);
  if (reason != nullptr) return reason;
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  return buf;
}

bool Failed(SSL_CTX* ctx, const std::string& what, std::string* error) {
  const std::string why = OpenSslError();
  *error = what + (why.empty() ? "" : ": " + why);
  SSL_CTX_free(ctx);
  return false;
}

// tls-protocols ("TLSv1.2 TLSv1.3", any case; conf/ checked the words): the versions not
// listed are switched off.
void SetProtocols(SSL_CTX* ctx, const std::string& list) {
  if (list.empty()) {
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    return;
  }
  bool v10 = false, v11 = false, v12 = false, v13 = false;
  std::istringstream words(list);
  for (std::string w; words >> w;) {
    v10 |= strcasecmp(w.c_str(), "TLSv1") == 0;
    v11 |= strcasecmp(w.c_str(), "TLSv1.1") == 0;
    v12 |= strcasecmp(w.c_str(), "TLSv1.2") == 0;
    v13 |= strcasecmp(w.c_str(), "TLSv1.3") == 0;
  }
  if (v10 || v11) SSL_CTX_set_min_proto_version(ctx, 0);
  SSL_CTX_set_options(ctx, SSL_OP_NO_SSLv2 | SSL_OP_NO_SSLv3 | (v10 ? 0 : SSL_OP_NO_TLSv1) |
                               (v11 ? 0 : SSL_OP_NO_TLSv1_1) | (v12 ? 0 : SSL_OP_NO_TLSv1_2) |
                               (v13 ? 0 : SSL_OP_NO_TLSv1_3));
}

int PassphraseCallback(char* buf, int size, int, void* userdata) {
  const auto* pass = static_cast<const std::string*>(userdata);
  const int n = static_cast<int>(std::min<size_t>(pass->size(), static_cast<size_t>(size)));
  std::memcpy(buf, pass->data(), static_cast<size_t>(n));
  return n;
}

// The certificate chain and key a side presents.
bool LoadIdentity(SSL_CTX* ctx, const std::string& cert, const std::string& key,
                  const std::string& pass, std::string* error) {
  if (SSL_CTX_use_certificate_chain_file(ctx, cert.c_str()) != 1) {
    *error = "cannot load certificate " + cert + ": " + OpenSslError();
    return false;
  }
  SSL_CTX_set_default_passwd_cb(ctx, PassphraseCallback);
  SSL_CTX_set_default_passwd_cb_userdata(ctx, const_cast<std::string*>(&pass));
  const bool loaded = SSL_CTX_use_PrivateKey_file(ctx, key.c_str(), SSL_FILETYPE_PEM) == 1;
  SSL_CTX_set_default_passwd_cb(ctx, nullptr);
  SSL_CTX_set_default_passwd_cb_userdata(ctx, nullptr);
  if (!loaded) {
    *error = "cannot load private key " + key + ": " + OpenSslError();
    return false;
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    *error = "private key " + key + " does not match certificate " + cert;
    ERR_clear_error();
    return false;
  }
  return true;
}

bool LoadCa(SSL_CTX* ctx, const std::string& file, const std::string& dir, std::string* error) {
  if (SSL_CTX_load_verify_locations(ctx, file.empty() ? nullptr : file.c_str(),
                                    dir.empty() ? nullptr : dir.c_str()) != 1) {
    *error = "cannot load CA certificates " + (file.empty() ? dir : file) + ": " + OpenSslError();
    return false;
  }
  return true;
}

bool IsIpLiteral(const std::string& s) {
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(AF_INET, s.c_str(), buf) == 1 || inet_pton(AF_INET6, s.c_str(), buf) == 1;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// TlsContext

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

std::shared_ptr<TlsContext> TlsContext::ForClients(const conf::Options& o, std::string* error) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) {
    *error = "cannot create a TLS context: " + OpenSslError();
    return nullptr;
  }
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  if (o.tls_prefer_server_ciphers) SSL_CTX_set_options(ctx, SSL_OP_CIPHER_SERVER_PREFERENCE);
  // Idle clients keep no read/write buffers.
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
  SetProtocols(ctx, o.tls_protocols);
  if (o.tls_session_caching) {
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
    static const unsigned char kId[] = "bloomproxy";
    SSL_CTX_set_session_id_context(ctx, kId, sizeof(kId) - 1);
  } else {
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
  }
  if (!LoadIdentity(ctx, o.tls_cert_file, o.tls_key_file, o.tls_key_file_pass, error)) {
    SSL_CTX_free(ctx);
    return nullptr;
  }
  if ((!o.tls_ca_cert_file.empty() || !o.tls_ca_cert_dir.empty()) &&
      !LoadCa(ctx, o.tls_ca_cert_file, o.tls_ca_cert_dir, error)) {
    SSL_CTX_free(ctx);
    return nullptr;
  }
  if (o.tls_auth_clients == "yes") {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  } else if (o.tls_auth_clients == "optional") {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  } else {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  }
  if (!o.tls_ciphers.empty() && SSL_CTX_set_cipher_list(ctx, o.tls_ciphers.c_str()) != 1) {
    Failed(ctx, "tls-ciphers " + o.tls_ciphers, error);
    return nullptr;
  }
  if (!o.tls_ciphersuites.empty() &&
      SSL_CTX_set_ciphersuites(ctx, o.tls_ciphersuites.c_str()) != 1) {
    Failed(ctx, "tls-ciphersuites " + o.tls_ciphersuites, error);
    return nullptr;
  }
  return std::shared_ptr<TlsContext>(new TlsContext(ctx));
}

std::shared_ptr<TlsContext> TlsContext::ForUpstream(const conf::Options& o, std::string* error) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) {
    *error = "cannot create a TLS context: " + OpenSslError();
    return nullptr;
  }
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  const bool own_ca = !o.upstream_tls_ca_cert_file.empty() || !o.upstream_tls_ca_cert_dir.empty();
  if (own_ca && !LoadCa(ctx, o.upstream_tls_ca_cert_file, o.upstream_tls_ca_cert_dir, error)) {
    SSL_CTX_free(ctx);
    return nullptr;
  }
  if (!own_ca && SSL_CTX_set_default_verify_paths(ctx) != 1) {
    Failed(ctx, "cannot load the system's CA certificates", error);
    return nullptr;
  }
  if (!o.upstream_tls_cert_file.empty() &&
      !LoadIdentity(ctx, o.upstream_tls_cert_file, o.upstream_tls_key_file, std::string(), error)) {
    SSL_CTX_free(ctx);
    return nullptr;
  }
  return std::shared_ptr<TlsContext>(new TlsContext(ctx));
}

// ---------------------------------------------------------------------------------------------
// TlsSession

TlsSession::TlsSession(std::shared_ptr<TlsContext> ctx, bool accepting) : ctx_(std::move(ctx)) {
  ssl_ = SSL_new(ctx_->ctx());
  in_ = BIO_new(BIO_s_mem());
  out_ = BIO_new(BIO_s_mem());
  BIO_set_mem_eof_return(in_, -1);  // an empty input BIO means "more to come", not EOF
  SSL_set_bio(ssl_, in_, out_);     // the SSL owns both from here
  if (accepting) {
    SSL_set_accept_state(ssl_);
  } else {
    SSL_set_connect_state(ssl_);
  }
}

TlsSession::~TlsSession() { SSL_free(ssl_); }

std::unique_ptr<TlsSession> TlsSession::Accepting(std::shared_ptr<TlsContext> ctx) {
  return std::unique_ptr<TlsSession>(new TlsSession(std::move(ctx), true));
}

std::unique_ptr<TlsSession> TlsSession::Connecting(std::shared_ptr<TlsContext> ctx,
                                                   const std::string& peer_name) {
  std::unique_ptr<TlsSession> s(new TlsSession(std::move(ctx), false));
  X509_VERIFY_PARAM* param = SSL_get0_param(s->ssl_);
  X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  if (IsIpLiteral(peer_name)) {
    X509_VERIFY_PARAM_set1_ip_asc(param, peer_name.c_str());
  } else {
    // SNI carries DNS names only.
    SSL_set_tlsext_host_name(s->ssl_, peer_name.c_str());
    X509_VERIFY_PARAM_set1_host(param, peer_name.c_str(), 0);
  }
  return s;
}

uv_buf_t TlsSession::ReadBuffer() {
  if (read_buf_.empty()) read_buf_.resize(kReadChunk);
  return uv_buf_init(read_buf_.data(), static_cast<unsigned>(read_buf_.size()));
}

bool TlsSession::Start(std::string* cipher) {
  const bool ok = Handshake();
  Drain(cipher);
  return ok;
}

bool TlsSession::OnRead(size_t n, Buffer* plain, std::string* cipher) {
  if (n > 0 && BIO_write(in_, read_buf_.data(), static_cast<int>(n)) != static_cast<int>(n)) {
    error_ = "out of memory";
    return false;
  }
  if (!established_ && !Handshake()) {
    Drain(cipher);  // the alert that tells the peer why
    return false;
  }
  while (established_ && !closed_) {
    char* p = plain->Reserve(kReadChunk);
    ERR_clear_error();
    const int r =
        SSL_read(ssl_, p, static_cast<int>(std::min<size_t>(plain->free_space(), INT_MAX)));
    if (r > 0) {
      plain->Commit(static_cast<size_t>(r));
      continue;
    }
    const int e = SSL_get_error(ssl_, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) break;
    if (e == SSL_ERROR_ZERO_RETURN) {
      closed_ = true;
      break;
    }
    Drain(cipher);
    return Fail(r, "read");
  }
  Drain(cipher);
  return true;
}

bool TlsSession::Seal(std::string* plain, std::string* cipher) {
  if (!established_ || plain->empty()) return true;
  size_t off = 0;
  while (off < plain->size()) {
    const int n = static_cast<int>(std::min<size_t>(plain->size() - off, INT_MAX / 2));
    ERR_clear_error();
    const int r = SSL_write(ssl_, plain->data() + off, n);
    if (r <= 0) return Fail(r, "write");
    off += static_cast<size_t>(r);
  }
  plain->clear();
  Drain(cipher);
  return true;
}

bool TlsSession::Handshake() {
  ERR_clear_error();
  const int r = SSL_do_handshake(ssl_);
  if (r == 1) {
    established_ = true;
    return true;
  }
  const int e = SSL_get_error(ssl_, r);
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return true;
  return Fail(r, "handshake");
}

bool TlsSession::Fail(int ret, const char* what) {
  const long verify = SSL_get_verify_result(ssl_);
  std::string why = OpenSslError();
  if (verify != X509_V_OK && (why.empty() || why == "certificate verify failed")) {
    why = std::string("certificate verify failed: ") + X509_verify_cert_error_string(verify);
  }
  if (why.empty()) why = SSL_get_error(ssl_, ret) == SSL_ERROR_SYSCALL ? "unexpected EOF" : "error";
  error_ = std::string("TLS ") + what + " failed: " + why;
  return false;
}

void TlsSession::Drain(std::string* cipher) {
  for (size_t pending = BIO_ctrl_pending(out_); pending > 0; pending = BIO_ctrl_pending(out_)) {
    const size_t old = cipher->size();
    cipher->resize(old + pending);
    const int got = BIO_read(out_, cipher->data() + old, static_cast<int>(pending));
    cipher->resize(old + static_cast<size_t>(std::max(got, 0)));
    if (got <= 0) break;
  }
}

}  // namespace bloomproxy::proxy
