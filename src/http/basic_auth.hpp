#pragma once
// Basic authentication of /metrics (`basic_auth_users` of the web configuration file): users and
// their bcrypt hashes, checked with libxcrypt's crypt_rn (loaded at run time), which knows
// bcrypt's $2a$, $2b$ and $2y$.  As the Prometheus exporter toolkit does, a checked answer is
// cached, so a scraper that sends the same credentials at every scrape costs one bcrypt in all,
// not one per scrape: the cache is keyed by SHA-256 of user and password (no password is kept),
// and holds good and bad answers alike.  An unknown user is checked against a fixed hash of the
// same cost, so the time of an answer does not tell which users exist.
//
// Thread-safety: one thread (the server's).

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
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
  // Loads libcrypt and OpenSSL's libcrypto (for the cache's SHA-256).  Throws usage_error
  // ("--web-config-file FILE: ...") when either is missing.
  basic_auth(std::vector<std::pair<std::string, std::string>> users, const std::string& file);

  // Whether an Authorization header value (empty when there is none) names a user and the
  // password of its hash.
  bool allows(std::string_view authorization);

  std::size_t bcrypt_calls() const { return bcrypt_calls_; }

 private:
  using digest = std::array<unsigned char, 32>;
  struct digest_hash {
    std::size_t operator()(const digest& d) const;
  };
  bool verify(const std::string& password, const std::string& hash);

  std::vector<std::pair<std::string, std::string>> users_;
  std::string decoy_hash_;  // for unknown users
  const tls_library* crypto_;
  std::unordered_map<digest, bool, digest_hash> cache_;
  std::size_t bcrypt_calls_ = 0;
};

}  // namespace joules::exporter
