#include "http/tls_library.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <array>
#include <memory>

namespace joules::exporter {
namespace {

struct tls_load_result {
  std::unique_ptr<tls_library> lib;
  std::string why;
};

template <class Fn>
void resolve_tls_symbol(void* handle, const char* name, Fn& slot, std::string& missing) {
  // POSIX guarantees that a dlsym result converts to a function pointer.  dlsym on libssl's
  // handle also finds libcrypto's functions: libcrypto is loaded as libssl's dependency.
  slot = reinterpret_cast<Fn>(dlsym(handle, name));
  if (slot == nullptr) missing += missing.empty() ? name : fmt::format(", {}", name);
}

void resolve_all(void* h, tls_library& l, std::string& m) {
  resolve_tls_symbol(h, "OPENSSL_init_ssl", l.init_ssl, m);
  resolve_tls_symbol(h, "TLS_server_method", l.server_method, m);
  resolve_tls_symbol(h, "SSL_CTX_new", l.ctx_new, m);
  resolve_tls_symbol(h, "SSL_CTX_free", l.ctx_free, m);
  resolve_tls_symbol(h, "SSL_CTX_ctrl", l.ctx_ctrl, m);
  resolve_tls_symbol(h, "SSL_CTX_set_options", l.ctx_set_options, m);
  resolve_tls_symbol(h, "SSL_CTX_use_certificate", l.ctx_use_certificate, m);
  resolve_tls_symbol(h, "SSL_CTX_use_PrivateKey", l.ctx_use_private_key, m);
  resolve_tls_symbol(h, "SSL_CTX_check_private_key", l.ctx_check_private_key, m);
  resolve_tls_symbol(h, "SSL_CTX_set_verify", l.ctx_set_verify, m);
  resolve_tls_symbol(h, "SSL_CTX_get_cert_store", l.ctx_get_cert_store, m);
  resolve_tls_symbol(h, "SSL_CTX_add_client_CA", l.ctx_add_client_ca, m);
  resolve_tls_symbol(h, "SSL_CTX_set_cipher_list", l.ctx_set_cipher_list, m);
  resolve_tls_symbol(h, "SSL_CTX_set_session_id_context", l.ctx_set_session_id_context, m);
  resolve_tls_symbol(h, "SSL_CTX_get_ciphers", l.ctx_get_ciphers, m);
  resolve_tls_symbol(h, "SSL_CIPHER_standard_name", l.cipher_standard_name, m);
  resolve_tls_symbol(h, "SSL_CIPHER_get_name", l.cipher_get_name, m);
  resolve_tls_symbol(h, "SSL_new", l.ssl_new, m);
  resolve_tls_symbol(h, "SSL_free", l.ssl_free, m);
  resolve_tls_symbol(h, "SSL_set_fd", l.ssl_set_fd, m);
  resolve_tls_symbol(h, "SSL_accept", l.ssl_accept, m);
  resolve_tls_symbol(h, "SSL_read", l.ssl_read, m);
  resolve_tls_symbol(h, "SSL_write", l.ssl_write, m);
  resolve_tls_symbol(h, "SSL_shutdown", l.ssl_shutdown, m);
  resolve_tls_symbol(h, "SSL_get_error", l.ssl_get_error, m);
  resolve_tls_symbol(h, "SSL_pending", l.ssl_pending, m);
  resolve_tls_symbol(h, "ERR_get_error", l.err_get_error, m);
  resolve_tls_symbol(h, "ERR_error_string_n", l.err_error_string_n, m);
  resolve_tls_symbol(h, "ERR_clear_error", l.err_clear_error, m);
  resolve_tls_symbol(h, "BIO_new_mem_buf", l.bio_new_mem_buf, m);
  resolve_tls_symbol(h, "BIO_free", l.bio_free, m);
  resolve_tls_symbol(h, "PEM_read_bio_X509", l.pem_read_x509, m);
  resolve_tls_symbol(h, "PEM_read_bio_PrivateKey", l.pem_read_private_key, m);
  resolve_tls_symbol(h, "X509_free", l.x509_free, m);
  resolve_tls_symbol(h, "EVP_PKEY_free", l.pkey_free, m);
  resolve_tls_symbol(h, "X509_STORE_add_cert", l.store_add_cert, m);
  resolve_tls_symbol(h, "OPENSSL_sk_num", l.sk_num, m);
  resolve_tls_symbol(h, "OPENSSL_sk_value", l.sk_value, m);
  resolve_tls_symbol(h, "EVP_Digest", l.digest, m);
  resolve_tls_symbol(h, "EVP_sha256", l.sha256, m);
}

tls_load_result open_tls() {
  tls_load_result out;
  // OpenSSL 3 (Debian 12, Ubuntu 22.04, RHEL 9 and newer); 3.x keeps the soname.
  constexpr std::array<const char*, 1> kNames = {"libssl.so.3"};
  std::string tried;
  for (const char* name : kNames) {
    // RTLD_LOCAL keeps OpenSSL's symbols out of the global namespace of the process (libcurl,
    // when OTLP loads it, brings its own).
    void* handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* err = dlerror();
      tried += fmt::format("{}{}", tried.empty() ? "" : "; ", err != nullptr ? err : name);
      continue;
    }
    auto lib = std::make_unique<tls_library>();
    std::string missing;
    resolve_all(handle, *lib, missing);
    if (!missing.empty()) {
      tried += fmt::format("{}{} lacks {}", tried.empty() ? "" : "; ", name, missing);
      dlclose(handle);
      continue;
    }
    lib->path = name;
    lib->init_ssl(0, nullptr);
    out.lib = std::move(lib);  // never closed: OpenSSL stays until exit
    return out;
  }
  out.why = fmt::format(
      "cannot load OpenSSL 3 ({}); install libssl3 (Debian, Ubuntu) or "
      "openssl-libs (Fedora, RHEL)",
      tried);
  return out;
}

}  // namespace

const tls_library* load_tls(std::string* why) {
  static const tls_load_result loaded = open_tls();
  if (loaded.lib == nullptr && why != nullptr) *why = loaded.why;
  return loaded.lib.get();
}

std::string tls_errors(const tls_library& lib) {
  std::string out;
  for (unsigned long e = lib.err_get_error(); e != 0; e = lib.err_get_error()) {
    std::array<char, 256> buf{};
    lib.err_error_string_n(e, buf.data(), buf.size());
    if (!out.empty()) out += "; ";
    out += buf.data();
  }
  return out.empty() ? "unknown OpenSSL error" : out;
}

}  // namespace joules::exporter
