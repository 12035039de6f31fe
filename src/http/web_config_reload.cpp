#include "http/web_config_reload.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <exception>
#include <utility>

#include "http/basic_auth.hpp"
#include "http/tls_context.hpp"
#include "http/web_config.hpp"
#include "util/error.hpp"

namespace joules::exporter {
namespace {

// The header lines of http_server_config, as the server adds them to every response.
std::string web_config_header_lines(const web_config& c) {
  std::string out;
  for (const auto& [name, value] : c.headers) {
    // Every response already says nosniff (http_response.cpp).
    if (name == "X-Content-Type-Options") continue;
    out += fmt::format("{}: {}\r\n", name, value);
  }
  return out;
}

}  // namespace

file_stamp stamp_of(const std::string& path) {
  file_stamp s;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    s.error = errno != 0 ? errno : EIO;
    return s;
  }
  s.device = static_cast<std::uint64_t>(st.st_dev);
  s.inode = static_cast<std::uint64_t>(st.st_ino);
  s.size = static_cast<std::int64_t>(st.st_size);
  s.mtime_s = static_cast<std::int64_t>(st.st_mtim.tv_sec);
  s.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_nsec);
  s.ctime_s = static_cast<std::int64_t>(st.st_ctim.tv_sec);
  s.ctime_ns = static_cast<std::int64_t>(st.st_ctim.tv_nsec);
  return s;
}

web_config_reloader::web_config_reloader(std::string file, notice_fn notice,
                                         std::chrono::milliseconds check_interval)
    : file_(std::move(file)), notice_(std::move(notice)), check_interval_(check_interval) {
  watched_ = {file_};
  const std::vector<file_stamp> before = stamps();
  std::vector<std::string> named;
  load(/*at_start=*/true, named);
  watch(named, before);
  next_check_ = steady::now() + check_interval_;
}

web_config_reloader::~web_config_reloader() = default;

std::vector<file_stamp> web_config_reloader::stamps() const {
  std::vector<file_stamp> out;
  out.reserve(watched_.size());
  for (const std::string& path : watched_)
    out.push_back(stamp_of(path));
  return out;
}

// Reads the files and makes what the server needs from them.  Anything wrong throws before a
// member changes, so the last good configuration stays whole.
void web_config_reloader::load(bool at_start, std::vector<std::string>& files_named) {
  const web_config c = load_web_config(file_, &files_named);
  if (!at_start && c.tls != tls_enabled_) {
    throw usage_error(fmt::format(
        "--web-config-file {}: tls_server_config now turns TLS {}; joules serve changes between "
        "http and https only when it starts",
        file_, c.tls ? "on" : "off"));
  }
  std::shared_ptr<const tls_context> tls;
  if (c.tls) tls = std::make_shared<const tls_context>(c.tls_server, file_);
  std::string headers = web_config_header_lines(c);
  std::shared_ptr<basic_auth> auth = auth_;
  if (!auth && !c.users.empty()) auth = std::make_shared<basic_auth>(c.users, file_);
  // Last: it changes the users in place.
  if (auth && auth == auth_) auth->replace_users(c.users);
  tls_enabled_ = c.tls;
  tls_ = std::move(tls);
  auth_ = std::move(auth);
  headers_ = std::move(headers);
}

// From now on, a change is looked for in `files_named` (the files of the last reading), against
// their stamps from before that reading.
void web_config_reloader::watch(const std::vector<std::string>& files_named,
                                const std::vector<file_stamp>& before) {
  if (files_named.empty()) {  // the file itself could not be read or parsed
    seen_ = before;
    return;
  }
  std::vector<file_stamp> seen;
  seen.reserve(files_named.size());
  for (const std::string& path : files_named) {
    const auto it = std::find(watched_.begin(), watched_.end(), path);
    seen.push_back(it != watched_.end() ? before[static_cast<std::size_t>(it - watched_.begin())]
                                        : stamp_of(path));
  }
  watched_ = files_named;
  seen_ = std::move(seen);
}

bool web_config_reloader::refresh(mono_time now, bool force) {
  if (!force && now < next_check_) return false;
  next_check_ = now + check_interval_;
  const std::vector<file_stamp> before = stamps();
  if (!force && before == seen_) return false;
  std::vector<std::string> named;
  try {
    load(/*at_start=*/false, named);
  } catch (const std::exception& e) {
    watch(named, before);  // the same files, unchanged, are not read again
    ok_ = false;
    ++failures_;
    notice_(true, fmt::format("{}; joules serves on with the last good configuration", e.what()));
    return false;
  }
  watch(named, before);
  ok_ = true;
  ++reloads_;
  notice_(false, fmt::format("--web-config-file {} read again: its certificates, users and "
                             "headers are in force from now on",
                             file_));
  return true;
}

}  // namespace joules::exporter
