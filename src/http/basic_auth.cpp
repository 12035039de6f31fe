#include "http/basic_auth.hpp"

#include <crypt.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <stop_token>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "http/listen_socket.hpp"
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

using auth_digest = std::array<unsigned char, 32>;

struct auth_digest_hash {
  std::size_t operator()(const auth_digest& d) const {
    std::size_t h = 0;
    std::memcpy(&h, d.data(), sizeof h);  // SHA-256 bytes are uniform already
    return h;
  }
};

// One check for the bcrypt thread, of the users of one generation (replace_users starts the next).
struct auth_job {
  auth_digest key;
  std::string password;
  std::string hash;
  bool known;
  std::uint64_t generation = 0;
};

struct basic_auth::state {
  std::vector<std::pair<std::string, std::string>> users;
  std::string decoy_hash;  // for unknown users
  const tls_library* crypto = nullptr;
  crypt_rn_fn crypt_rn = nullptr;
  detail::unique_fd ready;
  std::mutex mutex;
  std::condition_variable_any wake;
  std::unordered_map<auth_digest, bool, auth_digest_hash> cache;  // under mutex
  std::unordered_set<auth_digest, auth_digest_hash> queued;       // under mutex
  std::deque<auth_job> jobs;                                      // under mutex
  std::uint64_t generation = 0;                                   // under mutex
  std::atomic<std::size_t> bcrypt_calls{0};
  std::jthread worker;  // last: stopped and joined before the rest goes

  bool verify(const std::string& password, const std::string& hash) {
    ++bcrypt_calls;
    auto data = std::make_unique<crypt_data>();  // ~32 KiB: not on the stack
    const char* out =
        crypt_rn(password.c_str(), hash.c_str(), data.get(), static_cast<int>(sizeof(crypt_data)));
    if (out == nullptr || std::strlen(out) != hash.size()) return false;
    // Constant time over the hash's length: bcrypt's output is compared whole.
    unsigned char diff = 0;
    for (std::size_t i = 0; i < hash.size(); ++i)
      diff |= static_cast<unsigned char>(out[i] ^ hash[i]);
    return diff == 0;
  }

  void remember(const auth_digest& key, bool ok) {
    if (cache.size() >= kMaxCachedAnswers)
      std::erase_if(cache, [](const auto& e) { return !e.second; });
    cache.emplace(key, ok);
  }

  void run(const std::stop_token& stop) {
    std::unique_lock lock(mutex);
    while (true) {
      wake.wait(lock, stop, [this] { return !jobs.empty(); });
      if (stop.stop_requested()) return;
      auth_job job = std::move(jobs.front());
      jobs.pop_front();
      lock.unlock();
      const bool ok = verify(job.password, job.hash) && job.known;
      std::fill(job.password.begin(), job.password.end(), '\0');
      lock.lock();
      // An answer about users replaced meanwhile is dropped; the request is checked again.
      if (job.generation == generation) {
        queued.erase(job.key);
        remember(job.key, ok);
      }
      const std::uint64_t one = 1;
      [[maybe_unused]] const auto n = ::write(ready.get(), &one, sizeof one);
    }
  }

  // The credentials' digest and what is known of them; nullopt when they are not Basic ones.
  std::optional<auth_job> job_of(std::string_view authorization) {
    auto creds = decode_basic_credentials(authorization);
    if (!creds) return std::nullopt;
    auto& [user, password] = *creds;
    // A password with a NUL cannot be passed to crypt, and no hash can match it.
    if (password.find('\0') != std::string::npos) return std::nullopt;
    std::string key = user;
    key += '\0';
    key += password;
    auth_job job{{}, std::move(password), decoy_hash, false};
    unsigned int size = 0;
    const bool hashed = crypto->digest(key.data(), key.size(), job.key.data(), &size,
                                       crypto->sha256(), nullptr) == 1 &&
                        size == job.key.size();
    std::fill(key.begin(), key.end(), '\0');
    if (!hashed) return std::nullopt;
    for (const auto& [name, h] : users) {
      if (name == user) {
        job.hash = h;
        job.known = true;
      }
    }
    return job;
  }
};

basic_auth::basic_auth(std::vector<std::pair<std::string, std::string>> users,
                       const std::string& file)
    : s_(std::make_unique<state>()) {
  s_->users = std::move(users);
  std::string why;
  s_->crypt_rn = load_crypt_rn(&why);
  if (s_->crypt_rn == nullptr)
    throw usage_error(fmt::format("--web-config-file {}: basic_auth_users: {}", file, why));
  s_->crypto = load_tls(&why);
  if (s_->crypto == nullptr)
    throw usage_error(fmt::format("--web-config-file {}: basic_auth_users: {}", file, why));
  // An unknown user is checked against a real hash: as slow as a known one, never accepted.
  if (!s_->users.empty()) s_->decoy_hash = s_->users.front().second;
  s_->ready = detail::unique_fd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!s_->ready) throw fatal_error("cannot create the basic auth thread's eventfd");
  s_->worker = std::jthread([s = s_.get()](const std::stop_token& stop) { s->run(stop); });
}

basic_auth::~basic_auth() {
  s_->worker.request_stop();
  if (s_->worker.joinable()) s_->worker.join();
}

basic_auth::verdict basic_auth::check(std::string_view authorization) {
  if (s_->users.empty()) return verdict::allow;
  auto job = s_->job_of(authorization);
  if (!job) return verdict::deny;
  const std::lock_guard lock(s_->mutex);
  if (const auto it = s_->cache.find(job->key); it != s_->cache.end())
    return it->second ? verdict::allow : verdict::deny;
  if (s_->queued.contains(job->key)) return verdict::pending;
  if (s_->jobs.size() >= kMaxPendingChecks) return verdict::deny;
  s_->queued.insert(job->key);
  job->generation = s_->generation;
  s_->jobs.push_back(std::move(*job));
  s_->wake.notify_one();
  return verdict::pending;
}

void basic_auth::replace_users(std::vector<std::pair<std::string, std::string>> users) {
  if (users == s_->users) return;  // the cache stays good
  s_->users = std::move(users);
  if (!s_->users.empty()) s_->decoy_hash = s_->users.front().second;
  {
    const std::lock_guard lock(s_->mutex);
    ++s_->generation;
    s_->cache.clear();
    s_->queued.clear();
    s_->jobs.clear();
  }
  // Requests waiting for a check that will not come are checked again, against the new users.
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto n = ::write(s_->ready.get(), &one, sizeof one);
}

int basic_auth::ready_fd() const {
  return s_->ready.get();
}

void basic_auth::take_ready() {
  std::uint64_t n = 0;
  [[maybe_unused]] const auto r = ::read(s_->ready.get(), &n, sizeof n);
}

bool basic_auth::allows(std::string_view authorization) {
  for (;;) {
    const verdict v = check(authorization);
    if (v != verdict::pending) return v == verdict::allow;
    pollfd p{ready_fd(), POLLIN, 0};
    ::poll(&p, 1, 100);
    take_ready();
  }
}

std::size_t basic_auth::bcrypt_calls() const {
  return s_->bcrypt_calls.load();
}

}  // namespace joules::exporter
