// libFuzzer target: YAML text to JSON values and back. Any text must parse or be rejected with a
// message, never crash; and what Valley prints as YAML (`-o yaml`) must read back as the same value.
#include "operator/yaml_json.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace valley;
  std::string error;
  auto documents = parse_yaml(fuzz::text_of(data, size), &error);
  if (!documents) {
    FUZZ_REQUIRE(!error.empty(), "a rejected document must say why");
    return 0;
  }
  for (const auto& doc : *documents) {
    std::string printed = to_yaml(doc.value);
    std::string again_error;
    auto again = parse_yaml(printed, &again_error);
    FUZZ_REQUIRE(again.has_value(), "printed YAML does not parse: " + again_error + "\n" + printed);
    FUZZ_REQUIRE(again->size() == 1 && (*again)[0].value == doc.value,
                 "round trip changed " + doc.value.dump() + " into " + (again->empty() ? std::string("nothing") : (*again)[0].value.dump()));
  }
  return 0;
}
