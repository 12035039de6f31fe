#include "session/inference.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>

#include "session/inference_report.hpp"
#include "tokens/log_lines.hpp"
#include "tokens/log_source.hpp"
#include "tokens/scrape_source.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"

namespace joules::session {
namespace {

// The whole of finish(): the last scrapes and log lines get this long.
constexpr std::chrono::milliseconds kFinishBudget{2000};
// Between `inference` records of a source (and its period hooks).
constexpr std::chrono::milliseconds kRecordPeriod{10000};

std::string gpu_names(const std::vector<unsigned>& gpus) {
  std::string out;
  for (unsigned g : gpus)
    out += (out.empty() ? "" : ", ") + std::to_string(g);
  return out;
}

}  // namespace

token_source_spec parse_token_source(const std::string& text) {
  const auto bad = [&](std::string_view why) {
    return usage_error(fmt::format(
        "--tokens-from '{}': {}; expected URL[@gpus=LIST], e.g. http://127.0.0.1:8000/metrics or "
        "http://10.0.0.5:8000/metrics@gpus=0,1 (LIST: GPU indices as nvidia-smi numbers them)",
        text, why));
  };
  token_source_spec s;
  s.text = text;
  std::string url = text;
  const std::size_t at = text.rfind("@gpus=");
  if (at != std::string::npos) {
    url = text.substr(0, at);
    const std::string list = text.substr(at + 6);
    for (const auto& item : split(list, ',')) {
      const auto n = parse_uint(item, 0, 1023);
      if (!n) throw bad(fmt::format("'{}' in @gpus= is not a GPU index", item));
      const auto g = static_cast<unsigned>(*n);
      if (std::find(s.gpus.begin(), s.gpus.end(), g) != s.gpus.end())
        throw bad(fmt::format("GPU {} is named twice", g));
      s.gpus.push_back(g);
    }
  }
  const std::size_t scheme = url.find("://");
  const std::string_view authority =
      scheme == std::string::npos
          ? std::string_view()
          : std::string_view(url).substr(scheme + 3, url.find('/', scheme + 3) - (scheme + 3));
  if (authority.find('@') != std::string_view::npos) throw bad("no user@ in the URL");
  if (url.find("@gpu") != std::string::npos) throw bad("@gpus= takes a list, e.g. @gpus=0,1");
  s.url = exporter::parse_http_url(url, "--tokens-from");
  if (s.url.path == "/") s.url.path = "/metrics";  // where every one of these servers has it
  return s;
}

void check_token_sources(const std::vector<token_source_spec>& sources) {
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const token_source_spec& a = sources[i];
    if (sources.size() > 1 && a.gpus.empty()) {
      throw usage_error(fmt::format(
          "--tokens-from '{}': with several servers, give each its GPUs, e.g. {}@gpus=0,1", a.text,
          a.text));
    }
    for (std::size_t j = 0; j < i; ++j) {
      const token_source_spec& b = sources[j];
      if (a.url.text() == b.url.text())
        throw usage_error(fmt::format("--tokens-from '{}': the URL is given twice", a.text));
      for (unsigned g : a.gpus) {
        if (std::find(b.gpus.begin(), b.gpus.end(), g) != b.gpus.end()) {
          throw usage_error(fmt::format(
              "--tokens-from: GPU {} is in '{}' and in '{}': a GPU's energy goes to one server", g,
              b.text, a.text));
        }
      }
    }
  }
}

inference_tracker::inference_tracker(const inference_settings& settings, const sampler& readings,
                                     const std::vector<device_info>& devices,
                                     const run_context* ctx, hooks h)
    : readings_(readings), ctx_(ctx), hooks_(std::move(h)) {
  check_token_sources(settings.sources);
  std::vector<std::size_t> all;
  std::vector<unsigned> all_indices;
  for (std::size_t k = 0; k < devices.size(); ++k) {
    if (devices[k].kind != device_kind::gpu) continue;
    all.push_back(k);
    all_indices.push_back(devices[k].index);
  }
  if (all.empty() && settings.any()) {
    throw usage_error(
        "--tokens-from: this session reads no GPU, so no energy can be put to the tokens");
  }
  // The sampler places the energy at a scrape's instant as it places a window boundary, once it
  // has read past it; the snapshots' interpolation is the fallback (tokens/energy_history.hpp).
  history_ = std::make_unique<tokens::energy_history>(devices.size(), [this](double t_s) {
    const auto since_epoch =
        std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(t_s));
    return readings_.energy_at(mono_time(since_epoch));
  });
  // A scrape waits for the snapshot after its instant: a sampler interval, with room for a
  // loaded machine.
  const auto energy_wait = sampler_interval() * 3 + std::chrono::milliseconds(1000);

  std::vector<tokens::source_view> views;
  std::vector<tokens::source_identity> ids;
  std::vector<std::vector<std::size_t>> slots;
  for (const auto& spec : settings.sources) {
    tokens::source_identity id;
    id.endpoint = spec.url.display();
    std::vector<std::size_t> mine;
    if (spec.gpus.empty()) {
      mine = all;
      id.gpus = all_indices;
    } else {
      for (unsigned g : spec.gpus) {
        const auto it = std::find(all_indices.begin(), all_indices.end(), g);
        if (it == all_indices.end()) {
          throw usage_error(fmt::format(
              "--tokens-from '{}': GPU {} is not one this session reads ({}); see --gpus and "
              "CUDA_VISIBLE_DEVICES",
              spec.text, g, gpu_names(all_indices)));
        }
        mine.push_back(all[static_cast<std::size_t>(it - all_indices.begin())]);
        id.gpus.push_back(g);
      }
    }
    tokens::source_view v;
    v.id = id;
    views.push_back(v);
    ids.push_back(std::move(id));
    slots.push_back(std::move(mine));
  }
  const bool logs = settings.logs && settings.sources.empty();
  if (logs) {
    tokens::source_view v;
    v.id = {"log", all_indices, true};
    views.push_back(v);
  }
  board_ = std::make_unique<tokens::board>(std::move(views));
  for (std::size_t i = 0; i < settings.sources.size(); ++i) {
    tokens::scrape_options o;
    o.url = settings.sources[i].url;
    o.metrics = settings.metrics;
    o.interval = settings.interval;
    o.energy_wait = energy_wait;
    o.period = kRecordPeriod;
    scrapes_.push_back(std::make_unique<tokens::scrape_source>(
        std::move(o), ids[i], slots[i], *history_, *board_, i, source_hooks()));
  }
  if (logs) {
    log_ = std::make_unique<tokens::log_source>(tokens::source_identity{"log", all_indices, true},
                                                all, *history_, *board_, 0, source_hooks(),
                                                kRecordPeriod, energy_wait);
  }
}

inference_tracker::~inference_tracker() {
  scrapes_.clear();
  log_.reset();
  if (follower_.joinable()) {
    history_->close();
    follower_.request_stop();
    follower_.join();
  }
}

std::chrono::milliseconds inference_tracker::sampler_interval() const {
  return std::max(
      std::chrono::milliseconds(10),
      std::chrono::milliseconds(static_cast<long long>(readings_.interval_s() * 1000.0 + 0.5)));
}

// The hooks are read when called: set_hooks() may replace them until start().
tokens::source_hooks inference_tracker::source_hooks() {
  tokens::source_hooks h;
  h.notice = [this](const std::string& line) {
    if (hooks_.notice) hooks_.notice(line);
  };
  h.period = [this](const tokens::source_view& v, const tokens::window_totals& t) {
    if (hooks_.record && ctx_ != nullptr && !v.server.empty())
      hooks_.record(inference_record(*ctx_, v, t, "period"));
  };
  return h;
}

void inference_tracker::start(mono_time t) {
  follow_every_ = sampler_interval();  // the interval in force once the sampler started
  follower_ = std::jthread([this](std::stop_token stop) { follow(stop); });
  for (auto& s : scrapes_)
    s->start();
  if (log_) log_->start(t);
}

void inference_tracker::follow(const std::stop_token& stop) {
  std::mutex mu;
  std::condition_variable_any cv;
  std::shared_ptr<const sampler_snapshot> last;
  std::vector<std::optional<double>> energy;
  while (!stop.stop_requested()) {
    auto snap = readings_.snapshot();
    mono_time wake = steady::now() + follow_every_ / 4;
    if (snap && snap != last) {
      energy.assign(snap->devices.size(), std::nullopt);
      for (std::size_t k = 0; k < snap->devices.size(); ++k)
        energy[k] = snap->devices[k].energy_j;
      history_->push(monotonic_seconds(snap->taken), energy);
      // The next snapshot comes an interval after this one (the sampler keeps a grid).
      wake = std::max(wake, snap->taken + follow_every_ + std::chrono::milliseconds(2));
      last = std::move(snap);
    }
    std::unique_lock lock(mu);
    cv.wait_until(lock, stop, wake, [] { return false; });
  }
}

void inference_tracker::on_line(std::string_view line, mono_time t) {
  if (!log_) return;
  if (const auto tokens = tokens::parse_log_line(line)) log_->push(t, *tokens);
}

void inference_tracker::finish(mono_time end) {
  if (finished_) return;
  finished_ = true;
  const mono_time deadline = steady::now() + kFinishBudget;
  for (auto& s : scrapes_)
    s->request_finish(deadline);
  for (auto& s : scrapes_)
    s->join();
  if (log_) log_->finish(end, kFinishBudget);
  history_->close();
  if (follower_.joinable()) {
    follower_.request_stop();
    follower_.join();
  }
  if (hooks_.record && ctx_ != nullptr) {
    for (const auto& v : board_->read()) {
      // A source never read has no figure at all (its notice said why), not zeros.
      if (v.run.intervals > 0 && !v.server.empty())
        hooks_.record(inference_record(*ctx_, v, v.run, "run"));
    }
  }
}

std::vector<summary_part> inference_tracker::summary() const {
  std::vector<summary_part> out;
  for (const auto& v : board_->read()) {
    if (v.run.intervals > 0 && !v.server.empty()) {
      out.push_back(inference_summary(v));
    } else if (!v.id.estimated) {
      summary_part p;
      p.label = "tokens";
      p.text = fmt::format("{}: no token counted: {}", v.id.endpoint,
                           v.last_error.empty() ? "no scrape finished" : v.last_error);
      out.push_back(std::move(p));
    }
  }
  return out;
}

}  // namespace joules::session
