#pragma once
// JSONL output: every record is one line, written with one write() and so flushed to the
// kernel at once; a joules killed with SIGKILL leaves a file every line
// of which parses.  A failed write (disk full, a closed pipe) is counted, never fatal: the child
// runs on and the count is reported.
//
// Thread-safety: write() may be called from several threads (the sampler writes window records
// while the main thread writes session records); each call is one write(2) under a mutex.

#include <functional>
#include <mutex>
#include <string>
#include <string_view>

namespace joules {

class jsonl_sink {
 public:
  enum class mode { truncate, append };

  // Opens `path` ("-" is stdout) or adopts `fd` (stderr for --json).  Throws usage_error when
  // the file cannot be opened for writing, naming it and why.
  static jsonl_sink open_file(const std::string& path, mode m);
  static jsonl_sink adopt_fd(int fd, std::string name);

  jsonl_sink(jsonl_sink&& o) noexcept;
  jsonl_sink& operator=(jsonl_sink&&) = delete;
  jsonl_sink(const jsonl_sink&) = delete;
  ~jsonl_sink();

  // Writes `record` followed by a newline in a single write(2).
  void write(std::string_view record);

  int failed_writes() const;
  // Hands every record, one line with its newline, to `to` instead of writing it: `wrap` passes
  // the records that share stdout or stderr with the command's output to its output channel,
  // which writes them between the command's lines.  Records `to` could not write are counted
  // with add_failed().
  void route(std::function<void(std::string_view line)> to);
  void add_failed(int n);
  const std::string& name() const { return name_; }
  int fd() const { return fd_; }

 private:
  jsonl_sink(int fd, bool owned, std::string name)
      : fd_(fd), owned_(owned), name_(std::move(name)) {}

  int fd_;
  bool owned_;
  std::string name_;
  mutable std::mutex mu_;
  int failed_ = 0;
  std::string line_;  // reused buffer, guarded by mu_
  std::function<void(std::string_view)> route_;
};

}  // namespace joules
