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
#include "proc/pty.hpp"
#include "steps/step_parser.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"
#include "wrap/line_splitter.hpp"
#include "wrap/output_gate.hpp"
#include "wrap/step_windows.hpp"
#include "wrap/wrap_report.hpp"

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
             "when stdout is a terminal", false, "Output"},
            {"no-inline", 0, "", "Leave the command's output untouched.", "", false, "Output"},
            {"no-pty", 0, "",
             "Give the command a pipe instead of a pseudo-terminal for its stdout (and set "
             "PYTHONUNBUFFERED=1). Non-Python programs then block-buffer their output and step "
             "timing "
             "suffers.",
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

void set_nonblocking(int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

}  // namespace

const command_spec& wrap_spec() {
  static const command_spec spec{
      "wrap",
      "energy per training step, per phase and per token; prediction of the whole run",
      "[OPTIONS] [--] CMD [ARGS...]",
      "Runs CMD like joules run, and reads its stdout as it goes: lines pass through to joules' "
      "stdout byte for byte, and the lines that report training steps (the formats of nanoGPT, "
      "llm.c, Megatron, DeepSpeed, Hugging Face, Lightning and many more; see joules steps) split "
      "the run's energy into windows: setup (before the first step line), one per step, phases "
      "such as evaluation, and the tail after the last step. Every joule of the run lands in "
      "exactly one window; the windows add up to the total exactly.\n"
      "Each line is stamped when it arrives and the energy at that instant comes from the GPUs' "
      "readings around it, so nothing on the output path waits for the GPU. CMD's stdout is a "
      "pseudo-terminal, so C, C++, Rust and Python trainers alike write lines as they happen; its "
      "stderr stays joules' stderr.\n"
      "With --output, step, phase, prediction and straggler records go to the JSONL file "
      "(docs/jsonl-schema.md), and CMD's output still goes to stdout.",
      wrap_options(),
      positional_kind::command,
      "joules wrap -- torchrun --standalone --nproc_per_node=8 train_gpt.py\n"
      "joules wrap --output run.jsonl --tokens-per-step 524288 -- python train.py\n"
      "joules wrap --step-regex 'it=(\\d+)/(?<total>\\d+)' -- ./my_trainer"};
  return spec;
}

int wrap_main(const parsed_args& args) {
  const measure_settings ms = read_measure_settings(args, "wrap");
  const wrap_settings ws = read_wrap_settings(args);
  steps::step_parser parser(
      args.all("step-regex"));  // a bad regex is reported before anything starts
  const bool inline_energy =
      args.has("inline") || (!args.has("no-inline") && isatty(STDOUT_FILENO) != 0);
  const bool use_pty = !args.has("no-pty");

  measurement m(ms, "wrap");
  child_process child;
  spawn_options so;
  so.argv = ms.command;
  std::optional<pty_pair> pty;
  std::array<int, 2> pipe_fds{-1, -1};
  if (use_pty) {
    pty.emplace(STDOUT_FILENO);
    so.dup2 = {{pty->slave(), STDOUT_FILENO}};
  } else {
    if (pipe2(pipe_fds.data(), O_CLOEXEC) != 0)
      throw fatal_error(fmt::format("pipe: {}", std::strerror(errno)));
    so.dup2 = {{pipe_fds[1], STDOUT_FILENO}};
    so.extra_env = {"PYTHONUNBUFFERED=1"};
  }

  window_queue queue;
  m.sampler().on_window([&queue](const window_result& w) { queue.push(w); });
  m.start();
  child.spawn(so);
  m.child_started(child.start_time());
  int out_fd = -1;
  if (pty) {
    pty->close_slave();
    out_fd = pty->master();
  } else {
    close(pipe_fds[1]);
    out_fd = pipe_fds[0];
  }
  set_nonblocking(out_fd);

  // Lines for people (predictions, stragglers) wait while a step line is held for its energy:
  // on a terminal they would land in the middle of it.
  std::vector<std::string> notices;
  auto notice = [&notices](const std::string& line) { notices.push_back(line); };
  auto print_notices = [&notices] {
    for (const auto& line : notices)
      std::fprintf(stderr, "joules: %s\n", line.c_str());
    notices.clear();
  };
  wrap_report report(m.context(), ws, m.sink(), notice);
  output_gate gate(STDOUT_FILENO);
  step_windows windows;
  line_splitter splitter;
  std::uint64_t line_number = 0;
  mono_time line_began{};  // arrival of the first byte of the line being read

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
    if (inline_energy) gate.annotate(w.index, annotation);
  };
  auto drain_queue = [&] {
    for (const auto& w : queue.drain())
      handle_window(w);
  };

  std::vector<char> buffer(64 * 1024);
  bool eof = false;
  bool backlogged = false;
  while (!eof || !child.exited()) {
    // Bounded memory: when the windows not yet accounted for pile up (a trainer printing steps
    // faster than they can be accounted, hundreds of thousands a second), reading pauses until
    // they are down by half.
    if (windows.pending_labels() >= kMaxPendingWindows) backlogged = true;
    if (windows.pending_labels() <= kMaxPendingWindows / 2) backlogged = false;
    std::array<pollfd, 3> fds{{{eof || backlogged ? -1 : out_fd, POLLIN, 0},
                               {child.signal_fd(), POLLIN, 0},
                               {queue.fd(), POLLIN, 0}}};
    // After the command has ended, what it left in the pipe is read until it is quiet: a
    // background process that keeps the terminal open must not keep joules waiting.
    const int timeout_ms = child.exited() ? 100 : (gate.holding() ? 100 : -1);
    const int ready = poll(fds.data(), fds.size(), timeout_ms);
    if (ready < 0 && errno != EINTR) break;
    if (ready == 0 && child.exited() && !backlogged) break;
    if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      const ssize_t n = read(out_fd, buffer.data(), buffer.size());
      if (n > 0) {
        // Lines that arrive after the command ended were written before it did.
        const mono_time stamp = child.exited() ? child.exit_time() : steady::now();
        const std::string_view chunk(buffer.data(), static_cast<std::size_t>(n));
        std::size_t written = 0;
        // A line is stamped with the arrival of its first byte: trainers print a step's line
        // right after the step, and some write the text and its newline in two calls (Python's
        // print), which may arrive apart.
        const bool was_mid_line = splitter.mid_line();
        bool first_line = true;
        splitter.feed(chunk, [&](std::string_view line, std::size_t end) {
          ++line_number;
          const mono_time line_stamp = first_line && was_mid_line ? line_began : stamp;
          first_line = false;
          const steps::parsed_line parsed = parser.parse(line);
          if (!windows.on_line(parsed, line_number)) return;
          m.sampler().boundary(line_stamp);
          if (inline_energy && parsed.kind == steps::line_kind::step) {
            // Hold the line's terminator until its energy is known.
            const std::size_t cut =
                end - (chunk[end - 1] == '\n' && end >= 2 && chunk[end - 2] == '\r' ? 2 : 1);
            if (cut >= written) {
              gate.write(chunk.substr(written, cut - written));
              written = cut;
              gate.hold_for(windows.closed() - 1, steady::now());
            }
          }
        });
        gate.write(chunk.substr(written));
        if (splitter.mid_line() && !(was_mid_line && first_line)) line_began = stamp;
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        eof = true;  // EIO from a pty whose last writer closed it
      }
    }
    if ((fds[1].revents & POLLIN) != 0) {
      child.handle_signals();
      if (child.take_winch() && pty) {
        pty->resize_from(STDOUT_FILENO);
        killpg(child.pid(), SIGWINCH);
      }
    }
    if ((fds[2].revents & POLLIN) != 0) drain_queue();
    gate.expire(steady::now());
    if (!gate.holding()) print_notices();
  }
  if (!child.exited()) child.wait();
  splitter.flush([&](std::string_view line, std::size_t) {
    ++line_number;
    if (windows.on_line(parser.parse(line), line_number))
      m.sampler().boundary(std::min(line_began, child.exit_time()));
  });
  windows.on_exit();
  drain_queue();
  auto last = m.child_ended(child);
  drain_queue();
  for (const auto& w : last)
    handle_window(w);
  gate.flush_all();
  print_notices();
  if (!pty && pipe_fds[0] >= 0) close(pipe_fds[0]);

  const int status = m.finish(child, report.session_json(m.run_energy_uj()), report.summary());
  if (m.must_exit_hard()) {
    std::fflush(nullptr);
    std::_Exit(status);
  }
  return status;
}

}  // namespace joules::cli
