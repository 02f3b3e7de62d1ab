// Valley's API versions: v1beta1 is the one stored, v1alpha1 is still served but deprecated, and
// both have the same schema, subresources and columns. That sameness is what makes the CRDs'
// `conversion: None` lossless (the API server changes apiVersion alone): a field in one version and
// not the other would be dropped silently on a read through the other.
#include <gtest/gtest.h>

#include "operator/kube/resource.h"
#include "tests/unit/controllers/crd_files.h"

namespace valley {
namespace {

using json = nlohmann::json;

json version_named(const json& crd, const std::string& name) {
  for (const auto& v : crd["spec"]["versions"])
    if (v.value("name", "") == name) return v;
  return nullptr;
}

TEST(CrdVersions, V1beta1IsStoredAndV1alpha1ServedDeprecatedWithTheSameSchema) {
  for (const char* file : kCrdFiles) {
    const auto docs = read_crd(file);
    ASSERT_EQ(docs.size(), 1u) << file;
    const json& crd = docs[0];
    const json beta = version_named(crd, "v1beta1"), alpha = version_named(crd, "v1alpha1");
    ASSERT_TRUE(beta.is_object() && alpha.is_object()) << file;
    int stored = 0;
    for (const auto& v : crd["spec"]["versions"]) stored += v.value("storage", false) ? 1 : 0;
    EXPECT_EQ(stored, 1) << file;
    EXPECT_TRUE(beta.value("storage", false) && beta.value("served", false)) << file;
    EXPECT_FALSE(beta.value("deprecated", false)) << file;
    EXPECT_TRUE(alpha.value("served", false)) << file;
    EXPECT_TRUE(alpha.value("deprecated", false)) << file;
    EXPECT_NE(alpha.value("deprecationWarning", "").find("valley.dev/v1beta1"), std::string::npos) << file;
    EXPECT_EQ(crd["spec"].value("conversion", json{{"strategy", "None"}}).value("strategy", ""), "None") << file;
    for (const char* part : {"schema", "subresources", "additionalPrinterColumns"}) {
      EXPECT_TRUE(beta.contains(part)) << file << " " << part;
      EXPECT_EQ(beta.value(part, json()), alpha.value(part, json())) << file << ": v1alpha1 and v1beta1 differ in " << part;
    }
  }
}

TEST(CrdVersions, TheOperatorAndValleyctlSpeakTheStoredVersion) {
  for (const auto* kind : {&kube::resources::kTrainingTasks, &kube::resources::kTenants, &kube::resources::kPricingPolicies}) {
    const auto docs = read_crd(std::string("valley.dev_") + kind->plural + ".yaml");
    ASSERT_EQ(docs.size(), 1u) << kind->plural;
    std::string storage;
    for (const auto& v : docs[0]["spec"]["versions"])
      if (v.value("storage", false)) storage = v.value("name", "");
    EXPECT_EQ(kind->version, storage) << kind->plural;
    EXPECT_EQ(docs[0]["spec"]["names"]["kind"], kind->kind);
  }
}

}  // namespace
}  // namespace valley
