#pragma once
// TLS of the /metrics server (`serve --web-config-file`): the server's context made once from
// the web configuration (certificate and key, client certificates, versions, ciphers), and one
// non-blocking stream per connection.  OpenSSL is loaded at run time (tls_library.hpp).
//
// Thread-safety: a tls_context is built on one thread and then only read (OpenSSL's SSL_CTX is
// safe to share once set up); a tls_stream belongs to the server thread.

#include <cstddef>
#include <memory>
#include <string>

#include "http/web_config.hpp"

struct ssl_ctx_st;
struct ssl_st;

namespace joules::exporter {

struct tls_library;

enum class tls_result {
  done,        // the handshake is over, or bytes moved
  want_read,   // wait until the socket is readable, then call again
  want_write,  // wait until the socket is writable, then call again
  closed,      // the peer closed the TLS session (close_notify) or the socket under it
  failed,      // not TLS, a certificate refused, a bad record: drop the connection
};

class tls_stream {
 public:
  tls_stream(const tls_library& lib, ssl_st* ssl) : lib_(&lib), ssl_(ssl) {}
  ~tls_stream();
  tls_stream(const tls_stream&) = delete;
  tls_stream& operator=(const tls_stream&) = delete;

  tls_result handshake();
  // At most n bytes into buf; `moved` says how many.
  tls_result read(char* buf, std::size_t n, std::size_t& moved);
  tls_result write(const char* data, std::size_t n, std::size_t& moved);
  // Decrypted bytes held inside OpenSSL that a poll() on the socket would not announce.
  bool pending() const;
  // Sends close_notify once, without waiting for the peer's.
  void close_notify();
  bool handshake_done() const { return done_; }

 private:
  tls_result result_of(int ret);
  const tls_library* lib_;
  ssl_st* ssl_;
  bool done_ = false;
};

class tls_context {
 public:
  // OpenSSL loaded, the certificate chain and its key checked against each other, the client CA
  // read.  Throws usage_error ("--web-config-file FILE: ...") naming what is wrong.
  tls_context(const tls_settings& settings, const std::string& file);
  ~tls_context();
  tls_context(const tls_context&) = delete;
  tls_context& operator=(const tls_context&) = delete;

  // A stream over the accepted socket `fd` (which stays the caller's); nullptr when OpenSSL
  // cannot make one (out of memory).
  std::unique_ptr<tls_stream> open(int fd) const;

 private:
  const tls_library* lib_;
  ssl_ctx_st* ctx_ = nullptr;
};

}  // namespace joules::exporter
