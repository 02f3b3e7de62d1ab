// Fractional work on DRA GPUs whose driver lets a task's pods share a claim: a task's workers sit
// 1000 / gpu_milli to a device, the devices its shared claims hold already are filled first, and no
// device is ever counted for two tasks.
#include <gtest/gtest.h>

#include "controllers/api/dra.h"
#include "controllers/gpu/pod_requests.h"
#include "controllers/inputs/dra_devices.h"
#include "controllers/planner/planner.h"
#include "controllers/inputs/snapshot.h"
#include "controllers/render/render.h"
#include "controllers/render/seat_claims.h"
#include "tests/unit/controllers/planner_fixtures.h"

namespace valley::planner {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;

const std::string kDevices = "dra:gpu.nvidia.com";
const std::string kSeat = "dra-seat:gpu.nvidia.com";

// A node whose `devices` GPUs a DRA driver publishes (`free` of them not held by anyone's claim).
Node dra_node(const std::string& name, int devices, int free, bool shared) {
  Node n = fixtures::nvidia(name, 0);
  n.free.clear();
  n.capacity.clear();
  n.capacity[kDevices] = devices;
  n.free[kDevices] = free;
  n.dra_class = "gpu.nvidia.com";
  n.dra_driver = "gpu.nvidia.com";
  n.dra_shared = shared;
  return n;
}

int on(const Decision& d, const std::string& node) {
  int n = 0;
  for (const auto& w : d.placement) n += w.node == node;
  return n;
}

TEST(DraSeats, AFractionalTasksWorkersShareDevicesAsManyToADeviceAsTheirShareAllows) {
  // Two devices: four halves sit on them when the driver shares, but take a device each when not.
  for (const bool shared : {true, false}) {
    const auto ds = fixtures::greedy_plan({dra_node("n", 2, 2, shared)}, {fixtures::task("ns/halves", 0, 4, 4, 500)}, fixtures::kNow);
    const Decision& d = fixtures::find(ds, "ns/halves");
    if (shared) {
      ASSERT_EQ(d.action, Action::Admit) << d.reason;
      EXPECT_EQ(on(d, "n"), 4);
      for (const auto& w : d.placement) {
        EXPECT_EQ(w.gpu_resource, kSeat);
        EXPECT_EQ(w.count, 500) << "a seat counts the share of a device it is charged";
      }
    } else {
      EXPECT_NE(d.action, Action::Admit) << "a device each: two devices hold two of four";
    }
  }
  // 0.3 of a GPU: three to a device (each charged a third), so two devices hold six and not seven.
  const auto six = fixtures::greedy_plan({dra_node("n", 2, 2, true)}, {fixtures::task("ns/t", 0, 6, 6, 300)}, fixtures::kNow);
  EXPECT_EQ(fixtures::find(six, "ns/t").action, Action::Admit) << fixtures::find(six, "ns/t").reason;
  EXPECT_EQ(fixtures::find(six, "ns/t").placement.at(0).count, 333);
  const auto seven = fixtures::greedy_plan({dra_node("n", 2, 2, true)}, {fixtures::task("ns/t", 0, 7, 7, 300)}, fixtures::kNow);
  EXPECT_NE(fixtures::find(seven, "ns/t").action, Action::Admit);
}

TEST(DraSeats, AnotherTasksWorkersNeverSitOnADeviceATaskOpened) {
  // One half opens a device: a second task's half takes the other device, a third finds none.
  Task a = fixtures::task("ns/a", 2, 1, 1, 500), b = fixtures::task("ns/b", 1, 1, 1, 500), c = fixtures::task("ns/c", 0, 1, 1, 500);
  const auto ds = fixtures::greedy_plan({dra_node("n", 2, 2, true)}, {a, b, c}, fixtures::kNow);
  EXPECT_EQ(fixtures::find(ds, "ns/a").action, Action::Admit);
  EXPECT_EQ(fixtures::find(ds, "ns/b").action, Action::Admit);
  EXPECT_NE(fixtures::find(ds, "ns/c").action, Action::Admit) << "a device holds one task's claim, not three tasks' halves";
}

TEST(DraSeats, TheDevicesATasksSharedClaimsHoldAreFilledBeforeMoreAreTaken) {
  // Its claim holds one of the node's two devices (so one is free); two of its halves sit on it.
  Task a = fixtures::task("ns/a", 0, 2, 2, 500);
  a.admitted = true;
  a.workers = {{"n", kSeat, 500}, {"n", kSeat, 500}};
  a.shared_devices = {{"n", 1}};
  Task other = fixtures::task("ns/other", 0, 1, 1, 1000);
  other.created = a.created + std::chrono::seconds(1);
  auto ds = fixtures::greedy_plan({dra_node("n", 2, 1, true)}, {a, other}, fixtures::kNow);
  EXPECT_EQ(fixtures::find(ds, "ns/a").action, Action::Keep) << fixtures::find(ds, "ns/a").reason;
  EXPECT_EQ(fixtures::find(ds, "ns/other").action, Action::Admit) << "the kept halves take no free device";
  // Growing takes the free device for two more halves: the held device and the free one seat four.
  a.max_workers = 6;
  ds = fixtures::greedy_plan({dra_node("n", 2, 1, true)}, {a}, fixtures::kNow);
  EXPECT_EQ(on(fixtures::find(ds, "ns/a"), "n"), 4) << fixtures::find(ds, "ns/a").reason;
}

api::TaskSpec half_gpu_task() {
  auto parsed = api::parse_task(json::parse(R"({"metadata":{"name":"job","namespace":"team","uid":"u"},
      "spec":{"replicas":{"min":1,"max":4},"master":{"image":"l"},"worker":{"image":"w","gpus":"0.5","devices":{"deviceClassName":"gpu.nvidia.com"}}}})"));
  if (!parsed.spec) throw std::runtime_error(parsed.errors.at(0));
  return *parsed.spec;
}

json seat_pod(const api::TaskSpec& spec, int index, const std::string& node) {
  return render::worker_pod(spec, index, {4, 1}, render::WorkerPlacement{"nvidia", kSeat, 500, node, "", {}});
}

api::Pod seated_pod(const std::string& claim, const std::string& node, const std::string& phase = "Running") {
  api::Pod p;
  p.seat_claim = claim;
  p.seat_class = "gpu.nvidia.com";
  p.seat_milli = 500;
  p.node_name = node;
  p.phase = phase;
  return p;
}

TEST(DraSeats, AWorkerOnASeatNamesItsClaimAndIsChargedItsShare) {
  const api::TaskSpec spec = half_gpu_task();
  render::WorkerPlacement placement{"nvidia", kSeat, 500, "n", "job-seats-0", {}};
  const json pod = render::worker_pod(spec, 0, {4, 1}, placement);
  EXPECT_EQ(pod["spec"]["resourceClaims"], json::parse(R"([{"name":"gpus","resourceClaimName":"job-seats-0"}])"));
  EXPECT_EQ(pod["spec"]["containers"][0]["resources"]["claims"], json::parse(R"([{"name":"gpus"}])"));
  const api::Pod read = api::pod_from(pod);
  EXPECT_EQ(read.seat_claim, "job-seats-0");
  EXPECT_EQ(gpu::gpu_requests(read), (std::map<std::string, int64_t>{{kSeat, 500}})) << "its share, not a device";
  const json claim = render::gpu_seats_claim(spec, "gpu.nvidia.com", "n", "job-seats-0");
  EXPECT_EQ(claim["kind"], "ResourceClaim");
  EXPECT_EQ(claim["spec"]["devices"]["requests"][0]["exactly"]["count"], 1);
  const api::DraClaim parsed = api::dra_claim_from(claim);
  EXPECT_EQ(parsed.seats_task, "team/job");
  EXPECT_EQ(parsed.seats_node, "n");
}

TEST(DraSeats, NewWorkersTakeTheFullestClaimWithAFreeSeatElseANewOne) {
  const api::TaskSpec spec = half_gpu_task();  // two to a device
  const auto now = fixtures::kNow;
  // One claim on n with one worker; one on m, full; a claim the cache does not show yet, named by a
  // pod on n with one worker.
  const std::vector<render::SeatsClaim> claims = {{"job-seats-0", "n", now - 300s}, {"job-seats-1", "m", now - 300s}};
  const api::Pod a = seated_pod("job-seats-0", "n"), b = seated_pod("job-seats-1", "m"), c = seated_pod("job-seats-1", "m"),
                 d = seated_pod("job-seats-2", "n");
  std::vector<json> pods = {seat_pod(spec, 4, "n"), seat_pod(spec, 5, "n"), seat_pod(spec, 6, "m"), seat_pod(spec, 7, "n")};
  const auto seating = render::seat_workers(spec, pods, claims, {&a, &b, &c, &d}, now, 60s);
  auto claim_of = [&](size_t k) { return pods[k]["spec"]["resourceClaims"][0].value("resourceClaimName", ""); };
  EXPECT_EQ(claim_of(0), "job-seats-0");
  EXPECT_EQ(claim_of(1), "job-seats-2") << "the uncached claim a pod names has a seat too";
  EXPECT_EQ(claim_of(2), "job-seats-3") << "m's claim is full: a new one, under the lowest unused name";
  EXPECT_EQ(claim_of(3), "job-seats-4");
  ASSERT_EQ(seating.claims_to_create.size(), 2u);
  EXPECT_EQ(seating.claims_to_create[0]["metadata"]["name"], "job-seats-3");
  EXPECT_EQ(seating.claims_to_create[0]["metadata"]["annotations"]["valley.dev/node"], "m");
  EXPECT_TRUE(seating.claims_to_delete.empty());
}

TEST(DraSeats, AClaimNoLiveWorkerSitsOnIsDeletedOnceOlderThanTheGrace) {
  const api::TaskSpec spec = half_gpu_task();
  const auto now = fixtures::kNow;
  const std::vector<render::SeatsClaim> claims = {
      {"job-seats-0", "n", now - 300s}, {"job-seats-1", "n", now - 300s}, {"job-seats-2", "n", now - 10s}, {"job-seats-3", "n", now - 300s}};
  const api::Pod live = seated_pod("job-seats-0", "n"), ended = seated_pod("job-seats-1", "n", "Succeeded");
  std::vector<json> none;
  const auto seating = render::seat_workers(spec, none, claims, {&live, &ended}, now, 60s);
  EXPECT_EQ(seating.claims_to_delete, (std::vector<std::string>{"job-seats-1", "job-seats-3"}))
      << "an ended worker's claim and an unused one go; one made 10 s ago stays for the pods it was made for";
}

TEST(DraSeats, ATasksSeatsClaimsHoldTheirDevicesForItAndAgainstOthers) {
  NodeFacts facts;
  facts.dra_drivers = {{"gpu.nvidia.com", "nvidia", "gpu.nvidia.com", true}};
  json slice = {{"metadata", {{"name", "n-gpus"}}},
                {"spec", {{"driver", "gpu.nvidia.com"}, {"nodeName", "n"}, {"pool", {{"name", "n"}, {"generation", 1}}},
                          {"devices", json::array({{{"name", "gpu-0"}}, {{"name", "gpu-1"}}})}}}};
  const auto s = api::dra_slice_from(slice, facts.dra_product_attributes);
  auto claim = [](const std::string& name, const std::string& device, bool seats) {
    json c = {{"metadata", {{"name", name}, {"namespace", "team"}, {"labels", {{"app.kubernetes.io/managed-by", "valley"}, {"valley.dev/task", "job"}}}}},
              {"status", {{"allocation", {{"devices", {{"results", json::array({{{"driver", "gpu.nvidia.com"}, {"pool", "n"}, {"device", device}}})}}}}}}}};
    if (seats) c["metadata"]["labels"]["valley.dev/role"] = api::kSeatsClaimRole;
    return api::dra_claim_from(c);
  };
  const api::DraClaim seats = claim("job-seats-0", "gpu-0", true), templated = claim("job-worker-0-gpus", "gpu-1", false);
  EXPECT_EQ(held_by_claims({&s}, {&seats, &templated}, facts), (std::map<std::string, std::map<std::string, int64_t>>{{"n", {{kDevices, 1}}}}))
      << "the seats claim holds its device; a template's claim is counted through its pod";
  EXPECT_EQ(held_by_seats_claims({&s}, {&seats, &templated}, facts),
            (std::map<std::string, std::map<std::string, int64_t>>{{"team/job", {{"n", 1}}}}));
  Node n = fixtures::nvidia("n", 0);
  n.free.clear();
  n.capacity.clear();
  add_dra_devices(n, {&s}, facts);
  EXPECT_TRUE(n.dra_shared);
}

}  // namespace
}  // namespace valley::planner
