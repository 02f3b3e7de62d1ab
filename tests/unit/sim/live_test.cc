// The live benchmark's pure parts (bench/live): the workload emulator's progress, checkpoints,
// restarts and losses; the meter's spans and prices; the spot schedule being the simulator's own;
// what each system is asked to run.
#include <gtest/gtest.h>

#include "bench/live/emulator.h"
#include "bench/live/meter.h"
#include "bench/live/objects.h"

namespace valley::live {
namespace {

using Kind = EmulatorAction::Kind;
constexpr api::Micros kPerHour = 3'600'000;  // 3.60 a GPU-hour: 1,000 micros a GPU-second

LiveJob two_gpu_job(int64_t duration = 3600) {
  LiveJob j;
  j.name = "j-a";
  j.trace = {"a", 0, duration, 2, ""};
  j.traits.cls = "normal";
  j.traits.priority = 50;
  j.traits.min_workers = 1;
  j.traits.max_workers = 2;
  j.work_total = static_cast<double>(duration) * 2;  // linear
  return j;
}

PodView pod(const std::string& uid, const std::string& node, bool launcher, bool running = true) {
  PodView p;
  p.uid = uid;
  p.node = node;
  p.launcher = launcher;
  p.gpus = launcher ? 0 : 1;
  p.running = running;
  return p;
}

std::vector<PodView> gang(const std::string& epoch, const std::string& worker_node = "n1") {
  return {pod("l" + epoch, "n0", true), pod("w0" + epoch, worker_node, false), pod("w1" + epoch, worker_node, false)};
}

std::vector<Kind> kinds(const std::vector<EmulatorAction>& actions) {
  std::vector<Kind> out;
  for (const auto& a : actions) out.push_back(a.kind);
  return out;
}

TEST(LiveEmulator, RunsAtItsRateChecksPointsAndEndsItsLauncherWhenDone) {
  const LiveJob job = two_gpu_job();
  JobProgress p;
  const EmulatorSettings s;  // checkpoints every 1800 s
  const std::map<std::string, double> none;
  EXPECT_TRUE(advance(p, job, {pod("l", "n0", true)}, 0, none, s).empty());  // no worker yet: no gang
  EXPECT_TRUE(p.gang.empty());
  EXPECT_TRUE(advance(p, job, gang("1"), 10, none, s).empty());
  EXPECT_EQ(p.gpus, 2);
  EXPECT_EQ(p.starts, 1);
  auto a = advance(p, job, gang("1"), 1900, none, s);
  ASSERT_EQ(kinds(a), std::vector<Kind>{Kind::Checkpoint});
  EXPECT_EQ(a[0].step, step_of(1800 * 2));  // taken at 10 + 1800, at 2 GPU-seconds a second
  EXPECT_EQ(a[0].world_size, 2);
  EXPECT_DOUBLE_EQ(a[0].at, 1810);
  a = advance(p, job, gang("1"), 3610, none, s);
  ASSERT_EQ(kinds(a), (std::vector<Kind>{Kind::Checkpoint, Kind::EndLauncher}));
  EXPECT_EQ(a[1].pod, "l1");
  EXPECT_FALSE(p.done);
  auto ended = gang("1");
  ended[0].running = false;
  ended[0].finished = ended[0].succeeded = true;
  EXPECT_TRUE(advance(p, job, ended, 3611, none, s).empty());
  EXPECT_TRUE(p.done);
  EXPECT_DOUBLE_EQ(p.first_start, 10);
  EXPECT_DOUBLE_EQ(p.gang_gpu_seconds, 2 * 3600);  // from the start to the work's end, not to the launcher's exit
}

TEST(LiveEmulator, AGangStoppedOnLiveNodesKeepsItsWorkAndRestartsFromACheckpoint) {
  const LiveJob job = two_gpu_job();
  JobProgress p;
  const EmulatorSettings s;
  const std::map<std::string, double> none;
  advance(p, job, gang("1"), 0, none, s);
  advance(p, job, {}, 1000, none, s);  // deleted (a resize, a preemption): SIGTERM, checkpoint
  EXPECT_DOUBLE_EQ(p.work_done, 2000);
  EXPECT_DOUBLE_EQ(p.checkpointed, 2000);
  // At one worker, after restoring the checkpoint for restart_seconds (60).
  std::vector<PodView> smaller = {pod("l2", "n0", true), pod("w02", "n1", false)};
  advance(p, job, smaller, 1200, none, s);
  EXPECT_EQ(p.gpus, 1);
  advance(p, job, smaller, 1260, none, s);
  EXPECT_DOUBLE_EQ(p.work_done, 2000);  // still restoring
  advance(p, job, smaller, 1360, none, s);
  EXPECT_DOUBLE_EQ(p.work_done, 2100);
  EXPECT_EQ(p.starts, 2);
  EXPECT_EQ(p.losses, 0);
  EXPECT_DOUBLE_EQ(p.first_start, 0);
  // The first gang's 1000 s at 2 GPUs; the one running now is counted when it stops or ends, and
  // the 200 s without a gang are not.
  EXPECT_DOUBLE_EQ(p.gang_gpu_seconds, 2000);
  advance(p, job, {}, 1400, none, s);
  EXPECT_DOUBLE_EQ(p.gang_gpu_seconds, 2000 + 200);
}

TEST(LiveEmulator, AGangLosingANodeFallsBackToItsLastCheckpointAndItsLauncherFails) {
  const LiveJob job = two_gpu_job();
  JobProgress p;
  const EmulatorSettings s;
  advance(p, job, gang("1"), 0, {}, s);
  advance(p, job, gang("1"), 1900, {}, s);  // a periodic checkpoint at 1800
  auto lost = gang("1");
  lost[1].running = lost[2].running = false;  // their node went
  const std::map<std::string, double> killed = {{"n1", 2000}};
  auto a = advance(p, job, lost, 2000, killed, s);
  ASSERT_EQ(kinds(a), std::vector<Kind>{Kind::FailLauncher});
  EXPECT_EQ(a[0].pod, "l1");
  EXPECT_DOUBLE_EQ(p.work_done, 3600);  // the checkpoint at 1800 s of 2 GPUs
  EXPECT_DOUBLE_EQ(p.lost_work, 400);
  EXPECT_EQ(p.losses, 1);
  // A node of the same name back later does not make a later gang on it lost.
  advance(p, job, gang("2"), 2700, killed, s);
  advance(p, job, {}, 2800, killed, s);
  EXPECT_EQ(p.losses, 1);
}

TEST(LiveEmulator, AJobStoppedAsItsWorkEndedFinishesOnItsNextStart) {
  const LiveJob job = two_gpu_job(100);
  JobProgress p;
  const EmulatorSettings s;
  advance(p, job, gang("1"), 0, {}, s);
  ASSERT_EQ(kinds(advance(p, job, gang("1"), 100, {}, s)), std::vector<Kind>{Kind::EndLauncher});
  advance(p, job, {}, 101, {}, s);  // preempted before its launcher exited
  EXPECT_FALSE(p.done);
  auto a = advance(p, job, gang("2"), 200, {}, s);
  ASSERT_EQ(kinds(a), std::vector<Kind>{Kind::EndLauncher});
  EXPECT_EQ(a[0].pod, "l2");
}

sim::Cluster two_pools() {
  return sim::parse_cluster("pools:\n- {name: od, vendor: nvidia, product: A100, nodes: 2}\n- {name: od-amd, vendor: amd, product: MI250X, nodes: 1}\n", "");
}

cost::Policy gpu_hours_only() {
  cost::Policy p;
  p.gpu = {{"nvidia", "", kPerHour, kPerHour / 2}, {"amd", "", kPerHour / 2, kPerHour / 4}};
  p.flat_per_kwh = 0;
  p.priority = {{0, 1000}, {50, 2000}};  // normal pays double
  return p;
}

TEST(LiveMeter, PricesPodsFromBindToEndOrTheirNodeGoingWithTheJobsMultiplier) {
  const sim::Cluster cluster = two_pools();
  Meter m(cluster);
  LiveJob job = two_gpu_job();
  m.submitted(job.name, 5);
  m.bound(job.name, "p1", "live-od-1", 1, 10);
  m.bound(job.name, "p1", "live-od-0", 1, 50);  // seen again: nothing changes
  m.bound(job.name, "p2", "live-od-amd-0", 1, 10);
  m.bound(job.name, "p3", "elsewhere", 1, 10);  // not the fleet's: not priced
  m.ended("p1", 110);
  m.node_gone("live-od-amd-0", 210);
  m.ended("p2", 400);  // already over with its node
  m.completed(job.name, 405);
  const auto f = m.figures({job}, gpu_hours_only(), kube::SystemTime{}, 1000);
  ASSERT_EQ(f.jobs.size(), 1u);
  // 100 s on NVIDIA at 1,000 micros + 200 s on AMD at 500, doubled.
  EXPECT_EQ(f.cost, 2 * (100 * 1000 + 200 * 500));
  EXPECT_DOUBLE_EQ(f.mean_jct, 400);
  EXPECT_EQ(f.finished, 1);
  EXPECT_DOUBLE_EQ(f.pool_gpu_hours.at("od"), 100.0 / 3600);
  EXPECT_DOUBLE_EQ(f.pool_gpu_hours.at("od-amd"), 200.0 / 3600);
}

TEST(LiveMeter, AJobNotCompleteIsUnfinishedAndItsPodsAreChargedUntilNow) {
  const sim::Cluster cluster = two_pools();
  Meter m(cluster);
  LiveJob job = two_gpu_job();
  m.bound(job.name, "p1", "live-od-0", 2, 0);
  const auto f = m.figures({job}, gpu_hours_only(), kube::SystemTime{}, 30);
  EXPECT_EQ(f.unfinished, 1);
  EXPECT_EQ(f.cost, 2 * 2 * 30 * 1000);
}

TEST(LiveSpot, TheScheduleIsTheSimulatorsDraws) {
  sim::Inputs in;
  in.cluster = sim::parse_cluster("pools:\n- {name: sp, capacityType: spot, nodes: 2}\n",
                                  "pools:\n  sp: {interruptionsPerNodeHour: 2, noticeSeconds: 60, replacementSeconds: 300}\n");
  in.workload = sim::parse_workload("classes: [{name: normal, priority: 50, percent: 100}]\n");
  in.pricing = gpu_hours_only();
  in.jobs = {{"long", 0, 20 * 3600, 1, ""}};
  const auto r = sim::simulate(in, sim::PolicyKind::Backfill);
  const auto schedule = spot_schedule(in, r.makespan);
  EXPECT_GT(r.interruptions, 10);
  EXPECT_EQ(static_cast<int>(schedule.size()), r.interruptions);
  for (const auto& e : schedule) {
    EXPECT_EQ(e.kill, e.notice + 60);
    EXPECT_EQ(e.back, e.kill + 300);
    EXPECT_EQ(e.pool, "sp");
  }
}

TEST(LiveObjects, KueueFlavorsGoCheapestFirstAndJobsAskForTheirClassAndSize) {
  sim::Inputs in;
  in.cluster = sim::parse_cluster(
      "pools:\n- {name: od, product: A100, nodes: 2}\n- {name: sp, product: A100, capacityType: spot, nodes: 1}\n"
      "- {name: amd, vendor: amd, product: MI250X, nodes: 1}\n",
      "");
  in.workload = sim::parse_workload("classes: [{name: urgent, priority: 90, percent: 100}]\n");
  in.pricing = gpu_hours_only();
  const auto objects = kueue_objects(in, "live", "ns");
  const nlohmann::json* cq = nullptr;
  int flavors = 0, classes = 0;
  for (const auto& o : objects) {
    if (o["kind"] == "ClusterQueue") cq = &o;
    if (o["kind"] == "ResourceFlavor") {
      ++flavors;
      EXPECT_EQ(o["spec"]["nodeLabels"]["valley.dev/fleet"], "live");
    }
    if (o["kind"] == "WorkloadPriorityClass") {
      ++classes;
      EXPECT_EQ(o["value"], 90);
    }
  }
  EXPECT_EQ(flavors, 3);
  EXPECT_EQ(classes, 1);
  ASSERT_NE(cq, nullptr);
  const auto& groups = (*cq)["spec"]["resourceGroups"];
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[1]["coveredResources"][0], "nvidia.com/gpu");
  EXPECT_EQ(groups[1]["flavors"][0]["name"], "sp");  // spot, the cheaper, first
  EXPECT_EQ(groups[1]["flavors"][1]["name"], "od");
  EXPECT_EQ(groups[1]["flavors"][1]["resources"][0]["nominalQuota"], 16);

  LiveJob job = two_gpu_job(7200);
  job.traits.cls = "urgent";
  SubmitContext c{"ns", "live", 120, "s3://b/p/", "creds"};
  const auto mpi = mpi_job(job, "amd.com/gpu", c);
  EXPECT_EQ(mpi["metadata"]["labels"]["kueue.x-k8s.io/priority-class"], "urgent");
  EXPECT_EQ(mpi["spec"]["runPolicy"]["suspend"], true);
  EXPECT_EQ(mpi["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"], 2);
  EXPECT_EQ(mpi["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["resources"]["limits"]["amd.com/gpu"], "1");
  const auto task = training_task(job, c);
  EXPECT_EQ(task["spec"]["estimatedDuration"], "60s");  // 7,200 trace seconds at 120x
  EXPECT_EQ(task["spec"]["replicas"]["max"], 2);
  EXPECT_EQ(task["spec"]["checkpoint"]["uri"], "s3://b/p/j-a/");
}

TEST(LiveObjects, AnAmdCapableMpiJobAsksForTheVendorOfTheCheapestFlavorWithRoomForItsGang) {
  sim::Inputs in;
  in.cluster = sim::parse_cluster(
      "pools:\n- {name: od, product: A100, nodes: 2}\n- {name: sp, product: A100, capacityType: spot, nodes: 1}\n"
      "- {name: amd, vendor: amd, product: MI250X, nodes: 1}\n",
      "");
  in.pricing = gpu_hours_only();
  in.pricing.gpu = {{"nvidia", "", kPerHour, kPerHour / 2}, {"amd", "", kPerHour * 3 / 4, kPerHour / 4}};
  const int per_node = in.cluster.pools[1].gpus_per_node;
  auto reserving = [](std::vector<std::pair<std::string, int>> flavors) {
    nlohmann::json cq = {{"status", {{"flavorsReservation", nlohmann::json::array()}}}};
    for (const auto& [name, gpus] : flavors) {
      const std::string resource = name == "amd" ? "amd.com/gpu" : "nvidia.com/gpu";
      cq["status"]["flavorsReservation"].push_back(
          {{"name", name}, {"resources", nlohmann::json::array({{{"name", resource}, {"total", std::to_string(gpus)}}})}});
    }
    return cq;
  };
  LiveJob job = two_gpu_job();
  job.traits.amd = true;
  EXPECT_EQ(choose_gpu_resource(job, in, nlohmann::json::object()), "nvidia.com/gpu");  // spot, the cheapest, is free
  EXPECT_EQ(choose_gpu_resource(job, in, reserving({{"sp", per_node - 1}})), "amd.com/gpu");  // spot cannot hold 2
  EXPECT_EQ(choose_gpu_resource(job, in, reserving({{"sp", per_node}, {"amd", per_node}})), "nvidia.com/gpu");
  LiveJob nvidia_only = two_gpu_job();
  EXPECT_EQ(choose_gpu_resource(nvidia_only, in, reserving({{"sp", per_node}, {"od", 2 * per_node}})), "nvidia.com/gpu");
}

TEST(LiveObjects, TheOperatorsPolicyIsFlatWithItsTimersCompressed) {
  nlohmann::json policy = {{"kind", "PricingPolicy"},
                           {"spec",
                            {{"electricity", {{"flatPerKWh", "0.09"}, {"windows", nlohmann::json::array({{{"name", "valley"}}})}}},
                             {"reduceCost", {{"patience", "6h"}}},
                             {"moves", {{"restartCost", "5m"}}}}}};
  const auto flat = flat_policy(policy);
  EXPECT_FALSE(flat["spec"]["electricity"].contains("windows"));
  const auto op = compressed_policy(flat, 120);
  EXPECT_EQ(op["spec"]["reduceCost"]["patience"], "3m");
  EXPECT_EQ(op["spec"]["moves"]["restartCost"], "2.5s");
  policy["spec"]["moves"]["restartCost"] = "soon";
  EXPECT_THROW(compressed_policy(policy, 120), sim::InputError);
}

}  // namespace
}  // namespace valley::live
