#pragma once
// `joules serve --web-config-file FILE`: who may scrape /metrics, in the web configuration format
// of the Prometheus exporter toolkit, which node_exporter and dcgm-exporter read too
// (docs/web-config.md gives the format, its sources and what joules does with each key):
//
//   tls_server_config:      cert_file/cert, key_file/key, client_auth_type,
//   client_ca_file/client_ca,
//                           min_version, max_version, cipher_suites, prefer_server_cipher_suites,
//                           curve_preferences
//   http_server_config:     headers (the five the toolkit allows), http2 (accepted; joules speaks
//                           HTTP/1.1)
//   basic_auth_users:       user: bcrypt hash
//
// The YAML is read strictly, as the toolkit does: an unknown or repeated key, a value of the
// wrong kind, or a key joules does not implement (client_allowed_sans, rate_limit) is an error,
// never silently ignored.  Relative file names are taken from the file's own directory.
//
// parse_web_config is pure (no file is opened: the fuzz target and the unit tests call it);
// load_web_config reads the file and the certificate and key files it names.  Both throw
// usage_error with one line that names the file and what is wrong.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace joules::exporter {

// Go's crypto/tls ClientAuthType names, as the toolkit's client_auth_type takes them.
enum class client_auth {
  none,                // NoClientCert (the default)
  request,             // RequestClientCert: asked for, not required, not verified
  require_any,         // RequireAnyClientCert: required, not verified
  verify_if_given,     // VerifyClientCertIfGiven
  require_and_verify,  // RequireAndVerifyClientCert: the one that authenticates clients
};

// PEM text given inline, or the name of a file that holds it (resolved, not yet read).
struct pem_source {
  std::string text;  // inline (cert, key, client_ca), or the file's content once loaded
  std::string file;  // cert_file, key_file, client_ca_file: empty when inline
  bool given() const { return !text.empty() || !file.empty(); }
};

struct tls_settings {
  pem_source cert;
  pem_source key;
  pem_source client_ca;
  client_auth auth = client_auth::none;
  int min_version = 0x0303;                // TLS12, the toolkit's default (TLS1_2_VERSION)
  int max_version = 0x0304;                // TLS13
  std::vector<std::string> cipher_suites;  // IANA names, as Go names them; TLS 1.2 and older
  bool prefer_server_cipher_suites = true;
  std::vector<std::string> curves;  // OpenSSL group names, in the order given
};

struct web_config {
  bool tls = false;  // tls_server_config sets anything: serve HTTPS
  tls_settings tls_server;
  std::vector<std::pair<std::string, std::string>> users;    // name, bcrypt hash (in file order)
  std::vector<std::pair<std::string, std::string>> headers;  // name, value: added to responses
};

// Parses the YAML text of a web configuration file named `file` (for messages and for relative
// names).  Checks everything that needs no file: keys, kinds, names, TLS versions, bcrypt hash
// shapes, that a key and a certificate are both given.  Throws usage_error.
web_config parse_web_config(std::string_view yaml, const std::string& file);

// Reads `file`, parses it, and reads the PEM files it names into their `text`.  Throws
// usage_error naming what cannot be read.  Once the file is parsed, before the PEM files are
// read, `files` (when given) gets the file and the cert_file, key_file and client_ca_file it
// names: what a change of the configuration is watched on (web_config_reload.hpp).
web_config load_web_config(const std::string& file, std::vector<std::string>* files = nullptr);

// A bcrypt hash as the toolkit takes them: $2a$, $2b$ or $2y$, a cost of 04 to 31, 53 characters
// of bcrypt's base64 (22 of salt, 31 of hash).
bool is_bcrypt_hash(std::string_view hash);

}  // namespace joules::exporter
