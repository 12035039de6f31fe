#pragma once
// What the token sources leave behind: `inference` JSONL records (docs/jsonl-schema.md) and
// the run summary's part per source (record/summary.hpp).  Pure.

#include <string>
#include <string_view>

#include "record/session_records.hpp"
#include "record/summary.hpp"
#include "tokens/source_model.hpp"

namespace joules::session {

// An `inference` record: `totals` of `view`'s source over `window` ("period": the intervals
// since the previous record; "run": all of them).
std::string inference_record(const run_context& ctx, const tokens::source_view& view,
                             const tokens::window_totals& totals, std::string_view window);

// "vllm serving m on GPUs 0,1: 0.412 J/output token at load (0.455 with idle), ..."
summary_part inference_summary(const tokens::source_view& view);

// "vllm serving m on GPUs 0,1" / "the log of vllm on GPUs 0-7": a source in words.
std::string source_words(const tokens::source_view& view);

}  // namespace joules::session
