#pragma once
// Strict reading of one JSON object of a scenario: typed getters with defaults, and an error
// naming every key nobody asked for, so that a typo in a scenario fails loudly instead of
// silently falling back to a default.  Keys starting with "_" and "description" are comments.

#include <nlohmann/json.hpp>

#include <cmath>
#include <set>
#include <stdexcept>
#include <string>

namespace fake_gpu {

struct scenario_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class json_fields {
 public:
  json_fields(const nlohmann::json& object, std::string path) : j_(object), path_(std::move(path)) {
    if (!j_.is_object()) fail("", "must be an object");
  }
  json_fields(const json_fields&) = delete;
  json_fields& operator=(const json_fields&) = delete;

  bool has(const std::string& key) {
    used_.insert(key);
    return j_.contains(key) && !j_.at(key).is_null();
  }
  const nlohmann::json& at(const std::string& key) {
    used_.insert(key);
    return j_.at(key);
  }
  std::string sub(const std::string& key) const { return path_ + "." + key; }

  double number(const std::string& key, double fallback) {
    if (!has(key)) return fallback;
    const auto& v = j_.at(key);
    if (!v.is_number() || !std::isfinite(v.get<double>())) fail(key, "must be a finite number");
    return v.get<double>();
  }
  double non_negative(const std::string& key, double fallback) {
    const double v = number(key, fallback);
    if (v < 0.0) fail(key, "must not be negative");
    return v;
  }
  unsigned long long unsigned_integer(const std::string& key, unsigned long long fallback) {
    if (!has(key)) return fallback;
    const auto& v = j_.at(key);
    if (!v.is_number_unsigned()) fail(key, "must be a non-negative integer");
    return v.get<unsigned long long>();
  }
  bool boolean(const std::string& key, bool fallback) {
    if (!has(key)) return fallback;
    if (!j_.at(key).is_boolean()) fail(key, "must be true or false");
    return j_.at(key).get<bool>();
  }
  std::string string(const std::string& key, const std::string& fallback) {
    if (!has(key)) return fallback;
    if (!j_.at(key).is_string()) fail(key, "must be a string");
    return j_.at(key).get<std::string>();
  }

  [[noreturn]] void fail(const std::string& key, const std::string& why) const {
    throw scenario_error((key.empty() ? path_ : sub(key)) + " " + why);
  }

  // Throws when the object has keys that were never read.
  void finish() const {
    for (const auto& item : j_.items()) {
      const std::string& k = item.key();
      if (used_.count(k) == 0 && k.rfind('_', 0) != 0 && k != "description") {
        fail(k, "is not a known key");
      }
    }
  }

 private:
  const nlohmann::json& j_;
  std::string path_;
  std::set<std::string> used_;
};

}  // namespace fake_gpu
