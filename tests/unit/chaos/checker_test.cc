// The chaos checker's rules, on recorded histories with planted faults: each rule must fire on its
// fault and stay quiet on a clean history.
#include "tests/chaos/checker.h"

#include <gtest/gtest.h>

namespace valley::chaos {
namespace {

const double T0 = 1'795'316'645;  // 2026-11-22T03:04:05Z
const char* kStart = "2026-11-22T03:04:05Z";

PriceBook prices() {
  PriceBook p;
  p.per_gpu_hour[{"nvidia", "on-demand"}] = 3'600'000;  // 1000 micros a GPU-second
  p.per_gpu_hour[{"nvidia", "spot"}] = 1'800'000;
  return p;
}

json node(const std::string& name, bool spot = false) {
  return {{"metadata", {{"name", name}, {"labels", {{"karpenter.sh/capacity-type", spot ? "spot" : "on-demand"}}}}},
          {"status", {{"allocatable", {{"nvidia.com/gpu", "8"}}}}}};
}

json task(const std::string& name, const std::string& phase, const std::string& expect, json cost = json::object(),
          int64_t observed_generation = 1) {
  return {{"metadata", {{"name", name}, {"namespace", "ns"}, {"uid", "task-" + name}, {"annotations", {{"chaos.valley.dev/expect", expect}}}}},
          {"status", {{"phase", phase}, {"observedGeneration", observed_generation}, {"cost", cost}}}};
}

json pod(const std::string& name, const std::string& task, const std::string& role, int index, int epoch, const std::string& phase,
         const std::string& finished = "") {
  json state = phase == "Running" ? json{{"running", {{"startedAt", kStart}}}} : json::object();
  if (!finished.empty()) state = {{"terminated", {{"exitCode", 0}, {"finishedAt", finished}}}};
  return {{"metadata",
           {{"name", name},
            {"namespace", "ns"},
            {"uid", "pod-" + name},
            {"labels", {{"valley.dev/role", role}, {"valley.dev/worker-index", std::to_string(index)}, {"valley.dev/epoch", std::to_string(epoch)}}},
            {"ownerReferences", {{{"uid", "task-" + task}, {"controller", true}}}}}},
          {"spec", {{"nodeName", "n1"}, {"containers", {{{"name", "c"}, {"resources", {{"requests", {{"nvidia.com/gpu", "2"}}}}}}}}}},
          {"status", {{"phase", phase}, {"startTime", kStart}, {"containerStatuses", {{{"name", "c"}, {"state", state}}}}}}};
}

Snapshot look(double dt, std::vector<json> tasks, std::vector<json> pods, std::vector<json> owned = {}) {
  Snapshot s;
  s.t = T0 + dt;
  s.tasks = std::move(tasks);
  s.pods = std::move(pods);
  s.nodes = {node("n1")};
  s.owned = std::move(owned);
  return s;
}

std::vector<std::string> rules(const Checker& c) {
  std::vector<std::string> out;
  for (const auto& v : c.violations()) out.push_back(v.rule);
  return out;
}

// A clean history: one worker of 2 GPUs on a 1000-micros-per-GPU-second node, 100 s, final 0.20.
TEST(ChaosChecker, ACleanHistoryHasNoViolation) {
  Checker c(prices());
  json cost = {{"accruedMicros", 100'000}};
  c.observe(look(10, {task("a", "Running", "Succeeded", cost)}, {pod("a-worker-0", "a", "worker", 0, 1, "Running")}));
  c.task_update(T0 + 50, task("a", "Running", "Succeeded", cost), task("a", "Running", "Succeeded", {{"accruedMicros", 150'000}}, 2));
  json done = {{"accruedMicros", 200'000}, {"finalMicros", 200'000}};
  c.finish(look(120, {task("a", "Succeeded", "Succeeded", done)},
                {pod("a-worker-0", "a", "worker", 0, 1, "Succeeded", "2026-11-22T03:05:45Z")}));
  EXPECT_TRUE(c.violations().empty()) << c.violations().front().rule << ": " << c.violations().front().detail;
  EXPECT_EQ(c.summary()["costsChecked"], 1);
}

TEST(ChaosChecker, APlantedDuplicatePodIsFound) {
  Checker c(prices());
  json w0 = pod("a-worker-0", "a", "worker", 0, 1, "Running"), twin = pod("a-worker-0-b", "a", "worker", 0, 1, "Pending");
  c.observe(look(1, {task("a", "Running", "Succeeded")}, {w0, twin}));
  EXPECT_EQ(rules(c), std::vector<std::string>{"duplicate-pod"});
  // A finished pod beside its replacement is not a duplicate.
  Checker quiet(prices());
  quiet.observe(look(1, {task("a", "Running", "Succeeded")}, {pod("a-worker-0", "a", "worker", 0, 1, "Failed"), twin}));
  EXPECT_TRUE(quiet.violations().empty());
}

TEST(ChaosChecker, TwoEpochsRunningAtOnceAreFound) {
  Checker c(prices());
  c.observe(look(1, {task("a", "Running", "Succeeded")},
                 {pod("a-worker-0", "a", "worker", 0, 1, "Running"), pod("a-worker-1", "a", "worker", 1, 2, "Running")}));
  EXPECT_EQ(rules(c), std::vector<std::string>{"two-epochs"});
}

TEST(ChaosChecker, OrphansAreFoundAfterTheGraceAndAtTheEnd) {
  Checker c(prices(), 30);
  json svc = {{"metadata", {{"name", "a-workers"}, {"namespace", "ns"}, {"uid", "svc-1"}, {"ownerReferences", {{{"uid", "task-a"}, {"controller", true}}}}}}};
  json loose = {{"metadata", {{"name", "loose"}, {"namespace", "ns"}, {"uid", "cm-1"}}}};
  c.observe(look(1, {}, {}, {svc}));
  c.observe(look(20, {}, {}, {svc}));
  EXPECT_TRUE(c.violations().empty());  // the garbage collector may still come
  c.observe(look(40, {}, {}, {svc, loose}));
  EXPECT_EQ(rules(c), (std::vector<std::string>{"orphan", "orphan"}));
}

TEST(ChaosChecker, WrongFinalPhasesAndLeftoversAreFound) {
  Checker c(prices());
  c.finish(look(1, {task("a", "Running", "Succeeded"), task("b", "Suspended", "Deleted")}, {}));
  EXPECT_EQ(rules(c), (std::vector<std::string>{"final-phase", "final-phase"}));
}

TEST(ChaosChecker, AFinalCostOffByMoreThanACentIsFound) {
  Checker c(prices());
  c.observe(look(10, {task("a", "Running", "Succeeded")}, {pod("a-worker-0", "a", "worker", 0, 1, "Running")}));
  json done = {{"finalMicros", 230'000}};  // the pod's 100 s x 2 GPUs cost 200'000
  c.finish(look(120, {task("a", "Succeeded", "Succeeded", done)},
                {pod("a-worker-0", "a", "worker", 0, 1, "Succeeded", "2026-11-22T03:05:45Z")}));
  EXPECT_EQ(rules(c), std::vector<std::string>{"final-cost"});
}

// A pod seen Running at 50 s and gone at 60 s ended in between: a final anywhere in that range
// (plus a cent) is right, one below it is not (the operator missed the last seconds).
TEST(ChaosChecker, APodThatVanishedIsPricedWithinTheLooksAroundIt) {
  for (auto [final_micros, ok] : {std::pair{105'000, true}, std::pair{115'000, true}, std::pair{60'000, false}}) {
    Checker c(prices());
    c.observe(look(50, {task("a", "Running", "Succeeded")}, {pod("a-worker-0", "a", "worker", 0, 1, "Running")}));
    c.observe(look(60, {task("a", "Running", "Succeeded")}, {}));
    c.finish(look(70, {task("a", "Succeeded", "Succeeded", {{"finalMicros", final_micros}})}, {}));
    EXPECT_EQ(c.violations().empty(), ok) << final_micros;
  }
}

// A terminal phase is final: a pod the simulator later shows running and ending again keeps its
// first end (the operator has priced it and written the final cost by then).
TEST(ChaosChecker, APodsFirstTerminalEndStandsEvenIfTheSimulatorRunsItAgain) {
  Checker c(prices());
  c.observe(look(10, {task("a", "Running", "Succeeded")}, {pod("a-worker-0", "a", "worker", 0, 1, "Running")}));
  c.observe(look(110, {task("a", "Succeeded", "Succeeded")}, {pod("a-worker-0", "a", "worker", 0, 1, "Succeeded", "2026-11-22T03:05:45Z")}));
  c.observe(look(120, {task("a", "Succeeded", "Succeeded")}, {pod("a-worker-0", "a", "worker", 0, 1, "Running")}));
  c.finish(look(230, {task("a", "Succeeded", "Succeeded", {{"finalMicros", 200'000}})},
                {pod("a-worker-0", "a", "worker", 0, 1, "Succeeded", "2026-11-22T03:07:25Z")}));
  EXPECT_TRUE(c.violations().empty()) << c.violations()[0].detail;
  EXPECT_EQ(c.summary()["podsResurrected"], 1);
  EXPECT_EQ(c.summary()["podsEndRewritten"], 1);
}

TEST(ChaosChecker, AccruedCostAndObservedGenerationNeverGoBack) {
  Checker c(prices());
  c.task_update(T0, task("a", "Running", "", {{"accruedMicros", 500}}, 3), task("a", "Running", "", {{"accruedMicros", 400}}, 3));
  c.task_update(T0, task("b", "Running", "", {}, 3), task("b", "Running", "", {}, 2));
  EXPECT_EQ(rules(c), (std::vector<std::string>{"accrued-decreased", "generation-backwards"}));
}

json with_restarts(json t, json restarts) {
  t["status"]["restarts"] = std::move(restarts);
  return t;
}

TEST(ChaosChecker, ARestartInAWindowIsFoundUnlessANodeExplainsIt) {
  Checker c(prices());
  json a = task("a", "Running", "Succeeded"), b = task("b", "Running", "Succeeded"), f = task("f", "Running", "Failed");
  json on_n2 = pod("b-worker-0", "b", "worker", 0, 1, "Running");
  on_n2["spec"]["nodeName"] = "n2";
  Snapshot begin = look(0, {a, b, f}, {pod("a-worker-0", "a", "worker", 0, 1, "Running"), on_n2});
  begin.nodes.push_back(node("n2", true));
  c.window_begin(begin);
  // a: restarted for a disruption though its node stayed; b: its spot node was disrupted
  // meanwhile; f: failures are what it was made for; resizes are no restart an operator invents.
  // b's pod on n2 is gone by the end, replaced on n1.
  Snapshot end = look(30, {with_restarts(a, {{"disruptions", 1}, {"total", 1}}), with_restarts(b, {{"disruptions", 1}, {"total", 1}}),
                           with_restarts(f, {{"failures", 1}, {"resizes", 2}, {"total", 3}})},
                      {pod("a-worker-0", "a", "worker", 0, 1, "Running"), pod("b-worker-0", "b", "worker", 0, 2, "Running")});
  c.window_end(end, "upgrade", {"n2"});
  ASSERT_EQ(rules(c), std::vector<std::string>{"restarted-by-window"});
  EXPECT_EQ(c.violations()[0].object, "a");
  // The same history without the node explaining b's restart: both are found.
  Checker strict(prices());
  strict.window_begin(begin);
  strict.window_end(end, "upgrade", {});
  EXPECT_EQ(rules(strict), (std::vector<std::string>{"restarted-by-window", "restarted-by-window"}));
  // A task on a node already gone when the window began is excused.
  Checker late(prices());
  Snapshot gone = begin;
  gone.nodes = {node("n1")};
  late.window_begin(gone);
  late.window_end(end, "upgrade", {});
  EXPECT_EQ(rules(late), std::vector<std::string>{"restarted-by-window"});
  // A task whose pod came onto the disrupted node after the first look and was gone by the last is
  // excused by the look that saw it there; without that look it is found.
  json c_task = task("c", "Running", "Succeeded");
  json on_n2_later = pod("c-launcher", "c", "launcher", 0, 1, "Running");
  on_n2_later["spec"]["nodeName"] = "n2";
  Snapshot quiet = look(0, {c_task}, {});
  quiet.nodes.push_back(node("n2"));
  Snapshot restarted = look(30, {with_restarts(c_task, {{"disruptions", 1}, {"total", 1}})}, {});
  Checker seen(prices());
  seen.window_begin(quiet);
  seen.observe(look(10, {c_task}, {on_n2_later}));
  seen.window_end(restarted, "upgrade", {"n2"});
  EXPECT_TRUE(rules(seen).empty());
  Checker unseen(prices());
  unseen.window_begin(quiet);
  unseen.window_end(restarted, "upgrade", {"n2"});
  EXPECT_EQ(rules(unseen), std::vector<std::string>{"restarted-by-window"});
}

json cost_record(const std::string& task, int64_t final, bool deleted) {
  const json record = {{"uid", "task-" + task}, {"name", task}, {"deleted", deleted}, {"cost", {{"finalMicros", final}}}};
  return {{"metadata", {{"name", "valley-cost-task-" + task}}}, {"data", {{"record.json", record.dump()}}}};
}

TEST(ChaosChecker, ATaskThatEndedWithoutItsDurableCostRecordIsFound) {
  Checker c(prices());
  c.records_kept_from(0, 0);
  const json done = task("done", "Succeeded", "Succeeded", {{"finalMicros", 2000}});
  c.observe(look(0, {task("done", "Running", "Succeeded"), task("gone", "Running", "Deleted")},
                 {pod("d-w0", "done", "worker", 0, 1, "Running"), pod("g-w0", "gone", "worker", 0, 1, "Running")}));
  c.observe(look(5, {done}, {}));  // done finished; gone was deleted
  Snapshot last = look(10, {done}, {});
  last.cost_records = {cost_record("done", 1999, false)};
  c.finish(last);
  std::vector<std::string> found;
  for (const auto& v : c.violations())
    if (v.rule == "cost-record") found.push_back(v.object + ": " + v.detail);
  ASSERT_EQ(found.size(), 2u) << ::testing::PrintToString(found);
  EXPECT_NE(found[0].find("differs from the status's 2000"), std::string::npos) << found[0];
  EXPECT_NE(found[1].find("gone: deleted with no final cost"), std::string::npos) << found[1];

  Checker kept(prices());
  kept.records_kept_from(0, 0);
  kept.observe(look(0, {task("done", "Running", "Succeeded"), task("gone", "Running", "Deleted")},
                    {pod("d-w0", "done", "worker", 0, 1, "Running"), pod("g-w0", "gone", "worker", 0, 1, "Running")}));
  kept.observe(look(5, {done}, {}));
  Snapshot ok = look(10, {done}, {});
  ok.cost_records = {cost_record("done", 2000, false), cost_record("gone", 700, true)};
  kept.finish(ok);
  for (const auto& v : kept.violations()) EXPECT_NE(v.rule, "cost-record") << v.detail;

  Checker before(prices());  // ended while the previous release ran: not held to records
  before.records_kept_from(T0 - 100, 0);
  before.records_kept_until(T0 + 2, 0);  // the downgrade
  before.records_kept_from(T0 + 100, 0);  // the upgrade back
  before.observe(look(0, {task("done", "Running", "Succeeded")}, {pod("d-w0", "done", "worker", 0, 1, "Running")}));
  before.observe(look(5, {done}, {}));
  before.finish(look(10, {done}, {}));
  for (const auto& v : before.violations()) EXPECT_NE(v.rule, "cost-record") << v.detail;
}

}  // namespace
}  // namespace valley::chaos
