// Tables the learner reads (steps/counter_learner.hpp): a header names the columns of the rows
// below it (YOLO's "Epoch gpu_mem box ...", spaCy's "E    #       LOSS TOK2VEC ...", Chainer's
// "epoch       iteration   main/loss ..."), and the numbers that open a row take their roles
// from the first two columns.

#include <array>

#include "steps/counter_learner.hpp"
#include "steps/field_words.hpp"
#include "steps/prefilter.hpp"
#include "steps/scan.hpp"

namespace joules::steps {
namespace {

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
  for (std::size_t i = 0; i < message.size();) {
    while (i < message.size() && column_gap(message[i]))
      ++i;
    if (i == message.size()) break;
    // A header has names only: a number standing alone is a row, a sentence with a count.
    if (is_digit(message[i])) return;
    std::size_t e = i;
    while (e < message.size() && !column_gap(message[e]))
      ++e;
    if (columns < first.size()) first[columns] = message.substr(i, e - i);
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
  if (a == field_role::none || !may_be_step_related(message)) return;
  columns_ = {a, b == field_role::step || b == field_role::global ? b : field_role::none};
  // fastai's "epoch     train_loss  valid_loss  accuracy  time": its rows are an epoch's values.
  header_values_ =
      contains_ci(message, "loss") || contains_ci(message, "acc") || contains_ci(message, "error");
}

bool counter_learner::name_columns(const line_fields& fields, line_fields& named) const {
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
