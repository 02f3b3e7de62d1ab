// Cost end to end: each test prices tasks with a PricingPolicy of its own (--pricing-policy), so
// tests never see each other's prices.
#include <cstdio>
#include <fstream>
#include <set>

#include "controllers/api/money.h"
#include "operator/kube/error.h"
#include "operator/kube/timefmt.h"
#include "tests/e2e/task_fixture.h"

namespace valley::e2e {
namespace {

using kube::resources::kPricingPolicies;

class CostTest : public TaskTest {
 protected:
  void TearDown() override {
    TaskTest::TearDown();
    try {
      admin->remove(kPricingPolicies, "", ns);
    } catch (const kube::KubeError&) {
    }
  }
  std::vector<std::string> operator_flags() const override {
    return {"--pricing-policy=" + ns, "--cost-interval=1s", "--cost-settle=2s", "--planner-min-resize-interval=2s"};
  }
  // A100 on demand at 3.60/GPU-h (0.001 a second), 400 W at PUE 1.0 and 0.50/kWh flat, in UTC;
  // priority 0 pays 1.5x.
  json policy_spec() {
    return json::parse(R"({"currency":"USD",
      "gpu":[{"match":{"vendor":"nvidia","product":"NVIDIA-A100-SXM4-80GB"},"onDemand":"3.60","spot":"1.80"},{"onDemand":"1.00"}],
      "electricity":{"timeZone":"UTC","pue":"1.0","wattsPerGpu":[{"match":{"vendor":"nvidia"},"watts":400}],"flatPerKWh":"0.50"},
      "priority":{"multipliers":[{"minPriority":0,"multiplier":"1.5"},{"minPriority":50,"multiplier":"1.0"}]}})");
  }
  void create_policy(const json& spec) {
    admin->create(kPricingPolicies, "",
                  {{"apiVersion", "valley.dev/v1beta1"}, {"kind", "PricingPolicy"}, {"metadata", {{"name", ns}}}, {"spec", spec}});
  }
  std::string in_use(const std::string& name) {
    for (const auto& c : admin->get(kPricingPolicies, "", name).value("status", json::object()).value("conditions", json::array()))
      if (c["type"] == "InUse") return c["status"].get<std::string>() + ": " + c.value("reason", "") + ": " + c.value("message", "");
    return "";
  }
  std::string policy_valid() {
    for (const auto& c : admin->get(kPricingPolicies, "", ns).value("status", json::object()).value("conditions", json::array()))
      if (c["type"] == "Valid") return c["status"].get<std::string>() + ": " + c.value("message", "");
    return "";
  }
  // One pod of 2 A100s on an on-demand node, running `seconds`.
  json single_spec(int seconds, int priority = 0) {
    return {{"taskType", "Single"},
            {"priority", priority},
            {"image", "valley.dev/examples/train:1"},
            {"worker",
             {{"gpus", "2"},
              {"template",
               {{"metadata", {{"annotations", {{"sim.valley.dev/run-time", std::to_string(seconds) + "s"}}}}},
                {"spec", {{"nodeSelector", {{"valley.dev/pool", "a100-od"}}}}}}}}},
            {"estimatedDuration", std::to_string(seconds) + "s"}};
  }
};

TEST_F(CostTest, FinalCostIsGpuSecondsTimesRatesTimesMultiplierAcrossAnOperatorRestart) {
  create_policy(policy_spec());
  ASSERT_TRUE(eventually([&] { return policy_valid().rfind("True", 0) == 0; }, 20s)) << policy_valid() << operator_log();
  EXPECT_EQ(in_use(ns).rfind("True: Selected", 0), 0u) << in_use(ns);
  apply(single_spec(12));
  // The estimate is there before the task runs.
  ASSERT_TRUE(eventually([&] { return cost().contains("estimate"); }, 20s)) << task().dump(2) << operator_log();
  json est = cost()["estimate"];
  // 2 GPUs x 12 s: GPU 0.024 + energy 0.8 kW x 12 s x 0.50/kWh = 0.001333 -> x1.5 = 0.038.
  EXPECT_EQ(est["expected"], "0.04") << est.dump(2);
  ASSERT_TRUE(wait_phase("Running")) << task().dump(2);
  // Accrual is visible while it runs; then the operator dies mid-run and a new one takes over.
  ASSERT_TRUE(eventually([&] { return cost().value("accruedMicros", int64_t{0}) > 0; }, 10s)) << task().dump(2);
  stop_operator(SIGKILL);
  std::this_thread::sleep_for(2s);
  start_operator();
  ASSERT_TRUE(wait_phase("Succeeded", 60s)) << task().dump(2) << operator_log();
  ASSERT_TRUE(eventually([&] { return cost().contains("final"); }, 20s)) << task().dump(2);
  // What the pod's own times say it used.
  json pod = admin->get(kPods, ns, "job-worker-0");
  const json& term = pod["status"]["containerStatuses"][0]["state"]["terminated"];
  ASSERT_TRUE(term.value("finishedAt", json()).is_string()) << pod["status"].dump(2);
  // kwok leaves terminated.startedAt empty; the pod's startTime is when it started running.
  const std::string start_text = term.value("startedAt", json()).is_string() ? term["startedAt"].get<std::string>()
                                                                             : pod["status"]["startTime"].get<std::string>();
  auto started = *kube::parse_time(start_text), finished = *kube::parse_time(term["finishedAt"].get<std::string>());
  const double seconds = std::chrono::duration<double>(finished - started).count();
  const double expected = (2 * seconds * 3.60 / 3600 + 2 * 0.4 * seconds / 3600 * 0.50) * 1.5;
  const double actual = cost()["finalMicros"].get<int64_t>() / 1e6;
  std::printf("ran %.0f s on 2 GPUs: expected %.6f, final %.6f (%s USD)\n", seconds, expected, actual,
              cost()["final"].get<std::string>().c_str());
  EXPECT_NEAR(actual, expected, expected * 0.01) << cost().dump(2);
  EXPECT_EQ(cost()["breakdown"]["gpuHours"]["nvidia/on-demand"], api::format_money(static_cast<int64_t>(2 * seconds * 1e6 / 3600), 3));
  EXPECT_EQ(cost()["multiplier"], "1.5");
  // `kubectl get tt` shows it.
  ChildProcess get({VALLEY_SOURCE_DIR "/.valley/bin/kubectl", "--kubeconfig=" + admin_kubeconfig_path(), "-n", ns, "get", "tt"},
                   ::testing::TempDir() + "/kubectl-get-tt-cost.log");
  ASSERT_EQ(get.wait(20s), 0) << get.output();
  EXPECT_NE(get.output().find(cost()["final"].get<std::string>()), std::string::npos) << get.output();
}

TEST_F(CostTest, ReduceCostWaitsOutThePeakAndStartsWhenTheWindowCoversNow) {
  // An invalid policy (a time zone that does not exist) is reported on the policy itself.
  json bad = policy_spec();
  bad["electricity"]["timeZone"] = "Mars/Olympus_Mons";
  create_policy(bad);
  ASSERT_TRUE(eventually([&] { return policy_valid().rfind("False", 0) == 0; }, 20s)) << policy_valid();
  EXPECT_NE(policy_valid().find("unknown time zone"), std::string::npos) << policy_valid();
  // Valley electricity only from 6 hours from now: it is "peak" (flat, dearer) now; idle capacity
  // never counts (101%).
  const auto now = std::chrono::system_clock::now();
  auto hhmm = [](std::chrono::system_clock::time_point t) { return kube::format_time(t).substr(11, 5); };
  json spec = policy_spec();
  spec["electricity"]["windows"] = {{{"name", "valley"}, {"perKWh", "0.10"}, {"start", hhmm(now + 6h)}, {"end", hhmm(now + 7h)}}};
  // The window 6 hours out is within its patience; any saving is worth waiting for here (the
  // default minimum, 10% of the price, is more than this tariff saves).
  spec["reduceCost"] = {{"patience", "12h"}, {"minSavingPercent", 0}};
  admin->patch(kPricingPolicies, "", ns, kube::PatchType::Merge, {{"spec", spec}});
  ASSERT_TRUE(eventually([&] { return policy_valid().rfind("True", 0) == 0; }, 20s)) << policy_valid();
  json task_spec = single_spec(600);
  task_spec["reduceCost"] = true;
  apply(task_spec);
  ASSERT_TRUE(eventually([&] {
    return task().value("status", json::object()).value("message", "").find("ReduceCost: waiting for nvidia on-demand at") !=
           std::string::npos;
  }, 30s)) << task().dump(2) << operator_log();
  EXPECT_EQ(phase(), "Pending");
  EXPECT_TRUE(pods().empty());
  // The status and the estimate say it starts when the window opens.
  EXPECT_GT(task()["status"].value("expectedStart", ""), kube::format_time(now + 5h)) << task()["status"].dump(2);
  ASSERT_TRUE(eventually([&] { return cost().contains("estimate"); }, 20s)) << task().dump(2);
  EXPECT_GT(cost()["estimate"]["start"].get<std::string>(), kube::format_time(now + 5h)) << cost().dump(2);
  // The window now covers the present: it starts.
  spec["electricity"]["windows"] = {{{"name", "valley"}, {"perKWh", "0.10"}, {"start", hhmm(now - 1h)}, {"end", hhmm(now + 2h)}}};
  admin->patch(kPricingPolicies, "", ns, kube::PatchType::Merge, {{"spec", spec}});
  ASSERT_TRUE(wait_phase("Running", 30s)) << task().dump(2) << operator_log();
}

// Prices for the placement tests: A100 3.60 on demand and 1.80 on spot, MI250X `amd` on demand
// only; no energy for AMD (no watts given), 400 W for NVIDIA.
json priced_pools(const json& base, const std::string& amd) {
  json spec = base;
  spec["gpu"] = {{{"match", {{"vendor", "nvidia"}, {"product", "NVIDIA-A100-SXM4-80GB"}}}, {"onDemand", "3.60"}, {"spot", "1.80"}},
                 {{"match", {{"vendor", "amd"}}}, {"onDemand", amd}},
                 {{"onDemand", "1.00"}}};
  return spec;
}

// The node a task's running workers are on, by pool (valley.dev/pool of the node).
std::set<std::string> worker_pools(kube::Client& admin, const std::vector<json>& pods) {
  std::set<std::string> out;
  for (const auto& p : pods) {
    if (p["metadata"]["labels"].value("valley.dev/role", "") != "worker" || p["metadata"].contains("deletionTimestamp")) continue;
    const std::string node = p["spec"].value("nodeName", "");
    out.insert(node.empty() ? "(unbound)" : admin.get(kube::resources::kNodes, "", node)["metadata"]["labels"].value("valley.dev/pool", "?"));
  }
  return out;
}

// Placement by price, not by vendor: an amdSupport + reduceCost task that does not checkpoint may not
// use spot, so of what it may use MI250X at 2.00 is cheapest, though NVIDIA spot at 1.80 is cheaper
// still (comparing against that is what sent such tasks to on-demand A100 before). Priced the other
// way round, AMD at 5.00 loses to on-demand A100 at 3.60.
TEST_F(CostTest, ReduceCostTaskLandsOnTheCheapestPoolItMayUse) {
  wait_until_no_active_valley_work(*admin);
  create_policy(priced_pools(policy_spec(), "2.00"));
  ASSERT_TRUE(eventually([&] { return policy_valid().rfind("True", 0) == 0; }, 20s)) << policy_valid();
  json spec = mpi_spec(4, 4, {{"sim.valley.dev/run-time", "10m"}});
  spec["amdSupport"] = true;
  spec["reduceCost"] = true;
  spec["estimatedDuration"] = "10m";
  apply(spec, "cheap");
  ASSERT_TRUE(wait_phase("Running", 60s, "cheap")) << task("cheap").dump(2) << operator_log();
  EXPECT_EQ(worker_pools(*admin, pods("cheap")), std::set<std::string>{"mi250-od"});
  // The estimate prices the pool it got.
  ASSERT_TRUE(eventually([&] {
    return task("cheap")["status"].value("cost", json::object()).value("estimate", json::object()).value("placed", false);
  }, 20s)) << task("cheap").dump(2);
  const json est = task("cheap")["status"]["cost"]["estimate"];
  EXPECT_NE(est["basis"].get<std::string>().find("on amd on-demand at 2.00/GPU-h"), std::string::npos) << est.dump(2);

  admin->patch(kPricingPolicies, "", ns, kube::PatchType::Merge, {{"spec", priced_pools(policy_spec(), "5.00")}});
  ASSERT_TRUE(eventually([&] { return policy_valid().rfind("True", 0) == 0; }, 20s)) << policy_valid();
  apply(spec, "dear");
  ASSERT_TRUE(wait_phase("Running", 60s, "dear")) << task("dear").dump(2) << operator_log();
  for (const auto& pool : worker_pools(*admin, pods("dear")))
    EXPECT_TRUE(pool == "a100-od" || pool == "a100-mig") << pool << " (on-demand A100 is the cheapest now)";
  // What is already running stays where it is.
  EXPECT_EQ(worker_pools(*admin, pods("cheap")), std::set<std::string>{"mi250-od"});
}

// The objective per class (the policy's default growth.withoutReduceCost): a task that did not ask
// to wait starts as large as the free GPUs allow, since nothing measured says a size does not pay;
// a reduceCost task of the same kind starts at its minimum and grows only where measured speedup
// pays (no progress records here, so it stays there).
TEST_F(CostTest, WithoutReduceCostATaskStartsAtMaxWhileAReduceCostOneOfTheSameKindStartsAtItsMinimum) {
  wait_until_no_active_valley_work(*admin);
  create_policy(policy_spec());
  ASSERT_TRUE(eventually([&] { return policy_valid().rfind("True", 0) == 0; }, 20s)) << policy_valid();
  json spec = mpi_spec(1, 4, {{"sim.valley.dev/run-time", "10m"}});
  spec["priority"] = 50;
  spec["worker"]["template"] = {{"spec", {{"nodeSelector", {{"valley.dev/pool", "a100-od"}}}}}};
  apply(spec, "quick");
  const auto status = [&](const std::string& name) { return task(name).value("status", json::object()); };
  ASSERT_TRUE(eventually([&] { return status("quick").value("phase", "") == "Running"; }, 60s)) << task("quick").dump(2);
  EXPECT_EQ(status("quick").value("replicas", 0), 4) << status("quick").dump(2);
  spec["reduceCost"] = true;
  spec["priority"] = 10;
  apply(spec, "thrifty");
  ASSERT_TRUE(eventually([&] { return status("thrifty").value("phase", "") == "Running"; }, 60s)) << task("thrifty").dump(2);
  EXPECT_EQ(status("thrifty").value("replicas", 0), 1);
  // What must not happen, over several resize intervals (2 s here): the cost rule growing into sizes
  // nobody measured, the time rule giving back what it has.
  std::this_thread::sleep_for(8s);
  EXPECT_EQ(status("thrifty").value("replicas", 0), 1) << status("thrifty").dump(2);
  EXPECT_EQ(status("quick").value("replicas", 0), 4) << status("quick").dump(2);
  EXPECT_EQ(status("quick").value("epoch", 0), 1);
}

// A reduceCost task with a deadline waits for cheaper capacity only while its deadline still holds:
// MI250X (2.00, plus 300 W by default at 0.50/kWh: 2.15 an hour) is held by a task expected to end in 30 s that overruns; the deadline leaves 45 s of
// slack (10 min of work + the 5 min restart allowance before a deadline 15m45s out), so it waits for
// MI250X, then takes on-demand A100 (3.60) when the slack runs out.
TEST_F(CostTest, DeadlineTaskWaitsForCheapCapacityThenMovesToOnDemandWhenItsSlackRunsOut) {
  wait_until_no_active_valley_work(*admin);
  create_policy(priced_pools(policy_spec(), "2.00"));
  ASSERT_TRUE(eventually([&] { return policy_valid().rfind("True", 0) == 0; }, 20s)) << policy_valid();
  json blocker = mpi_spec(16, 16, {{"sim.valley.dev/run-time", "10m"}});
  blocker["amdSupport"] = true;
  blocker["estimatedDuration"] = "30s";
  blocker["worker"]["template"] = {{"spec", {{"nodeSelector", {{"valley.dev/pool", "mi250-od"}}}}}};
  apply(blocker, "blocker");
  ASSERT_TRUE(wait_phase("Running", 60s, "blocker")) << task("blocker").dump(2) << operator_log();

  json spec = mpi_spec(8, 8, {{"sim.valley.dev/run-time", "10m"}});
  spec["amdSupport"] = true;
  spec["reduceCost"] = true;
  spec["estimatedDuration"] = "10m";
  spec["deadline"] = "15m45s";
  apply(spec);
  const auto created = std::chrono::system_clock::now();
  ASSERT_TRUE(eventually([&] {
    return task().value("status", json::object()).value("message", "").find("ReduceCost: waiting for amd on-demand at 2.1500/GPU-h") !=
           std::string::npos;
  }, 20s)) << task().dump(2) << operator_log();
  json st = task()["status"];
  EXPECT_EQ(st["phase"], "Pending");
  EXPECT_GT(st.value("slackSeconds", int64_t{0}), 0) << st.dump(2);
  EXPECT_LE(st.value("slackSeconds", int64_t{0}), 45) << st.dump(2);
  EXPECT_TRUE(st.contains("cheapCapacityUntil")) << st.dump(2);
  EXPECT_TRUE(pods().empty());
  // The estimate prices what it waits for.
  ASSERT_TRUE(eventually([&] { return cost().contains("estimate"); }, 20s)) << task().dump(2);
  EXPECT_NE(cost()["estimate"]["basis"].get<std::string>().find("on amd on-demand"), std::string::npos) << cost().dump(2);

  // The blocker overruns; the slack runs out; it starts on on-demand A100, not before its slack is gone.
  ASSERT_TRUE(wait_phase("Running", 120s)) << task().dump(2) << operator_log();
  EXPECT_GE(std::chrono::system_clock::now() - created, 40s) << "started before its slack ran out";
  EXPECT_EQ(phase("blocker"), "Running");
  for (const auto& pool : worker_pools(*admin, pods())) EXPECT_TRUE(pool == "a100-od" || pool == "a100-mig") << pool;
  // The admission says why, and the estimate follows the placement.
  std::string admitted;
  for (const auto& c : task()["status"].value("conditions", json::array()))
    if (c["type"] == "Admitted") admitted = c.value("message", "");
  EXPECT_NE(admitted.find("its deadline let it wait for cheaper capacity until"), std::string::npos) << task()["status"].dump(2);
  ASSERT_TRUE(eventually([&] {
    return cost().value("estimate", json::object()).value("basis", "").find("on nvidia on-demand at 3.60") != std::string::npos;
  }, 20s)) << cost().dump(2);
}

TEST_F(CostTest, ReachingMaxCostSuspendsTheTaskAndRaisingItResumes) {
  json spec = policy_spec();
  spec["gpu"][0]["onDemand"] = "1800";  // 2 GPUs: 1.00 a second, x1.5
  create_policy(spec);
  ASSERT_TRUE(eventually([&] { return policy_valid().rfind("True", 0) == 0; }, 20s)) << policy_valid();
  json task_spec = single_spec(600);
  task_spec["maxCost"] = "6.00";
  apply(task_spec);
  ASSERT_TRUE(wait_phase("Suspended", 60s)) << task().dump(2) << operator_log();
  json st = task()["status"];
  EXPECT_EQ(st["reason"], "BudgetExceeded");
  EXPECT_GE(st["cost"]["accruedMicros"].get<int64_t>(), 6'000'000);
  bool condition = false;
  for (const auto& c : st["conditions"]) condition |= c["type"] == "BudgetExceeded" && c["status"] == "True";
  EXPECT_TRUE(condition) << st.dump(2);
  EXPECT_TRUE(eventually([&] { return pods().empty(); }, 30s));
  const int64_t at_suspend = cost().value("accruedMicros", int64_t{0});
  std::this_thread::sleep_for(3s);
  EXPECT_EQ(cost().value("accruedMicros", int64_t{0}), at_suspend) << "charged while suspended";
  admin->patch(kTrainingTasks, ns, "job", kube::PatchType::Merge, {{"spec", {{"maxCost", "1000.00"}}}});
  ASSERT_TRUE(wait_phase("Running", 60s)) << task().dump(2) << operator_log();
}

TEST_F(CostTest, ValleyctlEstimatesASeedFileWithoutSubmittingIt) {
  create_policy(policy_spec());
  const std::string file = ::testing::TempDir() + "/seed-" + ns + ".yaml";
  {
    std::ofstream out(file);
    out << "TaskName: training1\nPriority: 50\nTaskType: MPI\nMaxReplicas: 4\nMinReplicas: 2\n"
           "MasterImage: vacant.io/training-master:1.0\nWorkerImage: vacant.io/training-worker:1.0\nEstimatedDuration: 2h\n";
  }
  ChildProcess run({binary("valleyctl"), "estimate", file, "--kubeconfig=" + admin_kubeconfig_path(), "--pricing-policy=" + ns,
                    "--node-selector=" + fleet_node_selector(), "-o", "json"},
                   ::testing::TempDir() + "/valleyctl-estimate-" + ns + ".log");
  ASSERT_EQ(run.wait(30s), 0) << run.output();
  json out = json::parse(run.output());
  // Priority 50 without reduceCost: time over money, and nothing measured says a size does not pay,
  // so the planner admits it at its maximum, 4 workers, on on-demand A100s (it has no checkpoint
  // store, so no spot) for its estimated 2 h: 8 GPU-hours at 3.60 = 28.80, plus 400 W x 8 h x 0.50
  // = 1.60; priority 50 pays 1.0x: 30.40.
  EXPECT_EQ(out["workers"], 4) << out.dump(2);
  EXPECT_EQ(out["gpuHours"], "8.000") << out.dump(2);
  EXPECT_EQ(out["expected"], "30.40") << out.dump(2);
  EXPECT_EQ(out["currency"], "USD");
  // Nothing was submitted.
  for (const std::string& where : {ns, std::string("default")})
    for (const auto& t : admin->list(kTrainingTasks, where).items) EXPECT_NE(t["metadata"].value("name", ""), "training1") << where;
  // A broken file is a clear error, not a crash.
  { std::ofstream(file) << "TaskName: x\nMinReplicas: ten\n"; }
  ChildProcess bad({binary("valleyctl"), "estimate", file, "--kubeconfig=" + admin_kubeconfig_path(), "--pricing-policy=" + ns},
                   ::testing::TempDir() + "/valleyctl-estimate-bad-" + ns + ".log");
  EXPECT_EQ(bad.wait(30s), 1) << bad.output();
  EXPECT_NE(bad.output().find("line 2: MinReplicas: must be an integer"), std::string::npos) << bad.output();
}

}  // namespace
}  // namespace valley::e2e
