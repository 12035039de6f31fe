#pragma once
// Small helpers shared by the api_*.cpp entry points.

#include <cstring>
#include <string>

#include "runtime.hpp"

namespace fake_nvml {

// NVML's string protocol: INSUFFICIENT_SIZE unless `length` holds the text and its NUL.
inline nv::nvmlReturn_t copy_string(const std::string& s, char* out, unsigned int length) {
  if (out == nullptr) return nv::kErrorInvalidArgument;
  if (length < s.size() + 1) return nv::kErrorInsufficientSize;
  std::memcpy(out, s.c_str(), s.size() + 1);
  return nv::kSuccess;
}

}  // namespace fake_nvml
