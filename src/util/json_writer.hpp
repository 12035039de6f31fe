#pragma once
// A small streaming JSON writer for records and machine output.  Numbers go through
// to_chars_clean (util/number_text.hpp: locale-proof, no float noise); non-finite doubles become
// null;
// strings are escaped and invalid UTF-8 is replaced by U+FFFD so every line is valid JSON.
// Not thread-safe: one writer per record.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace joules {

class json_writer {
 public:
  json_writer& begin_object();
  json_writer& end_object();
  json_writer& begin_array();
  json_writer& end_array();
  json_writer& key(std::string_view k);

  json_writer& value(std::string_view s);
  json_writer& value(const char* s) { return value(std::string_view(s)); }
  json_writer& value(const std::string& s) { return value(std::string_view(s)); }
  json_writer& value(double d);
  json_writer& value(std::int64_t i);
  json_writer& value(std::uint64_t u);
  json_writer& value(int i) { return value(static_cast<std::int64_t>(i)); }
  json_writer& value(unsigned u) { return value(static_cast<std::uint64_t>(u)); }
  json_writer& value(bool b);
  json_writer& null();
  template <class T>
  json_writer& value(const std::optional<T>& v) {
    return v ? value(*v) : null();
  }

  // key(k).value(v) in one call.
  template <class T>
  json_writer& field(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }

  // Appends already-serialised JSON as one value (used to embed parsed metric objects).
  json_writer& raw(std::string_view json);

  const std::string& str() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  void separate();

  std::string out_;
  std::uint64_t has_items_ = 0;  // bit d: the container at depth d already holds a value
  unsigned depth_ = 0;
  bool after_key_ = false;
};

// Appends `s` to `out` as JSON string contents (no quotes), escaping as RFC 8259 requires.
void append_json_escaped(std::string& out, std::string_view s);

// Shortest round-trip decimal form of `d`, or "null" when it is not finite.
void append_json_number(std::string& out, double d);

}  // namespace joules
