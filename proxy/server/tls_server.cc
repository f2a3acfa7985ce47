// The server's TLS: the contexts built from the options (proxy/server/tls.h) and the tls-port's
// listener. SIGHUP's reload (proxy/server/reload.cc) builds both contexts again from their files; a
// reload that fails changes nothing: the current certificates stay in use. Connections keep the
// context they started with; new ones take the new one.
#include <csignal>

#include "proxy/server/log.h"
#include "proxy/server/server.h"

namespace bloomproxy::proxy {

bool Server::BuildContexts(const conf::Options& o, std::shared_ptr<TlsContext>* clients,
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
  // The TLS contexts are rebuilt as part of the reload (proxy/server/reload.cc).
  static_cast<Server*>(h->data)->Reload();
}

}  // namespace bloomproxy::proxy
