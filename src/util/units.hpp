#pragma once
// Physical quantities joules passes between modules.  Energy that must add up exactly (windows
// of a run) is carried as integer microjoules; everything else is a double in SI base units with
// the unit in the type.  Machine output always uses SI base units with the unit in the key.

#include <chrono>
#include <compare>
#include <cstdint>

namespace joules {

using seconds = std::chrono::duration<double>;

struct watts {
  double value = 0.0;
  auto operator<=>(const watts&) const = default;
  watts operator+(watts o) const { return {value + o.value}; }
  watts& operator+=(watts o) {
    value += o.value;
    return *this;
  }
};

struct joules_t {
  double value = 0.0;
  auto operator<=>(const joules_t&) const = default;
  joules_t operator+(joules_t o) const { return {value + o.value}; }
  joules_t operator-(joules_t o) const { return {value - o.value}; }
  joules_t& operator+=(joules_t o) {
    value += o.value;
    return *this;
  }
};

inline joules_t operator*(watts p, seconds t) {
  return {p.value * t.count()};
}
inline watts operator/(joules_t e, seconds t) {
  return {e.value / t.count()};
}

// Integer microjoules: window energies are differences of these, so setup + steps + tail equals
// the run's total exactly.  int64 holds 9.2e12 J.
using microjoules = std::int64_t;

inline constexpr double kJoulesPerWattHour = 3600.0;
inline constexpr double kJoulesPerMicrojoule = 1e-6;

inline joules_t to_joules(microjoules uj) {
  return {static_cast<double>(uj) * kJoulesPerMicrojoule};
}

}  // namespace joules
