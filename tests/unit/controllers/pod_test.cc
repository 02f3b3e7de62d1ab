#include "controllers/api/pod.h"

#include <gtest/gtest.h>

#include <tuple>

namespace valley::api {
namespace {

using json = nlohmann::json;

json worker() {
  return json::parse(R"({"metadata":{"name":"t-worker-0","namespace":"ns","uid":"p-1","resourceVersion":"5",
      "labels":{"valley.dev/task":"t","valley.dev/role":"worker"},"ownerReferences":[{"uid":"u-1"}],"finalizers":["valley.dev/accounting"]},
    "spec":{"containers":[{"name":"w","resources":{"limits":{"nvidia.com/gpu":"2","cpu":"4"},"requests":{"nvidia.com/gpu":2}}}],
      "affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
        {"matchFields":[{"key":"metadata.name","operator":"In","values":["n1"]}]}]}}}},
    "status":{"phase":"Running","conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2026-11-26T05:00:00Z"}],
      "containerStatuses":[{"name":"w","state":{"running":{"startedAt":"2026-11-26T04:59:00Z"}}}]}})");
}

TEST(Pod, HoldsWhatTheReadersRead) {
  const Pod p = pod_from(worker());
  EXPECT_EQ(p.key(), "ns/t-worker-0");
  EXPECT_EQ(p.resource_version, "5");
  EXPECT_EQ(p.label("valley.dev/role"), "worker");
  EXPECT_EQ(p.owner_uids, std::vector<std::string>{"u-1"});
  EXPECT_EQ(p.pinned, "n1");
  EXPECT_EQ(p.node_name, "");
  EXPECT_FALSE(p.deleting);
  ASSERT_EQ(p.containers.size(), 1u);
  EXPECT_EQ(p.containers[0].limits, (std::vector<std::pair<std::string, int64_t>>{{"cpu", 4000}, {"nvidia.com/gpu", 2}}));
  EXPECT_EQ(p.containers[0].requests, (std::vector<std::pair<std::string, int64_t>>{{"nvidia.com/gpu", 2}})) << "a number counts as well";
  ASSERT_EQ(p.conditions.size(), 1u);
  EXPECT_EQ(p.conditions[0].last_transition, kube::parse_time("2026-11-26T05:00:00Z"));
  ASSERT_EQ(p.container_statuses.size(), 1u);
  EXPECT_TRUE(p.container_statuses[0].running);
  EXPECT_EQ(p.container_statuses[0].running_since, kube::parse_time("2026-11-26T04:59:00Z"));
}

TEST(Pod, APriceClassReadsBackAsWrittenAndAMalformedOneAsNone) {
  const PriceClass c{"amd", "spot", "MI250X/x"};
  EXPECT_EQ(price_class_annotation(c), "amd/spot/MI250X/x");
  EXPECT_EQ(price_class(price_class_annotation(c)), c) << "the product may hold a slash";
  EXPECT_EQ(price_class("nvidia/on-demand/"), (PriceClass{"nvidia", "on-demand", ""}));
  for (const char* bad : {"", "nvidia", "nvidia/spot", "/spot/A100", "nvidia//A100"}) EXPECT_EQ(price_class(bad), PriceClass{}) << bad;
}

// What counts and prices a worker's GPUs is read from the copy sealed in its container when Valley
// made it: whoever may edit the pod can rewrite or remove the annotations, never the container.
TEST(Pod, ValleysRecordsAreReadFromTheSealNotFromAnnotationsAnyoneMayEdit) {
  json made = worker();
  made["metadata"]["labels"][kManagedByLabel] = "valley";
  made["metadata"]["annotations"] = {{kClaimedGpusAnnotation, "gpu.nvidia.com=4"}, {kTimeSlicedReplicasAnnotation, "2"},
                                     {kPricedAsAnnotation, "nvidia/spot/H100"}, {"team", "a"}};
  made["spec"]["containers"][0]["env"] = json::array({{{"name", kRecordsEnv}, {"value", R"({"valley.dev/claimed-gpus":"gpu.nvidia.com=1"})"}}});
  seal_records(made);  // a template's entry replaced by what the annotations hold now
  const json& env = made["spec"]["containers"][0]["env"];
  ASSERT_EQ(env.size(), 1u) << env.dump();
  EXPECT_EQ(json::parse(env[0].value("value", "")),
            json({{kClaimedGpusAnnotation, "gpu.nvidia.com=4"}, {kTimeSlicedReplicasAnnotation, "2"}, {kPricedAsAnnotation, "nvidia/spot/H100"}}));
  auto read = [](const Pod& p) { return std::make_tuple(p.claimed_class, p.claimed_count, p.time_sliced_replicas, p.priced_as.product); };
  const auto as_made = std::make_tuple(std::string("gpu.nvidia.com"), int64_t{4}, 2, std::string("H100"));
  EXPECT_EQ(read(pod_from(made)), as_made);

  json rewritten = made;
  rewritten["metadata"]["annotations"] = {{kClaimedGpusAnnotation, "gpu.nvidia.com=1"}, {kTimeSlicedReplicasAnnotation, "999"},
                                          {kPricedAsAnnotation, "nvidia/spot/cheap"}};
  EXPECT_EQ(read(pod_from(rewritten)), as_made);
  json removed = made;
  removed["metadata"].erase("annotations");
  EXPECT_EQ(read(pod_from(removed)), as_made);

  // A pod an earlier release made (no seal): its annotations. Another's pod: no records at all.
  json earlier = made;
  earlier["spec"]["containers"][0].erase("env");
  EXPECT_EQ(read(pod_from(earlier)), as_made);
  json foreign = earlier;
  foreign["metadata"]["labels"].erase(kManagedByLabel);
  EXPECT_EQ(read(pod_from(foreign)), std::make_tuple(std::string(), int64_t{0}, 0, std::string()));
  // A seal that is not an object holds no records; one with nothing to seal seals "{}".
  json garbled = made;
  garbled["spec"]["containers"][0]["env"][0]["value"] = "[1]";
  EXPECT_EQ(read(pod_from(garbled)), std::make_tuple(std::string(), int64_t{0}, 0, std::string()));
  json plain = worker();
  seal_records(plain);
  EXPECT_EQ(plain["spec"]["containers"][0]["env"], json::array({{{"name", kRecordsEnv}, {"value", "{}"}}}));
  json no_containers = {{"metadata", {{"name", "x"}}}};
  seal_records(no_containers);
  EXPECT_EQ(no_containers, json({{"metadata", {{"name", "x"}}}}));
}

TEST(Pod, MistypedFieldsReadAsAbsentAndNothingThrows) {
  json p = worker();
  p["metadata"]["labels"]["valley.dev/epoch"] = 3;          // not a string: not a label Valley can read
  p["metadata"]["ownerReferences"].push_back("garbage");    // not a reference
  p["metadata"]["finalizers"].push_back(7);
  p["metadata"]["deletionTimestamp"] = "yesterday";         // there, but not a time
  p["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] =
      json::array({"n1", "n2"});                            // not one node: not pinned
  p["status"]["conditions"].push_back(json::array());
  p["status"]["containerStatuses"][0]["state"]["running"] = nullptr;
  const Pod typed = pod_from(p);
  EXPECT_EQ(typed.label("valley.dev/epoch"), "");
  EXPECT_EQ(typed.owner_uids, std::vector<std::string>{"u-1"});
  EXPECT_EQ(typed.finalizers, std::vector<std::string>{"valley.dev/accounting"});
  EXPECT_TRUE(typed.deleting);
  EXPECT_FALSE(typed.deletion_timestamp);
  EXPECT_EQ(typed.pinned, "");
  EXPECT_EQ(typed.conditions.size(), 2u);
  EXPECT_EQ(typed.conditions[1].type, "");
  EXPECT_TRUE(typed.container_statuses[0].running);  // the state is there; when it started is not known
  EXPECT_FALSE(typed.container_statuses[0].running_since);
  for (const char* text : {"null", "[]", "7", R"({"metadata":"x","spec":[],"status":{"conditions":{}}})"})
    EXPECT_NO_THROW(pod_from(json::parse(text))) << text;
}

TEST(Pod, ATypedCacheSeesOnlyTheVersionChangeAsNoChangeAndIndexesByOwner) {
  kube::BasicStore<Pod> store;
  kube::ObjectTraits<Pod>::add_indexes(store);
  const auto first = std::make_shared<const Pod>(pod_from(worker()));
  store.upsert(first->key(), first);
  json again = worker();
  again["metadata"]["resourceVersion"] = "6";
  again["metadata"]["annotations"] = {{"not", "kept"}};
  EXPECT_TRUE(store.replace_if_same(first->key(), std::make_shared<const Pod>(pod_from(again))));
  EXPECT_EQ(store.get("ns/t-worker-0")->resource_version, "6");
  json progressed = again;
  progressed["status"]["phase"] = "Succeeded";
  EXPECT_FALSE(store.replace_if_same(first->key(), std::make_shared<const Pod>(pod_from(progressed))));
  ASSERT_EQ(store.by_index(kube::index::kOwnerUid, "u-1").size(), 1u);
  store.erase(first->key());
  EXPECT_TRUE(store.by_index(kube::index::kOwnerUid, "u-1").empty());
}

}  // namespace
}  // namespace valley::api
