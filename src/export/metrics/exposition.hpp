#pragma once
// The data model joules exposes to Prometheus: an exposition holds metric families, registered
// once; each family holds samples, refilled every scrape.  Serialising is text_format.hpp's job
// and serving it http_server.hpp's (prometheus-cpp keeps model, serializer and HTTP apart too).
//
// Built for a scrape that refills everything from the sampler's latest snapshot:
//   - names are validated once, at registration, and a bad one throws std::invalid_argument;
//   - a label_set is validated and escaped once when it is built (one per GPU, kept for the
//     life of the exporter), so adding a sample only copies already-escaped text;
//   - clear_samples() keeps every buffer, so a scrape after the first allocates nothing.
//
// Units are in the names (`_watts`, `_joules_total`, `_bytes`, `_seconds`), as Prometheus asks:
// https://prometheus.io/docs/practices/naming/
//
// Thread-safety: none.  One thread fills and serialises an exposition (the HTTP server's thread,
// from the scrape callback); share snapshots, not expositions.

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace joules::exporter {

enum class metric_type : std::uint8_t {
  gauge,
  counter,  // monotonic; the name must end in `_total`
  info,     // the name must end in `_info`; written as a gauge of value 1 (0.0.4 has no info)
};

// How a family name is checked beyond the character rules.  `compat` is only for names joules
// does not choose: dcgm-exporter's DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION is a counter without
// `_total`, and NVIDIA's dashboard queries it by that name.
enum class naming : std::uint8_t { strict, compat };

// `[a-zA-Z_:][a-zA-Z0-9_:]*`, and not starting with `__` (reserved for Prometheus itself).
bool is_valid_metric_name(std::string_view name);

// `[a-zA-Z_][a-zA-Z0-9_]*`, and not starting with `__` (reserved: `__name__`, `__address__`...).
bool is_valid_label_name(std::string_view name);

// A valid label name made from anything a user typed: each character outside [a-zA-Z0-9_]
// (each UTF-8 sequence, not each byte) becomes `_`, a leading digit gets a `_` before it, a
// leading `__` gets `label` before it, and "" becomes "_".  Valid names come back unchanged.
std::string sanitize_label_name(std::string_view raw);

struct label {
  std::string name;
  std::string value;
};

// An ordered set of labels, validated and escaped once.  The order given is the order written.
class label_set {
 public:
  label_set() = default;
  // Throws std::invalid_argument as add() does.
  label_set(std::initializer_list<std::pair<std::string_view, std::string_view>> labels);

  // Appends one label.  Throws std::invalid_argument when the name is not a valid label name
  // (see sanitize_label_name() for user-supplied keys) or is already in the set.  Any value is
  // accepted.
  label_set& add(std::string_view name, std::string_view value);

  // A copy with one more label (for a family that adds, say, `reason` to a GPU's labels).
  label_set with(std::string_view name, std::string_view value) const;

  std::size_t size() const { return labels_.size(); }
  bool empty() const { return labels_.empty(); }
  std::span<const label> labels() const { return labels_; }
  std::optional<std::string_view> find(std::string_view name) const;

  // `a="x",b="y\"z"`: escaped, in the order given, without braces.
  std::string_view text() const { return text_; }
  // The same labels sorted by name: two sets name the same series iff their keys are equal.
  std::string_view key() const { return key_.empty() ? std::string_view(text_) : key_; }
  std::size_t key_hash() const { return key_hash_; }

 private:
  void rebuild_key();

  std::vector<label> labels_;
  std::string text_;
  std::string key_;  // empty when the labels are already sorted and text_ is the key
  std::size_t key_hash_ = 0;
};

struct sample {
  std::string labels;  // label_set::text()
  std::string key;     // label_set::key(), to tell duplicates apart on a hash match
  std::size_t key_hash = 0;
  double value = 0.0;
  std::optional<std::int64_t> timestamp_ms;  // left out of the output unless set
};

class exposition;

class metric_family {
 public:
  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  metric_type type() const { return type_; }

  // Adds a sample.  Throws std::invalid_argument when the family already has a sample with the
  // same labels (in any order): Prometheus rejects a scrape with a duplicate series.  The check
  // is a scan of a small family, and a hash lookup in a large one.
  void add(const label_set& labels, double value);
  void add(const label_set& labels, double value, std::int64_t timestamp_ms);
  // Adds nothing for an unknown reading: unknown is not zero.
  void add_if_known(const label_set& labels, std::optional<double> value);
  // An info sample (value 1).
  void add_info(const label_set& labels) { add(labels, 1.0); }

  std::span<const sample> samples() const { return {samples_.data(), size_}; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Removes the samples and keeps their buffers.
  void clear() {
    size_ = 0;
    indexed_ = 0;
  }

 private:
  friend class exposition;
  metric_family(std::string name, std::string help, metric_type type)
      : name_(std::move(name)), help_(std::move(help)), type_(type) {}
  sample& next_slot(const label_set& labels);
  void check_unique(const label_set& labels);
  void update_index();

  std::string name_;
  std::string help_;
  metric_type type_;
  std::vector<sample> samples_;  // [0, size_) are live; the rest are buffers kept for reuse
  std::size_t size_ = 0;
  // Open addressing over key hashes, for large families: sample position + 1, or 0 when empty.
  // It covers samples [0, indexed_) and is brought up to date when needed.
  std::vector<std::uint32_t> index_;
  std::size_t indexed_ = 0;
};

class exposition {
 public:
  exposition() = default;
  exposition(const exposition&) = delete;
  exposition& operator=(const exposition&) = delete;
  exposition(exposition&&) = default;
  exposition& operator=(exposition&&) = default;

  // Registers a family and returns it; the reference stays valid as long as the exposition.
  // Throws std::invalid_argument for an invalid name, a counter not ending in `_total` or an
  // info not ending in `_info` (under naming::strict), or a name already registered.
  metric_family& add_family(std::string_view name, std::string_view help, metric_type type,
                            naming rule = naming::strict);

  metric_family* find(std::string_view name);
  const metric_family* find(std::string_view name) const;

  // Every family in registration order, the order they are written in.
  std::span<const std::unique_ptr<metric_family>> families() const { return families_; }

  // Empties every family and keeps the registrations and buffers, for the next scrape.
  void clear_samples();

  // The text format (text_format.hpp), appended to `out`.
  void write(std::string& out) const;
  std::string text() const;

 private:
  // unique_ptr keeps the references add_family() returns valid as the vector grows.
  std::vector<std::unique_ptr<metric_family>> families_;
};

}  // namespace joules::exporter
