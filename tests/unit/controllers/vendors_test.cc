// Three GPU vendors: spec.vendors (and amdSupport) as parsed, Intel nodes as the snapshot reads them,
// and placement by price across the vendors a task lists, a gang on one vendor.
#include <gtest/gtest.h>

#include "controllers/api/spec.h"
#include "controllers/inputs/snapshot.h"
#include "controllers/render/render.h"
#include "tests/unit/controllers/planner_fixtures.h"

namespace valley::planner {
namespace {
using namespace fixtures;
using json = nlohmann::json;

json task_with(json spec_patch) {
  json t = json::parse(R"({"apiVersion":"valley.dev/v1beta1","kind":"TrainingTask","metadata":{"name":"t","namespace":"ns"},
    "spec":{"taskType":"MPI","replicas":{"min":1,"max":2},"master":{"image":"l"},"worker":{"image":"w"}}})");
  t["spec"].merge_patch(spec_patch);
  return t;
}

TEST(Vendors, SpecListsVendorsInOneOrderAndAnImagePerVendor) {
  auto p = api::parse_task(task_with({{"vendors", {"intel", "nvidia"}}, {"worker", {{"vendorImages", {{"intel", "w-xpu"}}}}}}));
  ASSERT_TRUE(p.spec) << p.errors[0];
  EXPECT_EQ(p.spec->vendors, (std::vector<std::string>{"nvidia", "intel"}));
  EXPECT_EQ(p.spec->worker.image_for("intel"), "w-xpu");
  EXPECT_EQ(p.spec->worker.image_for("nvidia"), "w");
  // amdSupport adds amd to the list, as it always did.
  p = api::parse_task(task_with({{"amdSupport", true}, {"worker", {{"amdImage", "w-rocm"}}}}));
  ASSERT_TRUE(p.spec);
  EXPECT_EQ(p.spec->vendors, (std::vector<std::string>{"nvidia", "amd"}));
  EXPECT_EQ(p.spec->worker.image_for("amd"), "w-rocm");
  EXPECT_EQ(api::parse_task(task_with(json::object())).spec->vendors, std::vector<std::string>{"nvidia"});
  // Errors name the field.
  for (const json& bad : {json{{"vendors", {"tpu"}}}, json{{"vendors", json::array()}},
                          json{{"worker", {{"vendorImages", {{"intel", "w-xpu"}}}}}}}) {
    p = api::parse_task(task_with(bad));
    ASSERT_FALSE(p.errors.empty()) << bad.dump();
    EXPECT_NE(p.errors[0].find("spec."), std::string::npos) << p.errors[0];
  }
}

TEST(Vendors, AnIntelNodeIsReadWithItsWholeGpuResource) {
  json node = {{"metadata", {{"name", "x1"}, {"labels", {{"gpu.intel.com/product", "Max_1550"}}}}},
               {"status", {{"allocatable", {{"gpu.intel.com/i915", "8"}, {"cpu", "96"}}}}}};
  Node n = node_from(node);
  EXPECT_EQ(n.vendor, "intel");
  EXPECT_EQ(n.capacity.at("gpu.intel.com/i915"), 8);
  EXPECT_EQ(whole_of(n), "gpu.intel.com/i915");
  node["status"]["allocatable"] = {{"gpu.intel.com/xe", "4"}};
  n = node_from(node);
  EXPECT_EQ(n.vendor, "intel");
  EXPECT_EQ(whole_of(n), "gpu.intel.com/xe");
}

TEST(Vendors, ATaskTakesTheCheapestVendorItListsAndAGangStaysOnOne) {
  Node n1 = nvidia("n1", 8), x1 = node("x1", "intel", "on-demand", {{"gpu.intel.com/i915", 4}});
  n1.price_micros = 2'400'000;
  x1.price_micros = 1'100'000;
  Task t = task("t", 0, 4, 4);
  // NVIDIA only: never on Intel, however cheap.
  auto ds = plan({n1, x1}, {t}, kNow, Config{});
  ASSERT_EQ(ds[0].action, Action::Admit);
  for (const auto& w : ds[0].placement) EXPECT_EQ(w.node, "n1");
  // Listing Intel: the cheaper Intel GPUs.
  t.vendors = {"nvidia", "intel"};
  ds = plan({n1, x1}, {t}, kNow, Config{});
  ASSERT_EQ(ds[0].action, Action::Admit);
  for (const auto& w : ds[0].placement) {
    EXPECT_EQ(w.node, "x1");
    EXPECT_EQ(w.gpu_resource, "gpu.intel.com/i915");
  }
  // 6 workers: 4 Intel + 2 NVIDIA would be cheaper still, but a gang never mixes vendors.
  t.min_workers = t.max_workers = 6;
  ds = plan({n1, x1}, {t}, kNow, Config{});
  ASSERT_EQ(ds[0].action, Action::Admit);
  for (const auto& w : ds[0].placement) EXPECT_EQ(w.node, "n1");
}

TEST(Vendors, AWorkerOnIntelRunsTheIntelImageAndAsksForIntelGpus) {
  auto p = api::parse_task(task_with({{"vendors", {"nvidia", "intel"}}, {"worker", {{"vendorImages", {{"intel", "w-xpu"}}}}}}));
  ASSERT_TRUE(p.spec);
  json pod = render::worker_pod(*p.spec, 0, {1, 1}, {"intel", "gpu.intel.com/i915", 1, "x1", "", {}});
  const json& c = pod["spec"]["containers"][0];
  EXPECT_EQ(c["image"], "w-xpu");
  EXPECT_EQ(c["resources"]["limits"]["gpu.intel.com/i915"], "1");
}

}  // namespace
}  // namespace valley::planner
