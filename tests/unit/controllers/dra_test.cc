// GPUs published through DRA: what a node offers (newest pool generation, known drivers only, never
// beside a device plugin's GPUs), what foreign claims hold, and how a worker asks for them.
#include <gtest/gtest.h>

#include "controllers/api/dra.h"
#include "controllers/api/pod.h"
#include "controllers/planner/dra_devices.h"
#include "controllers/planner/snapshot.h"
#include "controllers/render/render.h"

namespace valley::planner {
namespace {

json slice_json(const std::string& name, const std::string& driver, const std::string& node, int generation, int devices,
                const std::string& product_key = "productName") {
  json list = json::array();
  for (int d = 0; d < devices; ++d)
    list.push_back({{"name", "gpu-" + std::to_string(d)}, {"attributes", {{product_key, {{"string", "H100"}}}, {"index", {{"int", d}}}}}});
  return {{"metadata", {{"name", name}}},
          {"spec", {{"driver", driver}, {"nodeName", node}, {"pool", {{"name", node}, {"generation", generation}}}, {"devices", list}}}};
}

Node plain_node(const std::string& name, const json& allocatable = json::object()) {
  return node_from({{"metadata", {{"name", name}}}, {"status", {{"allocatable", allocatable}}}});
}

TEST(Dra, ANodesGpusAreItsNewestPoolGenerationFromAKnownDriver) {
  NodeFacts facts;
  const auto old_gen = api::dra_slice_from(slice_json("a", "gpu.nvidia.com", "n1", 1, 8), facts.dra_product_attributes);
  const auto new_gen = api::dra_slice_from(slice_json("b", "gpu.nvidia.com", "n1", 2, 4), facts.dra_product_attributes);
  const auto nic = api::dra_slice_from(slice_json("c", "nic.example.com", "n1", 1, 2), facts.dra_product_attributes);
  Node n = plain_node("n1");
  add_dra_devices(n, {&old_gen, &new_gen, &nic}, facts);
  EXPECT_EQ(n.vendor, "nvidia");
  EXPECT_EQ(n.dra_class, "gpu.nvidia.com");
  EXPECT_EQ(n.dra_product, "H100");
  EXPECT_EQ(n.capacity, (std::map<std::string, int64_t>{{"dra:gpu.nvidia.com", 4}}));
  EXPECT_EQ(whole_of(n), "dra:gpu.nvidia.com");
  const auto shape = worker_shape(1000, n);
  ASSERT_TRUE(shape);
  EXPECT_EQ(shape->gpu_resource, "dra:gpu.nvidia.com");
}

TEST(Dra, ADevicePluginsGpusAreNeverCountedAgainThroughDra) {
  NodeFacts facts;
  const auto s = api::dra_slice_from(slice_json("a", "gpu.nvidia.com", "n1", 1, 8), facts.dra_product_attributes);
  Node n = plain_node("n1", {{"nvidia.com/gpu", "8"}});
  add_dra_devices(n, {&s}, facts);
  EXPECT_EQ(n.capacity, (std::map<std::string, int64_t>{{"nvidia.com/gpu", 8}}));
  EXPECT_EQ(n.dra_class, "");
}

TEST(Dra, ADriverNamedByFlagIsAGpuDriverAndTheProductAttributeIsConfigurable) {
  NodeFacts facts;
  facts.dra_drivers.push_back({"gpu.example.com", "nvidia", "gpu.example.com"});
  facts.dra_product_attributes = {"model"};
  const auto s = api::dra_slice_from(slice_json("a", "gpu.example.com", "n1", 0, 2, "gpu.example.com/model"), facts.dra_product_attributes);
  Node n = plain_node("n1");
  add_dra_devices(n, {&s}, facts);
  EXPECT_EQ(n.capacity["dra:gpu.example.com"], 2);
  EXPECT_EQ(n.dra_product, "H100");  // qualified by the driver's domain, read all the same
}

TEST(Dra, ForeignClaimsHoldOnTheirPoolsNodeAndValleysAreCountedThroughItsPods) {
  NodeFacts facts;
  const auto s = api::dra_slice_from(slice_json("a", "gpu.nvidia.com", "n1", 1, 8), facts.dra_product_attributes);
  auto claim = [](const std::string& name, bool valley) {
    json c = {{"metadata", {{"name", name}, {"namespace", "x"}}},
              {"status", {{"allocation", {{"devices", {{"results", json::array({{{"driver", "gpu.nvidia.com"}, {"pool", "n1"}, {"device", "gpu-0"}},
                                                                                 {{"driver", "gpu.nvidia.com"}, {"pool", "n1"}, {"device", "gpu-1"}}})}}}}}}}};
    if (valley) c["metadata"]["labels"][render::label::kManagedBy] = "valley";
    return api::dra_claim_from(c);
  };
  const auto theirs = claim("theirs", false), ours = claim("ours", true);
  const auto pending = api::dra_claim_from({{"metadata", {{"name", "pending"}, {"namespace", "x"}}}});
  EXPECT_TRUE(pending.allocated.empty());
  const auto held = held_by_claims({&s}, {&theirs, &ours, &pending}, facts);
  EXPECT_EQ(held, (std::map<std::string, std::map<std::string, int64_t>>{{"n1", {{"dra:gpu.nvidia.com", 2}}}}));

  // A Valley worker on DRA GPUs: no extended resource, a claim from the task's template, and the
  // annotation that makes the planner count them.
  auto parsed = api::parse_task(json::parse(R"({"metadata":{"name":"job","namespace":"team","uid":"u"},
    "spec":{"replicas":{"min":1,"max":2},"master":{"image":"l"},"worker":{"image":"w","gpus":"2"}}})"));
  render::WorkerPlacement placement;
  placement.gpu_resource = "dra:gpu.nvidia.com";
  placement.gpu_count = 2;
  placement.node = "n1";
  const json pod = render::worker_pod(*parsed.spec, 0, {1, 1}, placement);
  const json& c = pod["spec"]["containers"][0];
  EXPECT_FALSE(c["resources"].contains("limits")) << c.dump();
  EXPECT_EQ(c["resources"]["claims"], json::parse(R"([{"name":"gpus"}])"));
  EXPECT_EQ(pod["spec"]["resourceClaims"][0]["resourceClaimTemplateName"], render::gpu_claim_template_name("job", "gpu.nvidia.com", 2));
  EXPECT_EQ(gpu_requests(api::pod_from(pod)), (std::map<std::string, int64_t>{{"dra:gpu.nvidia.com", 2}}));
  const json t = render::gpu_claim_template(*parsed.spec, "gpu.nvidia.com", 2);
  EXPECT_EQ(t["metadata"]["ownerReferences"][0]["uid"], "u");
  EXPECT_EQ(t["spec"]["metadata"]["labels"][render::label::kManagedBy], "valley");
  EXPECT_EQ(t["spec"]["spec"]["devices"]["requests"][0]["exactly"],
            json::parse(R"({"deviceClassName":"gpu.nvidia.com","allocationMode":"ExactCount","count":2})"));
}

TEST(Dra, AClaimedGpusAnnotationThatIsNotClassEqualsCountHoldsNothing) {
  for (const char* bad : {"", "=2", "gpu.nvidia.com", "gpu.nvidia.com=-1", "gpu.nvidia.com=two", "gpu.nvidia.com=0"})
    EXPECT_EQ(api::claimed_gpus(bad).count, 0) << bad;
  EXPECT_EQ(api::claimed_gpus("gpu.nvidia.com=3").device_class, "gpu.nvidia.com");
}

}  // namespace
}  // namespace valley::planner
