// Valley's CRDs as the API server receives them: crds/<file> parsed (YAML anchors resolved) into
// JSON, one element per document.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "operator/yaml_json.h"

namespace valley {

inline const char* const kCrdFiles[] = {"valley.dev_trainingtasks.yaml", "valley.dev_tenants.yaml", "valley.dev_pricingpolicies.yaml"};

inline std::vector<nlohmann::json> read_crd(const std::string& file) {
  std::ifstream in(std::string(VALLEY_SOURCE_DIR) + "/crds/" + file);
  std::stringstream text;
  text << in.rdbuf();
  std::string error;
  auto docs = parse_yaml(text.str(), &error);
  EXPECT_TRUE(docs) << file << ": " << error;
  std::vector<nlohmann::json> out;
  if (docs)
    for (const auto& doc : *docs) out.push_back(doc.value);
  return out;
}

}  // namespace valley
