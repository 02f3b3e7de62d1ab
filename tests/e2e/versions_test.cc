// Valley's API versions on the real API server: an object written through the deprecated v1alpha1
// reads back identical through v1beta1 (and back), v1alpha1 answers with a deprecation warning,
// and `valleyctl migrate-storage` rewrites objects etcd holds as v1alpha1 in v1beta1 and narrows
// the CRDs' status.storedVersions, as an upgrade from a release that stored v1alpha1 needs.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "operator/kube/base64.h"
#include "operator/yaml_json.h"
#include "tests/e2e/support.h"

namespace valley::e2e {
namespace {

using kube::resources::kTenants;
using kube::resources::kTrainingTasks;

using kube::resources::kCustomResourceDefinitions;

std::string crd_path(const std::string& plural) { return kCustomResourceDefinitions.item("", plural + ".valley.dev"); }
const std::string kTasksCrd = crd_path("trainingtasks");

// deploy/samples/spot-train-mpi.yaml (a template, a checkpoint, an estimate: most of the spec).
json sample_task(const std::string& ns, const std::string& name, const std::string& version) {
  std::ifstream in(VALLEY_SOURCE_DIR "/deploy/samples/spot-train-mpi.yaml");
  std::stringstream text;
  text << in.rdbuf();
  std::string error;
  auto docs = parse_yaml(text.str(), &error);
  EXPECT_TRUE(docs && !docs->empty()) << error;
  json task = docs && !docs->empty() ? (*docs)[0].value : json::object();
  task["apiVersion"] = "valley.dev/" + version;
  task["metadata"] = {{"name", name}, {"namespace", ns}, {"labels", {{"team", "vision"}}}, {"annotations", {{"note", "kept"}}}};
  return task;
}

std::string tasks_path(const std::string& version, const std::string& ns, const std::string& name = "") {
  return "/apis/valley.dev/" + version + "/namespaces/" + ns + "/trainingtasks" + (name.empty() ? "" : "/" + name);
}

// What a read returns that both versions must agree on: all but apiVersion.
json without_api_version(json object) {
  object.erase("apiVersion");
  return object;
}

// The apiVersion etcd holds the object in, through etcd's JSON gateway (custom resources are
// stored as JSON); "" when the key is absent.
std::string stored_api_version(const std::string& key) {
  const std::string port = std::getenv("VALLEY_ETCD_PORT") ? std::getenv("VALLEY_ETCD_PORT") : "12379";
  const std::string body = json{{"key", kube::base64_encode(key)}}.dump();
  ChildProcess curl({"/usr/bin/env", "curl", "-sS", "-X", "POST", "http://127.0.0.1:" + port + "/v3/kv/range", "-d", body},
                    ::testing::TempDir() + "/etcd-range.log");
  EXPECT_EQ(curl.wait(30s), 0) << curl.output();
  const json answer = json::parse(curl.output(), nullptr, false);
  if (!answer.is_object() || !answer.contains("kvs") || answer["kvs"].empty()) return "";
  const auto value = kube::base64_decode(answer["kvs"][0].value("value", ""));
  if (!value) return "?";
  const json stored = json::parse(*value, nullptr, false);
  return stored.is_object() ? stored.value("apiVersion", "") : "?";
}

class VersionsTest : public ClusterTest {};

TEST_F(VersionsTest, AnObjectWrittenThroughEitherVersionReadsBackIdenticalThroughTheOther) {
  const json alpha = admin->create(tasks_path("v1alpha1", ns), sample_task(ns, "written-alpha", "v1alpha1"));
  const json beta = admin->create(tasks_path("v1beta1", ns), sample_task(ns, "written-beta", "v1beta1"));
  // A status written through the old version, as an operator of the last release writes it.
  json with_status = alpha;
  // Progress by placement shape too: the schema keeps each entry's nodes (an unknown field would be pruned).
  with_status["status"] = {{"phase", "Running"}, {"replicas", 3}, {"reason", "Admitted"},
                           {"scaling", json::array({{{"workers", 3}, {"nodes", 2}, {"stepsPerSecond", 1.5}, {"samples", 2}}})}};
  admin->update(tasks_path("v1alpha1", ns, "written-alpha") + "/status", with_status);

  for (const auto& [name, first] : {std::pair{std::string("written-alpha"), alpha}, std::pair{std::string("written-beta"), beta}}) {
    const json through_alpha = admin->get(tasks_path("v1alpha1", ns, name));
    const json through_beta = admin->get(tasks_path("v1beta1", ns, name));
    EXPECT_EQ(through_alpha["apiVersion"], "valley.dev/v1alpha1");
    EXPECT_EQ(through_beta["apiVersion"], "valley.dev/v1beta1");
    EXPECT_EQ(without_api_version(through_alpha), without_api_version(through_beta)) << name;
    EXPECT_EQ(through_beta["spec"], first["spec"]) << name << ": the spec as written";
    EXPECT_EQ(through_beta["metadata"]["labels"], first["metadata"]["labels"]);
  }
  const json status = admin->get(tasks_path("v1beta1", ns, "written-alpha"))["status"];
  EXPECT_EQ(status.value("phase", ""), "Running");
  EXPECT_EQ(status.value("replicas", 0), 3);
  ASSERT_TRUE(status.contains("scaling") && status["scaling"].is_array() && status["scaling"].size() == 1) << status.dump();
  EXPECT_EQ(status["scaling"][0].value("nodes", 0), 2) << status.dump();

  // A cluster-scoped kind too.
  admin->create("/apis/valley.dev/v1alpha1/tenants",
                {{"apiVersion", "valley.dev/v1alpha1"}, {"kind", "Tenant"}, {"metadata", {{"name", ns}}},
                 {"spec", {{"namespaces", {ns}}, {"quotas", {{{"pool", "nvidia/on-demand"}, {"nominal", 2}}}}, {"weight", "2"}}}});
  const json tenant_alpha = admin->get("/apis/valley.dev/v1alpha1/tenants/" + ns);
  const json tenant_beta = admin->get(kTenants, "", ns);
  admin->remove(kTenants.item("", ns));  // cluster-scoped: the namespace's deletion would not take it
  EXPECT_EQ(without_api_version(tenant_alpha), without_api_version(tenant_beta));
}

TEST_F(VersionsTest, TheOldVersionWarnsThatItIsDeprecatedAndTheNewOneDoesNot) {
  admin->create(tasks_path("v1beta1", ns), sample_task(ns, "warned", "v1beta1"));
  std::string out;
  ASSERT_EQ(kubectl({"get", "trainingtasks.v1alpha1.valley.dev", "-n", ns}, &out), 0) << out;
  EXPECT_NE(out.find("Warning: valley.dev/v1alpha1 TrainingTask is deprecated; use valley.dev/v1beta1"), std::string::npos) << out;
  EXPECT_NE(out.find("warned"), std::string::npos) << out;
  ASSERT_EQ(kubectl({"get", "trainingtasks", "-n", ns}, &out), 0) << out;
  EXPECT_EQ(out.find("Warning"), std::string::npos) << out;
  EXPECT_NE(out.find("warned"), std::string::npos) << out;
}

// Sets which version the TrainingTask CRD stores; restores v1beta1 when it goes out of scope.
class StorageVersion {
 public:
  StorageVersion(kube::Client& admin, const std::string& version) : admin_(admin) { store(version); }
  ~StorageVersion() {
    try {
      store("v1beta1");
    } catch (const std::exception& e) {
      ADD_FAILURE() << "could not restore v1beta1 as the stored version: " << e.what();
    }
  }
  void store(const std::string& version) {
    const json crd = admin_.get(kTasksCrd);
    json patch = json::array();
    for (size_t i = 0; i < crd["spec"]["versions"].size(); ++i) {
      const std::string at = "/spec/versions/" + std::to_string(i);
      patch.push_back({{"op", "test"}, {"path", at + "/name"}, {"value", crd["spec"]["versions"][i]["name"]}});
      patch.push_back({{"op", "replace"}, {"path", at + "/storage"}, {"value", crd["spec"]["versions"][i]["name"] == version}});
    }
    admin_.patch(kTasksCrd, patch, "application/json-patch+json");
  }

 private:
  kube::Client& admin_;
};

TEST_F(VersionsTest, MigrateStorageRewritesWhatEtcdHoldsAsV1alpha1AndNarrowsStoredVersions) {
  const std::string key = "/registry/valley.dev/trainingtasks/" + ns + "/";
  std::string old_name;
  {
    // An older release's CRDs: v1alpha1 stored. The API server takes a moment to serve the change,
    // so objects are written until one is stored as v1alpha1.
    StorageVersion old_release(*admin, "v1alpha1");
    int n = 0;
    ASSERT_TRUE(eventually([&] {
      old_name = "old-" + std::to_string(n++);
      admin->create(tasks_path("v1alpha1", ns), sample_task(ns, old_name, "v1alpha1"));
      return stored_api_version(key + old_name) == "valley.dev/v1alpha1";
    }, 30s));
  }
  const json before = admin->get(kTrainingTasks, ns, old_name);
  json crd = admin->get(kTasksCrd);
  ASSERT_NE(std::find(crd["status"]["storedVersions"].begin(), crd["status"]["storedVersions"].end(), "v1alpha1"),
            crd["status"]["storedVersions"].end())
      << crd["status"].dump();

  ChildProcess migrate({binary("valleyctl"), "--kubeconfig=" + admin_kubeconfig_path(), "migrate-storage"},
                       ::testing::TempDir() + "/migrate-storage.log");
  ASSERT_EQ(migrate.wait(120s), 0) << migrate.output();
  EXPECT_NE(migrate.output().find("trainingtasks: "), std::string::npos) << migrate.output();

  for (const auto& t : admin->list(kTrainingTasks, ns).items) {
    const std::string name = t["metadata"]["name"];
    EXPECT_EQ(stored_api_version(key + name), "valley.dev/v1beta1") << name;
  }
  for (const std::string plural : {"trainingtasks", "tenants", "pricingpolicies"}) {
    crd = admin->get(crd_path(plural));
    EXPECT_EQ(crd["status"]["storedVersions"], json::array({"v1beta1"})) << plural;
  }
  const json after = admin->get(kTrainingTasks, ns, old_name);
  EXPECT_EQ(after["spec"], before["spec"]);
  EXPECT_EQ(after["metadata"]["uid"], before["metadata"]["uid"]);
  EXPECT_EQ(after["metadata"]["generation"], before["metadata"]["generation"]) << "a rewrite is not a spec change";

  // Once narrowed, a second run has nothing to do.
  ChildProcess again({binary("valleyctl"), "--kubeconfig=" + admin_kubeconfig_path(), "migrate-storage"},
                     ::testing::TempDir() + "/migrate-storage-again.log");
  ASSERT_EQ(again.wait(60s), 0) << again.output();
  EXPECT_NE(again.output().find("trainingtasks: stored only as v1beta1, nothing to do"), std::string::npos) << again.output();
}

}  // namespace
}  // namespace valley::e2e
