// A trainer that prints step lines at a steady rate and times its own write() calls: how long
// the command waits on its output, through `joules wrap` or straight to /dev/null.  Writes
// RATE lines a second for SECONDS, each line with one write(2) to fd 1, and prints to REPORT (a
// file, so that the report does not pass through what is measured) one line of JSON:
// {"lines":N,"max_us":...,"p99_us":...,"p50_us":...,"mean_us":...,"late_lines":...} where
// late_lines counts lines written more than 1 ms after their time.
//
//   write_latency RATE SECONDS REPORT

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: write_latency RATE SECONDS REPORT\n");
    return 2;
  }
  const double rate = std::atof(argv[1]);
  const double seconds = std::atof(argv[2]);
  const auto n = static_cast<long>(rate * seconds);
  if (rate <= 0 || n <= 0) return 2;
  using clock = std::chrono::steady_clock;
  const auto period = std::chrono::duration<double>(1.0 / rate);
  std::vector<double> us;
  us.reserve(static_cast<std::size_t>(n));
  long late = 0;
  const auto start = clock::now();
  char line[160];
  for (long i = 1; i <= n; ++i) {
    const auto due =
        start + std::chrono::duration_cast<clock::duration>(period * static_cast<double>(i));
    auto now = clock::now();
    if (due > now) {
      // Sleep most of the wait, spin the rest: timer slack would blur the rate.
      const auto left = due - now;
      if (left > std::chrono::microseconds(200)) {
        const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
            left - std::chrono::microseconds(100));
        timespec ts{static_cast<time_t>(ns.count() / 1000000000),
                    static_cast<long>(ns.count() % 1000000000)};
        nanosleep(&ts, nullptr);
      }
      while (clock::now() < due) {
      }
    }
    const int len = std::snprintf(line, sizeof line,
                                  "step %ld/%ld | loss 2.3456 | lr 3.0e-04 | dt 0.1ms\n", i, n);
    const auto t0 = clock::now();
    if (t0 - due > std::chrono::milliseconds(1)) ++late;
    for (int off = 0; off < len;) {
      const ssize_t w = write(STDOUT_FILENO, line + off, static_cast<std::size_t>(len - off));
      if (w <= 0) return 1;
      off += static_cast<int>(w);
    }
    us.push_back(std::chrono::duration<double, std::micro>(clock::now() - t0).count());
  }
  std::vector<double> sorted = us;
  std::sort(sorted.begin(), sorted.end());
  auto pct = [&](double p) {
    return sorted[std::min(sorted.size() - 1,
                           static_cast<std::size_t>(p * static_cast<double>(sorted.size())))];
  };
  double sum = 0;
  for (const double v : us)
    sum += v;
  std::FILE* f = std::fopen(argv[3], "w");
  if (f == nullptr) return 1;
  std::fprintf(f,
               "{\"lines\":%zu,\"max_us\":%.3f,\"p99_us\":%.3f,\"p50_us\":%.3f,\"mean_us\":%.3f,"
               "\"late_lines\":%ld}\n",
               us.size(), sorted.back(), pct(0.99), pct(0.50), sum / static_cast<double>(us.size()),
               late);
  std::fclose(f);
  return 0;
}
