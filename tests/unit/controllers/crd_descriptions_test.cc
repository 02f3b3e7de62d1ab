// Every field of Valley's CRDs says what it is: `kubectl explain trainingtask.spec.replicas.min` and
// the rest answer a user instead of printing <no description>.
#include <gtest/gtest.h>

#include "tests/unit/controllers/crd_files.h"

namespace valley {
namespace {

using json = nlohmann::json;

// Fields under `schema` (at `path`) that carry no description: properties, array items and map
// values, all the way down. The root's metadata is Kubernetes' ObjectMeta (a CRD may not describe it).
void undescribed(const json& schema, const std::string& path, std::vector<std::string>& out) {
  if (!schema.is_object()) return;
  if (auto props = schema.find("properties"); props != schema.end() && props->is_object())
    for (const auto& [key, field] : props->items()) {
      const std::string at = path + "." + key;
      if (key == "metadata" && !path.empty() && path.back() == ':') continue;  // the root's
      if (!field.contains("description") || !field["description"].is_string() || field["description"].get<std::string>().empty())
        out.push_back(at);
      undescribed(field, at, out);
    }
  if (auto items = schema.find("items"); items != schema.end()) undescribed(*items, path + "[]", out);
  if (auto values = schema.find("additionalProperties"); values != schema.end()) undescribed(*values, path + "{}", out);
}

std::vector<std::string> undescribed_in(const std::string& file) {
  std::vector<std::string> out;
  const auto docs = read_crd(file);
  if (docs.empty()) return {"(unreadable)"};
  for (const auto& doc : docs) {
    const json versions = doc.value("spec", json::object()).value("versions", json::array());
    EXPECT_FALSE(versions.empty()) << file;
    for (const auto& version : versions)
      undescribed(version.value("schema", json::object()).value("openAPIV3Schema", json::object()), version.value("name", "?") + ":", out);
  }
  return out;
}

TEST(CrdDescriptions, EveryFieldOfEveryCrdIsDescribed) {
  for (const char* file : kCrdFiles) {
    const auto missing = undescribed_in(file);
    std::string list;
    for (const auto& m : missing) list += "\n  " + m;
    EXPECT_TRUE(missing.empty()) << file << ": " << missing.size() << " fields without a description:" << list;
  }
}

TEST(CrdDescriptions, TheWalkFindsAFieldWithoutOne) {
  std::vector<std::string> out;
  undescribed(json::parse(R"({"properties":{"spec":{"description":"d","properties":{"a":{"type":"array",
      "description":"d","items":{"properties":{"b":{"type":"string"}}}}}}}})"),
              "", out);
  EXPECT_EQ(out, std::vector<std::string>{".spec.a[].b"});
}

}  // namespace
}  // namespace valley
