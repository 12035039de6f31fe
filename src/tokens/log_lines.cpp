#include "tokens/log_lines.hpp"

#include <charconv>
#include <cmath>

namespace joules::tokens {
namespace {

// A decimal number at the start of `s` (after blanks); sets `s` past it.
std::optional<double> number_at(std::string_view& s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  double v = 0.0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || !std::isfinite(v) || v < 0) return std::nullopt;
  s.remove_prefix(static_cast<std::size_t>(end - s.data()));
  return v;
}

// No request is longer than this many tokens; a larger count read from a line is garbage.
constexpr double kMaxRequestTokens = 1e9;

// An engine or data-parallel rank as a stream number; a rank no server has (huge, from a garbled
// line) folds into one stream rather than overflowing an int.
int stream_index(double rank) {
  return rank < 1e6 ? static_cast<int>(rank) : 1000000;
}

// The number after `key` in `line`.
std::optional<double> after(std::string_view line, std::string_view key) {
  const std::size_t at = line.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(at + key.size());
  return number_at(rest);
}

std::optional<log_tokens> vllm(std::string_view line) {
  const auto prompt = after(line, "Avg prompt throughput:");
  const auto gen = after(line, "Avg generation throughput:");
  if (!prompt || !gen) return std::nullopt;
  log_tokens t;
  t.server = server_kind::vllm;
  t.rate = true;
  t.input = *prompt;
  t.output = *gen;
  t.input_known = true;
  t.silent_when_idle = true;
  if (const auto engine = after(line, "Engine ")) t.stream = stream_index(*engine);
  return t;
}

std::optional<log_tokens> sglang(std::string_view line) {
  if (line.find("Decode batch") != std::string_view::npos) {
    const auto gen = after(line, "gen throughput (token/s):");
    if (!gen) return std::nullopt;
    log_tokens t;
    t.server = server_kind::sglang;
    t.rate = true;
    t.output = *gen;
    t.stream = 1;  // apart from the prefill lines' counts
    if (const auto dp = after(line, "DP")) t.stream += stream_index(*dp) + 1;
    return t;
  }
  if (line.find("Prefill batch") != std::string_view::npos) {
    const auto input = after(line, "#new-token:");
    if (!input) return std::nullopt;
    log_tokens t;
    t.server = server_kind::sglang;
    t.input = *input;
    t.input_known = true;
    return t;
  }
  return std::nullopt;
}

// "prompt eval time =  35.12 ms /    12 tokens" or "eval time = ... / 31 tokens".
std::optional<log_tokens> llamacpp(std::string_view line) {
  const std::size_t at = line.find("eval time =");
  if (at == std::string_view::npos) return std::nullopt;
  const bool prompt = at >= 7 && line.substr(at - 7, 7) == "prompt ";
  std::string_view rest = line.substr(at);
  const std::size_t slash = rest.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  rest.remove_prefix(slash + 1);
  const auto n = number_at(rest);
  if (!n || rest.find("token") > 2) return std::nullopt;
  log_tokens t;
  t.server = server_kind::llamacpp;
  if (prompt) {
    t.input = *n;
    t.input_known = true;
  } else {
    t.output = *n;
    t.requests = 1;  // print_timings' eval line ends each request
    t.requests_known = true;
  }
  return t;
}

// A Rust Duration's Debug text: "1.234567s", "12.3ms", "45µs", "7ns"; in seconds.
std::optional<double> duration_s(std::string_view line, std::string_view key) {
  const std::size_t at = line.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(at + key.size());
  const auto v = number_at(rest);
  if (!v) return std::nullopt;
  if (rest.starts_with("ms")) return *v * 1e-3;
  if (rest.starts_with("µs") || rest.starts_with("us")) return *v * 1e-6;
  if (rest.starts_with("ns")) return *v * 1e-9;
  if (rest.starts_with("s")) return *v;
  return std::nullopt;
}

std::optional<log_tokens> tgi(std::string_view line) {
  if (line.find("Success") == std::string_view::npos) return std::nullopt;
  const auto inference = duration_s(line, "inference_time=\"");
  const auto per_token = duration_s(line, "time_per_token=\"");
  if (!inference || !per_token || !(*per_token > 0.0)) return std::nullopt;
  log_tokens t;
  t.server = server_kind::tgi;
  // TGI divides the whole Duration by the token count, so the quotient is the count to within
  // the printed digits.  A quotient past any real request's length (a per-token time printed as
  // 1e-310ms gives infinity) is not a count.
  const double count = std::round(*inference / *per_token);
  if (!(count <= kMaxRequestTokens)) return std::nullopt;
  t.output = count;
  t.requests = 1;
  t.requests_known = true;
  return t;
}

}  // namespace

std::optional<log_tokens> parse_log_line(std::string_view line) {
  // One cheap test per server before any parsing: most lines are none of these.
  if (line.find("throughput") != std::string_view::npos) {
    if (auto t = vllm(line)) return t;
    if (auto t = sglang(line)) return t;
  }
  if (line.find("Prefill batch") != std::string_view::npos) return sglang(line);
  if (line.find("eval time =") != std::string_view::npos) return llamacpp(line);
  if (line.find("time_per_token=") != std::string_view::npos) return tgi(line);
  return std::nullopt;
}

}  // namespace joules::tokens
