#pragma once
// A fast test that rejects the lines the parser can make nothing of, before it strips prefixes
// and tries every format and its learnt counters: most lines of a training log (and all of a
// chatty data loader's) are not steps.  It only ever says "maybe" too often, never "no" for a
// line a built-in format would make anything of, so the parser's results are the same with it
// as without it (tests/steps/step_corpus_test.cpp runs both over the corpus and compares every
// line).
//
// Why that holds: every format, phase, metric-only line and epoch statement the parser knows
// needs one of the words listed in prefilter.cpp at the start of a word (after a byte that is
// not a letter), or "%|", "━", "{", or a digit, "/" and a digit (or "Unknown"; spaces allowed
// around the slash); the learnt counters (steps/counter_learner.hpp) need a word that names a
// counter (those words are on the list) or a number that opens the line; lines with control
// bytes (colour codes, carriage returns: what a terminal shows is not the raw bytes) are always
// "maybe".  A format added to the parser must add its word there.  Pure.

#include <string_view>

namespace joules::steps {

bool may_be_step_related(std::string_view line);

}  // namespace joules::steps
