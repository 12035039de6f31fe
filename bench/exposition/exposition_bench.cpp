// Cost of a scrape without the network: refilling a node's exposition from readings and
// serialising it (what the server's metrics_writer does), and parsing a request head.
#include <benchmark/benchmark.h>

#include <string>
#include <string_view>

#include "fixtures/sample_exposition.hpp"
#include "http/http_request.hpp"

namespace {

void BM_FillAndSerialise(benchmark::State& state) {
  joules::test::node_exposition node(static_cast<unsigned>(state.range(0)));
  std::string body;
  std::uint64_t tick = 0;
  for (auto _ : state) {
    node.fill(++tick);
    body.clear();  // keeps its capacity, as the server's buffer does
    node.exposition().write(body);
    benchmark::DoNotOptimize(body.data());
  }
  std::size_t samples = 0;
  for (const auto& f : node.exposition().families())
    samples += f->size();
  state.counters["bytes"] = static_cast<double>(body.size());
  state.counters["samples"] = static_cast<double>(samples);
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(body.size()));
}
BENCHMARK(BM_FillAndSerialise)->Arg(1)->Arg(8)->Arg(64)->Unit(benchmark::kMicrosecond);

void BM_SerialiseOnly(benchmark::State& state) {
  joules::test::node_exposition node(static_cast<unsigned>(state.range(0)));
  node.fill(1);
  std::string body;
  for (auto _ : state) {
    body.clear();
    node.exposition().write(body);
    benchmark::DoNotOptimize(body.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(body.size()));
}
BENCHMARK(BM_SerialiseOnly)->Arg(8)->Unit(benchmark::kMicrosecond);

void BM_ParsePrometheusRequest(benchmark::State& state) {
  constexpr std::string_view kScrape =
      "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:9400\r\nUser-Agent: Prometheus/2.42.0\r\n"
      "Accept: application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.4\r\n"
      "Accept-Encoding: gzip\r\nX-Prometheus-Scrape-Timeout-Seconds: 10\r\n\r\n";
  const joules::exporter::http::parser_limits limits{};
  for (auto _ : state) {
    auto r = joules::exporter::http::parse_request(kScrape, limits);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_ParsePrometheusRequest);

}  // namespace

BENCHMARK_MAIN();
