// Tables the learner reads (steps/counter_learner.hpp): a header names the columns of the rows
// below it (YOLO's "Epoch gpu_mem box ...", spaCy's "E    #       LOSS TOK2VEC ...", Chainer's
// "epoch       iteration   main/loss ..."), and the numbers that open a row take their roles
// from the first two columns; where those count nothing, a counter column further right names
// the number under it (Vowpal Wabbit's "example counter").

#include <array>

#include "steps/counter_learner.hpp"
#include "steps/field_words.hpp"
#include "steps/prefilter.hpp"
#include "steps/scan.hpp"

namespace joules::steps {
namespace {

// A counter column is looked for in the first 160 bytes of a header: a row wider than that is
// no table a trainer prints.
constexpr std::size_t kMaxColumnEnd = 160;

constexpr bool column_gap(char c) {
  return is_space(c) || c == '|';
}

// What a column's name makes the numbers under it.
field_role column_role(std::string_view name) {
  if (name == "#") return field_role::step;  // spaCy's step column, after its epoch column "E"
  return role_of_key(trim_key(name));
}

}  // namespace

void counter_learner::note_header(std::string_view message) {
  std::array<std::string_view, 2> first{};
  std::size_t columns = 0;
  // The first column after those two whose name counts ("counter", "iteration", "step").
  std::size_t counter_begin = 0;
  std::size_t counter_end = 0;
  for (std::size_t i = 0; i < message.size();) {
    while (i < message.size() && column_gap(message[i]))
      ++i;
    if (i == message.size()) break;
    // A header has names only: a number standing alone is a row, a sentence with a count.
    if (is_digit(message[i])) return;
    std::size_t e = i;
    while (e < message.size() && !column_gap(message[e]))
      ++e;
    const std::string_view name = message.substr(i, e - i);
    if (columns < first.size()) {
      first[columns] = name;
    } else if (counter_end == 0 && e <= kMaxColumnEnd &&
               (eq_ci(name, "counter") || column_role(name) == field_role::step ||
                column_role(name) == field_role::global)) {
      counter_begin = i;
      counter_end = e;
    }
    ++columns;
    i = e;
  }
  if (columns < 3) return;
  field_role a = column_role(first[0]);
  const field_role b = column_role(first[1]);
  // "E" heads spaCy's epochs only beside a step column.
  if (a == field_role::none && (first[0] == "E" || first[0] == "Ep") && b == field_role::step)
    a = field_role::epoch;
  // Only a counter's name is kept (a header of other names changes nothing), and only from a
  // line the prefilter lets through, so that a parser without it comes to the same.
  if (!may_be_step_related(message)) return;
  const bool values =
      contains_ci(message, "loss") || contains_ci(message, "acc") || contains_ci(message, "error");
  if (a == field_role::none) {
    // Vowpal Wabbit's "loss       last          counter      weight    label ...": the counter
    // column further right names the whole number under it, in rows of values.
    if (counter_end == 0 || !values) return;
    columns_ = {field_role::none, field_role::none};
    column_begin_ = static_cast<std::uint16_t>(counter_begin);
    column_end_ = static_cast<std::uint16_t>(counter_end);
    column_new_table_ = true;
    header_values_ = true;
    return;
  }
  columns_ = {a, b == field_role::step || b == field_role::global ? b : field_role::none};
  column_begin_ = column_end_ = 0;
  // fastai's "epoch     train_loss  valid_loss  accuracy  time": its rows are an epoch's values.
  header_values_ = values;
}

bool counter_learner::name_columns(std::string_view message, const line_fields& fields,
                                   line_fields& named) const {
  if (column_end_ != 0 && fields.count > 0) {
    // A row of numbers only (a flag after them aside: Vowpal Wabbit's " h" for a holdout loss):
    // the whole number whose digits stand under the counter's name, right-aligned as printf
    // aligns them or within it.
    const std::size_t first = message.find_first_not_of(' ');
    if (first == std::string_view::npos || !(is_digit(message[first]) || message[first] == '-'))
      return false;
    for (std::size_t i = 0; i < fields.count; ++i) {
      const field& x = fields.fields[i];
      if (!x.key.empty()) return false;
      std::size_t end = x.pos;
      while (end < message.size() && is_digit(message[end]))
        ++end;
      if (end < column_begin_ || x.pos >= column_end_ + 1U) continue;
      named = fields;
      named.fields[i].role = field_role::step;
      named.train_values = named.float_values;
      return true;
    }
    return false;
  }
  if (columns_[0] == field_role::none || fields.count == 0 ||
      (fields.fields[0].pos != 0 && fields.fields[0].place != field_place::leading) ||
      !fields.fields[0].key.empty()) {
    return false;
  }
  named = fields;
  named.fields[0].role = columns_[0];
  named.fields[0].place = field_place::leading;
  if (columns_[1] != field_role::none && fields.count > 1 && fields.fields[1].index == 1 &&
      fields.fields[1].key.empty()) {
    // A table's step column counts the run: one row per report, epochs or not (spaCy's "#",
    // Chainer's "iteration").
    named.fields[1].role = field_role::global;
  }
  return true;
}

}  // namespace joules::steps
