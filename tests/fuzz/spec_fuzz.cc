// libFuzzer target: a TrainingTask object as the API server could hand it over (any JSON). parse_task
// must return a spec or errors, never both, never throw; a spec it accepts must hold its invariants
// and render into pods, Service and hostfile whose names Kubernetes accepts.
#include "controllers/api/pod.h"
#include "controllers/api/spec.h"
#include "controllers/render/render.h"
#include "tests/fuzz/fuzz_support.h"

#include <algorithm>

namespace {

bool dns_label(const std::string& s) { return !s.empty() && s.size() <= 63; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace valley;
  auto object = fuzz::json_of(fuzz::text_of(data, size));
  if (!object) return 0;
  auto parsed = api::parse_task(*object);
  FUZZ_REQUIRE(parsed.spec.has_value() == parsed.errors.empty(), object->dump());
  if (!parsed.spec) return 0;
  const api::TaskSpec& s = *parsed.spec;
  FUZZ_REQUIRE(s.min_workers >= 1 && s.min_workers <= s.max_workers, object->dump());
  FUZZ_REQUIRE(s.gpus.milli > 0 && (s.gpus.whole() || s.gpus.milli < 1000), object->dump());
  FUZZ_REQUIRE(!s.max_cost_micros || *s.max_cost_micros >= 0, object->dump());
  // Rendering is what the controller does next with an accepted spec.
  // A bounded size keeps each run fast; names depend on the index, so the last index is checked too.
  render::Shape shape{std::min(s.max_workers, 64), 1};
  auto placement = render::default_placement(s);
  for (int index : {0, s.max_workers - 1}) {
    auto pod = render::worker_pod(s, index, shape, placement);
    FUZZ_REQUIRE(dns_label(pod["metadata"]["name"].get<std::string>()), pod["metadata"].dump());
  }
  if (s.type == api::TaskType::MPI) {
    auto launcher = render::launcher_pod(s, shape);
    FUZZ_REQUIRE(dns_label(launcher["metadata"]["name"].get<std::string>()), launcher["metadata"].dump());
    auto service = render::headless_service(s);
    FUZZ_REQUIRE(dns_label(service["metadata"]["name"].get<std::string>()), service["metadata"].dump());
    FUZZ_REQUIRE(launcher["metadata"]["annotations"].value(api::kHostfileAnnotation, "") == render::hostfile(s, shape.workers),
                 launcher["metadata"].dump());
  }
  return 0;
}
