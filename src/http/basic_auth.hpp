#pragma once
// Basic authentication of /metrics (`basic_auth_users` of the web configuration file): users and
// their bcrypt hashes, checked with libxcrypt's crypt_rn (loaded at run time), which knows
// bcrypt's $2a$, $2b$ and $2y$.  As the Prometheus exporter toolkit does, a checked answer is
// cached, so a scraper that sends the same credentials at every scrape costs one bcrypt in all,
// not one per scrape: the cache is keyed by SHA-256 of user and password (no password is kept),
// and holds good and bad answers alike.  An unknown user is checked against a fixed hash of the
// same cost, so the time of an answer does not tell which users exist.
//
// bcrypt runs on a thread of its own, one check at a time, so that the server's thread never
// waits for it: a client trying passwords delays no scrape whose credentials are cached.
//
// Thread-safety: check(), take_ready(), allows() and replace_users() from one thread (the
// server's).

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace joules::exporter {

struct tls_library;

// The user and password of an `Authorization: Basic <base64>` value (RFC 7617), or nullopt when
// it is not one (another scheme, bad base64, no colon).
std::optional<std::pair<std::string, std::string>> decode_basic_credentials(
    std::string_view authorization);

class basic_auth {
 public:
  enum class verdict { allow, deny, pending };

  // Loads libcrypt and OpenSSL's libcrypto (for the cache's SHA-256) and starts the bcrypt
  // thread.  Throws usage_error ("--web-config-file FILE: ...") when either is missing.
  basic_auth(std::vector<std::pair<std::string, std::string>> users, const std::string& file);
  ~basic_auth();
  basic_auth(const basic_auth&) = delete;
  basic_auth& operator=(const basic_auth&) = delete;

  // For the server's thread, which must not wait for bcrypt: allow or deny when the answer is
  // known (cached, or no credentials at all), else pending: the check is queued on the bcrypt
  // thread, ready_fd() becomes readable when it is done, and the same call then answers.  With
  // more than kMaxPendingChecks different checks queued, a new one is denied at once.
  verdict check(std::string_view authorization);
  // An eventfd, readable when a queued check has finished; drain it with take_ready().
  int ready_fd() const;
  void take_ready();

  // New users and hashes (the web configuration file was read again).  When they differ from the
  // old ones, the cached answers are forgotten and the checks still queued or under way are
  // dropped; ready_fd() becomes readable, so that the requests that waited for them are checked
  // again, against the new users.  With no users, every request is allowed.
  void replace_users(std::vector<std::pair<std::string, std::string>> users);

  // The same answer, waiting for bcrypt when it must (tests).
  bool allows(std::string_view authorization);

  std::size_t bcrypt_calls() const;

  static constexpr std::size_t kMaxPendingChecks = 64;

 private:
  struct state;
  std::unique_ptr<state> s_;
};

}  // namespace joules::exporter
