#include "record/jsonl_sink.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "util/error.hpp"

namespace joules {

jsonl_sink jsonl_sink::open_file(const std::string& path, mode m) {
  return open_file(path, m, rotation{});
}

jsonl_sink jsonl_sink::open_file(const std::string& path, mode m, rotation r) {
  if (path == "-") return jsonl_sink(STDOUT_FILENO, false, "stdout");
  if (path.empty()) throw usage_error("--output '': expected a file path, or - for stdout");
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (m == mode::append ? O_APPEND : O_TRUNC);
  const int fd = ::open(path.c_str(), flags, 0644);
  if (fd < 0) {
    throw usage_error(
        fmt::format("--output '{}': cannot open it for writing: {}", path, std::strerror(errno)));
  }
  jsonl_sink sink(fd, true, path);
  struct stat st {};
  if (r.max_bytes > 0 && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    sink.rotation_ = r;
    sink.size_ = static_cast<std::uint64_t>(st.st_size);
  }
  return sink;
}

bool jsonl_sink::rotate() {
  // FILE.keep is replaced by FILE.(keep-1), ..., FILE.1 by FILE; with keep 0, FILE is removed.
  for (unsigned i = rotation_.keep; i > 1; --i) {
    const std::string from = fmt::format("{}.{}", name_, i - 1);
    if (::rename(from.c_str(), fmt::format("{}.{}", name_, i).c_str()) != 0 && errno != ENOENT)
      return false;
  }
  if (rotation_.keep == 0 ? ::unlink(name_.c_str()) != 0
                          : ::rename(name_.c_str(), (name_ + ".1").c_str()) != 0)
    return false;
  const int fd = ::open(name_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  ::close(fd_);
  fd_ = fd;
  size_ = 0;
  ++rotations_;
  return true;
}

jsonl_sink jsonl_sink::adopt_fd(int fd, std::string name) {
  return jsonl_sink(fd, false, std::move(name));
}

jsonl_sink::jsonl_sink(jsonl_sink&& o) noexcept
    : fd_(o.fd_),
      owned_(o.owned_),
      name_(std::move(o.name_)),
      failed_(o.failed_),
      rotation_(o.rotation_),
      size_(o.size_),
      rotations_(o.rotations_),
      route_(std::move(o.route_)) {
  o.fd_ = -1;
  o.owned_ = false;
}

jsonl_sink::~jsonl_sink() {
  if (owned_ && fd_ >= 0) ::close(fd_);
}

void jsonl_sink::write(std::string_view record) {
  std::lock_guard lock(mu_);
  line_.assign(record);
  line_ += '\n';
  if (route_) {
    route_(line_);
    return;
  }
  if (rotation_.max_bytes > 0 && size_ > 0 && size_ + line_.size() > rotation_.max_bytes) rotate();
  while (true) {
    const ssize_t n = ::write(fd_, line_.data(), line_.size());
    if (n == static_cast<ssize_t>(line_.size())) {
      size_ += line_.size();
      return;
    }
    if (n < 0 && errno == EINTR) continue;
    // A short or failed write (disk full): the record is lost.  A partial line would break the
    // file for every reader, so in a regular file it is cut off again.
    if (n > 0) {
      const off_t end = ::lseek(fd_, 0, SEEK_CUR);
      if (end >= n && ::ftruncate(fd_, end - n) == 0) ::lseek(fd_, end - n, SEEK_SET);
    }
    ++failed_;
    return;
  }
}

void jsonl_sink::route(std::function<void(std::string_view line)> to) {
  std::lock_guard lock(mu_);
  route_ = std::move(to);
}

void jsonl_sink::add_failed(int n) {
  std::lock_guard lock(mu_);
  failed_ += n;
}

int jsonl_sink::rotations() const {
  std::lock_guard lock(mu_);
  return rotations_;
}

int jsonl_sink::failed_writes() const {
  std::lock_guard lock(mu_);
  return failed_;
}

}  // namespace joules
