#include "http/tls_context.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string_view>
#include <vector>

#include "http/tls_library.hpp"
#include "util/error.hpp"

namespace joules::exporter {
namespace {

[[noreturn]] void tls_config_fail(const std::string& file, const std::string& what) {
  throw usage_error(fmt::format("--web-config-file {}: {}", file, what));
}

// Where a PEM text came from, for messages: "cert_file /etc/joules/tls.crt" or "cert".
std::string pem_origin(const pem_source& pem, std::string_view file_key, std::string_view key) {
  return pem.file.empty() ? std::string(key) : fmt::format("{} {}", file_key, pem.file);
}

// An encrypted key is refused: without this, OpenSSL would ask for its passphrase on the terminal.
int no_passphrase(char* /*buf*/, int /*size*/, int /*rwflag*/, void* /*u*/) {
  return 0;
}

// Every certificate of a PEM text, in order.
std::vector<X509*> read_certificates(const tls_library& lib, const std::string& pem) {
  std::vector<X509*> out;
  BIO* bio = lib.bio_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) return out;
  while (X509* x = lib.pem_read_x509(bio, nullptr, no_passphrase, nullptr))
    out.push_back(x);
  lib.bio_free(bio);
  lib.err_clear_error();  // the read that ended the loop queued "no start line"
  return out;
}

// Client certificates are asked for but not verified (RequestClientCert, RequireAnyClientCert).
int accept_any_client_certificate(int /*preverify_ok*/, X509_STORE_CTX* /*ctx*/) {
  return 1;
}

// Go's names of the cipher suites for TLS 1.2 and older are the IANA names, which OpenSSL calls
// standard names; its cipher list takes its own names.  TLS 1.3's suites are not configurable
// in Go, so naming one has no effect, as there.
std::string openssl_cipher_list(const tls_library& lib, SSL_CTX* ctx,
                                const std::vector<std::string>& names, const std::string& file) {
  lib.ctx_set_cipher_list(ctx, "ALL:COMPLEMENTOFALL");
  const auto* all = reinterpret_cast<const OPENSSL_STACK*>(lib.ctx_get_ciphers(ctx));
  std::string list;
  for (const std::string& name : names) {
    if (name.starts_with("TLS_AES_") || name.starts_with("TLS_CHACHA20_")) continue;
    bool found = false;
    for (int i = 0; all != nullptr && i < lib.sk_num(all); ++i) {
      const auto* c = static_cast<const SSL_CIPHER*>(lib.sk_value(all, i));
      const char* standard = lib.cipher_standard_name(c);
      if (standard != nullptr && name == standard) {
        if (!list.empty()) list += ':';
        list += lib.cipher_get_name(c);
        found = true;
        break;
      }
    }
    if (!found)
      tls_config_fail(file, fmt::format("cipher_suites: '{}' is not a cipher suite this OpenSSL "
                                        "knows (IANA names: TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, "
                                        "...)",
                                        name));
  }
  return list;
}

}  // namespace

tls_context::tls_context(const tls_settings& s, const std::string& file) {
  std::string why;
  lib_ = load_tls(&why);
  if (lib_ == nullptr) tls_config_fail(file, why);
  const tls_library& lib = *lib_;
  lib.err_clear_error();
  ctx_ = lib.ctx_new(lib.server_method());
  if (ctx_ == nullptr) tls_config_fail(file, "cannot make a TLS context: " + tls_errors(lib));
  try {
    // No renegotiation (a client could make the server do handshakes at will); the server's
    // cipher order when asked.
    std::uint64_t options = SSL_OP_NO_RENEGOTIATION;
    if (s.prefer_server_cipher_suites) options |= SSL_OP_CIPHER_SERVER_PREFERENCE;
    lib.ctx_set_options(ctx_, options);
    // Writes of part of a buffer, retried from another address; buffers freed while idle.
    lib.ctx_ctrl(ctx_, SSL_CTRL_MODE,
                 SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                     SSL_MODE_RELEASE_BUFFERS,
                 nullptr);
    if (lib.ctx_ctrl(ctx_, SSL_CTRL_SET_MIN_PROTO_VERSION, s.min_version, nullptr) != 1 ||
        lib.ctx_ctrl(ctx_, SSL_CTRL_SET_MAX_PROTO_VERSION, s.max_version, nullptr) != 1)
      tls_config_fail(file, "this OpenSSL cannot serve min_version to max_version");
    if (!s.cipher_suites.empty()) {
      const std::string list = openssl_cipher_list(lib, ctx_, s.cipher_suites, file);
      if (list.empty() && s.min_version < TLS1_3_VERSION)
        tls_config_fail(file,
                        "cipher_suites names only TLS 1.3 suites; name TLS 1.2 ones too, "
                        "or set min_version: TLS13");
      if (!list.empty() && lib.ctx_set_cipher_list(ctx_, list.c_str()) != 1)
        tls_config_fail(file, "cipher_suites: " + tls_errors(lib));
    }
    if (!s.curves.empty()) {
      std::string groups;
      for (const std::string& c : s.curves)
        groups += (groups.empty() ? "" : ":") + c;
      if (lib.ctx_ctrl(ctx_, SSL_CTRL_SET_GROUPS_LIST, 0, groups.data()) != 1)
        tls_config_fail(file, "curve_preferences: " + tls_errors(lib));
    }

    // The certificate, then the chain after it in the same PEM text.
    const std::string cert_from = pem_origin(s.cert, "cert_file", "cert");
    std::vector<X509*> chain = read_certificates(lib, s.cert.text);
    if (chain.empty()) tls_config_fail(file, cert_from + " holds no PEM certificate");
    bool ok = lib.ctx_use_certificate(ctx_, chain[0]) == 1;
    for (std::size_t i = 1; ok && i < chain.size(); ++i) {
      // SSL_CTX_add1_chain_cert: the context takes its own reference.
      ok = lib.ctx_ctrl(ctx_, SSL_CTRL_CHAIN_CERT, 1, chain[i]) == 1;
    }
    for (X509* x : chain)
      lib.x509_free(x);
    if (!ok) tls_config_fail(file, fmt::format("{}: {}", cert_from, tls_errors(lib)));

    const std::string key_from = pem_origin(s.key, "key_file", "key");
    BIO* bio = lib.bio_new_mem_buf(s.key.text.data(), static_cast<int>(s.key.text.size()));
    EVP_PKEY* key =
        bio != nullptr ? lib.pem_read_private_key(bio, nullptr, no_passphrase, nullptr) : nullptr;
    if (bio != nullptr) lib.bio_free(bio);
    if (key == nullptr) {
      lib.err_clear_error();
      tls_config_fail(file, key_from + " holds no PEM private key (or it is encrypted)");
    }
    ok = lib.ctx_use_private_key(ctx_, key) == 1;
    lib.pkey_free(key);
    if (!ok || lib.ctx_check_private_key(ctx_) != 1) {
      lib.err_clear_error();
      tls_config_fail(
          file, fmt::format("{} is not the key of the certificate in {}", key_from, cert_from));
    }

    int verify = SSL_VERIFY_NONE;
    SSL_verify_cb callback = nullptr;
    switch (s.auth) {
      case client_auth::none:
        break;
      case client_auth::request:
        verify = SSL_VERIFY_PEER;
        callback = accept_any_client_certificate;
        break;
      case client_auth::require_any:
        verify = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
        callback = accept_any_client_certificate;
        break;
      case client_auth::verify_if_given:
        verify = SSL_VERIFY_PEER;
        break;
      case client_auth::require_and_verify:
        verify = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
        break;
    }
    if (s.client_ca.given()) {
      const std::string ca_from = pem_origin(s.client_ca, "client_ca_file", "client_ca");
      std::vector<X509*> cas = read_certificates(lib, s.client_ca.text);
      if (cas.empty()) tls_config_fail(file, ca_from + " holds no PEM certificate");
      X509_STORE* store = lib.ctx_get_cert_store(ctx_);
      ok = true;
      for (X509* x : cas) {
        ok = ok && lib.store_add_cert(store, x) == 1 && lib.ctx_add_client_ca(ctx_, x) == 1;
        lib.x509_free(x);
      }
      if (!ok) tls_config_fail(file, fmt::format("{}: {}", ca_from, tls_errors(lib)));
    }
    lib.ctx_set_verify(ctx_, verify, callback);
    // Sessions resumed with a client certificate need a context id (else OpenSSL refuses them).
    constexpr std::string_view kSessionContext = "joules-serve";
    lib.ctx_set_session_id_context(ctx_,
                                   reinterpret_cast<const unsigned char*>(kSessionContext.data()),
                                   static_cast<unsigned>(kSessionContext.size()));
  } catch (...) {
    lib.ctx_free(ctx_);
    throw;
  }
}

tls_context::~tls_context() {
  if (ctx_ != nullptr) lib_->ctx_free(ctx_);
}

std::unique_ptr<tls_stream> tls_context::open(int fd) const {
  SSL* ssl = lib_->ssl_new(ctx_);
  if (ssl == nullptr) {
    lib_->err_clear_error();
    return nullptr;
  }
  if (lib_->ssl_set_fd(ssl, fd) != 1) {
    lib_->ssl_free(ssl);
    lib_->err_clear_error();
    return nullptr;
  }
  return std::make_unique<tls_stream>(*lib_, ssl);
}

tls_stream::~tls_stream() {
  lib_->ssl_free(ssl_);
}

tls_result tls_stream::result_of(int ret) {
  const int err = lib_->ssl_get_error(ssl_, ret);
  // The error queue is per thread and OpenSSL's next call expects it empty.
  lib_->err_clear_error();
  switch (err) {
    case SSL_ERROR_WANT_READ:
      return tls_result::want_read;
    case SSL_ERROR_WANT_WRITE:
      return tls_result::want_write;
    case SSL_ERROR_ZERO_RETURN:  // close_notify
    case SSL_ERROR_SYSCALL:      // the socket closed or reset under the session
      return tls_result::closed;
    default:
      return tls_result::failed;  // SSL_ERROR_SSL: not TLS, a bad certificate, a bad record
  }
}

tls_result tls_stream::handshake() {
  const int ret = lib_->ssl_accept(ssl_);
  if (ret == 1) {
    done_ = true;
    return tls_result::done;
  }
  return result_of(ret);
}

tls_result tls_stream::read(char* buf, std::size_t n, std::size_t& moved) {
  moved = 0;
  const int ret = lib_->ssl_read(ssl_, buf, static_cast<int>(std::min<std::size_t>(n, INT_MAX)));
  if (ret > 0) {
    moved = static_cast<std::size_t>(ret);
    return tls_result::done;
  }
  return result_of(ret);
}

tls_result tls_stream::write(const char* data, std::size_t n, std::size_t& moved) {
  moved = 0;
  const int ret = lib_->ssl_write(ssl_, data, static_cast<int>(std::min<std::size_t>(n, INT_MAX)));
  if (ret > 0) {
    moved = static_cast<std::size_t>(ret);
    return tls_result::done;
  }
  return result_of(ret);
}

bool tls_stream::pending() const {
  return lib_->ssl_pending(ssl_) > 0;
}

void tls_stream::close_notify() {
  if (done_) lib_->ssl_shutdown(ssl_);
  lib_->err_clear_error();
}

}  // namespace joules::exporter
