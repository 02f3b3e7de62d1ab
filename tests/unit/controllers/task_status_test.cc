#include "controllers/api/task_status.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "operator/yaml_json.h"

namespace valley::api {
namespace {

using json = nlohmann::json;

// The declared types of the CRD's status schema, in status_schema()'s shape.
json declared(const json& schema) {
  if (schema.value("type", "") == "object" && schema.contains("properties")) {
    json out = json::object();
    for (const auto& [key, field] : schema["properties"].items()) out[key] = declared(field);
    return out;
  }
  if (schema.value("type", "") == "array") return json::array({declared(schema["items"])});
  return schema.value("type", "");
}

TEST(TaskStatus, SchemaMatchesTheCrd) {
  std::ifstream in(std::string(VALLEY_SOURCE_DIR) + "/crds/valley.dev_trainingtasks.yaml");
  std::stringstream text;
  text << in.rdbuf();
  std::string error;
  auto docs = parse_yaml(text.str(), &error);
  ASSERT_TRUE(docs) << error;
  const json& version = docs->at(0).value["spec"]["versions"][0];
  EXPECT_EQ(declared(version["schema"]["openAPIV3Schema"]["properties"]["status"]), status_schema());
}

TEST(TaskStatus, FieldsOfTheWrongTypeReadAsAbsent) {
  json status = json::parse(R"({
    "phase": null, "reason": 7, "epoch": "3", "epochReplicas": 2, "observedGeneration": 18446744073709551615,
    "checkpoint": {"step": "1200", "time": "2026-11-22T06:01:02Z"},
    "restarts": [1], "scaling": [{"workers": 2, "stepsPerSecond": 1.5}, 3, {"workers": "x"}],
    "conditions": [{"type": "Admitted", "status": true}],
    "cost": {"accrued": "1.00", "anything": [1, "two"], "accruedMicros": "1000000", "breakdown": {"gpuHours": [], "kWh": {"peak": "1.5"}},
             "ledger": [{"uid": "a", "untilMs": 1.5}, 7]}
  })");
  EXPECT_EQ(readable_status(status), json::parse(R"({
    "epochReplicas": 2,
    "checkpoint": {"time": "2026-11-22T06:01:02Z"},
    "scaling": [{"workers": 2, "stepsPerSecond": 1.5}, {}],
    "conditions": [{"type": "Admitted"}],
    "cost": {"accrued": "1.00", "anything": [1, "two"], "breakdown": {"kWh": {"peak": "1.5"}}, "ledger": [{"uid": "a"}]}
  })"));
  EXPECT_EQ(readable_status(json::array()), json::object());
  EXPECT_EQ(readable_status(nullptr), json::object());
}

}  // namespace
}  // namespace valley::api
