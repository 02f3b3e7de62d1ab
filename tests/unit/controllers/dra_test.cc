// GPUs published through DRA: what a node offers (newest pool generation, known drivers only, never
// beside a device plugin's GPUs), what foreign claims hold, and how a worker asks for them.
#include <gtest/gtest.h>

#include <regex>

#include "controllers/api/dra.h"
#include "controllers/api/pod.h"
#include "controllers/gpu/pod_requests.h"
#include "controllers/inputs/dra_devices.h"
#include "controllers/inputs/snapshot.h"
#include "controllers/render/render.h"
#include "tests/unit/controllers/planner_fixtures.h"

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
  // Nor beside a device plugin's MIG slices alone.
  Node mig = plain_node("n1", {{"nvidia.com/mig-1g.10gb", "7"}});
  add_dra_devices(mig, {&s}, facts);
  EXPECT_EQ(mig.capacity, (std::map<std::string, int64_t>{{"nvidia.com/mig-1g.10gb", 7}}));
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
  EXPECT_EQ(pod["spec"]["resourceClaims"][0]["resourceClaimTemplateName"], "job-gpus-2.gpu.nvidia.com");
  EXPECT_EQ(gpu::gpu_requests(api::pod_from(pod)), (std::map<std::string, int64_t>{{"dra:gpu.nvidia.com", 2}}));
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

// A node's DRA GPUs keep the attributes they all share, by qualified name; a task's
// spec.worker.devices matches by class and those (its names unqualified: the driver's own).
TEST(DraDevices, ANodeKeepsTheAttributesAllItsDevicesShareAndATaskMatchesByClassAndThose) {
  NodeFacts facts;
  const auto s = api::dra_slice_from(slice_json("a", "gpu.nvidia.com", "n1", 1, 2), facts.dra_product_attributes);
  Node n = plain_node("n1");
  add_dra_devices(n, {&s}, facts);
  // index differs between the two devices: not shared.
  EXPECT_EQ(n.dra_attributes, (std::map<std::string, std::string>{{"gpu.nvidia.com/productName", "H100"}}));
  EXPECT_EQ(n.dra_driver, "gpu.nvidia.com");
  Task t = fixtures::task("ns/t", 0, 1, 1);
  EXPECT_TRUE(devices_match(t, n)) << "a task that asks for no devices takes any GPU";
  t.device_class = "gpu.nvidia.com";
  EXPECT_TRUE(devices_match(t, n));
  t.device_attributes = {{"productName", "H100"}};
  EXPECT_TRUE(devices_match(t, n));
  t.device_attributes = {{"gpu.nvidia.com/productName", "H100"}};
  EXPECT_TRUE(devices_match(t, n));
  t.device_attributes = {{"productName", "A100"}};
  EXPECT_FALSE(devices_match(t, n));
  t.device_attributes = {{"index", "0"}};
  EXPECT_FALSE(devices_match(t, n)) << "an attribute not all its devices share";
  t.device_attributes.clear();
  t.device_class = "gpu.amd.com";
  EXPECT_FALSE(devices_match(t, n));
  EXPECT_FALSE(devices_match(t, fixtures::nvidia("plugin", 8))) << "a device plugin's GPUs are no DeviceClass's";
}

Node dra_node(const std::string& name, const std::string& product, int gpus, const NodeFacts& facts, const std::string& driver = "gpu.nvidia.com") {
  json slice = slice_json(name, driver, name, 1, gpus);
  for (auto& d : slice["spec"]["devices"]) d["attributes"]["productName"]["string"] = product;
  const auto s = api::dra_slice_from(slice, facts.dra_product_attributes);
  Node n = plain_node(name);
  n.ready = n.schedulable = true;  // node_from reads both from conditions, which plain_node has none of
  add_dra_devices(n, {&s}, facts);
  return n;
}

TEST(DraDevices, ATaskAskingForAProductIsPlacedOnlyOnNodesWhoseDevicesAreThatProduct) {
  NodeFacts facts;
  std::vector<Node> nodes = {fixtures::nvidia("plugin", 8), dra_node("a100", "A100", 4, facts), dra_node("h100", "H100", 4, facts)};
  nodes[0].price_micros = 1000000;  // the device plugin's node and the A100s are cheaper
  nodes[1].price_micros = 1500000;
  nodes[2].price_micros = 3000000;
  Task t = fixtures::task("ns/t", 0, 2, 2);
  t.device_class = "gpu.nvidia.com";
  t.device_attributes = {{"productName", "H100"}};
  const auto ds = fixtures::greedy_plan(nodes, {t}, fixtures::kNow);
  const Decision& d = fixtures::find(ds, "ns/t");
  ASSERT_EQ(d.action, Action::Admit) << d.reason;
  ASSERT_EQ(d.placement.size(), 2u);
  for (const auto& w : d.placement) {
    EXPECT_EQ(w.node, "h100");
    EXPECT_EQ(w.gpu_resource, "dra:gpu.nvidia.com");
  }
}

// Bad input the planner sees: a class no node publishes, attributes no device has, a class of a
// vendor the task does not run on, more devices than any node has. Each waits Unplaceable, saying why.
TEST(DraDevices, ADeviceRequestNoNodeCanMeetIsUnplaceableWithTheReason) {
  NodeFacts facts;
  const std::vector<Node> nodes = {fixtures::nvidia("plugin", 8), dra_node("a100", "A100", 4, facts),
                                   dra_node("mi300", "MI300X", 8, facts, "gpu.amd.com")};
  auto reason = [&](const std::string& cls, std::map<std::string, std::string> attributes, int gpus = 1) {
    Task t = fixtures::task("ns/t", 0, 1, 1, gpus * 1000);
    t.device_class = cls;
    t.device_attributes = std::move(attributes);
    const auto ds = fixtures::greedy_plan(nodes, {t}, fixtures::kNow);
    const Decision& d = fixtures::find(ds, "ns/t");
    return (d.action == Action::Wait && d.placement.empty() ? "waits: " : "admitted: ") + d.reason;
  };
  EXPECT_EQ(reason("gpu.example.com", {}), "waits: Unplaceable: no node publishes DRA devices of class gpu.example.com (classes published: gpu.amd.com, gpu.nvidia.com)");
  EXPECT_EQ(reason("gpu.nvidia.com", {{"productName", "H100"}}),
            "waits: Unplaceable: no device of class gpu.nvidia.com has productName=H100 (its nodes' devices have productName=A100)");
  EXPECT_EQ(reason("gpu.amd.com", {}), "waits: Unplaceable: class gpu.amd.com holds amd GPUs, which spec.vendors does not list");
  EXPECT_EQ(reason("gpu.nvidia.com", {}, 5), "waits: Unplaceable: needs 5 GPUs per worker; the largest node it may use has 4");
  EXPECT_EQ(reason("gpu.nvidia.com", {{"productName", "A100"}}, 1), "admitted: minimum gang of 1 fits") << "one that fits is no bad input";
}

// spec.worker.devices rendered: a CEL selector per attribute in the worker's claim template, whose
// name changes with what it asks for (a template cannot change).
TEST(DraDevices, MatchAttributesBecomeCelSelectorsInAClaimTemplateNamedForThem) {
  auto parse = [](const std::string& devices) {
    return api::parse_task(json::parse(R"({"metadata":{"name":"job","namespace":"team","uid":"u"},
      "spec":{"replicas":{"min":1,"max":2},"master":{"image":"l"},"worker":{"image":"w","gpus":"2","devices":)" + devices + "}}}"));
  };
  const auto plain = parse(R"({"deviceClassName":"gpu.nvidia.com"})");
  ASSERT_TRUE(plain.spec) << plain.errors[0];
  EXPECT_EQ(render::gpu_claim_template_name(*plain.spec, "gpu.nvidia.com", 2), "job-gpus-2.gpu.nvidia.com");
  const auto h100 = parse(R"({"deviceClassName":"gpu.nvidia.com","matchAttributes":{"productName":"NVIDIA-H100","gpu.nvidia.com/brand":"say \"hi\""}})");
  ASSERT_TRUE(h100.spec) << h100.errors[0];
  const auto a100 = parse(R"({"deviceClassName":"gpu.nvidia.com","matchAttributes":{"productName":"NVIDIA-A100"}})");
  const std::string name = render::gpu_claim_template_name(*h100.spec, "gpu.nvidia.com", 2);
  EXPECT_TRUE(std::regex_match(name, std::regex("job-gpus-2-[0-9a-f]{8}\\.gpu\\.nvidia\\.com"))) << name;
  EXPECT_NE(name, render::gpu_claim_template_name(*a100.spec, "gpu.nvidia.com", 2));
  const json t = render::gpu_claim_template(*h100.spec, "gpu.nvidia.com", 2);
  EXPECT_EQ(t["metadata"]["name"], name);
  EXPECT_EQ(t["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"],
            json::parse(R"([{"cel":{"expression":"has(device.attributes[\"gpu.nvidia.com\"].brand) && string(device.attributes[\"gpu.nvidia.com\"].brand) == \"say \\\"hi\\\"\""}},
                            {"cel":{"expression":"has(device.attributes[device.driver].productName) && string(device.attributes[device.driver].productName) == \"NVIDIA-H100\""}}])"));
  render::WorkerPlacement placement{"nvidia", "dra:gpu.nvidia.com", 2, "n1", "", {}};
  EXPECT_EQ(render::worker_pod(*h100.spec, 0, {1, 1}, placement)["spec"]["resourceClaims"][0]["resourceClaimTemplateName"], name);
}

TEST(DraDevices, ADeviceRequestTheApiWouldRefuseIsASpecError) {
  auto errors = [](const std::string& worker) {
    return api::parse_task(json::parse(R"({"metadata":{"name":"job","namespace":"team"},
      "spec":{"replicas":{"min":1,"max":1},"master":{"image":"l"},"worker":)" + worker + "}}")).errors;
  };
  EXPECT_TRUE(errors(R"({"image":"w","gpus":"0.5","devices":{"deviceClassName":"gpu.nvidia.com"}})").empty()) << "a seat, or a device";
  EXPECT_EQ(errors(R"({"image":"w","devices":{"deviceClassName":"GPU!"}})"),
            std::vector<std::string>{"spec.worker.devices.deviceClassName: must name a DeviceClass (a DNS subdomain such as gpu.nvidia.com)"});
  EXPECT_EQ(errors(R"({"image":"w","devices":{"deviceClassName":"gpu.nvidia.com","matchAttributes":{"a.b/c-d":"x","e":7}}})"),
            (std::vector<std::string>{
                "spec.worker.devices.matchAttributes.a.b/c-d: an attribute name is a C identifier of up to 32 characters, optionally after its domain and a slash",
                "spec.worker.devices.matchAttributes.e: must be a string of 1 to 64 characters"}));
  EXPECT_TRUE(errors(R"({"image":"w","devices":{"deviceClassName":"gpu.nvidia.com","matchAttributes":{"gpu.nvidia.com/productName":"H100"}}})").empty());
}

}  // namespace
}  // namespace valley::planner
