// libFuzzer target: a PricingPolicy object (any JSON). parse_policy returns a policy or errors, never
// throws; for an accepted policy the lookups the cost engine makes must hold their contracts at
// instants the input chooses: the next tariff boundary lies after the instant, the next off-peak
// instant is off-peak, a rate is never negative.
#include "controllers/cost/policy.h"
#include "tests/fuzz/fuzz_support.h"

#include <chrono>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace valley;
  using namespace std::chrono;
  auto object = fuzz::json_of(fuzz::text_of(data, size));
  if (!object) return 0;
  std::vector<std::string> errors;
  auto policy = cost::parse_policy(*object, &errors);
  FUZZ_REQUIRE(policy.has_value() == errors.empty(), object->dump());
  if (!policy) return 0;
  // Instants spread over years from a hash of the input, so DST changes and leap days come up.
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 1099511628211ull;
  for (int k = 0; k < 4; ++k) {
    auto t = system_clock::time_point(seconds(1'600'000'000 + static_cast<int64_t>((h >> (k * 8)) % 400'000'000)));
    auto tariff = cost::tariff_at(*policy, t);
    FUZZ_REQUIRE(tariff.per_kwh >= 0, object->dump());
    auto boundary = cost::next_tariff_boundary(*policy, t);
    FUZZ_REQUIRE(boundary > t, object->dump());
    if (auto next = cost::next_off_peak(*policy, t)) {
      FUZZ_REQUIRE(*next >= t && cost::off_peak(*policy, *next), object->dump());
    }
    for (const char* vendor : {"nvidia", "amd"}) {
      auto rate = cost::rate_for(*policy, vendor, {{"karpenter.sh/capacity-type", "spot"}});
      FUZZ_REQUIRE(rate.gpu_per_hour >= 0 && rate.watts >= 0, object->dump());
    }
    FUZZ_REQUIRE(cost::multiplier_milli(*policy, static_cast<int>(h % 101)) >= 0, object->dump());
  }
  return 0;
}
