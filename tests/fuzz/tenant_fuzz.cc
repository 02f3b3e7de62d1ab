// libFuzzer target: a Tenant object (any JSON). parse_tenant returns a tenant or errors, never
// throws; an accepted tenant keeps its invariants (each pool once, lending within nominal, weight
// positive, default priority within the maximum), and the namespace selector can be evaluated on
// labels the input chooses.
#include "controllers/api/tenant.h"
#include "tests/fuzz/fuzz_support.h"

#include <set>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace valley;
  auto object = fuzz::json_of(fuzz::text_of(data, size));
  if (!object) return 0;
  auto parsed = api::parse_tenant(*object);
  FUZZ_REQUIRE(parsed.spec.has_value() == parsed.errors.empty(), object->dump());
  if (!parsed.spec) return 0;
  const api::TenantSpec& t = *parsed.spec;
  std::set<std::string> pools;
  for (const auto& q : t.quotas) {
    FUZZ_REQUIRE(pools.insert(q.pool).second, object->dump());
    FUZZ_REQUIRE(q.nominal_milli >= 0 && (!q.lending_limit_milli || *q.lending_limit_milli <= q.nominal_milli), object->dump());
  }
  FUZZ_REQUIRE(t.weight_milli > 0, object->dump());
  FUZZ_REQUIRE(!t.default_priority || *t.default_priority <= t.max_priority, object->dump());
  std::map<std::string, std::string> labels;
  if (object->contains("labels") && (*object)["labels"].is_object())
    for (const auto& [k, v] : (*object)["labels"].items())
      if (v.is_string()) labels[k] = v.get<std::string>();
  (void)t.owns("ns", labels);
  return 0;
}
