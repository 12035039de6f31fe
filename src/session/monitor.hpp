#pragma once
// `joules monitor`: a live view of every GPU's power, energy and health.  Everything it shows
// comes from sampler snapshots: the sampler thread is the only one that reads the hardware;
// the main thread renders and waits for keys, resizes and signals.  A full-screen view on a
// terminal, one line per device per interval on a pipe (--plain), JSONL with --json.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "backends/composite/open_backend.hpp"
#include "session/inference.hpp"

namespace joules::session {

struct monitor_settings {
  backend_options backend;
  std::optional<std::string> gpus;
  std::chrono::milliseconds interval{500};
  bool once = false;
  bool json = false;
  bool plain = false;
  inference_settings inference;  // --tokens-from: a line per server with its J/token
  // --output: the JSONL goes to this file instead of stdout, rotated past `output_max_bytes`
  // (0: never) keeping `output_keep` older files (record/jsonl_sink.hpp).
  std::optional<std::string> output;
  std::uint64_t output_max_bytes = 0;
  unsigned output_keep = 1;
};

// Until q or a signal (or one snapshot with `once`); returns the exit status: 0 after q or
// once, 128+N after signal N.  Throws fatal_error when nothing can be read.
int show_monitor(const monitor_settings& settings);

}  // namespace joules::session
