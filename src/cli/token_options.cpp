// --tokens-from, --tokens-metric and --tokens-interval: joules per token of inference servers,
// for serve, monitor, run and wrap (docs/inference.md).

#include "cli/shared_options.hpp"
#include "session/inference.hpp"

namespace joules::cli {

void declare_tokens(options::option_table& t, session::inference_settings& s,
                    std::string_view subcommand) {
  t.group("Tokens");
  const std::string from_help =
      std::string(
          "Read an inference server's token counters from its Prometheus page (vLLM, SGLang, "
          "TGI, llama.cpp with --metrics; /metrics when the URL has no path) and report joules "
          "per token of its GPUs: LIST is their indices as nvidia-smi numbers them, all the GPUs "
          "this command reads when left out. Several servers: give each its own GPUs "
          "(URL@gpus=0,1). docs/inference.md.") +
      (subcommand == "wrap"
           ? " Without it, wrap estimates tokens from the throughput lines a server it runs "
             "prints."
           : "");
  CLI::Option* from = t.repeated(
      "tokens-from", "URL[@gpus=LIST]", from_help,
      [&s](const std::string& v) { s.sources.push_back(session::parse_token_source(v)); });
  t.needs(t.repeated("tokens-metric", "[KIND=]NAME[{LABELS}]",
                     "Read this counter instead of the server's own (repeatable): KIND is output "
                     "(the default), input or requests; LABELS select its series, e.g. "
                     "output=my_generated_tokens_total{model=\"m\"}; every matching series is "
                     "summed.",
                     [&s](const std::string& v) {
                       s.metrics.push_back(tokens::parse_metric_selector(v));
                     }),
          from);
  t.needs(t.millis("tokens-interval",
                   "Milliseconds between scrapes of each --tokens-from page; a scrape that takes "
                   "longer than 4/5 of it (at most 5 s) is a gap, not a count.",
                   "1000", 100, 600000, s.interval),
          from);
}

}  // namespace joules::cli
