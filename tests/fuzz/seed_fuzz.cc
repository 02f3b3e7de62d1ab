// libFuzzer target: a file as `valleyctl submit` reads it (YAML, possibly several documents, in the
// seed task format or as a TrainingTask). Parsing, conversion and validation must never throw or
// crash; a converted seed task that reports no errors must be a TrainingTask object.
#include "controllers/api/seed.h"
#include "controllers/api/spec.h"
#include "operator/yaml_json.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace valley;
  std::string error;
  auto documents = parse_yaml(fuzz::text_of(data, size), &error);
  FUZZ_REQUIRE(documents.has_value() || !error.empty(), "a rejected file must say why");
  if (!documents) return 0;
  for (const auto& doc : *documents) {
    if (!api::is_seed_format(doc.value)) {
      (void)api::parse_task(doc.value);
      continue;
    }
    std::vector<std::string> errors;
    auto object = api::seed_to_task(doc, "default", &errors);
    if (!errors.empty()) continue;
    FUZZ_REQUIRE(object.is_object() && object.contains("spec"), object.dump());
    (void)api::parse_task(object);
  }
  return 0;
}
