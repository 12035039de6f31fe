#include "session/record_files.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "report/reader.hpp"
#include "term/messages.hpp"
#include "util/error.hpp"

namespace joules::session {
namespace {

// Reads a whole file; false with errno set when it cannot.
bool slurp(const std::string& path, std::string& out) {
  const int fd = path == "-" ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    if (fd != STDIN_FILENO) ::close(fd);
    errno = EISDIR;
    return false;
  }
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
    out.reserve(static_cast<std::size_t>(st.st_size));
  char buf[1 << 16];
  bool ok = true;
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    ok = n == 0;
    break;
  }
  const int saved = errno;
  if (fd != STDIN_FILENO) ::close(fd);
  errno = saved;
  return ok;
}

std::string folder_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

// A regular file mapped into memory (the thousand files of an aggregate are read without a copy),
// else nothing: the caller reads it.
class mapped_file {
 public:
  explicit mapped_file(const std::string& path) {
    if (path == "-") return;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
      size_ = static_cast<std::size_t>(st.st_size);
      void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p != MAP_FAILED) {
        data_ = p;
        ::madvise(p, size_, MADV_SEQUENTIAL);
      }
    }
    ::close(fd);
  }
  ~mapped_file() {
    if (data_ != nullptr) ::munmap(data_, size_);
  }
  mapped_file(const mapped_file&) = delete;
  mapped_file& operator=(const mapped_file&) = delete;
  bool ok() const { return data_ != nullptr; }
  std::string_view text() const { return {static_cast<const char*>(data_), size_}; }

 private:
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

report::record_set read_records(const std::vector<std::string>& files, const read_options& o) {
  report::reader reader(o.scope);
  std::size_t used = 0;
  std::string text;
  for (const auto& f : files) {
    text.clear();
    const mapped_file mapped(f);
    if (!mapped.ok() && !slurp(f, text)) {
      throw usage_error(fmt::format("cannot read {}: {}; give joules' JSONL record files",
                                    f == "-" ? "standard input" : f, std::strerror(errno)));
    }
    const std::string name = f == "-" ? "stdin" : f;
    const report::file_result r = reader.add_file(name, mapped.ok() ? mapped.text() : text);
    if (!r.unusable) {
      ++used;
      continue;
    }
    const auto& u = *r.unusable;
    if (r.lines == 0 && o.skip_empty) {
      if (!o.quiet) term::print_warning(fmt::format("{}: empty, skipped", name));
      continue;
    }
    throw usage_error(r.lines == 0
                          ? fmt::format("{} is empty: it holds no joules records", name)
                          : fmt::format("{}:{}: not joules' JSONL records ({}); give files "
                                        "written by joules run or wrap --output",
                                        name, u.line, u.message));
  }
  if (used == 0) throw usage_error("no joules records in the files given");
  report::record_set set = reader.take();
  if (!o.quiet) {
    for (const auto& w : set.warnings) {
      term::print_warning(w.line > 0 ? fmt::format("{}:{}: {}", w.file, w.line, w.message)
                                     : fmt::format("{}: {}", w.file, w.message));
    }
  }
  return set;
}

void check_writable(const std::string& path, std::string_view option) {
  if (path == "-") return;
  if (path.empty()) throw usage_error(fmt::format("{} '': expected a file path", option));
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    throw usage_error(fmt::format("{} '{}': is a folder; expected a file path", option, path));
  }
  const std::string dir = folder_of(path);
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    throw usage_error(
        fmt::format("{} '{}': cannot write in {}: {}", option, path, dir, std::strerror(errno)));
  }
}

void write_whole(const std::string& path, std::string_view contents) {
  if (path == "-") {
    std::fwrite(contents.data(), 1, contents.size(), stdout);
    if (std::fflush(stdout) != 0) throw fatal_error("cannot write to standard output");
    return;
  }
  std::string tmp = path + ".tmp-XXXXXX";
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) {
    throw fatal_error(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
  }
  std::size_t done = 0;
  int error = 0;
  while (done < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = errno;
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  // The mode a file created with open() would have: mkstemp makes it 0600.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  if (error == 0 && ::fchmod(fd, 0666 & ~mask) != 0) error = errno;
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) error = errno;
  if (error != 0) {
    ::unlink(tmp.c_str());
    throw fatal_error(fmt::format("cannot write {}: {}", path, std::strerror(error)));
  }
}

}  // namespace joules::session
