// libFuzzer target: the small strings Valley reads from users and the API server: durations
// ("90m"), money ("12.34": spec.maxCost and the PricingPolicy's prices), quantities ("8", "500m"),
// decimal factors ("1.5"), RFC 3339 times, Retry-After. The first byte
// picks the parser. Each must accept or refuse without crashing or overflowing, and what Valley
// prints for an accepted value must read back as the same value.
#include "controllers/inputs/snapshot.h"
#include "controllers/api/money.h"
#include "operator/duration.h"
#include "operator/kube/retry.h"
#include "operator/kube/timefmt.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace valley;
  if (size == 0) return 0;
  std::string text = fuzz::text_of(data + 1, size - 1);
  switch (data[0] % 6) {
    case 0:
      if (auto d = parse_duration(text)) {
        FUZZ_REQUIRE(d->count() >= 0, text);
        auto again = parse_duration(format_duration(*d));
        FUZZ_REQUIRE(again && *again == *d, text + " -> " + format_duration(*d));
      }
      break;
    case 1:
      if (auto m = api::parse_money(text)) {
        FUZZ_REQUIRE(*m >= 0, text);
        auto again = api::parse_money(api::format_money(*m, 6));
        FUZZ_REQUIRE(again && *again == *m, text + " -> " + api::format_money(*m, 6));
      }
      break;
    case 2: {  // a Kubernetes quantity, as a node's allocatable GPUs
      nlohmann::json node = {{"metadata", {{"name", "n"}}},
                             {"status", {{"allocatable", {{"nvidia.com/gpu", text}, {"amd.com/gpu", text}}}}}};
      auto view = planner::node_from(node);
      for (const auto& [resource, units] : view.free) FUZZ_REQUIRE(units >= 0, resource + "=" + text);
      break;
    }
    case 3:
      if (auto m = api::parse_milli(text)) {
        FUZZ_REQUIRE(*m >= 0, text);
        auto again = api::parse_milli(api::format_milli(*m));
        FUZZ_REQUIRE(again && *again == *m, text + " -> " + api::format_milli(*m));
      }
      break;
    case 4:
      if (auto t = kube::parse_time(text)) {
        auto again = kube::parse_time(kube::format_micro_time(*t));
        FUZZ_REQUIRE(again.has_value(), text + " -> " + kube::format_micro_time(*t));
      }
      break;
    case 5:
      if (auto s = kube::parse_retry_after(text)) FUZZ_REQUIRE(s->count() >= 0, text);
      break;
  }
  return 0;
}
