// libFuzzer target: the serialisation property of issue 70. Any bytes a user, a pod, a node or a
// store supplied, as an Event's note and object name, a condition's message, an InvalidSpec's list
// of errors or a field of any JSON the operator writes, give text that serialises (json_text and
// the plain dump() of what Valley built never throw), is valid UTF-8 and within the API's bounds.
#include "controllers/api/conditions.h"
#include "controllers/api/spec.h"
#include "operator/json_text.h"
#include "operator/kube/events.h"
#include "operator/text.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace valley;
  using nlohmann::json;
  const std::string text = fuzz::text_of(data, size);

  kube::EventAggregator events({});
  const json regarding = {{"apiVersion", "valley.dev/v1beta1"}, {"kind", "TrainingTask"},
                          {"metadata", {{"name", utf8_repaired(text.substr(0, 60))}, {"namespace", "team"}, {"uid", "u"}}}};
  const auto now = kube::SystemTime(std::chrono::seconds(1795316645));
  events.observe(regarding, "Warning", "Fuzzed", "Read", text, now);
  for (const auto& w : events.take_due(now)) {
    std::string dumped;
    try {
      dumped = w.event.dump();
    } catch (const std::exception& e) {
      fuzz::violated("an Event serialises", e.what());
    }
    const std::string note = w.event.value("note", "");
    FUZZ_REQUIRE(note.size() <= 1024 && utf8_valid(note), note);
  }

  json status = json::object();
  api::set_condition(status, "Fuzzed", false, text, text, "2026-12-04T00:00:00Z", 1);
  try {
    (void)status.dump();
  } catch (const std::exception& e) {
    fuzz::violated("a condition serialises", e.what());
  }

  // The bytes as a task (when they are JSON): its errors become the InvalidSpec message.
  if (auto object = fuzz::json_of(text)) {
    const auto parsed = api::parse_task(*object);
    std::string all;
    for (const auto& e : parsed.errors) all += e + "; ";
    json invalid = json::object();
    api::set_condition(invalid, "Failed", true, "InvalidSpec", all, "2026-12-04T00:00:00Z", 1);
    try {
      (void)invalid.dump();
    } catch (const std::exception& e) {
      fuzz::violated("an InvalidSpec condition serialises", e.what());
    }
  }

  const std::string written = json_text(json{{"raw", text}, {text, 1}});
  FUZZ_REQUIRE(utf8_valid(written), "json_text writes valid UTF-8");
  const std::string bounded = bounded_text(text, 100);
  FUZZ_REQUIRE(bounded.size() <= 100 && utf8_valid(bounded), bounded);
  return 0;
}
