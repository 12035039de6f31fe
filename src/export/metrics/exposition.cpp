#include "export/metrics/exposition.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <functional>
#include <numeric>
#include <stdexcept>

#include "export/metrics/text_format.hpp"

namespace joules::exporter {
namespace {

bool is_alpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

bool is_valid_name(std::string_view name, bool colon_allowed) {
  if (name.empty() || name.starts_with("__")) return false;
  const auto first_ok = [&](char c) {
    return is_alpha(c) || c == '_' || (colon_allowed && c == ':');
  };
  if (!first_ok(name.front())) return false;
  return std::all_of(name.begin() + 1, name.end(),
                     [&](char c) { return first_ok(c) || is_digit(c); });
}

// Up to this many samples a family checks for duplicates by scanning; beyond, by hashing.
constexpr std::size_t kLinearScanMax = 16;

void append_label(std::string& out, const label& l) {
  out += l.name;
  out += "=\"";
  append_label_value_escaped(out, l.value);
  out += '"';
}

}  // namespace

bool is_valid_metric_name(std::string_view name) {
  return is_valid_name(name, true);
}

bool is_valid_label_name(std::string_view name) {
  return is_valid_name(name, false);
}

std::string sanitize_label_name(std::string_view raw) {
  if (is_valid_label_name(raw)) return std::string(raw);
  std::string body;
  body.reserve(raw.size());
  for (const char c : raw) {
    const auto byte = static_cast<unsigned char>(c);
    if (is_alpha(c) || is_digit(c) || c == '_') {
      body += c;
    } else if ((byte & 0xC0U) != 0x80U) {  // one `_` per UTF-8 sequence: skip continuation bytes
      body += '_';
    }
  }
  // Prefixes are built first and the body appended: GCC 12 warns falsely (-Wrestrict, bug
  // 105651) on string::insert(0, ...) at -O2.
  std::string out;
  if (body.empty() || is_digit(body.front())) {
    out = "_";
  } else if (body.starts_with("__")) {
    out = "label";
  }
  out += body;
  return out;
}

label_set::label_set(std::initializer_list<std::pair<std::string_view, std::string_view>> labels) {
  labels_.reserve(labels.size());
  for (const auto& [name, value] : labels)
    add(name, value);
}

label_set& label_set::add(std::string_view name, std::string_view value) {
  if (!is_valid_label_name(name)) {
    throw std::invalid_argument(fmt::format(
        "label name '{}' is not valid: expected [a-zA-Z_][a-zA-Z0-9_]* not starting with __",
        name));
  }
  if (find(name)) throw std::invalid_argument(fmt::format("label '{}' is given twice", name));
  labels_.push_back({std::string(name), std::string(value)});
  if (!text_.empty()) text_ += ',';
  append_label(text_, labels_.back());
  rebuild_key();
  return *this;
}

label_set label_set::with(std::string_view name, std::string_view value) const {
  label_set copy = *this;
  copy.add(name, value);
  return copy;
}

std::optional<std::string_view> label_set::find(std::string_view name) const {
  for (const auto& l : labels_) {
    if (l.name == name) return std::string_view(l.value);
  }
  return std::nullopt;
}

void label_set::rebuild_key() {
  key_.clear();
  const bool sorted =
      std::is_sorted(labels_.begin(), labels_.end(),
                     [](const label& a, const label& b) { return a.name < b.name; });
  if (!sorted) {
    std::vector<std::size_t> order(labels_.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return labels_[a].name < labels_[b].name; });
    for (const std::size_t i : order) {
      if (!key_.empty()) key_ += ',';
      append_label(key_, labels_[i]);
    }
  }
  key_hash_ = std::hash<std::string_view>{}(key());
}

void metric_family::update_index() {
  // At most a quarter full, so that probes stay short.
  const std::size_t want = std::bit_ceil(4 * (size_ + 1));
  if (index_.size() < want) {
    index_.assign(want, 0);
    indexed_ = 0;
  } else if (indexed_ == 0) {
    std::fill(index_.begin(), index_.end(), 0U);  // cleared since the last scrape
  }
  const std::size_t mask = index_.size() - 1;
  for (; indexed_ < size_; ++indexed_) {
    std::size_t i = samples_[indexed_].key_hash & mask;
    while (index_[i] != 0)
      i = (i + 1) & mask;
    index_[i] = static_cast<std::uint32_t>(indexed_ + 1);
  }
}

void metric_family::check_unique(const label_set& labels) {
  const auto same = [&](const sample& s) {
    return s.key_hash == labels.key_hash() && s.key == labels.key();
  };
  const auto duplicate = [&] {
    return std::invalid_argument(
        fmt::format("{}: a sample with labels {{{}}} is already there", name_, labels.text()));
  };
  if (size_ <= kLinearScanMax) {
    for (std::size_t i = 0; i < size_; ++i) {
      if (same(samples_[i])) throw duplicate();
    }
    return;
  }
  update_index();
  const std::size_t mask = index_.size() - 1;
  for (std::size_t i = labels.key_hash() & mask; index_[i] != 0; i = (i + 1) & mask) {
    if (same(samples_[index_[i] - 1])) throw duplicate();
  }
}

sample& metric_family::next_slot(const label_set& labels) {
  check_unique(labels);
  if (size_ == samples_.size()) samples_.emplace_back();
  sample& s = samples_[size_++];
  s.labels.assign(labels.text());  // assign() keeps the capacity of a reused slot
  s.key.assign(labels.key());
  s.key_hash = labels.key_hash();
  s.timestamp_ms.reset();
  return s;
}

void metric_family::add(const label_set& labels, double value) {
  next_slot(labels).value = value;
}

void metric_family::add(const label_set& labels, double value, std::int64_t timestamp_ms) {
  sample& s = next_slot(labels);
  s.value = value;
  s.timestamp_ms = timestamp_ms;
}

void metric_family::add_if_known(const label_set& labels, std::optional<double> value) {
  if (value) add(labels, *value);
}

metric_family& exposition::add_family(std::string_view name, std::string_view help,
                                      metric_type type, naming rule) {
  if (!is_valid_metric_name(name)) {
    throw std::invalid_argument(fmt::format(
        "metric name '{}' is not valid: expected [a-zA-Z_:][a-zA-Z0-9_:]* not starting with __",
        name));
  }
  if (rule == naming::strict && type == metric_type::counter && !name.ends_with("_total")) {
    throw std::invalid_argument(fmt::format("counter '{}' must end in _total", name));
  }
  if (rule == naming::strict && type == metric_type::info && !name.ends_with("_info")) {
    throw std::invalid_argument(fmt::format("info metric '{}' must end in _info", name));
  }
  if (find(name)) throw std::invalid_argument(fmt::format("metric '{}' is registered twice", name));
  families_.push_back(std::unique_ptr<metric_family>(
      new metric_family(std::string(name), std::string(help), type)));
  return *families_.back();
}

metric_family* exposition::find(std::string_view name) {
  for (auto& f : families_) {
    if (f->name() == name) return f.get();
  }
  return nullptr;
}

const metric_family* exposition::find(std::string_view name) const {
  for (const auto& f : families_) {
    if (f->name() == name) return f.get();
  }
  return nullptr;
}

void exposition::clear_samples() {
  for (auto& f : families_)
    f->clear();
}

void exposition::write(std::string& out) const {
  write_text_format(*this, out);
}

std::string exposition::text() const {
  std::string out;
  write(out);
  return out;
}

}  // namespace joules::exporter
