#include "data/csv.hpp"

#include "util/strings.hpp"

namespace joules::carbon {

std::vector<csv_row> parse_csv(std::string_view text, bool skip_header) {
  std::vector<csv_row> rows;
  csv_row row;
  std::string field;
  bool quoted = false;
  bool any = false;  // the current row has content
  auto end_row = [&] {
    if (any) {
      row.push_back(std::move(field));
      rows.push_back(std::move(row));
    }
    row.clear();
    field.clear();
    any = false;
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
      continue;
    }
    if (c == '"') {
      quoted = true;
      any = true;
    } else if (c == ',') {
      row.push_back(std::move(field));
      field.clear();
      any = true;
    } else if (c == '\n') {
      end_row();
    } else if (c != '\r') {
      field += c;
      any = true;
    }
  }
  end_row();
  if (skip_header && !rows.empty()) rows.erase(rows.begin());
  return rows;
}

std::optional<int> parse_year(std::string_view field) {
  const auto v = parse_uint(field, 1900, 2100);
  return v ? std::optional<int>(static_cast<int>(*v)) : std::nullopt;
}

}  // namespace joules::carbon
