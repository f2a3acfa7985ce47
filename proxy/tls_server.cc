// The server's TLS: the contexts built from the options (proxy/tls.h), the tls-port's listener,
// and SIGHUP, which builds both contexts again from their files. A reload that fails changes
// nothing: the current certificates stay in use. Connections keep the context they started
// with; new ones take the new one.
#include <csignal>

#include "proxy/log.h"
#include "proxy/server.h"

namespace bloomproxy::proxy {

namespace {

// Builds the contexts `o` asks for; false and *error if a file does not load.
bool BuildContexts(const conf::Options& o, std::shared_ptr<TlsContext>* clients,
                   std::shared_ptr<TlsContext>* upstream, std::string* error) {
  if (o.tls_port != 0) {
    *clients = TlsContext::ForClients(o, error);
    if (*clients == nullptr) return false;
  }
  if (o.upstream_tls) {
    *upstream = TlsContext::ForUpstream(o, error);
    if (*upstream == nullptr) {
      *error = "upstream-tls: " + *error;
      return false;
    }
  }
  return true;
}

}  // namespace

bool Server::StartTls() {
  std::string error;
  if (!BuildContexts(options_, &client_tls_, &upstream_tls_, &error)) {
    LOG_WARNING("Failed to configure TLS: %s", error.c_str());
    return false;
  }
  if (options_.tls_port != 0 &&
      !ListenTcp(&tls_listener_, &tls_listening_, options_.tls_port, "tls")) {
    return false;
  }
  if (options_.tls_port != 0) {
    LOG_NOTICE("bloomproxy ready to accept TLS connections on %s:%d", options_.bind.c_str(),
               options_.tls_port);
  }
  return true;
}

void Server::OnSighup(uv_signal_t* h, int) {
  auto* self = static_cast<Server*>(h->data);
  if (self->client_tls_ == nullptr && self->upstream_tls_ == nullptr) {
    LOG_NOTICE("Received SIGHUP: no TLS configured, nothing to reload");
    return;
  }
  std::shared_ptr<TlsContext> clients, upstream;
  std::string error;
  if (!BuildContexts(self->options_, &clients, &upstream, &error)) {
    LOG_WARNING("TLS reload failed: %s; keeping the current configuration", error.c_str());
    return;
  }
  self->client_tls_ = std::move(clients);
  self->upstream_tls_ = std::move(upstream);
  LOG_NOTICE("Received SIGHUP: TLS configuration reloaded");
}

}  // namespace bloomproxy::proxy
