// The TLS rows of the option table (conf/directive.h): the client side takes redis.conf's
// directive names and values, the upstream side the same names prefixed with "upstream-".
// One declaration per row (conf/rows.h).
#include <string>
#include <vector>

#include "conf/directive.h"
#include "conf/rows.h"
#include "conf/values.h"

namespace bloomproxy::conf {
namespace {

using namespace rows;  // NOLINT: the table reads as declarations

// The protocol names redis.conf's tls-protocols takes.
bool ValidProtocols(const std::string& s) {
  size_t words = 0;
  size_t start = 0;
  while (start < s.size()) {
    size_t end = s.find(' ', start);
    if (end == std::string::npos) end = s.size();
    const std::string word = s.substr(start, end - start);
    if (!word.empty()) {
      if (!EqualsIgnoreCase(word, "TLSv1") && !EqualsIgnoreCase(word, "TLSv1.1") &&
          !EqualsIgnoreCase(word, "TLSv1.2") && !EqualsIgnoreCase(word, "TLSv1.3")) {
        return false;
      }
      ++words;
    }
    start = end + 1;
  }
  return words > 0;
}

bool ApplyProtocols(const Directive&, const std::vector<std::string>& a, SourceState* s,
                    std::string* e) {
  if (!ValidProtocols(a[0])) {
    *e = Quote(a[0]) + " is not a list of TLSv1, TLSv1.1, TLSv1.2, TLSv1.3";
    return false;
  }
  s->options->tls_protocols = a[0];
  return true;
}

std::string ShowProtocols(const Directive&, const Options& o) {
  return ShowString(o.tls_protocols, "TLSv1.2 TLSv1.3");
}

using O = Options;

}  // namespace

// A reload builds both TLS contexts again from these rows (new connections take the new
// certificates), so all are live but the two that open or close a kind of connection.
// clang-format off
const Directive kTlsDirectives[] = {
    YesNo<&O::upstream_tls>("upstream-tls", "TLS to the upstream", kRestart),
    String<&O::upstream_tls_ca_cert_file>("upstream-tls-ca-cert-file", "PATH",
        "CA bundle for the upstream", "system", kLive),
    String<&O::upstream_tls_ca_cert_dir>("upstream-tls-ca-cert-dir", "DIR",
        "CA directory for the upstream", "system", kLive),
    String<&O::upstream_tls_cert_file>("upstream-tls-cert-file", "PATH",
        "client certificate for the upstream", "none", kLive),
    String<&O::upstream_tls_key_file>("upstream-tls-key-file", "PATH", "its private key", "none",
        kLive),
    String<&O::upstream_tls_server_name>("upstream-tls-server-name", "NAME",
        "SNI and the name verified", "the upstream host", kLive),
    Port<&O::tls_port>("tls-port", "TLS port to listen on; 0 = none", kRestart),
    String<&O::tls_cert_file>("tls-cert-file", "PATH", "the proxy's certificate (chain)", "none",
        kLive),
    String<&O::tls_key_file>("tls-key-file", "PATH", "its private key", "none", kLive),
    Secret<&O::tls_key_file_pass>("tls-key-file-pass", "passphrase of tls-key-file", kLive),
    String<&O::tls_ca_cert_file>("tls-ca-cert-file", "PATH", "CA of client certificates", "none",
        kLive),
    String<&O::tls_ca_cert_dir>("tls-ca-cert-dir", "DIR", "CA directory for client certificates",
        "none", kLive),
    Word<&O::tls_auth_clients, true>("tls-auth-clients", "yes|no|optional",
        "client certificates required", "yes|no|optional", " is not yes, no or optional", kLive),
    Custom<&O::tls_protocols>("tls-protocols", 1, "LIST", "e.g. \"TLSv1.2 TLSv1.3\"",
        ApplyProtocols, ShowProtocols, kLive),
    String<&O::tls_ciphers>("tls-ciphers", "LIST", "TLSv1.2 ciphers (OpenSSL list)", "OpenSSL's",
        kLive),
    String<&O::tls_ciphersuites>("tls-ciphersuites", "LIST", "TLSv1.3 ciphersuites", "OpenSSL's",
        kLive),
    YesNo<&O::tls_prefer_server_ciphers>("tls-prefer-server-ciphers",
        "the server's cipher order wins", kLive),
    YesNo<&O::tls_session_caching>("tls-session-caching", "TLS session resumption", kLive),
};
// clang-format on

const size_t kTlsDirectiveCount = sizeof(kTlsDirectives) / sizeof(kTlsDirectives[0]);

void ValidateTls(const Options& o, std::vector<std::string>* errors) {
  if (o.tls_port != 0 && (o.tls_cert_file.empty() || o.tls_key_file.empty())) {
    errors->push_back("tls-port needs tls-cert-file and tls-key-file");
  }
  if (o.tls_port != 0 && o.tls_port == o.port) {
    errors->push_back("tls-port and port are the same (" + std::to_string(o.port) + ")");
  }
  if (o.tls_port != 0 && o.tls_auth_clients != "no" && o.tls_ca_cert_file.empty() &&
      o.tls_ca_cert_dir.empty()) {
    errors->push_back("tls-auth-clients " + o.tls_auth_clients +
                      " needs tls-ca-cert-file or tls-ca-cert-dir (or tls-auth-clients no)");
  }
  if (o.upstream_tls_cert_file.empty() != o.upstream_tls_key_file.empty()) {
    errors->push_back("upstream-tls-cert-file and upstream-tls-key-file go together");
  }
  if (!o.upstream_tls &&
      (!o.upstream_tls_ca_cert_file.empty() || !o.upstream_tls_ca_cert_dir.empty() ||
       !o.upstream_tls_cert_file.empty() || !o.upstream_tls_server_name.empty())) {
    errors->push_back("upstream-tls-* settings are given but upstream-tls is no");
  }
  if (o.upstream_tls && o.upstream.compare(0, 5, "unix:") == 0) {
    errors->push_back("upstream-tls with a unix: upstream (TLS runs over TCP)");
  }
}

}  // namespace bloomproxy::conf
