// The in-memory API server answers as the loops expect a real one to (what the loop tests rely on).
#include "tests/unit/support/fake_api.h"

#include <gtest/gtest.h>

#include <thread>

namespace valley::testing {
namespace {

namespace res = kube::resources;

json config_map(const std::string& name, json labels = json::object()) {
  return {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", name}, {"labels", labels}}}, {"data", {{"k", "v"}}}};
}
long status_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const kube::KubeError& e) {
    return e.http_status();
  }
  return 0;
}

TEST(FakeApi, AnswersNotFoundConflictAndAlreadyExistsAsTheApiServerDoes) {
  FakeApi api;
  const json made = api.create(res::kConfigMaps, "ns", config_map("a"));
  EXPECT_EQ(made["metadata"]["namespace"], "ns");
  EXPECT_FALSE(made["metadata"].value("uid", "").empty());
  EXPECT_EQ(status_of([&] { api.create(res::kConfigMaps, "ns", config_map("a")); }), 409);
  EXPECT_EQ(status_of([&] { api.get(res::kConfigMaps, "ns", "b"); }), 404);
  json stale = made;
  json changed = made;
  changed["data"]["k"] = "w";
  const json updated = api.update(res::kConfigMaps, changed);
  EXPECT_NE(updated["metadata"]["resourceVersion"], made["metadata"]["resourceVersion"]);
  stale["data"]["k"] = "x";
  EXPECT_EQ(status_of([&] { api.update(res::kConfigMaps, stale); }), 409) << "a stale resourceVersion";
  EXPECT_EQ(status_of([&] { api.get(res::kConfigMaps, "ns", "../other"); }), 400);
  kube::DeleteOptions wrong;
  wrong.precondition_uid = "not-its-uid";
  EXPECT_EQ(status_of([&] { api.remove(res::kConfigMaps, "ns", "a", wrong); }), 409);
  EXPECT_TRUE(api.remove(res::kConfigMaps, "ns", "a"));
  EXPECT_FALSE(api.remove(res::kConfigMaps, "ns", "a"));
  api.fail_next("get", "configmaps", 503);
  EXPECT_EQ(status_of([&] { api.list(res::kConfigMaps, ""); }), 0);
  EXPECT_EQ(status_of([&] { api.get(res::kConfigMaps, "ns", "a"); }), 503);
}

TEST(FakeApi, KeepsStatusApartBumpsGenerationAndHoldsDeletionForFinalizers) {
  FakeApi api;
  json task = {{"apiVersion", "valley.dev/v1beta1"}, {"kind", "TrainingTask"}, {"metadata", {{"name", "t"}, {"finalizers", {"x/y"}}}},
               {"spec", {{"a", 1}}}, {"status", {{"phase", "Ignored"}}}};
  json t = api.create(res::kTrainingTasks, "ns", task);
  EXPECT_EQ(t["metadata"]["generation"], 1);
  t["status"] = {{"phase", "Running"}};
  t = api.update_status(res::kTrainingTasks, t);
  EXPECT_EQ(t["status"]["phase"], "Running");
  EXPECT_EQ(t["metadata"]["generation"], 1) << "a status write is no new generation";
  t["spec"]["a"] = 2;
  t["status"] = {{"phase", "Overwritten"}};
  t = api.update(res::kTrainingTasks, t);
  EXPECT_EQ(t["metadata"]["generation"], 2);
  EXPECT_EQ(t["status"]["phase"], "Running") << "a write of the object leaves its status";
  // Deleted: held by its finalizer, gone when it is removed; what it owned goes with it.
  json pod = {{"metadata", {{"name", "p"}, {"ownerReferences", {{{"uid", t["metadata"]["uid"]}}}}}}};
  api.create(res::kPods, "ns", pod);
  EXPECT_TRUE(api.remove(res::kTrainingTasks, "ns", "t"));
  EXPECT_TRUE(api.get(res::kTrainingTasks, "ns", "t")["metadata"].contains("deletionTimestamp"));
  EXPECT_EQ(api.objects("pods").size(), 1u);
  api.patch(res::kTrainingTasks, "ns", "t", kube::PatchType::JSON, json::parse(R"([{"op":"test","path":"/metadata/finalizers/0","value":"x/y"},{"op":"remove","path":"/metadata/finalizers/0"}])"));
  EXPECT_EQ(status_of([&] { api.get(res::kTrainingTasks, "ns", "t"); }), 404);
  EXPECT_TRUE(api.objects("pods").empty()) << "the garbage collector removes what the task owned";
  EXPECT_EQ(status_of([&] {
              api.create(res::kConfigMaps, "ns", config_map("c"));
              api.patch(res::kConfigMaps, "ns", "c", kube::PatchType::JSON, json::parse(R"([{"op":"test","path":"/data/k","value":"no"}])"));
            }),
            422);
}

TEST(FakeApi, WatchesDeliverWhatChangedAfterAResourceVersionAndEndWhenTold) {
  FakeApi api;
  api.create(res::kConfigMaps, "ns", config_map("before", {{"app", "x"}}));
  const std::string from = api.list(res::kConfigMaps, "ns").resource_version;
  std::vector<std::string> seen;  // read once the watcher has ended
  std::atomic<int> delivered{0};
  std::atomic<bool> cancel{false};
  kube::WatchOptions wo;
  wo.resource_version = from;
  wo.label_selector = "app=x";
  std::thread watcher([&] {
    api.watch(res::kConfigMaps, "ns", wo, [&](kube::WatchEvent&& e) {
      seen.push_back(e.type + " " + e.object["metadata"].value("name", ""));
      ++delivered;
      return true;
    }, &cancel);
  });
  api.create(res::kConfigMaps, "ns", config_map("after", {{"app", "x"}}));
  api.create(res::kConfigMaps, "other", config_map("elsewhere", {{"app", "x"}}));
  api.create(res::kConfigMaps, "ns", config_map("unlabelled"));
  api.patch(res::kConfigMaps, "ns", "after", kube::PatchType::Merge, {{"metadata", {{"labels", {{"app", "y"}}}}}});
  for (int i = 0; i < 500 && delivered < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  api.end_watches();
  watcher.join();
  EXPECT_EQ(seen, (std::vector<std::string>{"ADDED after", "DELETED after"}));
  api.compact();
  EXPECT_EQ(status_of([&] { api.watch(res::kConfigMaps, "ns", wo, [](kube::WatchEvent&&) { return true; }, &cancel); }), 410);
}

}  // namespace
}  // namespace valley::testing
