#include "session/run.hpp"

#include <cstdio>
#include <cstdlib>

#include "proc/child.hpp"

namespace joules::session {

interval_end end_of(const child_process& child) {
  interval_end e;
  e.time = child.exit_time();
  e.exit_status = child.exit_status();
  e.exit_code = child.exit_code();
  e.exit_signal = child.term_signal();
  e.forwarded_signal = child.forwarded_signal();
  return e;
}

int run(const measure_settings& settings) {
  measurement m(settings, "run");
  child_process child;
  m.start();
  spawn_options options;
  options.argv = settings.command;
  child.spawn(options);
  m.begin(child.start_time());
  child.wait();
  for (const auto& w : m.end(child.exit_time()))
    m.add_window(w);
  const int status = m.finish(end_of(child));
  if (m.must_exit_hard()) {
    // The sampler is stuck in a driver call that never returned; leave without waiting for it.
    std::fflush(nullptr);
    std::_Exit(status);
  }
  return status;
}

}  // namespace joules::session
