#pragma once
// OpenSSL (libssl.so.3 and the libcrypto it loads), opened with dlopen when `serve
// --web-config-file` asks for TLS or basic auth, instead of linked: the programs and libraries
// that never serve HTTPS (libjoules, the Python module, every other command) do not load it, and
// the wheel's `joules` needs nothing but glibc.  Only its headers are needed to build.
//
// OpenSSL's macros (SSL_CTX_set_min_proto_version, SSL_CTX_set_mode, sk_*_num, ...) call the
// functions below; tls_context.cpp calls those through this table instead.

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <string>

namespace joules::exporter {

struct tls_library {
  decltype(&::OPENSSL_init_ssl) init_ssl;
  decltype(&::TLS_server_method) server_method;
  decltype(&::SSL_CTX_new) ctx_new;
  decltype(&::SSL_CTX_free) ctx_free;
  decltype(&::SSL_CTX_ctrl) ctx_ctrl;
  decltype(&::SSL_CTX_set_options) ctx_set_options;
  decltype(&::SSL_CTX_use_certificate) ctx_use_certificate;
  decltype(&::SSL_CTX_use_PrivateKey) ctx_use_private_key;
  decltype(&::SSL_CTX_check_private_key) ctx_check_private_key;
  decltype(&::SSL_CTX_set_verify) ctx_set_verify;
  decltype(&::SSL_CTX_get_cert_store) ctx_get_cert_store;
  decltype(&::SSL_CTX_add_client_CA) ctx_add_client_ca;
  decltype(&::SSL_CTX_set_cipher_list) ctx_set_cipher_list;
  decltype(&::SSL_CTX_set_session_id_context) ctx_set_session_id_context;
  decltype(&::SSL_CTX_get_ciphers) ctx_get_ciphers;
  decltype(&::SSL_CIPHER_standard_name) cipher_standard_name;
  decltype(&::SSL_CIPHER_get_name) cipher_get_name;
  decltype(&::SSL_new) ssl_new;
  decltype(&::SSL_free) ssl_free;
  decltype(&::SSL_set_fd) ssl_set_fd;
  decltype(&::SSL_accept) ssl_accept;
  decltype(&::SSL_read) ssl_read;
  decltype(&::SSL_write) ssl_write;
  decltype(&::SSL_shutdown) ssl_shutdown;
  decltype(&::SSL_get_error) ssl_get_error;
  decltype(&::SSL_pending) ssl_pending;
  decltype(&::ERR_get_error) err_get_error;
  decltype(&::ERR_error_string_n) err_error_string_n;
  decltype(&::ERR_clear_error) err_clear_error;
  decltype(&::BIO_new_mem_buf) bio_new_mem_buf;
  decltype(&::BIO_free) bio_free;
  decltype(&::PEM_read_bio_X509) pem_read_x509;
  decltype(&::PEM_read_bio_PrivateKey) pem_read_private_key;
  decltype(&::X509_free) x509_free;
  decltype(&::EVP_PKEY_free) pkey_free;
  decltype(&::X509_STORE_add_cert) store_add_cert;
  decltype(&::OPENSSL_sk_num) sk_num;
  decltype(&::OPENSSL_sk_value) sk_value;
  decltype(&::EVP_Digest) digest;
  decltype(&::EVP_sha256) sha256;
  std::string path;  // the file it was opened from
};

// OpenSSL 3, opened once per process (later calls return the same); nullptr when this machine
// has none with every function above, and then *why (when given) says what to install.
const tls_library* load_tls(std::string* why = nullptr);

// OpenSSL's queued errors as one text ("error:0A00...:SSL routines::..."), and the queue emptied.
std::string tls_errors(const tls_library& lib);

}  // namespace joules::exporter
