// `joules wrap`: the energy of every training step.  The command's stdout passes through joules
// byte for byte (on a pseudo-terminal, so that every language's stdio line-buffers it); each
// line is stamped on arrival and handed to the step parser; step lines become boundaries for the
// sampler, which places energy at those instants from its readings.  Nothing on the line path
// waits for the GPU.

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>

#include "cli/commands.hpp"
#include "cli/measure.hpp"
#include "proc/child.hpp"
#include "proc/child_streams.hpp"
#include "proc/line_splitter.hpp"
#include "proc/output_channel.hpp"
#include "proc/output_gate.hpp"
#include "session/wrap_report.hpp"
#include "steps/step_parser.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"
#include "windows/step_windows.hpp"

namespace joules::cli {
namespace {

constexpr std::string_view kSteps = "Steps";
constexpr std::size_t kMaxPendingWindows = 65536;

// Windows finished on the sampler thread, handed to the main loop (which owns the labels, the
// records and the output) through a queue and an eventfd it polls.
class window_queue {
 public:
  window_queue() : fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    if (fd_ < 0) throw fatal_error(fmt::format("eventfd: {}", std::strerror(errno)));
  }
  ~window_queue() { close(fd_); }
  window_queue(const window_queue&) = delete;
  window_queue& operator=(const window_queue&) = delete;

  int fd() const { return fd_; }
  void push(const window_result& w) {
    bool was_empty = false;
    {
      std::lock_guard lock(mu_);
      was_empty = items_.empty();
      items_.push_back(w);
    }
    // One wake-up per batch: drain() takes everything queued by then.
    if (!was_empty) return;
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto n = write(fd_, &one, sizeof one);
  }
  std::deque<window_result> drain() {
    std::uint64_t count = 0;
    [[maybe_unused]] const auto n = read(fd_, &count, sizeof count);
    std::lock_guard lock(mu_);
    std::deque<window_result> out;
    out.swap(items_);
    return out;
  }

 private:
  int fd_;
  std::mutex mu_;
  std::deque<window_result> items_;
};

const std::vector<option_spec>& wrap_options() {
  static const std::vector<option_spec> options = [] {
    std::vector<option_spec> o = measure_options();
    const option_spec help = o.back();
    o.pop_back();
    o.insert(
        o.end(),
        {
            {"step-regex", 0, "RE",
             "An extra step-line format (PCRE2): the first capture group is the step number; a "
             "group "
             "named total, when present, is the number of steps. Check it with joules steps.",
             "", true, kSteps},
            {"tokens-per-step", 0, "N", "Tokens in one step, for joules per token.",
             "from the tok/s the trainer prints, when it does", false, kSteps},
            {"samples-per-step", 0, "N", "Samples in one step, for joules per sample.",
             "from the samples/s the trainer prints, when it does", false, kSteps},
            {"total-steps", 0, "N", "Steps in the whole run, for the prediction.",
             "the M of N/M in step lines", false, kSteps},
            {"predict-after", 0, "K",
             "Predict the whole run once K steps past warm-up are measured.", "10", false, kSteps},
            {"warmup-steps", 0, "N",
             "Steps at the start that predictions and straggler checks ignore.", "3", false,
             kSteps},
            {"straggler-threshold", 0, "F",
             "Warn when a GPU's energy per step stays more than this fraction from the median of "
             "the GPUs (steps shorter than 10 ms are not checked).",
             "0.1", false, kSteps},
            {"straggler-window", 0, "N", "Steps over which a straggler must stay apart.", "20",
             false, kSteps},
            {"inline", 0, "", "Append each step's energy to its line: energy:...J/step avg:...W.",
             "on the streams that are terminals", false, "Output"},
            {"no-inline", 0, "", "Leave the command's output untouched.", "", false, "Output"},
            {"no-pty", 0, "",
             "Give the command pipes instead of pseudo-terminals for its stdout and stderr (one "
             "pipe for both when joules' stdout and stderr are one file), and set "
             "PYTHONUNBUFFERED=1. Non-Python programs then block-buffer their stdout and step "
             "timing suffers.",
             "", false, "Output"},
        });
    o.push_back(help);
    return o;
  }();
  return options;
}

std::uint64_t read_count(const parsed_args& args, std::string_view name, std::uint64_t lo,
                         std::uint64_t hi, std::uint64_t fallback) {
  const auto v = args.get(name);
  if (!v) return fallback;
  const auto n = parse_uint(*v, lo, hi);
  if (!n)
    throw usage_error(
        fmt::format("--{} '{}': expected a whole number from {} to {}", name, *v, lo, hi));
  return *n;
}

wrap_settings read_wrap_settings(const parsed_args& args) {
  wrap_settings s;
  constexpr std::uint64_t kMax = 1ULL << 50U;
  if (args.has("tokens-per-step"))
    s.tokens_per_step = read_count(args, "tokens-per-step", 1, kMax, 0);
  if (args.has("samples-per-step"))
    s.samples_per_step = read_count(args, "samples-per-step", 1, kMax, 0);
  if (args.has("total-steps")) s.total_steps = read_count(args, "total-steps", 1, kMax, 0);
  s.predict_after = read_count(args, "predict-after", 1, kMax, s.predict_after);
  s.warmup_steps = read_count(args, "warmup-steps", 0, kMax, s.warmup_steps);
  s.straggler_window = read_count(args, "straggler-window", 2, 100000, s.straggler_window);
  if (auto v = args.get("straggler-threshold")) {
    const auto f = parse_double(*v);
    if (!f || *f <= 0.0 || *f >= 1.0) {
      throw usage_error(fmt::format(
          "--straggler-threshold '{}': expected a fraction between 0 and 1, e.g. 0.1", *v));
    }
    s.straggler_threshold = *f;
  }
  if (args.has("inline") && args.has("no-inline"))
    throw usage_error("--inline and --no-inline: choose one");
  return s;
}

}  // namespace

const command_spec& wrap_spec() {
  static const command_spec spec{
      "wrap",
      "energy per training step, per phase and per token; prediction of the whole run",
      "[OPTIONS] [--] CMD [ARGS...]",
      "Runs CMD like joules run, and reads its stdout and stderr as it goes: both pass through "
      "to joules' stdout and stderr byte for byte, and the lines that report training steps "
      "(the formats of nanoGPT, llm.c, Megatron, DeepSpeed, Hugging Face, Lightning and many "
      "more, on either stream; see joules steps) split the run's energy into windows: setup "
      "(before the first step line), one per step, phases such as evaluation, and the tail "
      "after the last step. Every joule of the run lands in exactly one window; the windows add "
      "up to the total exactly.\n"
      "Each line is stamped when it arrives and the energy at that instant comes from the GPUs' "
      "readings around it, so nothing on the output path waits for the GPU. CMD's stdout is a "
      "pseudo-terminal, so C, C++, Rust and Python trainers alike write lines as they happen; "
      "its stderr is one too when joules' stderr is a terminal. When joules' stdout and stderr "
      "are the same terminal or file, CMD gets one channel for both and their order is kept.\n"
      "With --output, step, phase, prediction and straggler records go to the JSONL file "
      "(docs/jsonl-schema.md), and CMD's output still goes to stdout. Records on a stream CMD "
      "writes too (--output -, --json) and joules' own messages go out between CMD's lines, "
      "never inside one.",
      wrap_options(),
      positional_kind::command,
      "joules wrap -- torchrun --standalone --nproc_per_node=8 train_gpt.py\n"
      "joules wrap --output run.jsonl --tokens-per-step 524288 -- python train.py\n"
      "joules wrap --step-regex 'it=(\\d+)/(?<total>\\d+)' -- ./my_trainer"};
  return spec;
}

namespace {

// One of the command's output channels as the main loop reads it.
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

// How often the terminals' size is looked at: when the command has the terminal, SIGWINCH goes
// to it, not to joules, which must still resize the command's pseudo-terminals.
constexpr std::chrono::milliseconds kSizeCheck{200};
// Bytes read from one channel before the others (and the windows) get a turn.
constexpr std::size_t kReadBurst = 1 << 20;

}  // namespace

int wrap_main(const parsed_args& args) {
  const measure_settings ms = read_measure_settings(args, "wrap");
  const wrap_settings ws = read_wrap_settings(args);
  steps::step_parser parser(
      args.all("step-regex"));  // a bad regex is reported before anything starts
  const bool use_pty = !args.has("no-pty");

  measurement m(ms, "wrap");
  child_process child;
  child_streams streams(use_pty);
  spawn_options so;
  so.argv = ms.command;
  so.dup2 = streams.child_fds();
  if (!use_pty) so.extra_env = {"PYTHONUNBUFFERED=1"};

  // Where the command's bytes go; joules' own lines (records on a shared stream, predictions,
  // warnings) go between its lines.  With one file for both, one channel.
  output_channel out_channel(STDOUT_FILENO);
  std::optional<output_channel> err_storage;
  if (!streams.shared()) err_storage.emplace(STDERR_FILENO);
  output_channel& err_channel = err_storage ? *err_storage : out_channel;
  output_channel* record_channel = nullptr;
  if (jsonl_sink* sink = m.sink()) {
    if (same_file(sink->fd(), STDOUT_FILENO)) {
      record_channel = &out_channel;
    } else if (same_file(sink->fd(), STDERR_FILENO)) {
      record_channel = &err_channel;
    }
    if (record_channel != nullptr) {
      sink->route([record_channel](std::string_view line) {
        record_channel->own_line(line, steady::now());
      });
    }
  }

  std::deque<reader> readers;
  for (auto& src : streams.sources()) {
    const bool annotate =
        args.has("inline") || (!args.has("no-inline") && isatty(src.destination) != 0);
    readers.emplace_back(src, src.stream == child_stream::err ? err_channel : out_channel,
                         annotate);
  }
  const bool watch_size = std::any_of(readers.begin(), readers.end(), [](const reader& r) {
    return r.src.pty && isatty(r.src.destination) != 0;
  });

  window_queue queue;
  m.sampler().on_window([&queue](const window_result& w) { queue.push(w); });
  m.start();
  child.spawn(so);
  m.child_started(child.start_time());
  streams.close_child_ends();

  auto notice = [&err_channel](const std::string& line) {
    err_channel.own_line("joules: " + line + "\n", steady::now());
  };
  wrap_report report(m.context(), ws, m.sink(), notice);
  step_windows windows;
  std::uint64_t line_number = 0;

  auto handle_window = [&](const window_result& w) {
    m.add_window(w);
    const window_label label = windows.take_label(w.index);
    const std::string annotation = report.add(w, label);
    // The live view (--prometheus, --otlp): the last step, its metrics, the prediction.
    if (label.kind == window_kind::step) {
      m.live().add_step(label.step, label.step_gap, label.total, w);
    }
    if (!label.metrics.empty()) m.live().set_training_metrics(label.metrics);
    if (report.last_prediction()) m.live().set_prediction(*report.last_prediction());
    for (auto& r : readers) {
      if (r.inline_energy) r.gate.annotate(w.index, annotation);
    }
  };
  auto drain_queue = [&] {
    for (const auto& w : queue.drain())
      handle_window(w);
  };

  // One chunk of a channel's bytes, arrived at `stamp`: passed on, and its lines parsed.
  auto on_chunk = [&](reader& r, std::string_view chunk, mono_time stamp) {
    std::size_t written = 0;
    // A line is stamped with the arrival of its first byte: trainers print a step's line
    // right after the step, and some write the text and its newline in two calls (Python's
    // print), which may arrive apart.
    const bool was_mid_line = r.splitter.mid_line();
    bool first_line = true;
    r.splitter.feed(chunk, [&](std::string_view line, std::size_t end) {
      ++line_number;
      const mono_time t = first_line && was_mid_line ? r.line_began : stamp;
      first_line = false;
      const line_outcome o = windows.on_line(parser.parse(line), line_number, t, r.src.stream);
      if (o.boundary) m.sampler().boundary(t);
      if (r.inline_energy && o.step_window) {
        // Hold the line's terminator until its energy is known.
        const std::size_t cut =
            end - (chunk[end - 1] == '\n' && end >= 2 && chunk[end - 2] == '\r' ? 2 : 1);
        if (cut >= written) {
          r.gate.write(chunk.substr(written, cut - written));
          written = cut;
          r.gate.hold_for(*o.step_window, steady::now());
        }
      }
    });
    r.gate.write(chunk.substr(written));
    if (r.splitter.mid_line() && !(was_mid_line && first_line)) r.line_began = stamp;
  };

  std::vector<char> buffer(64 * 1024);
  bool backlogged = false;
  mono_time next_size_check = steady::now() + kSizeCheck;
  auto all_eof = [&] {
    return std::all_of(readers.begin(), readers.end(), [](const reader& r) { return r.eof; });
  };
  while (!all_eof() || !child.exited()) {
    // Bounded memory: when the windows not yet accounted for pile up (a trainer printing steps
    // faster than they can be accounted, hundreds of thousands a second), reading pauses until
    // they are down by half.
    if (windows.pending_labels() >= kMaxPendingWindows) backlogged = true;
    if (windows.pending_labels() <= kMaxPendingWindows / 2) backlogged = false;
    std::array<pollfd, 4> fds{};
    std::size_t nfds = 0;
    for (const auto& r : readers)
      fds[nfds++] = {r.eof || backlogged ? -1 : r.src.fd, POLLIN, 0};
    fds[nfds++] = {child.signal_fd(), POLLIN, 0};
    fds[nfds++] = {queue.fd(), POLLIN, 0};
    // After the command has ended, what it left in the channels is read until they are quiet: a
    // background process that keeps the terminal open must not keep joules waiting.
    const bool waiting = std::any_of(readers.begin(), readers.end(), [](const reader& r) {
      return r.gate.holding() || r.channel.waiting();
    });
    int timeout_ms = child.exited() || waiting ? 100 : -1;
    if (watch_size && !child.exited()) {
      const auto until =
          std::chrono::ceil<std::chrono::milliseconds>(next_size_check - steady::now());
      const int size_ms = static_cast<int>(std::max<std::int64_t>(0, until.count()));
      timeout_ms = timeout_ms < 0 ? size_ms : std::min(timeout_ms, size_ms);
    }
    const int ready = poll(fds.data(), nfds, timeout_ms);
    if (ready < 0 && errno != EINTR) break;
    if (ready == 0 && child.exited() && !backlogged) break;
    for (std::size_t i = 0; i < readers.size(); ++i) {
      reader& r = readers[i];
      if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      // Read what is there, up to a burst.  A pseudo-terminal hands out at most 4 KiB a read:
      // the buffer is filled by as many reads as there are bytes waiting, and handled (parsed,
      // written out) in one go.
      std::size_t got = 0;
      while (got < kReadBurst && !r.eof) {
        std::size_t filled = 0;
        mono_time stamp{};
        while (filled < buffer.size()) {
          const ssize_t n = read(r.src.fd, buffer.data() + filled, buffer.size() - filled);
          if (n > 0) {
            // Lines that arrive after the command ended were written before it did.
            if (filled == 0) stamp = child.exited() ? child.exit_time() : steady::now();
            filled += static_cast<std::size_t>(n);
            continue;
          }
          if (n < 0 && errno == EINTR) continue;
          if (n == 0 || errno != EAGAIN) r.eof = true;  // EIO: the pty's last writer is gone
          break;
        }
        if (filled == 0) break;
        if (child.exited()) windows.set_end(child.exit_time());
        on_chunk(r, std::string_view(buffer.data(), filled), stamp);
        got += filled;
        if (filled < buffer.size()) break;  // all that was there
      }
    }
    const std::size_t sig = readers.size();
    if ((fds[sig].revents & POLLIN) != 0) {
      child.handle_signals();
      if (child.take_winch() && streams.resize()) killpg(child.pid(), SIGWINCH);
    }
    if ((fds[sig + 1].revents & POLLIN) != 0) drain_queue();
    const mono_time now = steady::now();
    if (watch_size && now >= next_size_check) {
      next_size_check = now + kSizeCheck;
      if (!child.exited() && streams.resize()) killpg(child.pid(), SIGWINCH);
    }
    for (auto& r : readers)
      r.gate.expire(now);
    out_channel.expire(now);
    err_channel.expire(now);
  }
  if (!child.exited()) child.wait();
  windows.set_end(child.exit_time());
  for (auto& r : readers) {
    r.splitter.flush([&](std::string_view line, std::size_t) {
      ++line_number;
      const mono_time t = std::min(r.line_began, child.exit_time());
      if (windows.on_line(parser.parse(line), line_number, t, r.src.stream).boundary)
        m.sampler().boundary(t);
    });
  }
  windows.on_exit();
  drain_queue();
  auto last = m.child_ended(child);
  drain_queue();
  for (const auto& w : last)
    handle_window(w);
  for (auto& r : readers)
    r.gate.flush_all();
  // Joules' last lines start on a line of their own: the summary on stderr, session_end where
  // the records go.
  out_channel.finish(false);
  err_channel.finish(!ms.quiet && !ms.json);
  if (record_channel != nullptr) {
    m.sink()->add_failed(static_cast<int>(record_channel->lost_lines()));
  }

  const int status = m.finish(child, report.session_json(m.run_energy_uj()), report.summary());
  if (m.must_exit_hard()) {
    std::fflush(nullptr);
    std::_Exit(status);
  }
  return status;
}

}  // namespace joules::cli
