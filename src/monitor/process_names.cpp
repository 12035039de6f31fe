#include "monitor/process_names.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>

namespace joules::monitor {
namespace {

// Long command lines are cut: the screen shows one line per process.
constexpr std::size_t kMaxCommand = 512;

// Up to kMaxCommand bytes of a small procfs file; empty when it cannot be read.
std::string read_small(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::array<char, kMaxCommand> buf{};
  std::size_t got = 0;
  while (got < buf.size()) {
    const ssize_t n = ::read(fd, buf.data() + got, buf.size() - got);
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  return std::string(buf.data(), got);
}

}  // namespace

std::string user_name(unsigned uid) {
  passwd pw{};
  passwd* found = nullptr;
  std::array<char, 4096> buf{};
  if (getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr &&
      found->pw_name != nullptr) {
    return found->pw_name;
  }
  return std::to_string(uid);
}

process_names::entry process_names::read(unsigned pid) const {
  entry e;
  const std::string dir = root_ + "/" + std::to_string(pid);
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0) return e;
  e.user = user_name(st.st_uid);
  std::string text = read_small(dir + "/cmdline");
  while (!text.empty() && text.back() == '\0')
    text.pop_back();
  for (char& c : text) {
    if (c == '\0' || c == '\n' || c == '\t') c = ' ';
  }
  if (text.empty()) {
    // Kernel threads and zombies have no command line: their name, in brackets as ps shows it.
    std::string name = read_small(dir + "/comm");
    while (!name.empty() && name.back() == '\n')
      name.pop_back();
    if (!name.empty()) text = "[" + name + "]";
  }
  e.command = text;
  return e;
}

const process_names::entry& process_names::lookup(unsigned pid) {
  auto it = cache_.find(pid);
  if (it == cache_.end()) it = cache_.emplace(pid, std::make_pair(read(pid), true)).first;
  it->second.second = true;
  return it->second.first;
}

void process_names::forget_unused() {
  for (auto it = cache_.begin(); it != cache_.end();) {
    if (!it->second.second) {
      it = cache_.erase(it);
    } else {
      it->second.second = false;
      ++it;
    }
  }
}

}  // namespace joules::monitor
