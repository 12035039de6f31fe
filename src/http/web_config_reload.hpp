#pragma once
// `serve --web-config-file`, read again when it changes: a certificate renewed by certbot or
// cert-manager, a user added or a password changed take effect without a restart, as with the
// Prometheus exporter toolkit (docs/web-config.md, "Changes are picked up").
//
// A change is seen cheaply: at most once per check_interval, and only when the server has
// something to do (a new connection, a request), the file and the certificate, key and client CA
// files it names are stat()ed; a change of device, inode, size, modification or status-change
// time reads them all again.  (certbot and Kubernetes' secret volumes replace a file by a new one
// behind a symbolic link; stat() follows links, so the new inode tells.)  A forced refresh (SIGHUP)
// reads them again whatever their times.
//
// What is read again is checked as at start (web_config.hpp, tls_context.hpp, basic_auth.hpp).
// When it is good, new connections are served with the new certificate, new requests with the new
// users and headers; connections already set up keep the certificate they were handshaken with.
// When it is bad (not YAML, a missing or unreadable file, a key that is not the certificate's, TLS
// turned on or off, which needs a restart), joules goes on serving with the last good
// configuration and says why once per change, through `notice`.
//
// Thread-safety: construct on one thread, then refresh(), tls(), auth() and headers() from the
// server's thread only; last_reload_successful() and reloads() from any thread.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "util/clock.hpp"

namespace joules::exporter {

class tls_context;
class basic_auth;

// A file as stat() sees it (following symbolic links); `error` is stat's errno, 0 when it
// succeeded, and then the rest says which file it is and when it last changed.
struct file_stamp {
  int error = 0;
  std::uint64_t device = 0;
  std::uint64_t inode = 0;
  std::int64_t size = 0;
  std::int64_t mtime_s = 0;
  std::int64_t mtime_ns = 0;
  std::int64_t ctime_s = 0;
  std::int64_t ctime_ns = 0;
  friend bool operator==(const file_stamp&, const file_stamp&) = default;
};

file_stamp stamp_of(const std::string& path);

class web_config_reloader {
 public:
  // failed: the file could not be used (a warning); else it was read again (a note).  `line` is
  // joules' own text around outside strings (file names, YAML keys, OpenSSL's messages): the
  // caller escapes it for the terminal.
  using notice_fn = std::function<void(bool failed, const std::string& line)>;

  static constexpr std::chrono::milliseconds kCheckInterval{1000};

  // Reads and checks `file` as at start; throws usage_error naming what is wrong.
  web_config_reloader(std::string file, notice_fn notice,
                      std::chrono::milliseconds check_interval = kCheckInterval);
  ~web_config_reloader();
  web_config_reloader(const web_config_reloader&) = delete;
  web_config_reloader& operator=(const web_config_reloader&) = delete;

  // Serve HTTPS (fixed at start: a change of it is refused until a restart).
  bool tls_enabled() const { return tls_enabled_; }
  // What the server uses now: the TLS context (null without TLS), basic auth (null while no
  // users were ever given), the header lines added to every response.
  const std::shared_ptr<const tls_context>& tls() const { return tls_; }
  const std::shared_ptr<basic_auth>& auth() const { return auth_; }
  const std::string& headers() const { return headers_; }

  // At `now`: when `force`, or when check_interval has passed since the last look and a watched
  // file has changed, reads the configuration again.  True when a new configuration is now in
  // force (tls(), auth() and headers() may have changed); false when nothing changed or the
  // files could not be used.
  bool refresh(mono_time now, bool force = false);

  // Whether the last reading (at start, or the last refresh that read) was good.
  bool last_reload_successful() const { return ok_.load(); }
  // Readings since start that were good and bad.
  std::uint64_t reloads() const { return reloads_.load(); }
  std::uint64_t failures() const { return failures_.load(); }

 private:
  void load(bool at_start, std::vector<std::string>& files_named);
  void watch(const std::vector<std::string>& files_named, const std::vector<file_stamp>& before);
  std::vector<file_stamp> stamps() const;

  std::string file_;
  notice_fn notice_;
  std::chrono::milliseconds check_interval_;
  bool tls_enabled_ = false;
  std::shared_ptr<const tls_context> tls_;
  std::shared_ptr<basic_auth> auth_;
  std::string headers_;
  // The files a change is looked for in, and their stamps when they were last read (taken just
  // before, so that a write during the reading is seen at the next look).
  std::vector<std::string> watched_;
  std::vector<file_stamp> seen_;
  mono_time next_check_{};
  std::atomic<bool> ok_{true};
  std::atomic<std::uint64_t> reloads_{0};
  std::atomic<std::uint64_t> failures_{0};
};

}  // namespace joules::exporter
