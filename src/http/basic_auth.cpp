#include "http/basic_auth.hpp"

#include <crypt.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <cstring>
#include <memory>

#include "http/tls_library.hpp"
#include "util/error.hpp"

namespace joules::exporter {
namespace {

// Bad answers kept at most (good ones are at most one per user and always kept).
constexpr std::size_t kMaxCachedAnswers = 1024;

using crypt_rn_fn = decltype(&::crypt_rn);

struct crypt_load_result {
  crypt_rn_fn fn = nullptr;
  std::string why;
};

// libxcrypt's crypt_rn: glibc's own libcrypt (before 2.38 some distributions shipped it) has
// crypt_r without bcrypt, and no crypt_rn.
crypt_load_result open_crypt() {
  crypt_load_result out;
  void* handle = dlopen("libcrypt.so.1", RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    out.why = fmt::format(
        "cannot load libcrypt ({}); install libcrypt1 (Debian, Ubuntu) or "
        "libxcrypt (Fedora, RHEL)",
        err != nullptr ? err : "libcrypt.so.1");
    return out;
  }
  // POSIX guarantees that a dlsym result converts to a function pointer.
  out.fn = reinterpret_cast<crypt_rn_fn>(dlsym(handle, "crypt_rn"));
  if (out.fn == nullptr) {
    out.why = "libcrypt.so.1 has no crypt_rn: bcrypt needs libxcrypt";
    dlclose(handle);
  }
  return out;
}

crypt_rn_fn load_crypt_rn(std::string* why) {
  static const crypt_load_result loaded = open_crypt();
  if (loaded.fn == nullptr && why != nullptr) *why = loaded.why;
  return loaded.fn;
}

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// Standard base64 with its padding (RFC 4648 §4), as RFC 7617 asks.
std::optional<std::string> decode_base64(std::string_view in) {
  if (in.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(in.size() / 4 * 3);
  for (std::size_t i = 0; i < in.size(); i += 4) {
    const bool last = i + 4 == in.size();
    std::uint32_t v = 0;
    int pad = 0;
    for (std::size_t j = 0; j < 4; ++j) {
      const char c = in[i + j];
      if (c == '=' && last && j >= 2) {
        ++pad;
        v <<= 6;
        continue;
      }
      if (pad > 0) return std::nullopt;  // data after padding
      const int d = base64_value(c);
      if (d < 0) return std::nullopt;
      v = (v << 6) | static_cast<std::uint32_t>(d);
    }
    out += static_cast<char>((v >> 16) & 0xff);
    if (pad < 2) out += static_cast<char>((v >> 8) & 0xff);
    if (pad < 1) out += static_cast<char>(v & 0xff);
  }
  return out;
}

bool iequals_ascii(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

}  // namespace

std::optional<std::pair<std::string, std::string>> decode_basic_credentials(
    std::string_view authorization) {
  // "Basic" is case-insensitive (RFC 9110 §11.1), then one or more spaces.
  constexpr std::string_view kScheme = "basic";
  if (authorization.size() <= kScheme.size() ||
      !iequals_ascii(authorization.substr(0, kScheme.size()), kScheme) ||
      authorization[kScheme.size()] != ' ')
    return std::nullopt;
  std::string_view token = authorization.substr(kScheme.size());
  while (!token.empty() && token.front() == ' ')
    token.remove_prefix(1);
  while (!token.empty() && (token.back() == ' ' || token.back() == '\t'))
    token.remove_suffix(1);
  const auto decoded = decode_base64(token);
  if (!decoded) return std::nullopt;
  const auto colon = decoded->find(':');
  if (colon == std::string::npos) return std::nullopt;
  return std::pair{decoded->substr(0, colon), decoded->substr(colon + 1)};
}

std::size_t basic_auth::digest_hash::operator()(const digest& d) const {
  std::size_t h = 0;
  std::memcpy(&h, d.data(), sizeof h);  // SHA-256 bytes are uniform already
  return h;
}

basic_auth::basic_auth(std::vector<std::pair<std::string, std::string>> users,
                       const std::string& file)
    : users_(std::move(users)) {
  std::string why;
  if (load_crypt_rn(&why) == nullptr)
    throw usage_error(fmt::format("--web-config-file {}: basic_auth_users: {}", file, why));
  crypto_ = load_tls(&why);
  if (crypto_ == nullptr)
    throw usage_error(fmt::format("--web-config-file {}: basic_auth_users: {}", file, why));
  // An unknown user is checked against a real hash: as slow as a known one, never accepted.
  if (!users_.empty()) decoy_hash_ = users_.front().second;
}

bool basic_auth::verify(const std::string& password, const std::string& hash) {
  ++bcrypt_calls_;
  auto data = std::make_unique<crypt_data>();  // ~32 KiB: not on the stack
  const char* out = load_crypt_rn(nullptr)(password.c_str(), hash.c_str(), data.get(),
                                           static_cast<int>(sizeof(crypt_data)));
  if (out == nullptr || std::strlen(out) != hash.size()) return false;
  // Constant time over the hash's length: bcrypt's output is compared whole.
  unsigned char diff = 0;
  for (std::size_t i = 0; i < hash.size(); ++i)
    diff |= static_cast<unsigned char>(out[i] ^ hash[i]);
  return diff == 0;
}

bool basic_auth::allows(std::string_view authorization) {
  if (users_.empty()) return true;
  const auto creds = decode_basic_credentials(authorization);
  if (!creds) return false;
  const auto& [user, password] = *creds;
  // A password with a NUL cannot be passed to crypt, and no hash can match it.
  if (password.find('\0') != std::string::npos) return false;
  std::string key = user;
  key += '\0';
  key += password;
  digest d{};
  unsigned int size = 0;
  if (crypto_->digest(key.data(), key.size(), d.data(), &size, crypto_->sha256(), nullptr) != 1 ||
      size != d.size())
    return false;
  std::fill(key.begin(), key.end(), '\0');
  if (const auto it = cache_.find(d); it != cache_.end()) return it->second;
  const std::string* hash = &decoy_hash_;
  bool known = false;
  for (const auto& [name, h] : users_) {
    if (name == user) {
      hash = &h;
      known = true;
    }
  }
  const bool ok = verify(password, *hash) && known;
  if (cache_.size() >= kMaxCachedAnswers)
    std::erase_if(cache_, [](const auto& e) { return !e.second; });
  cache_.emplace(d, ok);
  return ok;
}

}  // namespace joules::exporter
