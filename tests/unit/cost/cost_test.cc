#include <gtest/gtest.h>

#include "controllers/cost/engine.h"
#include "controllers/api/money.h"
#include "controllers/inputs/planner_config.h"
#include "controllers/cost/policy.h"
#include "controllers/cost/report.h"
#include "controllers/api/timezone.h"
#include "controllers/inputs/task_inputs.h"

namespace valley::cost {
namespace {

using namespace std::chrono_literals;

// The tests write pods as the API server returns them; the engine reads them as the cache holds them.
PodUse pod_use(const nlohmann::json& pod) { return cost::pod_use(api::pod_from(pod)); }
using json = nlohmann::json;

SystemTime at(const std::string& rfc3339) { return *kube::parse_time(rfc3339); }

TEST(Money, ParseAndFormat) {
  EXPECT_EQ(parse_money("12.34"), 12'340'000);
  EXPECT_EQ(parse_money("0.000001"), 1);
  EXPECT_EQ(parse_money("7"), 7'000'000);
  EXPECT_FALSE(parse_money("1.2345678"));
  EXPECT_FALSE(parse_money("-1"));
  EXPECT_FALSE(parse_money("1."));
  EXPECT_FALSE(parse_money(""));
  EXPECT_EQ(format_money(12'345'678), "12.35");
  EXPECT_EQ(format_money(12'344'999), "12.34");
  EXPECT_EQ(format_money(5), "0.00");
  EXPECT_EQ(format_money(5'000, 4), "0.0050");
  EXPECT_EQ(format_money(-1'500'000), "-1.50");
  EXPECT_EQ(parse_milli("1.5"), 1500);
  EXPECT_EQ(format_milli(1500), "1.5");
  EXPECT_EQ(format_milli(12), "0.012");
  EXPECT_EQ(format_milli(2000), "2");
}

TEST(TimeZone, FixedOffsetAndDaylightSavingFromTheTzDatabase) {
  std::string err;
  auto shanghai = TimeZone::load("Asia/Shanghai", &err);
  ASSERT_TRUE(shanghai) << err;
  EXPECT_EQ(shanghai->offset(at("2026-07-01T00:00:00Z")), 8h);
  EXPECT_FALSE(shanghai->next_change(at("2026-07-01T00:00:00Z")));
  auto berlin = TimeZone::load("Europe/Berlin", &err);
  ASSERT_TRUE(berlin) << err;
  // 2026: summer time from 29 March 01:00 UTC to 25 October 01:00 UTC.
  EXPECT_EQ(berlin->offset(at("2026-03-29T00:59:59Z")), 1h);
  EXPECT_EQ(berlin->offset(at("2026-03-29T01:00:00Z")), 2h);
  EXPECT_EQ(berlin->offset(at("2026-10-25T00:59:59Z")), 2h);
  EXPECT_EQ(berlin->offset(at("2026-10-25T01:00:00Z")), 1h);
  EXPECT_EQ(kube::format_time(*berlin->next_change(at("2026-01-10T00:00:00Z"))), "2026-03-29T01:00:00Z");
  auto ny = TimeZone::load("America/New_York", &err);
  ASSERT_TRUE(ny) << err;
  EXPECT_EQ(ny->offset(at("2026-03-08T06:59:59Z")), -5h);
  EXPECT_EQ(ny->offset(at("2026-03-08T07:00:00Z")), -4h);
  // Southern hemisphere: Sydney is on summer time over the new year.
  auto sydney = TimeZone::load("Australia/Sydney", &err);
  ASSERT_TRUE(sydney) << err;
  EXPECT_EQ(sydney->offset(at("2026-01-15T00:00:00Z")), 11h);
  EXPECT_EQ(sydney->offset(at("2026-07-15T00:00:00Z")), 10h);
  EXPECT_FALSE(TimeZone::load("Mars/Olympus", &err));
  EXPECT_NE(err.find("unknown time zone"), std::string::npos);
  EXPECT_FALSE(TimeZone::load("../etc/passwd", &err));
  EXPECT_FALSE(TimeZone::from_posix("X", &err));
  EXPECT_EQ(TimeZone::from_posix("<+0530>-5:30", &err)->offset(at("2026-01-01T00:00:00Z")), 5h + 30min);
}

json policy_object() {
  return json::parse(R"({"metadata":{"name":"default"},"spec":{
    "currency":"CNY",
    "gpu":[{"match":{"vendor":"nvidia","product":"NVIDIA-A100-SXM4-80GB"},"onDemand":"20.00","spot":"8.00"},
           {"match":{"vendor":"amd"},"onDemand":"12.00","spot":"5.00"},
           {"onDemand":"10.00"}],
    "electricity":{"timeZone":"Asia/Shanghai","pue":"1.25","defaultWattsPerGpu":300,
      "wattsPerGpu":[{"match":{"product":"NVIDIA-A100-SXM4-80GB"},"watts":400}],
      "flatPerKWh":"0.80",
      "windows":[{"name":"valley","perKWh":"0.30","start":"23:00","end":"07:00"},
                 {"name":"peak","perKWh":"1.20","start":"10:00","end":"12:00","days":["Mon","Tue","Wed","Thu","Fri"]}]},
    "priority":{"multipliers":[{"minPriority":0,"multiplier":"0.8"},{"minPriority":50,"multiplier":"1.0"},{"minPriority":80,"multiplier":"1.5"}]}}})");
}

Policy policy() {
  std::vector<std::string> errors;
  auto p = parse_policy(policy_object(), &errors);
  EXPECT_TRUE(p) << (errors.empty() ? "" : errors[0]);
  return *p;
}

const std::map<std::string, std::string> kA100 = {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"}};

TEST(Policy, ParsesAndReportsEveryProblemWithItsPath) {
  Policy p = policy();
  EXPECT_EQ(p.currency, "CNY");
  EXPECT_EQ(p.pue_milli, 1250);
  EXPECT_EQ(p.windows.size(), 2u);
  json bad = policy_object();
  bad["spec"]["currency"] = "yuan";
  bad["spec"]["gpu"][1]["spot"] = "cheap";
  bad["spec"]["electricity"]["timeZone"] = "Nowhere/Land";
  bad["spec"]["electricity"]["windows"][0]["start"] = "25:00";
  bad["spec"]["electricity"]["windows"][1]["days"] = {"Funday"};
  bad["spec"]["priority"]["multipliers"][0]["multiplier"] = "0";
  std::vector<std::string> errors;
  EXPECT_FALSE(parse_policy(bad, &errors));
  std::string all;
  for (const auto& e : errors) all += e + "\n";
  for (const char* path : {"spec.currency", "spec.gpu[1].spot", "spec.electricity.timeZone", "spec.electricity.windows[0]",
                           "spec.electricity.windows[1].days", "spec.priority.multipliers[0].multiplier"})
    EXPECT_NE(all.find(path), std::string::npos) << path << " missing in:\n" << all;
}

// Every policy gets Valid; only the selected one is InUse, and an unchanged status is the same JSON
// (transition times kept), so the controller writes it once.
TEST(Policy, StatusSaysValidAndWhetherItPricesTasks) {
  json o = policy_object();
  o["metadata"]["name"] = "default";
  o["metadata"]["generation"] = 3;
  json s = api::policy_status(o, {}, "CNY", "default", "2026-11-24T00:00:00Z");
  EXPECT_EQ(s["observedGeneration"], 3);
  ASSERT_EQ(s["conditions"].size(), 2u);
  EXPECT_EQ(s["conditions"][0]["type"], "Valid");
  EXPECT_EQ(s["conditions"][0]["status"], "True");
  EXPECT_EQ(s["conditions"][1]["type"], "InUse");
  EXPECT_EQ(s["conditions"][1]["status"], "True");
  o["status"] = s;
  EXPECT_EQ(api::policy_status(o, {}, "CNY", "default", "2026-11-24T01:00:00Z"), s);
  // Another policy named by the operator: this one is valid but not used, and says which is.
  json other = api::policy_status(o, {}, "CNY", "prices-2027", "2026-11-24T02:00:00Z");
  EXPECT_EQ(other["conditions"][0], s["conditions"][0]);
  EXPECT_EQ(other["conditions"][1]["status"], "False");
  EXPECT_EQ(other["conditions"][1]["reason"], "NotSelected");
  EXPECT_EQ(other["conditions"][1]["lastTransitionTime"], "2026-11-24T02:00:00Z");
  EXPECT_NE(other["conditions"][1]["message"].get<std::string>().find("\"prices-2027\""), std::string::npos);
  // Invalid and selected: neither valid nor in use, with the problems listed.
  json bad = api::policy_status(o, {"spec.currency: must be 3 capital letters", "spec.gpu[0]: x"}, "", "default", "2026-11-24T03:00:00Z");
  EXPECT_EQ(bad["conditions"][0]["status"], "False");
  EXPECT_EQ(bad["conditions"][0]["message"], "spec.currency: must be 3 capital letters; spec.gpu[0]: x");
  EXPECT_EQ(bad["conditions"][1]["reason"], "Invalid");
}

TEST(Policy, RatesBySelectorAndCapacityClass) {
  Policy p = policy();
  NodeRate od = rate_for(p, "nvidia", kA100);
  EXPECT_EQ(od.gpu_per_hour, 20'000'000);
  EXPECT_EQ(od.watts, 400);
  EXPECT_EQ(od.capacity_class, "on-demand");
  auto spot_labels = kA100;
  spot_labels["karpenter.sh/capacity-type"] = "spot";
  EXPECT_EQ(rate_for(p, "nvidia", spot_labels).gpu_per_hour, 8'000'000);
  EXPECT_EQ(rate_for(p, "amd", {}).gpu_per_hour, 12'000'000);
  EXPECT_EQ(rate_for(p, "amd", {}).watts, 300);
  EXPECT_EQ(rate_for(p, "nvidia", {{"nvidia.com/gpu.product", "Tesla-T4"}}).gpu_per_hour, 10'000'000);  // the catch-all
  EXPECT_EQ(multiplier_milli(p, 0), 800);
  EXPECT_EQ(multiplier_milli(p, 50), 1000);
  EXPECT_EQ(multiplier_milli(p, 79), 1000);
  EXPECT_EQ(multiplier_milli(p, 100), 1500);
}

TEST(Policy, TariffWindowsInLocalTimeWrapMidnightAndFollowWeekdays) {
  Policy p = policy();  // Asia/Shanghai, UTC+8
  EXPECT_EQ(tariff_at(p, at("2026-11-23T15:30:00Z")).name, "valley");  // Tue 23:30 local
  EXPECT_EQ(tariff_at(p, at("2026-11-23T22:59:00Z")).name, "valley");  // Tue 06:59 local
  EXPECT_EQ(tariff_at(p, at("2026-11-23T23:00:00Z")).name, "flat");    // Tue 07:00 local
  EXPECT_EQ(tariff_at(p, at("2026-11-24T02:00:00Z")).name, "peak");    // Tue 10:00 local
  EXPECT_EQ(tariff_at(p, at("2026-11-22T02:00:00Z")).name, "flat");    // Sun 10:00 local: no peak at weekends
  EXPECT_EQ(kube::format_time(next_tariff_boundary(p, at("2026-11-24T01:00:00Z"))), "2026-11-24T02:00:00Z");
  EXPECT_TRUE(off_peak(p, at("2026-11-23T16:00:00Z")));
  EXPECT_FALSE(off_peak(p, at("2026-11-24T02:00:00Z")));
  EXPECT_EQ(kube::format_time(*next_off_peak(p, at("2026-11-24T02:00:00Z"))), "2026-11-24T15:00:00Z");  // 23:00 local
}

// One A100 on demand for exactly one hour, 11:30-12:30 local on a Tuesday: half peak, half flat.
// Up to base x rate running tasks, each is written every `base`; beyond, they share the rate.
TEST(Accrual, PeriodicWritesShareARateBeyondAFewHundredTasks) {
  EXPECT_EQ(accrual_interval(30s, 0, 5), 30s);
  EXPECT_EQ(accrual_interval(30s, 150, 5), 30s);
  EXPECT_EQ(accrual_interval(30s, 151, 5), 31s);
  EXPECT_EQ(accrual_interval(30s, 1000, 5), 200s);
  EXPECT_EQ(accrual_interval(30s, 5000, 5), 1000s);
  EXPECT_EQ(accrual_interval(30s, 1000, 0), 30s);  // no limit
  EXPECT_EQ(accrual_interval(1s, 3, 0.5), 6s);
}

TEST(Charge, SplitsAtTariffBoundariesExactly) {
  Policy p = policy();
  Charge c = charge_interval(p, rate_for(p, "nvidia", kA100), 1000, at("2026-11-24T03:30:00Z"), at("2026-11-24T04:30:00Z"));
  EXPECT_EQ(c.gpu, 20'000'000);
  // 400 W x 1.25 PUE x 0.5 h = 0.25 kWh in each window: 0.25 x 1.20 + 0.25 x 0.80 = 0.50.
  EXPECT_EQ(c.micro_wh["peak"], 250'000'000);
  EXPECT_EQ(c.micro_wh["flat"], 250'000'000);
  EXPECT_EQ(c.energy, 500'000);
  EXPECT_EQ(c.gpu_milli_seconds["nvidia/on-demand"], 3'600'000);
}

TEST(Charge, FractionalAndMigSharesAndSpot) {
  Policy p = policy();
  auto spot_labels = kA100;
  spot_labels["karpenter.sh/capacity-type"] = "spot";
  NodeRate spot = rate_for(p, "nvidia", spot_labels);
  // A 1g.10gb MIG slice is 1/7 of a GPU: 142 thousandths.
  Charge mig = charge_interval(p, spot, 142, at("2026-11-23T16:00:00Z"), at("2026-11-23T17:00:00Z"));
  EXPECT_EQ(mig.gpu, 8'000'000 * 142 / 1000);
  EXPECT_EQ(mig.gpu_milli_seconds["nvidia/spot"], 142 * 3600);
  // Energy in the valley window: 400 W x 0.142 x 1.25 x 1 h = 0.071 kWh x 0.30 = 0.0213.
  EXPECT_EQ(mig.energy, 21'300);
}

TEST(Charge, DaylightSavingNightIsAnHourShorterInLocalTerms) {
  std::vector<std::string> errors;
  json o = policy_object();
  o["spec"]["electricity"]["timeZone"] = "Europe/Berlin";
  o["spec"]["electricity"]["windows"] = json::parse(R"([{"name":"valley","perKWh":"0.10","start":"00:00","end":"06:00"}])");
  auto p = parse_policy(o, &errors);
  ASSERT_TRUE(p);
  // 2026-03-29: local 00:00-06:00 is 23:00Z (28th) to 04:00Z (29th), 5 real hours, not 6.
  Charge c = charge_interval(*p, rate_for(*p, "nvidia", kA100), 1000, at("2026-03-28T22:00:00Z"), at("2026-03-29T06:00:00Z"));
  EXPECT_EQ(c.micro_wh["valley"], 5 * 500'000'000LL);  // 400 W x 1.25 = 0.5 kWh per hour
  EXPECT_EQ(c.micro_wh["flat"], 3 * 500'000'000LL);
}

nlohmann::json running_pod(const std::string& uid, const std::string& node, const std::string& started,
                           const std::string& finished = "") {
  json state = finished.empty() ? json{{"running", {{"startedAt", started}}}}
                                : json{{"terminated", {{"startedAt", started}, {"finishedAt", finished}, {"exitCode", 0}}}};
  return {{"metadata", {{"uid", uid}, {"name", "t-worker-" + uid}}},
          {"spec", {{"nodeName", node}, {"containers", {{{"resources", {{"limits", {{"nvidia.com/gpu", "2"}}}}}}}}}},
          {"status", {{"phase", finished.empty() ? "Running" : "Succeeded"}, {"containerStatuses", {{{"state", state}}}}}}};
}

TEST(Accrual, FromPodTimesNeverTwiceSurvivesRestartsAndEndsWithFinal) {
  Policy p = policy();
  std::map<std::string, NodeRate> rates = {{"n1", rate_for(p, "nvidia", kA100)}};
  const SystemTime t0 = at("2026-11-23T23:00:00Z");  // Tue 07:00 local: flat all along
  std::vector<PodUse> pods = {pod_use(running_pod("a", "n1", "2026-11-23T23:00:00Z"))};
  EXPECT_EQ(pods[0].share_milli, 2000);
  // Accrued in three steps, with a repeat (a reconcile on the same state) in between.
  json c = accrue(p, json::object(), pods, rates, 50, t0 + 20min, false);
  json again = accrue(p, c, pods, rates, 50, t0 + 20min, false);
  EXPECT_EQ(accrued_micros(again), accrued_micros(c));
  // An operator restart: the next one starts from what the status says.
  json persisted = json::parse(again.dump());
  pods = {pod_use(running_pod("a", "n1", "2026-11-23T23:00:00Z", "2026-11-24T00:00:00Z"))};
  json done = accrue(p, persisted, pods, rates, 50, t0 + 90min, true);
  // One hour of 2 GPUs: 2 x 20.00 + 2 x 0.4 kW x 1.25 x 1 h x 0.80 = 40.80, priority 50 x1.0.
  EXPECT_EQ(accrued_micros(done), 40'800'000);
  EXPECT_EQ(done["final"], "40.80");
  EXPECT_EQ(done["breakdown"]["gpuHours"]["nvidia/on-demand"], "2.000");
  EXPECT_EQ(done["breakdown"]["kWh"]["flat"], "1.000");
  // The pod goes away: its ledger entry with it; nothing more is charged.
  json after = accrue(p, done, {}, rates, 50, t0 + 3h, true);
  EXPECT_EQ(accrued_micros(after), 40'800'000);
  EXPECT_TRUE(after["ledger"].empty());
}

TEST(Accrual, ATerminatedStateWithoutStartedAtStillChargesToTheEnd) {
  Policy p = policy();
  std::map<std::string, NodeRate> rates = {{"n1", rate_for(p, "nvidia", kA100)}};
  json c = accrue(p, json::object(), {pod_use(running_pod("a", "n1", "2026-11-23T23:00:00Z"))}, rates, 50, at("2026-11-23T23:30:00Z"), false);
  json ended = running_pod("a", "n1", "2026-11-23T23:00:00Z", "2026-11-24T00:00:00Z");
  ended["status"]["containerStatuses"][0]["state"]["terminated"]["startedAt"] = nullptr;
  json done = accrue(p, c, {pod_use(ended)}, rates, 50, at("2026-11-24T01:00:00Z"), true);
  EXPECT_EQ(accrued_micros(done), 40'800'000);
  ended["status"]["startTime"] = "2026-11-23T23:00:00Z";  // a fresh operator with no ledger: the pod's start time
  EXPECT_EQ(accrued_micros(accrue(p, json::object(), {pod_use(ended)}, rates, 50, at("2026-11-24T01:00:00Z"), true)), 40'800'000);
}

TEST(Accrual, AContainerStillWaitingIsNotChargedWhetherOrNotAReconcileSawIt) {
  Policy p = policy();
  std::map<std::string, NodeRate> rates = {{"n1", rate_for(p, "nvidia", kA100)}};
  // Bound and admitted by the kubelet at 23:00 (startTime), its container created at 23:30.
  json creating = running_pod("a", "n1", "2026-11-23T23:30:00Z");
  creating["status"]["startTime"] = "2026-11-23T23:00:00Z";
  creating["status"]["phase"] = "Pending";
  creating["status"]["containerStatuses"][0]["state"] = {{"waiting", {{"reason", "ContainerCreating"}}}};
  EXPECT_FALSE(pod_use(creating).start);
  json seen = accrue(p, json::object(), {pod_use(creating)}, rates, 50, at("2026-11-23T23:20:00Z"), false);
  EXPECT_TRUE(seen["ledger"].empty()) << seen.dump();
  json ended = running_pod("a", "n1", "2026-11-23T23:30:00Z", "2026-11-24T00:30:00Z");
  ended["status"]["startTime"] = "2026-11-23T23:00:00Z";
  json after_seeing = accrue(p, seen, {pod_use(ended)}, rates, 50, at("2026-11-24T01:00:00Z"), true);
  json unseen = accrue(p, json::object(), {pod_use(ended)}, rates, 50, at("2026-11-24T01:00:00Z"), true);
  EXPECT_EQ(accrued_micros(after_seeing), 40'800'000);  // its container's hour, as when never seen waiting
  EXPECT_EQ(accrued_micros(after_seeing), accrued_micros(unseen));
}

TEST(Accrual, AnEndTheClusterWroteCountsEvenIfNowTrailsItBriefly) {
  Policy p = policy();
  std::map<std::string, NodeRate> rates = {{"n1", rate_for(p, "nvidia", kA100)}};
  const auto ended = pod_use(running_pod("a", "n1", "2026-11-23T23:00:00Z", "2026-11-24T00:00:00Z"));
  // The API server's time as last seen trails the kubelet's stamp by a second: the end stands.
  EXPECT_EQ(accrued_micros(accrue(p, json::object(), {ended}, rates, 50, at("2026-11-23T23:59:59Z"), true)), 40'800'000);
  // An end an hour ahead of the cluster's time is a node clock running fast: charged only to now.
  EXPECT_LT(accrued_micros(accrue(p, json::object(), {ended}, rates, 50, at("2026-11-23T23:30:00Z"), true)), 21'000'000);
}

TEST(Accrual, ChargedPastTheEndWhileItLookedRunningIsGivenBack) {
  Policy p = policy();
  std::map<std::string, NodeRate> rates = {{"n1", rate_for(p, "nvidia", kA100)}};
  // Accrued to 00:10 while the cache still showed it running; it had finished at 00:00.
  json c = accrue(p, json::object(), {pod_use(running_pod("a", "n1", "2026-11-23T23:00:00Z"))}, rates, 50, at("2026-11-24T00:10:00Z"), false);
  EXPECT_GT(accrued_micros(c), 40'800'000);
  json done = accrue(p, c, {pod_use(running_pod("a", "n1", "2026-11-23T23:00:00Z", "2026-11-24T00:00:00Z"))}, rates, 50,
                     at("2026-11-24T00:11:00Z"), true);
  EXPECT_EQ(accrued_micros(done), 40'800'000);
  EXPECT_EQ(done["breakdown"]["gpuHours"]["nvidia/on-demand"], "2.000");
}

TEST(Accrual, APodWhoseStartMovesLaterIsChargedWithoutAGap) {
  Policy p = policy();
  std::map<std::string, NodeRate> rates = {{"n1", rate_for(p, "nvidia", kA100)}};
  json c = accrue(p, json::object(), {pod_use(running_pod("a", "n1", "2026-11-23T23:00:00Z"))}, rates, 50, at("2026-11-23T23:20:00Z"), false);
  // Its container restarted at 23:40 (running.startedAt moves; it held the GPUs all along) and
  // the pod ended at 00:00: one hour in all, not 20 + 20 minutes.
  json restarted = running_pod("a", "n1", "2026-11-23T23:40:00Z");
  json done = accrue(p, c, {pod_use(restarted)}, rates, 50, at("2026-11-23T23:50:00Z"), false);
  done = accrue(p, done, {pod_use(running_pod("a", "n1", "2026-11-23T23:40:00Z", "2026-11-24T00:00:00Z"))}, rates, 50,
                at("2026-11-24T00:05:00Z"), true);
  EXPECT_EQ(accrued_micros(done), 40'800'000);
  // A fresh operator reads the first start from lastState.
  restarted["status"]["containerStatuses"][0]["lastState"] = {{"terminated", {{"startedAt", "2026-11-23T23:00:00Z"}, {"exitCode", 1}}}};
  EXPECT_EQ(*pod_use(restarted).start, at("2026-11-23T23:00:00Z"));
}

TEST(Accrual, APodIsChargedToItsEndOnlyOnceItsLedgerReachesIt) {
  Policy p = policy();
  std::map<std::string, NodeRate> rates = {{"n1", rate_for(p, "nvidia", kA100)}};
  const PodUse running = pod_use(running_pod("a", "n1", "2026-11-23T23:00:00Z"));
  json c = accrue(p, json::object(), {running}, rates, 50, at("2026-11-23T23:30:00Z"), false);
  EXPECT_FALSE(charged_to_end(running, c));  // still running: its end is not charged yet
  const PodUse ended = pod_use(running_pod("a", "n1", "2026-11-23T23:00:00Z", "2026-11-24T00:00:00Z"));
  EXPECT_FALSE(charged_to_end(ended, c));  // ended at 00:00, charged to 23:30
  EXPECT_TRUE(charged_to_end(ended, accrue(p, c, {ended}, rates, 50, at("2026-11-24T00:01:00Z"), false)));
  EXPECT_FALSE(charged_to_end(ended, json::object()));  // never charged at all
  json never = running_pod("b", "n1", "");
  never["status"] = {{"phase", "Pending"}};
  EXPECT_TRUE(charged_to_end(pod_use(never), json::object()));  // never started: nothing to charge
}

// The reconciler accrues only when the ledger would change size (or the interval is up): the count
// without accruing must be the ledger accrue() leaves.
TEST(Accrual, TheLedgerIsCountedWithoutAccruingAsAccrueWouldLeaveIt) {
  Policy p = policy();
  std::map<std::string, NodeRate> rates = {{"n1", rate_for(p, "nvidia", kA100)}};
  const SystemTime now = at("2026-11-23T23:30:00Z");
  json waiting = running_pod("w", "n1", "");
  waiting["status"] = {{"phase", "Pending"}};
  json cpu_only = running_pod("c", "n1", "2026-11-23T23:00:00Z");
  cpu_only["spec"]["containers"][0]["resources"] = json::object();
  const PodUse a = pod_use(running_pod("a", "n1", "2026-11-23T23:00:00Z"));
  const PodUse on_gone_node = pod_use(running_pod("g", "n9", "2026-11-23T23:00:00Z"));
  std::vector<std::vector<PodUse>> cases = {
      {}, {a}, {a, pod_use(waiting)}, {a, pod_use(cpu_only)}, {a, on_gone_node}, {pod_use(running_pod("b", "n1", "2026-11-23T23:10:00Z")), a}};
  for (const auto& stored : {json::object(), accrue(p, json::object(), {a, on_gone_node}, rates, 50, now - 10min, false)})
    for (const auto& pods : cases)
      EXPECT_EQ(ledger_entries(stored, pods, rates), accrue(p, stored, pods, rates, 50, now, false)["ledger"].size())
          << pods.size() << " pods over " << stored.dump();
  // A pod charged before keeps its entry when its node is gone from the rates; a new one there gets none.
  const json charged = accrue(p, json::object(), {a}, rates, 50, now - 10min, false);
  EXPECT_EQ(ledger_entries(charged, {a}, {}), 1u);
  EXPECT_EQ(ledger_entries(charged, {a, on_gone_node}, rates), 1u);
  EXPECT_EQ(ledger_entries(charged, {}, rates), 0u);  // its pod went: one fewer than stored
}

TEST(Accrual, ARunningPodIsChargedOnlyAsFarAsItsEndCannotComeEarlier) {
  Policy p = policy();
  std::map<std::string, NodeRate> rates = {{"n1", rate_for(p, "nvidia", kA100)}};
  // Seen running at 23:30:00.900 with a 15 s settle: charged to 23:29:45, whole seconds.
  json c = accrue(p, json::object(), {pod_use(running_pod("a", "n1", "2026-11-23T23:00:00Z"))}, rates, 50,
                  at("2026-11-23T23:30:00Z") + 900ms, false, 15s);
  EXPECT_EQ(c["ledger"][0]["until"], "2026-11-23T23:29:45Z");
  // It had ended at 23:29:50 (reported with a second's precision): charged on, never back.
  json done = accrue(p, c, {pod_use(running_pod("a", "n1", "2026-11-23T23:00:00Z", "2026-11-23T23:29:50Z"))}, rates, 50,
                     at("2026-11-23T23:30:01Z"), true, 15s);
  EXPECT_GT(accrued_micros(done), accrued_micros(c));
  EXPECT_EQ(done["breakdown"]["gpuMilliSeconds"]["nvidia/on-demand"], 2 * (29 * 60 + 50) * 1000);
}

TEST(Accrual, PriorityMultiplierAndANodeThatVanished) {
  Policy p = policy();
  std::map<std::string, NodeRate> rates = {{"n1", rate_for(p, "nvidia", kA100)}};
  std::vector<PodUse> pods = {pod_use(running_pod("a", "n1", "2026-11-23T23:00:00Z"))};
  json c = accrue(p, json::object(), pods, rates, 0, at("2026-11-23T23:30:00Z"), false);
  // The node is deleted: the ledger remembers its rate.
  pods = {pod_use(running_pod("a", "n1", "2026-11-23T23:00:00Z", "2026-11-24T00:00:00Z"))};
  json done = accrue(p, c, pods, {}, 0, at("2026-11-24T01:00:00Z"), true);
  EXPECT_EQ(accrued_micros(done), 40'800'000 * 8 / 10);  // priority 0: x0.8
  EXPECT_EQ(done["multiplier"], "0.8");
}

TEST(Estimate, ExpectedFromThePlannersBasisAndARangeThatSaysWhatItAssumes) {
  Policy p = policy();
  api::TaskSpec spec;
  spec.max_workers = 4;
  spec.min_workers = 2;
  spec.gpus.milli = 1000;
  spec.priority = 50;
  spec.estimated_duration = std::chrono::hours(2);  // at 4 workers
  EstimateBasis b;
  b.rate = rate_for(p, "nvidia", kA100);
  b.start = at("2026-11-23T23:00:00Z");  // 07:00 local: flat until 10:00, then peak
  b.workers = 4;
  b.spread = {1.0, 1.0, 20};  // this namespace's stated durations have been exact
  auto e = estimate(p, spec, b);
  ASSERT_TRUE(e);
  // At max: 8 GPU-h x 20.00 + 4 x 0.5 kW x 2 h x 0.80 = 163.20; a fixed size's range is the tariff's.
  EXPECT_EQ(e->gpu_milli_hours, 8000);
  EXPECT_EQ(e->expected, 163'200'000);
  EXPECT_EQ(e->low, 8 * 20'000'000 + 8 * 500'000 * 3 / 10);
  EXPECT_EQ(e->high, 8 * 20'000'000 + 8 * 500'000 * 12 / 10);
  // At 2 workers taking twice as long (no speedup lost): 4 h, an hour of it at the peak tariff.
  b.workers = 2;
  b.duration_factor = 2.0;
  e = estimate(p, spec, b);
  EXPECT_EQ(e->duration, std::chrono::hours(4));
  EXPECT_EQ(e->expected, 8 * 20'000'000 + 2 * 3 * 500'000 * 8 / 10 + 2 * 500'000 * 12 / 10);
  // Low: growth gains nothing, 2 workers for 2 h at the cheapest tariff; high: 8 GPU-h at the dearest.
  EXPECT_EQ(e->low, 4 * 20'000'000 + 4 * 500'000 * 3 / 10);
  EXPECT_EQ(e->high, 8 * 20'000'000 + 8 * 500'000 * 12 / 10);
  // At 2 workers running 1.5x as long (sublinear): 6 GPU-h expected; linear growth to 4 is the high end.
  b.duration_factor = 1.5;
  e = estimate(p, spec, b);
  EXPECT_EQ(e->gpu_milli_hours, 6000);
  EXPECT_EQ(e->high, 8 * 20'000'000 + 8 * 500'000 * 12 / 10);
  EXPECT_LT(e->low, e->expected);
  EXPECT_LT(e->expected, e->high);
  json j = estimate_json(p, *e);
  EXPECT_EQ(j["workers"], 2);
  EXPECT_EQ(j["hours"], "3.00");
  EXPECT_NE(j["highAssumes"].get<std::string>().find("grows to 4 workers at linear speedup"), std::string::npos) << j.dump(2);
  spec.estimated_duration.reset();
  EXPECT_FALSE(estimate(p, spec, b));
}

TEST(Estimate, TheRangeHoldsTheUsersDurationWithinItsSpread) {
  Policy p = policy();
  api::TaskSpec spec;
  spec.max_workers = spec.min_workers = 4;
  spec.gpus.milli = 1000;
  spec.priority = 50;
  spec.estimated_duration = std::chrono::hours(2);
  EstimateBasis b;
  b.rate = rate_for(p, "nvidia", kA100);
  b.start = at("2026-11-23T23:00:00Z");
  b.workers = 4;
  // No history: a factor of 2 either way, at the cheapest and the dearest tariff.
  auto e = estimate(p, spec, b);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->expected, 163'200'000);  // the stated duration stays the expectation
  EXPECT_EQ(e->low, 4 * 20'000'000 + 4 * 500'000 * 3 / 10);
  EXPECT_EQ(e->high, 16 * 20'000'000 + 16 * 500'000 * 12 / 10);
  EXPECT_NE(e->low_basis.find("running 0.50x the stated duration; no finished task here"), std::string::npos) << e->low_basis;
  EXPECT_NE(e->high_basis.find("4 x 4.00 h at the dearest tariff, running 2.00x"), std::string::npos) << e->high_basis;
  // Learned: tasks here ran 0.9x to 1.25x what their users said.
  b.spread = {0.9, 1.25, 30};
  e = estimate(p, spec, b);
  EXPECT_EQ(e->low, (8 * 20'000'000 + 8 * 500'000 * 3 / 10) * 9 / 10);
  EXPECT_EQ(e->high, (8 * 20'000'000 + 8 * 500'000 * 12 / 10) * 5 / 4);
  EXPECT_NE(e->high_basis.find("over 30 finished tasks here"), std::string::npos) << e->high_basis;
}

TEST(DurationSpread, ThePriorUntilEnoughTasksFinishedThenTheirPercentiles) {
  std::vector<double> ratios(kMinDurationSamples - 1, 1.0);
  DurationSpread s = duration_spread(ratios);
  EXPECT_EQ(s.samples, 0);
  EXPECT_EQ(s.low, 0.5);
  EXPECT_EQ(s.high, 2.0);
  // 0.50, 0.51, ..., 1.50 (101 tasks): the 5th and 95th percentiles.
  ratios.clear();
  for (int k = 0; k <= 100; ++k) ratios.push_back(1.5 - k / 100.0);  // any order
  ratios.push_back(-1);                                             // not a ratio: ignored
  s = duration_spread(ratios);
  EXPECT_EQ(s.samples, 101);
  EXPECT_NEAR(s.low, 0.55, 1e-9);
  EXPECT_NEAR(s.high, 1.45, 1e-9);
  // Users who always overstate: the range still holds what they stated.
  s = duration_spread(std::vector<double>(20, 0.6));
  EXPECT_NEAR(s.low, 0.6, 1e-9);
  EXPECT_EQ(s.high, 1.0);
}

TEST(DurationSpread, OnlyATaskThatRanAtOneSizeTeachesIt) {
  api::TaskSpec spec;
  spec.min_workers = spec.max_workers = 2;
  spec.gpus.milli = 500;
  spec.estimated_duration = std::chrono::hours(1);
  // 2 workers x 0.5 GPU for 90 minutes: 1.5 GPU-hours = 5,400,000 GPU-milliseconds.
  EXPECT_NEAR(*duration_ratio(spec, 5'400'000), 1.5, 1e-9);
  EXPECT_FALSE(duration_ratio(spec, 0));
  spec.min_workers = 1;  // elastic: its run time depends on sizes its user never stated
  EXPECT_FALSE(duration_ratio(spec, 5'400'000));
  spec.type = api::TaskType::Single;  // one pod: its size is fixed
  EXPECT_NEAR(*duration_ratio(spec, 900'000), 0.5, 1e-9);
  spec.estimated_duration.reset();
  EXPECT_FALSE(duration_ratio(spec, 900'000));
}

TEST(DurationSpread, AFinishedTrainingTaskTeachesItsNamespace) {
  json task = {{"apiVersion", "valley.dev/v1beta1"},
               {"kind", "TrainingTask"},
               {"metadata", {{"name", "t"}, {"namespace", "lab"}, {"uid", "u"}, {"generation", 1}}},
               {"spec",
                {{"taskType", "MPI"},
                 {"replicas", {{"min", 2}, {"max", 2}}},
                 {"master", {{"image", "x"}}},
                 {"worker", {{"image", "x"}, {"gpus", "1"}}},
                 {"estimatedDuration", "1h"}}},
               {"status", {{"phase", "Succeeded"}, {"cost", {{"breakdown", {{"gpuMilliSeconds", {{"nvidia/on-demand", 4'000'000}, {"nvidia/spot", 3'200'000}}}}}}}}}};
  EXPECT_NEAR(*inputs::duration_ratio_of(task), 1.0, 1e-9);  // 2 GPU-hours on 2 GPUs: 1 h as stated
  task["status"]["phase"] = "Failed";  // a failed run says nothing of how long the work takes
  EXPECT_FALSE(inputs::duration_ratio_of(task));
  task["status"]["phase"] = "Succeeded";
  task["spec"]["replicas"]["min"] = 0;  // not a valid spec
  EXPECT_FALSE(inputs::duration_ratio_of(task));
}

TEST(Policy, PatienceGrowthAndMoveSettingsParseWithPathsInErrors) {
  json o = {{"kind", "PricingPolicy"}, {"metadata", {{"name", "default"}}},
            {"spec", {{"currency", "USD"}, {"gpu", json::array({{{"onDemand", "1.00"}, {"spot", "0.50"}}})},
                      {"reduceCost", {{"patience", "90m"}}}, {"growth", {{"minMarginalSpeedup", "0.7"}, {"fastPriority", 80}}}}}};
  std::vector<std::string> errors;
  auto p = parse_policy(o, &errors);
  ASSERT_TRUE(p) << (errors.empty() ? "" : errors[0]);
  EXPECT_EQ(p->reduce_cost_patience, std::chrono::minutes(90));
  EXPECT_EQ(p->reduce_cost_min_saving_percent, 10);  // the default
  o["spec"]["reduceCost"]["minSavingPercent"] = 25;
  p = parse_policy(o, &errors);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->reduce_cost_min_saving_percent, 25);
  EXPECT_EQ(planner_config(*p, {}, SystemTime{}, planner::Config{}).reduce_cost_min_saving_percent, 25);
  EXPECT_EQ(p->growth_min_marginal_milli, 700);
  EXPECT_EQ(p->growth_fast_priority, 80);
  // Tasks without reduceCost: time over money by priority band, 0.2 from 0 and 0 from 30 unless stated.
  auto bands = planner_config(*p, {}, SystemTime{}, planner::Config{}).time_bands;
  ASSERT_EQ(bands.size(), 2u);
  EXPECT_DOUBLE_EQ(bands[0].min_marginal, 0.2);
  EXPECT_EQ(bands[1].min_priority, 30);
  EXPECT_DOUBLE_EQ(bands[1].min_marginal, 0.0);
  o["spec"]["growth"]["withoutReduceCost"] = json::array({{{"minPriority", 60}, {"minMarginalSpeedup", "0.2"}},
                                                          {{"minPriority", 0}, {"minMarginalSpeedup", "0.6"}}});
  p = parse_policy(o, &errors);
  ASSERT_TRUE(p);
  bands = planner_config(*p, {}, SystemTime{}, planner::Config{}).time_bands;
  ASSERT_EQ(bands.size(), 2u);
  EXPECT_EQ(bands[0].min_priority, 0);  // sorted
  EXPECT_DOUBLE_EQ(bands[0].min_marginal, 0.6);
  EXPECT_DOUBLE_EQ(bands[1].min_marginal, 0.2);
  o["spec"]["growth"]["withoutReduceCost"] = json::array();  // judged as reduceCost tasks are
  p = parse_policy(o, &errors);
  ASSERT_TRUE(p);
  EXPECT_TRUE(planner_config(*p, {}, SystemTime{}, planner::Config{}).time_bands.empty());
  for (const json& bad : {json::array({{{"minPriority", 0}, {"minMarginalSpeedup", "1.5"}}}),
                          json::array({{{"minPriority", 5}, {"minMarginalSpeedup", "0.5"}}, {{"minPriority", 5}, {"minMarginalSpeedup", "0.4"}}}),
                          json("fast")}) {
    o["spec"]["growth"]["withoutReduceCost"] = bad;
    errors.clear();
    EXPECT_FALSE(parse_policy(o, &errors)) << bad.dump();
    ASSERT_FALSE(errors.empty());
    EXPECT_NE(errors[0].find("spec.growth.withoutReduceCost"), std::string::npos) << errors[0];
  }
  o["spec"]["growth"].erase("withoutReduceCost");
  EXPECT_EQ(planner_config(*p, {}, SystemTime{}, planner::Config{}).move_restart_cost, std::chrono::minutes(5));  // the default
  o["spec"]["moves"]["restartCost"] = "0s";
  p = parse_policy(o, &errors);
  ASSERT_TRUE(p);
  EXPECT_EQ(planner_config(*p, {}, SystemTime{}, planner::Config{}).move_restart_cost, std::chrono::seconds(0));
  o["spec"]["reduceCost"]["patience"] = "soon";
  o["spec"]["reduceCost"]["minSavingPercent"] = 150;
  o["spec"]["growth"]["minMarginalSpeedup"] = "1.5";
  o["spec"]["moves"]["restartCost"] = "2d";
  errors.clear();
  EXPECT_FALSE(parse_policy(o, &errors));
  ASSERT_EQ(errors.size(), 4u);
  EXPECT_NE(errors[0].find("spec.reduceCost.minSavingPercent"), std::string::npos) << errors[0];
  EXPECT_NE(errors[1].find("spec.reduceCost.patience"), std::string::npos) << errors[1];
  EXPECT_NE(errors[2].find("spec.growth.minMarginalSpeedup"), std::string::npos) << errors[2];
  EXPECT_NE(errors[3].find("spec.moves.restartCost"), std::string::npos) << errors[3];
}

TEST(PodUse, NullAndMistypedStatusFieldsReadAsAbsent) {
  // A terminated container without startedAt/finishedAt: the pod's startTime stands in for both ends.
  json p = json::parse(R"({"metadata":{"uid":"u","name":null},"spec":{"nodeName":"n1","containers":[{"resources":{"limits":{"nvidia.com/gpu":"2"}}}]},
    "status":{"startTime":"2026-01-01T00:00:00Z","containerStatuses":[{"state":{"terminated":{"exitCode":0,"startedAt":null,"finishedAt":null}}}]}})");
  PodUse u = pod_use(p);
  EXPECT_EQ(u.uid, "u");
  EXPECT_EQ(u.name, "");
  EXPECT_EQ(u.share_milli, 2000);
  ASSERT_TRUE(u.start);
  ASSERT_TRUE(u.end);
  EXPECT_EQ(*u.end, *u.start);
  for (const char* text : {R"(null)", R"({"metadata":[],"status":{"containerStatuses":null}})",
                           R"({"status":{"containerStatuses":[null,{"state":{"running":null}},{"state":{"terminated":7}}]}})"})
    EXPECT_NO_THROW(pod_use(json::parse(text))) << text;
}

// --- the cost against its estimate, as valleyctl and the demo print it ---------------------------

TEST(CostReport, FinalAgainstTheEstimateAndItsRangeAndGpuHoursPerPool) {
  json c = json::parse(R"({"currency":"USD","estimated":"28.71",
    "estimate":{"expected":"28.71","low":"20.00","high":"40.00"},
    "accrued":"27.90","final":"27.90",
    "breakdown":{"gpuHours":{"amd/on-demand":"2.500","nvidia/on-demand":"8.000"}}})");
  CostReport r = report_of(c);
  ASSERT_TRUE(r.error_percent);
  EXPECT_NEAR(*r.error_percent, -2.82, 0.01);
  EXPECT_EQ(r.within_range, true);
  EXPECT_EQ(versus_estimate(r), "final 27.90 USD, 2.8% below the estimate 28.71 (range 20.00-40.00: inside)");
  EXPECT_EQ(gpu_hours_text(r), "2.500 amd/on-demand, 8.000 nvidia/on-demand");
  c["final"] = "41.00";
  EXPECT_EQ(versus_estimate(report_of(c)), "final 41.00 USD, 42.8% above the estimate 28.71 (range 20.00-40.00: outside)");
  c["final"] = "28.71";
  EXPECT_EQ(versus_estimate(report_of(c)), "final 28.71 USD, as the estimate 28.71 (range 20.00-40.00: inside)");
  // While it runs: how much of the estimate is spent.
  c.erase("final");
  c["accrued"] = "12.30";
  EXPECT_EQ(versus_estimate(report_of(c)), "accrued 12.30 USD so far, 43% of the estimate 28.71 (range 20.00-40.00)");
}

TEST(CostReport, MissingOrMalformedFieldsReadAsAbsentNeverThrow) {
  EXPECT_EQ(versus_estimate(report_of(json())), "");
  EXPECT_EQ(versus_estimate(report_of(json::array({1, 2}))), "");
  EXPECT_EQ(gpu_hours_text(report_of(json::object())), "-");
  json c = json::parse(R"({"currency":7,"final":"9.00","estimate":{"expected":12,"low":"x"},"breakdown":{"gpuHours":[1]}})");
  CostReport r = report_of(c);
  EXPECT_FALSE(r.estimate);
  EXPECT_EQ(versus_estimate(r), "final 9.00 (no estimate was made)");
  c = json::parse(R"({"currency":"EUR","estimated":"0.00","accrued":"1.00","breakdown":{"gpuHours":{"nvidia/spot":4}}})");
  EXPECT_EQ(versus_estimate(report_of(c)), "accrued 1.00 EUR so far");
  EXPECT_EQ(gpu_hours_text(report_of(c)), "-");
  EXPECT_EQ(versus_estimate(report_of(json::parse(R"({"currency":"USD","estimated":"3.00"})"))), "estimated 3.00 USD, nothing spent yet");
}

}  // namespace
}  // namespace valley::cost
