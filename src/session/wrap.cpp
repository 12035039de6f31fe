#include "session/wrap.hpp"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <optional>
#include <string>

#include "proc/child.hpp"
#include "proc/child_streams.hpp"
#include "proc/line_splitter.hpp"
#include "proc/output_channel.hpp"
#include "proc/output_gate.hpp"
#include "proc/step_channel.hpp"
#include "session/line_queue.hpp"
#include "session/window_queue.hpp"
#include "steps/step_parser.hpp"
#include "term/messages.hpp"
#include "util/error.hpp"
#include "windows/step_windows.hpp"

namespace joules::session {
namespace {

// Windows not yet accounted for, beyond which reading the command's output pauses.
constexpr std::size_t kMaxPendingWindows = 65536;
// How often the terminals' size is looked at: when the command has the terminal, SIGWINCH goes
// to it, not to joules, which must still resize the command's pseudo-terminals.
constexpr std::chrono::milliseconds kSizeCheck{200};
// Bytes read from one channel before the others (and the windows) get a turn.
constexpr std::size_t kReadBurst = 1 << 20;

// One of the command's output channels as the loop reads it.
struct reader {
  reader(child_streams::source& s, output_channel& ch, bool annotate)
      : src(s), channel(ch), gate(ch), inline_energy(annotate) {}
  child_streams::source& src;
  output_channel& channel;
  output_gate gate;
  line_splitter splitter;
  mono_time line_began{};  // arrival of the first byte of the line being read
  bool eof = false;
  bool inline_energy;
};

class wrap_loop {
 public:
  wrap_loop(const measure_settings& ms, const wrap_settings& ws, const wrap_output& out,
            wrap_hooks* hooks);
  ~wrap_loop();
  wrap_loop(const wrap_loop&) = delete;
  wrap_loop& operator=(const wrap_loop&) = delete;
  int run();

 private:
  // A line's boundary, placed: the sampler gets its instant, the hooks a step.
  void place(const line_outcome& o, mono_time t);
  void command_ended();
  void route_records();
  void handle_window(const window_result& w);
  void drain_queue();
  void drain_lines();
  void on_line(reader& r, std::string_view line, mono_time t, std::string_view chunk,
               std::size_t end, std::size_t& written);
  void on_chunk(reader& r, std::string_view chunk, mono_time stamp);
  void read_ready(reader& r);
  // Steps the command reported through the step channel (joules_step()).
  void read_steps();
  bool poll_once();
  int finish();

  const measure_settings& ms_;
  const wrap_output& out_;
  wrap_hooks* hooks_;
  bool ended_ = false;     // hooks_->after_command() was called
  bool stopping_ = false;  // the hooks asked for the command to end
  steps::step_parser parser_;
  measurement m_;
  child_process child_;
  child_streams streams_;
  // Where the command's bytes go; joules' own lines (records on a shared stream, predictions,
  // warnings) go between its lines.  With one file for both, one channel.
  output_channel out_channel_{STDOUT_FILENO};
  std::optional<output_channel> err_storage_;
  output_channel* err_channel_ = &out_channel_;
  output_channel* record_channel_ = nullptr;
  std::deque<reader> readers_;
  bool watch_size_ = false;
  window_queue queue_;
  line_queue lines_;  // the token sources' notes and records
  // The step channel (proc/step_channel.hpp); none when the socket cannot be made.
  std::optional<step_receiver> steps_;
  std::optional<wrap_report> report_;
  step_windows windows_;
  std::uint64_t line_number_ = 0;
  std::vector<char> buffer_ = std::vector<char>(64 * 1024);
  bool backlogged_ = false;
  mono_time next_size_check_{};
};

wrap_loop::wrap_loop(const measure_settings& ms, const wrap_settings& ws, const wrap_output& out,
                     wrap_hooks* hooks)
    : ms_(ms),
      out_(out),
      hooks_(hooks),
      parser_(out.step_regexes),  // a bad regex is reported before anything starts
      m_(ms, hooks != nullptr ? std::string(hooks->subcommand()) : "wrap",
         [hooks](sampler& s, const std::vector<std::size_t>& measured) {
           if (hooks != nullptr) hooks->check(s, measured);
         }),
      streams_(out.use_pty) {
  if (!streams_.shared()) err_channel_ = &err_storage_.emplace(STDERR_FILENO);
  route_records();
  for (auto& src : streams_.sources()) {
    const bool annotate = out.inline_energy.value_or(isatty(src.destination) != 0);
    readers_.emplace_back(src, src.stream == child_stream::err ? *err_channel_ : out_channel_,
                          annotate);
  }
  watch_size_ = std::any_of(readers_.begin(), readers_.end(), [](const reader& r) {
    return r.src.pty && isatty(r.src.destination) != 0;
  });
  auto notice = [this](const std::string& line) {
    err_channel_->own_line("joules: " + line + "\n", steady::now());
  };
  report_.emplace(m_.context(), ws, m_.sink(), notice);
  try {
    steps_.emplace();
  } catch (const fatal_error& e) {
    // Steps from the log still work; only joules_step() has nowhere to go.
    notice(std::string("note: steps reported with joules_step() are not received: ") + e.what());
  }
  if (hooks_ != nullptr) hooks_->set_notice(notice);
  if (inference_tracker* inference = m_.inference()) {
    // The sources' threads hand their lines to this loop, which writes them between the
    // command's lines.
    inference_tracker::hooks h;
    h.notice = [this](const std::string& line) { lines_.push({false, line}); };
    h.record = [this](std::string record) { lines_.push({true, std::move(record)}); };
    inference->set_hooks(std::move(h));
  }
}

wrap_loop::~wrap_loop() {
  // An exception ended the loop: the hooks still act while the sampler runs.
  try {
    command_ended();
  } catch (...) {  // NOLINT(bugprone-empty-catch): the exception under way is the one to report
  }
}

void wrap_loop::command_ended() {
  if (hooks_ == nullptr || ended_) return;
  ended_ = true;
  hooks_->after_command();
}

void wrap_loop::place(const line_outcome& o, mono_time t) {
  if (!o.boundary) return;
  m_.sampler().boundary(t);
  if (hooks_ == nullptr || !o.step_window) return;
  hooks_->on_step(*o.step_window, t);
  if (!stopping_ && hooks_->stop_command() && !child_.exited()) {
    stopping_ = true;
    killpg(child_.pid(), SIGTERM);
  }
}

void wrap_loop::route_records() {
  // Records on a stream the command writes too (--output -, --json) go between its lines.
  jsonl_sink* sink = m_.sink();
  if (sink == nullptr) return;
  if (same_file(sink->fd(), STDOUT_FILENO)) {
    record_channel_ = &out_channel_;
  } else if (same_file(sink->fd(), STDERR_FILENO)) {
    record_channel_ = err_channel_;
  }
  if (record_channel_ != nullptr) {
    // Sample records come from a thread of their own; on the command's stream only this loop
    // may write.
    m_.drop_samples(
        "the records share the command's output (--output -, --json); give --output FILE");
    sink->route(
        [ch = record_channel_](std::string_view line) { ch->own_line(line, steady::now()); });
  }
}

void wrap_loop::handle_window(const window_result& w) {
  m_.add_window(w);
  const window_label label = windows_.take_label(w.index);
  const std::string annotation = report_->add(w, label);
  // The live view (--prometheus, --otlp): the last step, its metrics, the prediction.
  if (label.kind == window_kind::step) {
    m_.live().add_step(label.step, label.step_gap, label.total, w);
  }
  if (!label.metrics.empty()) m_.live().set_training_metrics(label.metrics);
  if (report_->last_prediction()) m_.live().set_prediction(*report_->last_prediction());
  for (auto& r : readers_) {
    if (r.inline_energy) r.gate.annotate(w.index, annotation);
  }
  if (hooks_ != nullptr) hooks_->on_window(w, label);
}

void wrap_loop::drain_queue() {
  for (const auto& w : queue_.drain())
    handle_window(w);
}

void wrap_loop::drain_lines() {
  for (auto& l : lines_.drain()) {
    if (l.record) {
      if (m_.sink() != nullptr) m_.sink()->write(l.text);
    } else if (!ms_.quiet && !ms_.json) {
      err_channel_->own_line(term::note_line(l.text), steady::now());
    }
  }
}

void wrap_loop::on_line(reader& r, std::string_view line, mono_time t, std::string_view chunk,
                        std::size_t end, std::size_t& written) {
  ++line_number_;
  if (inference_tracker* inference = m_.inference()) inference->on_line(line, t);
  const line_outcome o = windows_.on_line(parser_.parse(line), line_number_, t, r.src.stream);
  place(o, t);
  if (!r.inline_energy || !o.step_window) return;
  // Hold the line's terminator until its energy is known.
  const std::size_t cut =
      end - (chunk[end - 1] == '\n' && end >= 2 && chunk[end - 2] == '\r' ? 2 : 1);
  if (cut < written) return;
  r.gate.write(chunk.substr(written, cut - written));
  written = cut;
  r.gate.hold_for(*o.step_window, steady::now());
}

void wrap_loop::on_chunk(reader& r, std::string_view chunk, mono_time stamp) {
  std::size_t written = 0;
  // A line is stamped with the arrival of its first byte: trainers print a step's line right
  // after the step, and some write the text and its newline in two calls (Python's print),
  // which may arrive apart.
  const bool was_mid_line = r.splitter.mid_line();
  bool first_line = true;
  r.splitter.feed(chunk, [&](std::string_view line, std::size_t end) {
    const mono_time t = first_line && was_mid_line ? r.line_began : stamp;
    first_line = false;
    on_line(r, line, t, chunk, end, written);
  });
  r.gate.write(chunk.substr(written));
  if (r.splitter.mid_line() && !(was_mid_line && first_line)) r.line_began = stamp;
}

void wrap_loop::read_ready(reader& r) {
  // Read what is there, up to a burst.  A pseudo-terminal hands out at most 4 KiB a read: the
  // buffer is filled by as many reads as there are bytes waiting, and handled in one go.
  std::size_t got = 0;
  while (got < kReadBurst && !r.eof) {
    std::size_t filled = 0;
    mono_time stamp{};
    while (filled < buffer_.size()) {
      const ssize_t n = read(r.src.fd, buffer_.data() + filled, buffer_.size() - filled);
      if (n > 0) {
        // Lines that arrive after the command ended were written before it did.
        if (filled == 0) stamp = child_.exited() ? child_.exit_time() : steady::now();
        filled += static_cast<std::size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n == 0 || errno != EAGAIN) r.eof = true;  // EIO: the pty's last writer is gone
      break;
    }
    if (filled == 0) break;
    if (child_.exited()) windows_.set_end(child_.exit_time());
    on_chunk(r, std::string_view(buffer_.data(), filled), stamp);
    got += filled;
    if (filled < buffer_.size()) break;  // all that was there
  }
}

int wrap_loop::run() {
  m_.sampler().on_window([this](const window_result& w) { queue_.push(w); });
  spawn_options so;
  so.argv = ms_.command;
  so.dup2 = streams_.child_fds();
  if (steps_) so.extra_env = {steps_->environment_entry()};
  if (!out_.use_pty) {
    so.extra_env.emplace_back("PYTHONUNBUFFERED=1");
  } else if (isatty(STDOUT_FILENO) == 0) {
    // Output to a file or a pipe: the command keeps its pseudo-terminal (its step lines arrive
    // when printed), but it is asked not to decorate them for a terminal nobody sees.
    if (std::getenv("NO_COLOR") == nullptr) so.extra_env.emplace_back("NO_COLOR=1");
    if (!ms_.quiet && !ms_.json) {
      err_channel_->own_line(
          "joules: note: the command writes to a pseudo-terminal, so each step line arrives when "
          "it is printed (NO_COLOR=1 asks it not to colour its output); --no-pty gives it pipes, "
          "where C, C++ and Rust trainers hold their lines back and step times come late (see "
          "README.md, Energy per training step)\n",
          steady::now());
    }
  }
  m_.start();
  if (hooks_ != nullptr) hooks_->before_command(m_);
  child_.spawn(so);
  m_.begin(child_.start_time());
  if (hooks_ != nullptr) hooks_->command_started();
  streams_.close_child_ends();
  next_size_check_ = steady::now() + kSizeCheck;
  const auto all_eof = [this] {
    return std::all_of(readers_.begin(), readers_.end(), [](const reader& r) { return r.eof; });
  };
  while ((!all_eof() || !child_.exited()) && poll_once()) {
  }
  return finish();
}

bool wrap_loop::poll_once() {
  // Bounded memory: when the windows not yet accounted for pile up (a trainer printing steps
  // faster than they can be accounted, hundreds of thousands a second), reading pauses until
  // they are down by half.
  if (windows_.pending_labels() >= kMaxPendingWindows) backlogged_ = true;
  if (windows_.pending_labels() <= kMaxPendingWindows / 2) backlogged_ = false;
  std::array<pollfd, 6> fds{};
  std::size_t nfds = 0;
  for (const auto& r : readers_)
    fds[nfds++] = {r.eof || backlogged_ ? -1 : r.src.fd, POLLIN, 0};
  fds[nfds++] = {child_.signal_fd(), POLLIN, 0};
  fds[nfds++] = {queue_.fd(), POLLIN, 0};
  fds[nfds++] = {backlogged_ || !steps_ ? -1 : steps_->fd(), POLLIN, 0};
  fds[nfds++] = {lines_.fd(), POLLIN, 0};
  // After the command has ended, what it left in the channels is read until they are quiet: a
  // background process that keeps the terminal open must not keep joules waiting.
  const bool waiting = std::any_of(readers_.begin(), readers_.end(), [](const reader& r) {
    return r.gate.holding() || r.channel.waiting();
  });
  int timeout_ms = child_.exited() || waiting ? 100 : -1;
  if (watch_size_ && !child_.exited()) {
    const auto until =
        std::chrono::ceil<std::chrono::milliseconds>(next_size_check_ - steady::now());
    const int size_ms = static_cast<int>(std::max<std::int64_t>(0, until.count()));
    timeout_ms = timeout_ms < 0 ? size_ms : std::min(timeout_ms, size_ms);
  }
  const int ready = poll(fds.data(), nfds, timeout_ms);
  if (ready < 0 && errno != EINTR) return false;
  if (ready == 0 && child_.exited() && !backlogged_) return false;
  const std::size_t sig = readers_.size();
  // Steps first: a step the command reported before it printed its line is handled before the
  // line (which then only carries metrics).
  if ((fds[sig + 2].revents & POLLIN) != 0) read_steps();
  for (std::size_t i = 0; i < readers_.size(); ++i) {
    if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) != 0) read_ready(readers_[i]);
  }
  if ((fds[sig].revents & POLLIN) != 0) {
    child_.handle_signals();
    if (child_.take_winch() && streams_.resize()) killpg(child_.pid(), SIGWINCH);
  }
  if ((fds[sig + 1].revents & POLLIN) != 0) drain_queue();
  if ((fds[sig + 3].revents & POLLIN) != 0) drain_lines();
  const mono_time now = steady::now();
  if (watch_size_ && now >= next_size_check_) {
    next_size_check_ = now + kSizeCheck;
    if (!child_.exited() && streams_.resize()) killpg(child_.pid(), SIGWINCH);
  }
  for (auto& r : readers_)
    r.gate.expire(now);
  out_channel_.expire(now);
  err_channel_->expire(now);
  return true;
}

void wrap_loop::read_steps() {
  if (!steps_) return;
  for (const step_message& m : steps_->drain()) {
    // The instant the command took, within the run: a clock that cannot be CLOCK_MONOTONIC's
    // (another machine's, garbage) is held to the run's bounds.
    const mono_time now = child_.exited() ? child_.exit_time() : steady::now();
    const mono_time t =
        std::clamp(mono_time(std::chrono::nanoseconds(m.t_ns)), child_.start_time(), now);
    place(windows_.on_reported_step(m.step, m.tokens, t), t);
  }
}

int wrap_loop::finish() {
  if (!child_.exited()) child_.wait();
  // Steps the command reported before it ended come before the lines it left.
  read_steps();
  windows_.set_end(child_.exit_time());
  for (auto& r : readers_) {
    r.splitter.flush([&](std::string_view line, std::size_t) {
      ++line_number_;
      const mono_time t = std::min(r.line_began, child_.exit_time());
      if (inference_tracker* inference = m_.inference()) inference->on_line(line, t);
      place(windows_.on_line(parser_.parse(line), line_number_, t, r.src.stream), t);
    });
  }
  command_ended();
  windows_.on_exit();
  drain_queue();
  const auto last = m_.end(child_.exit_time());
  drain_queue();
  drain_lines();  // the token sources' last records
  for (const auto& w : last)
    handle_window(w);
  for (auto& r : readers_)
    r.gate.flush_all();
  // Joules' last lines start on a line of their own: the summary on stderr, session_end where
  // the records go.
  out_channel_.finish(false);
  err_channel_->finish(!ms_.quiet && !ms_.json);
  if (record_channel_ != nullptr) {
    m_.sink()->add_failed(static_cast<int>(record_channel_->lost_lines()));
  }
  std::vector<summary_part> summary = report_->summary();
  if (hooks_ != nullptr) hooks_->finish(m_, summary);
  const int status = m_.finish(end_of(child_), report_->session_json(m_.run_energy_uj()), summary);
  if (m_.must_exit_hard()) {
    std::fflush(nullptr);
    std::_Exit(status);
  }
  return status;
}

}  // namespace

void wrap_hooks::say(const std::string& line) const {
  if (notice_) {
    notice_(line);
  } else {
    term::print_note(line);
  }
}

int wrap(const measure_settings& settings, const wrap_settings& steps, const wrap_output& output,
         wrap_hooks* hooks) {
  wrap_loop loop(settings, steps, output, hooks);
  return loop.run();
}

}  // namespace joules::session
