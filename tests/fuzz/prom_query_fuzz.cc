// libFuzzer target: a Prometheus query answer as Valley reads it (operator/prom), and the GPU health
// rules applied to whatever samples it yields. It parses or is rejected with a reason; every sample
// kept has a finite value; the rules name only nodes that a sample labels.
#include <cmath>
#include <set>

#include "controllers/gpu/health.h"
#include "operator/prom/query.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace valley;
  std::string error;
  auto samples = prom::parse_vector(fuzz::text_of(data, size), &error);
  if (!samples) {
    FUZZ_REQUIRE(!error.empty(), "a rejected answer must say why");
    return 0;
  }
  std::set<std::string> hosts;
  for (const auto& s : *samples) {
    FUZZ_REQUIRE(std::isfinite(s.value), "a sample with a value that is not finite was kept");
    if (auto it = s.labels.find("Hostname"); it != s.labels.end()) hosts.insert(it->second);
  }
  gpu::HealthConfig config;
  std::map<std::string, std::vector<prom::Sample>> by_signal;
  for (const auto& q : gpu::queries(config)) by_signal[q.signal] = *samples;
  for (const auto& [node, what] : gpu::node_faults(config, by_signal)) {
    FUZZ_REQUIRE(hosts.count(node) == 1, "a fault on a node no sample names: " + node);
    FUZZ_REQUIRE(!what.empty(), "a fault without words on " + node);
  }
  return 0;
}
