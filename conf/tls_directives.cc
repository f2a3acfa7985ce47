// The TLS rows of the option table (conf/directive.h): the client side takes redis.conf's
// directive names and values, the upstream side the same names prefixed with "upstream-".
#include <string>
#include <vector>

#include "conf/directive.h"
#include "conf/values.h"

namespace bloomproxy::conf {
namespace {

bool ParseYesNo(const std::string& s, bool* out, std::string* error) {
  if (EqualsIgnoreCase(s, "yes")) {
    *out = true;
  } else if (EqualsIgnoreCase(s, "no")) {
    *out = false;
  } else {
    *error = Quote(s) + " is not yes or no";
    return false;
  }
  return true;
}

std::string YesNo(bool v) { return v ? "yes" : "no"; }

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

// A row that stores its one argument in a string field.
#define BP_STRING_ROW(NAME, ARG, HELP, FIELD, IF_EMPTY)                       \
  {                                                                           \
    NAME, 1, ARG, HELP,                                                       \
        [](const std::vector<std::string>& a, SourceState* s, std::string*) { \
          s->options->FIELD = a[0];                                           \
          return true;                                                        \
        },                                                                    \
        [](const Options& o) { return ShowString(o.FIELD, IF_EMPTY); }        \
  }

#define BP_YES_NO_ROW(NAME, HELP, FIELD)                                        \
  {                                                                             \
    NAME, 1, "yes|no", HELP,                                                    \
        [](const std::vector<std::string>& a, SourceState* s, std::string* e) { \
          return ParseYesNo(a[0], &s->options->FIELD, e);                       \
        },                                                                      \
        [](const Options& o) { return YesNo(o.FIELD); }                         \
  }

}  // namespace

const Directive kTlsDirectives[] = {
    BP_YES_NO_ROW("upstream-tls", "TLS to the upstream", upstream_tls),
    BP_STRING_ROW("upstream-tls-ca-cert-file", "PATH", "CA bundle for the upstream",
                  upstream_tls_ca_cert_file, "system"),
    BP_STRING_ROW("upstream-tls-ca-cert-dir", "DIR", "CA directory for the upstream",
                  upstream_tls_ca_cert_dir, "system"),
    BP_STRING_ROW("upstream-tls-cert-file", "PATH", "client certificate for the upstream",
                  upstream_tls_cert_file, "none"),
    BP_STRING_ROW("upstream-tls-key-file", "PATH", "its private key", upstream_tls_key_file,
                  "none"),
    BP_STRING_ROW("upstream-tls-server-name", "NAME", "SNI and the name verified",
                  upstream_tls_server_name, "the upstream host"),
    {"tls-port", 1, "N", "TLS port to listen on; 0 = none",
     [](const std::vector<std::string>& a, SourceState* s, std::string* e) {
       if (!ParsePort(a[0], 0, &s->options->tls_port)) {
         *e = Quote(a[0]) + " is not a valid port";
         return false;
       }
       return true;
     },
     [](const Options& o) { return std::to_string(o.tls_port); }},
    BP_STRING_ROW("tls-cert-file", "PATH", "the proxy's certificate (chain)", tls_cert_file,
                  "none"),
    BP_STRING_ROW("tls-key-file", "PATH", "its private key", tls_key_file, "none"),
    {"tls-key-file-pass", 1, "PASS", "passphrase of tls-key-file",
     [](const std::vector<std::string>& a, SourceState* s, std::string*) {
       s->options->tls_key_file_pass = a[0];
       return true;
     },
     [](const Options& o) { return ShowSecret(o.tls_key_file_pass); }},
    BP_STRING_ROW("tls-ca-cert-file", "PATH", "CA of client certificates", tls_ca_cert_file,
                  "none"),
    BP_STRING_ROW("tls-ca-cert-dir", "DIR", "CA directory for client certificates", tls_ca_cert_dir,
                  "none"),
    {"tls-auth-clients", 1, "yes|no|optional", "client certificates required",
     [](const std::vector<std::string>& a, SourceState* s, std::string* e) {
       for (const char* v : {"yes", "no", "optional"}) {
         if (EqualsIgnoreCase(a[0], v)) {
           s->options->tls_auth_clients = v;
           return true;
         }
       }
       *e = Quote(a[0]) + " is not yes, no or optional";
       return false;
     },
     [](const Options& o) { return o.tls_auth_clients; }},
    {"tls-protocols", 1, "LIST", "e.g. \"TLSv1.2 TLSv1.3\"",
     [](const std::vector<std::string>& a, SourceState* s, std::string* e) {
       if (!ValidProtocols(a[0])) {
         *e = Quote(a[0]) + " is not a list of TLSv1, TLSv1.1, TLSv1.2, TLSv1.3";
         return false;
       }
       s->options->tls_protocols = a[0];
       return true;
     },
     [](const Options& o) { return ShowString(o.tls_protocols, "TLSv1.2 TLSv1.3"); }},
    BP_STRING_ROW("tls-ciphers", "LIST", "TLSv1.2 ciphers (OpenSSL list)", tls_ciphers,
                  "OpenSSL's"),
    BP_STRING_ROW("tls-ciphersuites", "LIST", "TLSv1.3 ciphersuites", tls_ciphersuites,
                  "OpenSSL's"),
    BP_YES_NO_ROW("tls-prefer-server-ciphers", "the server's cipher order wins",
                  tls_prefer_server_ciphers),
    BP_YES_NO_ROW("tls-session-caching", "TLS session resumption", tls_session_caching),
};

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
