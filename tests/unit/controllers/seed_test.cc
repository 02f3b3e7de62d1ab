#include "controllers/api/seed.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "controllers/cost/policy.h"
#include "controllers/api/spec.h"
#include "operator/yaml_json.h"

namespace valley::api {
namespace {

using json = nlohmann::json;

YamlDocument doc(const std::string& text) {
  std::string err;
  auto docs = parse_yaml(text, &err);
  EXPECT_TRUE(docs) << err;
  return docs->front();
}

// The seed platform's own example, field for field.
constexpr const char* kTraining1 = R"(# Platform configurations.
TaskName: training1
Priority: 50
TaskType: MPI
MaxReplicas: 50
MinReplicas: 10
AMDSupport: true
ReduceCost: true
TaskImage: vacant.io/training:1.0
MasterImage: vacant.io/training-master:1.0
WorkerImage: vacant.io/training-worker:1.0
MasterMaxReplicas: 10
WorkerMaxReplicas: 40
)";

TEST(Seed, TheSeedExampleBecomesTheEquivalentTrainingTask) {
  YamlDocument d = doc(kTraining1);
  ASSERT_TRUE(is_seed_format(d.value));
  std::vector<std::string> errors;
  json t = seed_to_task(d, "team-a", &errors);
  ASSERT_TRUE(errors.empty()) << errors[0];
  EXPECT_EQ(t["metadata"]["name"], "training1");
  EXPECT_EQ(t["metadata"]["namespace"], "team-a");
  EXPECT_EQ(t["spec"]["taskType"], "MPI");
  EXPECT_EQ(t["spec"]["priority"], 50);
  EXPECT_EQ(t["spec"]["replicas"]["min"], 10);
  EXPECT_EQ(t["spec"]["replicas"]["max"], 40);  // WorkerMaxReplicas caps MaxReplicas
  EXPECT_EQ(t["spec"]["amdSupport"], true);
  EXPECT_EQ(t["spec"]["reduceCost"], true);
  EXPECT_EQ(t["spec"]["master"]["image"], "vacant.io/training-master:1.0");
  EXPECT_EQ(t["spec"]["worker"]["image"], "vacant.io/training-worker:1.0");
  // The operator's own parser accepts it.
  t["metadata"]["uid"] = "u";
  auto parsed = parse_task(t);
  ASSERT_TRUE(parsed.spec) << parsed.errors[0];
  EXPECT_EQ(parsed.spec->max_workers, 40);
}

TEST(Seed, MistakesAreReportedWithTheirLines) {
  std::vector<std::string> errors;
  seed_to_task(doc("TaskName: x\nTaskType: Batch\nMinReplicas: ten\nColour: blue\nReduceCost: maybe\n"), "", &errors);
  std::string all;
  for (const auto& e : errors) all += e + "\n";
  EXPECT_NE(all.find("line 2: TaskType: must be MPI, PyTorch or Single"), std::string::npos) << all;
  EXPECT_NE(all.find("line 3: MinReplicas: must be an integer"), std::string::npos) << all;
  EXPECT_NE(all.find("line 4: Colour: unknown field"), std::string::npos) << all;
  EXPECT_NE(all.find("line 5: ReduceCost: must be true or false"), std::string::npos) << all;
}

TEST(Seed, SingleTasksAndValleyExtensions) {
  std::vector<std::string> errors;
  json t = seed_to_task(doc("TaskName: nb\nTaskType: Single\nTaskImage: img:1\nGPUsPerWorker: 0.5\nEstimatedDuration: 2h\n"
                            "MaxCost: 12.5\nCheckpointURI: s3://bucket/nb\n"),
                        "default", &errors);
  ASSERT_TRUE(errors.empty()) << errors[0];
  EXPECT_EQ(t["spec"]["image"], "img:1");
  EXPECT_EQ(t["spec"]["worker"]["gpus"], "0.5");
  EXPECT_EQ(t["spec"]["estimatedDuration"], "2h");
  EXPECT_EQ(t["spec"]["maxCost"], "12.5");
  EXPECT_EQ(t["spec"]["checkpoint"]["uri"], "s3://bucket/nb");
}

TEST(YamlJson, TypesQuotingAndErrors) {
  YamlDocument d = doc("a: 1\nb: '1'\nc: true\nd: 1.5\ne: ~\nf: [x, 2]\ng: {h: \"no\"}\ni: 1.5e999\n");
  EXPECT_EQ(d.value["i"], "1.5e999");  // JSON has no infinity
  EXPECT_EQ(doc("j: 1e3\n").value["j"], 1000.0);  // as kubectl reads it
  EXPECT_EQ(d.value["a"], 1);
  EXPECT_EQ(d.value["b"], "1");
  EXPECT_EQ(d.value["c"], true);
  EXPECT_EQ(d.value["d"], 1.5);
  EXPECT_TRUE(d.value["e"].is_null());
  EXPECT_EQ(d.value["f"][1], 2);
  EXPECT_EQ(d.value["g"]["h"], "no");
  EXPECT_EQ(d.key_lines[3].first, "d");
  EXPECT_EQ(d.key_lines[3].second, 4);
  std::string err;
  EXPECT_FALSE(parse_yaml("a: [1, 2\n", &err));
  EXPECT_NE(err.find("line"), std::string::npos);
}

// Found by fuzzing (tests/fuzz/yaml_json_fuzz.cc): yaml-cpp 0.7's LoadAll never returns on a stray
// ',' (upstream #1040), and aliases can expand a few lines into billions of values.
TEST(YamlJson, HostileTextIsRefusedNotLoopedOn) {
  std::string err;
  EXPECT_FALSE(parse_yaml(",", &err));
  EXPECT_NE(err.find("line 1, column 1"), std::string::npos) << err;
  EXPECT_FALSE(parse_yaml(",base: &b {x: 1}\nuse: *b\n", &err));
  std::string bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 8; ++i) {
    std::string prev = "*a" + std::to_string(i - 1);
    bomb += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [" + prev;
    for (int k = 1; k < 10; ++k) bomb += ", " + prev;
    bomb += "]\n";
  }
  EXPECT_FALSE(parse_yaml(bomb, &err));
  EXPECT_NE(err.find("through aliases"), std::string::npos) << err;
  // An alias inside its own anchor's collection is a cycle in yaml-cpp's node graph (CI's fuzz run
  // found it as a stack overflow); deep honest nesting is refused the same way, not crashed on.
  EXPECT_FALSE(parse_yaml("a: &x [*x]\n", &err));
  EXPECT_NE(err.find("refers to its own collection"), std::string::npos) << err;
  EXPECT_FALSE(parse_yaml("b: &y {k: *y}\n", &err));
  EXPECT_FALSE(parse_yaml("a: " + std::string(300, '[') + std::string(300, ']') + "\n", &err));
  EXPECT_NE(err.find("levels deep"), std::string::npos) << err;
  EXPECT_TRUE(parse_yaml(std::string(100, '[') + std::string(100, ']') + "\n", &err)) << err;
  EXPECT_FALSE(parse_yaml("a: 1\nb: \"caf\xff\"\n", &err));
  EXPECT_EQ(err, "line 2: not UTF-8 text");
  EXPECT_FALSE(parse_yaml("a: \xc0\xaf\n", &err));  // an overlong '/'
  EXPECT_TRUE(parse_yaml("a: caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80\n", &err)) << err;
  // A stream of several documents, some empty, is still read.
  auto docs = parse_yaml("---\n---\na: 1\n---\nb: 2\n", &err);
  ASSERT_TRUE(docs) << err;
  EXPECT_EQ(docs->size(), 2u);
}

TEST(YamlJson, ToYamlRoundTrips) {
  json v = {{"name", "x"}, {"n", 3}, {"s", "3"}, {"b", "true"}, {"list", {1, "a: b", "", "\r", " x", "tab\there"}}, {"nested", {{"k", nullptr}, {"f", false}}},
           {"key: with colon", 1}, {"true", "yes"}, {std::string(1100, 'k'), "long keys need the explicit form"},
           {std::string(300, '\0'), "so do keys that escaping makes long"}};
  std::string err;
  auto back = parse_yaml(to_yaml(v), &err);
  ASSERT_TRUE(back) << err << "\n" << to_yaml(v);
  EXPECT_EQ(back->front().value, v) << to_yaml(v);
}

TEST(Samples, TheDefaultPricingPolicySampleIsValid) {
  std::ifstream in(std::string(VALLEY_SOURCE_DIR) + "/deploy/samples/pricingpolicy-default.yaml");
  std::stringstream s;
  s << in.rdbuf();
  std::string err;
  auto docs = parse_yaml(s.str(), &err);
  ASSERT_TRUE(docs && !docs->empty()) << err;
  std::vector<std::string> errors;
  auto p = cost::parse_policy(docs->front().value, &errors);
  ASSERT_TRUE(p) << errors[0];
  EXPECT_EQ(p->time_zone_name, "Asia/Shanghai");
  EXPECT_EQ(p->windows.size(), 3u);
}

// The samples are for real clusters: every TrainingTask parses, runs in the namespace the samples
// create, and carries none of the local cluster's simulation annotations (those tasks live in
// scripts/demo/). The API server's view of them is tested in e2e (OperabilityTest).
TEST(Samples, TaskSamplesParseInTheirNamespaceWithoutSimulationAnnotations) {
  int tasks = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(VALLEY_SOURCE_DIR) + "/deploy/samples")) {
    std::ifstream in(entry.path());
    std::stringstream s;
    s << in.rdbuf();
    EXPECT_EQ(s.str().find("sim.valley.dev/"), std::string::npos) << entry.path();
    std::string err;
    auto docs = parse_yaml(s.str(), &err);
    ASSERT_TRUE(docs) << entry.path() << ": " << err;
    for (const auto& doc : *docs) {
      if (doc.value.value("kind", "") != "TrainingTask") continue;
      ++tasks;
      json o = doc.value;
      EXPECT_EQ(o["metadata"].value("namespace", ""), "valley-samples") << entry.path();
      o["metadata"]["uid"] = "u";
      auto parsed = parse_task(o);
      EXPECT_TRUE(parsed.errors.empty()) << entry.path() << ": " << (parsed.errors.empty() ? "" : parsed.errors[0]);
    }
  }
  EXPECT_GE(tasks, 4);
}

}  // namespace
}  // namespace valley::api
