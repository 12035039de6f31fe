#pragma once
// JSONL output: every record is one line, written with one write() and so flushed to the
// kernel at once; a joules killed with SIGKILL leaves a file every line
// of which parses.  A failed write (disk full, a closed pipe) is counted, never fatal: the child
// runs on and the count is reported.
//
// Thread-safety: write() may be called from several threads (the sampler writes window records
// while the main thread writes session records); each call is one write(2) under a mutex.

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>

namespace joules {

class jsonl_sink {
 public:
  enum class mode { truncate, append };
  // Rotation of a file that grows for as long as joules runs (monitor --output): before a record
  // would take the file past `max_bytes`, FILE becomes FILE.1 (FILE.1 becomes FILE.2, ... up to
  // FILE.`keep`; the oldest beyond is removed) and a new FILE is started. 0: never rotated.
  // A record larger than `max_bytes` still goes whole into a file of its own.
  struct rotation {
    std::uint64_t max_bytes = 0;
    unsigned keep = 1;
  };

  // Opens `path` ("-" is stdout) or adopts `fd` (stderr for --json).  Throws usage_error when
  // the file cannot be opened for writing, naming it and why.
  static jsonl_sink open_file(const std::string& path, mode m);
  static jsonl_sink open_file(const std::string& path, mode m, rotation r);
  static jsonl_sink adopt_fd(int fd, std::string name);

  jsonl_sink(jsonl_sink&& o) noexcept;
  jsonl_sink& operator=(jsonl_sink&&) = delete;
  jsonl_sink(const jsonl_sink&) = delete;
  ~jsonl_sink();

  // Writes `record` followed by a newline in a single write(2).
  void write(std::string_view record);

  int failed_writes() const;
  // Files rotated so far.
  int rotations() const;
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
  // Renames the files one place up and reopens name_ empty; under mu_.  False when it failed
  // (the records then go on into the file as it is).
  bool rotate();

  int fd_;
  bool owned_;
  std::string name_;
  mutable std::mutex mu_;
  int failed_ = 0;
  rotation rotation_;
  std::uint64_t size_ = 0;  // bytes in the current file, for rotation
  int rotations_ = 0;
  std::string line_;  // reused buffer, guarded by mu_
  std::function<void(std::string_view)> route_;
};

}  // namespace joules
