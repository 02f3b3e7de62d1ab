// Data in and outputs out as the lifecycle decides them: a task waits for its data before its first
// admission (holding nothing), the planner passes it over meanwhile, outputs are asked for once the
// task ended and its pods are done, and the timeline and report they leave.
#include "controllers/lifecycle/transfers.h"

#include <gtest/gtest.h>

#include "controllers/api/conditions.h"
#include "controllers/cost/task_report.h"
#include "controllers/render/transfers.h"
#include "tests/unit/controllers/lifecycle_fixtures.h"

namespace valley::lifecycle {
namespace {
using namespace fixtures;

json with_data() {
  return {{"data", {{"uri", "s3://sets/mnist"}, {"secretRef", {{"name", "creds"}}}}},
          {"checkpoint", {{"uri", "s3://ckpts/t"}, {"secretRef", {{"name", "creds"}}}}}};
}

TEST(Transfers, ATaskWaitsForItsDataBeforeItsFirstAdmissionAndSaysWhy) {
  Observed o = observe(task_object(with_data()));
  // Not asked yet: no pods although the planner would admit it; DataReady says it is checking.
  Decision d = decide(o);
  EXPECT_TRUE(d.create.empty());
  EXPECT_EQ(condition_of(d.status, kDataReady)["reason"], "Checking");
  EXPECT_TRUE(waits_for_data(*o.parsed.spec, d.status));
  // The store says the prefix is empty: Pending, DataUnavailable, a Warning Event, nothing made.
  o.data = DataCheck{false, "data s3://sets/mnist: no objects under it"};
  d = decide(o);
  EXPECT_TRUE(d.create.empty());
  EXPECT_EQ(d.status["phase"], "Pending");
  EXPECT_EQ(d.status["reason"], kDataUnavailable);
  EXPECT_EQ(d.status["message"], "data s3://sets/mnist: no objects under it");
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].reason, kDataUnavailable);
  EXPECT_TRUE(waits_for_data(*o.parsed.spec, d.status));
  // Said once: the same state again makes no second Event.
  o.task["status"] = d.status;
  EXPECT_TRUE(decide(o).events.empty());
  // Readable: DataReady True for this generation, and the task starts its first epoch.
  o.data = DataCheck{true, "data s3://sets/mnist is readable"};
  d = decide(o);
  EXPECT_EQ(condition_of(d.status, kDataReady)["status"], "True");
  EXPECT_FALSE(waits_for_data(*o.parsed.spec, d.status));
  EXPECT_FALSE(d.create.empty());
  // A new spec generation asks again (its data may have moved), but only before the first epoch.
  json later = d.status;
  later.erase("epoch");  // as it was just before that first epoch
  o.task["metadata"]["generation"] = 2;
  o.parsed = api::parse_task(o.task);
  EXPECT_TRUE(waits_for_data(*o.parsed.spec, later));
  later["epoch"] = 1;
  EXPECT_FALSE(waits_for_data(*o.parsed.spec, later)) << "a running task is never held back by a data check";
}

TEST(Transfers, TheListedSetIsInTheStatusAndEachPlannedNodesDataCacheGoesOutOnceBeforeItsWorkers) {
  json spec = with_data();
  spec["replicas"] = {{"min", 3}, {"max", 3}};
  Observed o = observe(task_object(spec));
  o.data = DataCheck{true, "data s3://sets/mnist is readable: 2 objects, 3000000000 bytes", 2, 3'000'000'000};
  Decision first = decide(o);
  EXPECT_EQ(first.status["data"], json({{"uri", "s3://sets/mnist"}, {"files", 2}, {"bytes", 3'000'000'000}}));
  // The reconciler fills in the operator's class and the listed size; two workers on n1, one on n2.
  o.task["status"] = first.status;
  o.parsed.spec->data->cache_class = "local";
  o.parsed.spec->data->cache_bytes = 3'000'000'000;
  ASSERT_EQ(o.admission->placement.size(), 3u);
  o.admission->placement[0].node = o.admission->placement[1].node = "n1";
  o.admission->placement[2].node = "n2";
  Decision d = decide(o);
  EXPECT_EQ(created_names(d), (std::vector<std::string>{"t-data-n1", "t-worker-0", "t-worker-1", "t-data-n2", "t-worker-2", "t-launcher"}));
  ASSERT_FALSE(d.create.empty());
  EXPECT_EQ(d.create[0]["kind"], "PersistentVolumeClaim");
  EXPECT_EQ(d.create[0]["spec"]["resources"]["requests"]["storage"], "4Gi") << "3 GB and a tenth, in GiB";
  // Without the class (or before the set is listed): no claim, an emptyDir each.
  o.parsed.spec->data->cache_class.clear();
  for (const auto& name : created_names(decide(o))) EXPECT_EQ(name.find("-data-"), std::string::npos) << name;
}

TEST(Transfers, OutputsAreAskedForOnceTheTaskEndedItsPodsAreDoneAndItsFinalCostIsIn) {
  json status = {{"phase", "Succeeded"}, {"epoch", 1}, {"completionTime", "2026-11-22T04:00:00Z"}};
  Observed o = observe(task_object(with_data(), status), {pod("t-worker-0", "worker", 1, "Running")});
  EXPECT_FALSE(decide(o).collect_outputs) << "a worker still runs: its sidecar has not uploaded";
  o.pods[0].phase = "Succeeded";
  EXPECT_TRUE(decide(o).collect_outputs);
  o.task["status"]["cost"] = {{"accruedMicros", 5}};
  EXPECT_FALSE(decide(o).collect_outputs) << "priced: the report waits for the final cost";
  o.task["status"]["cost"]["finalMicros"] = 5;
  EXPECT_TRUE(decide(o).collect_outputs);
  // The controller's result becomes status.outputs, with one Event; then nothing more is asked.
  o.outputs = json{{"uri", "s3://ckpts/t/outputs"}, {"files", 2}, {"bytes", 300}, {"partial", false}, {"time", "2026-11-22T04:01:00Z"}};
  Decision d = decide(o);
  EXPECT_EQ(d.status["outputs"]["files"], 2);
  EXPECT_FALSE(d.collect_outputs);
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].reason, "OutputsKept");
  // Without an outputs location nothing is asked.
  Observed none = observe(task_object({}, status));
  EXPECT_FALSE(decide(none).collect_outputs);
}

TEST(Transfers, APodWhoseOutputsSidecarFailedIsSaidOnceInTheStatusAnEventAndTheReport) {
  json status = {{"phase", "Running"}, {"epoch", 1}};
  Observed o = observe(task_object(with_data(), status), {pod("t-worker-0", "worker", 1, "Running"), pod("t-worker-1", "worker", 1, "Running")});
  o.pods[0].outputs_exit = 0;  // kept
  o.pods[1].outputs_exit = 1;
  o.pods[1].outputs_message = "PUT s3://ckpts/t/outputs/model.pt: 403 AccessDenied";
  Decision d = decide(o);
  ASSERT_EQ(d.status["outputsNotKept"].size(), 1u);
  EXPECT_EQ(d.status["outputsNotKept"][0]["pod"], "t-worker-1");
  EXPECT_EQ(d.status["outputsNotKept"][0]["exitCode"], 1);
  EXPECT_EQ(d.status["outputsNotKept"][0]["message"], "PUT s3://ckpts/t/outputs/model.pt: 403 AccessDenied");
  auto said = std::find_if(d.events.begin(), d.events.end(), [](const auto& e) { return e.reason == "OutputsNotKept"; });
  ASSERT_NE(said, d.events.end());
  EXPECT_EQ(said->type, "Warning");
  EXPECT_NE(said->note.find("t-worker-1"), std::string::npos);
  EXPECT_NE(said->note.find("403 AccessDenied"), std::string::npos);
  // Seen again (the same pod, its status written): no second entry, no second Event.
  o.task["status"] = d.status;
  d = decide(o);
  EXPECT_EQ(d.status["outputsNotKept"].size(), 1u);
  EXPECT_TRUE(std::none_of(d.events.begin(), d.events.end(), [](const auto& e) { return e.reason == "OutputsNotKept"; }));
  // A later epoch's pod of the same name whose sidecar fails too is said again (by uid).
  o.pods[1].uid = "uid-t-worker-1-epoch-2";
  d = decide(o);
  EXPECT_EQ(d.status["outputsNotKept"].size(), 2u);
  o.pods[1].uid = "uid-t-worker-1";
  d = decide(o);
  // Killed before it finished (exit 137, no message): said so.
  o.pods.push_back(pod("t-worker-2", "worker", 1, "Failed"));
  o.pods.back().outputs_exit = 137;
  d = decide(o);
  ASSERT_EQ(d.status["outputsNotKept"].size(), 2u);
  EXPECT_EQ(d.status["outputsNotKept"][1]["message"], "stopped before it finished uploading");
  // The report lists them.
  json task = task_object({}, d.status);
  const json report = cost::task_report(task, {{"uri", "s3://o"}, {"files", 1}, {"bytes", 10}, {"partial", true}}, "2026-11-22T05:01:00Z");
  ASSERT_EQ(report["outputsNotKept"].size(), 2u);
  EXPECT_NE(cost::report_html(report).find("403 AccessDenied"), std::string::npos);
  // A task without outputs has no sidecar to speak of.
  Observed none = observe(task_object({}, status), {pod("t-worker-1", "worker", 1, "Running")});
  none.pods[0].outputs_exit = 1;
  EXPECT_FALSE(decide(none).status.contains("outputsNotKept"));
}

// The outputs sidecar's state is read apart from the pod's: its failure is not the workload's.
TEST(Transfers, TheOutputsSidecarsExitIsItsOwnNotTheWorkloads) {
  api::Pod pod;
  pod.name = "t-worker-0";
  pod.phase = "Running";
  pod.init_containers = {{render::kOutputsContainer, {}, {}, true}};
  pod.containers = {{"worker", {}, {}, false}};
  api::PodContainerStatus sidecar;
  sidecar.name = render::kOutputsContainer;
  sidecar.running = true;
  api::PodContainerStatus worker;
  worker.name = "worker";
  worker.terminated = true;
  worker.exit_code = 0;
  pod.init_container_statuses = {sidecar};
  pod.container_statuses = {worker};
  PodView v = view_pod(pod);
  EXPECT_TRUE(v.outputs_running);
  EXPECT_FALSE(v.outputs_exit);
  sidecar.running = false;
  sidecar.terminated = true;
  sidecar.exit_code = 1;
  sidecar.message = "bucket gone";
  pod.init_container_statuses = {sidecar};
  v = view_pod(pod);
  EXPECT_FALSE(v.outputs_running);
  EXPECT_EQ(v.outputs_exit, 1);
  EXPECT_EQ(v.outputs_message, "bucket gone");
  EXPECT_EQ(v.exit_code, 0) << "the workload succeeded";
  EXPECT_TRUE(v.failed_init.empty());
}

TEST(Transfers, TheHistoryRecordsEachPhaseAndSizeOnceAndTheReportDrawsIt) {
  Observed o = observe(task_object());
  Decision d = decide(o);
  ASSERT_EQ(d.status["history"].size(), 1u);
  o.task["status"] = d.status;
  d = decide(o);
  EXPECT_EQ(d.status["history"].size(), 1u) << "nothing changed: no entry";
  json h = json::array();
  for (int i = 0; i < 130; ++i) h.push_back({{"time", "2026-11-22T03:00:00Z"}, {"phase", "Running"}, {"workers", i}});
  o.task["status"]["history"] = h;
  d = decide(o);
  EXPECT_EQ(d.status["history"].size(), 100u) << "the latest 100";
  // Pods coming up one by one change the running count, not the size: no entry, and the status
  // may wait for the next progress write.
  json starting = {{"phase", "Admitted"}, {"epoch", 1}, {"epochReplicas", 2}, {"startTime", "2026-11-22T03:00:00Z"}};
  Observed up = observe(task_object({}, starting), {pod("t-launcher", "launcher", 1, "Pending", false), pod("t-worker-0", "worker", 1, "Pending", false, {}, 0)});
  Decision first = decide(up);
  up.task["status"] = first.status;
  up.pods.push_back(pod("t-worker-1", "worker", 1, "Pending", false, {}, 1));
  Decision second = decide(up);
  EXPECT_NE(first.status.value("replicas", 0), second.status.value("replicas", 0)) << "the running count moved";
  EXPECT_EQ(second.status["history"], first.status["history"]) << "the size did not";
  EXPECT_TRUE(status_may_wait(first.status, second, true));
  json task = task_object({}, {{"phase", "Succeeded"},
                               {"startTime", "2026-11-22T03:00:00Z"},
                               {"completionTime", "2026-11-22T05:00:00Z"},
                               {"history", json::array({{{"time", "2026-11-22T03:00:00Z"}, {"phase", "Running"}, {"workers", 2}},
                                                        {{"time", "2026-11-22T04:00:00Z"}, {"phase", "Running"}, {"workers", 4}},
                                                        {{"time", "2026-11-22T05:00:00Z"}, {"phase", "Succeeded"}, {"workers", 0}}})},
                               {"cost", {{"currency", "USD"}, {"final", "12.50"}, {"estimate", {{"expected", "10.00"}}},
                                         {"breakdown", {{"gpuHours", {{"nvidia/spot", "6.000"}}}}}}}});
  json report = cost::task_report(task, {{"uri", "s3://o"}, {"files", 1}, {"bytes", 10}}, "2026-11-22T05:01:00Z");
  EXPECT_EQ(report["runSeconds"], 7200);
  EXPECT_EQ(report["cost"]["final"], "12.50");
  EXPECT_EQ(report["cost"]["gpuHoursByPool"]["nvidia/spot"], "6.000");
  EXPECT_NEAR(report["cost"]["errorPercent"].get<double>(), 25.0, 1e-9);
  const std::string html = cost::report_html(report);
  EXPECT_NE(html.find("ns/t"), std::string::npos);
  EXPECT_NE(html.find("4 workers"), std::string::npos) << "the chart's scale is the largest size";
  EXPECT_NE(html.find("nvidia/spot"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
}

}  // namespace
}  // namespace valley::lifecycle

namespace valley::lifecycle {
namespace {
using namespace fixtures;

std::vector<std::string> deleted_names(const Decision& d) {
  std::vector<std::string> names;
  for (const auto& del : d.delete_pods) names.push_back(del.name);
  return names;
}

// A task deleted mid-run ends (Failed, Deleted), stops its pods as a disruption would (the
// launcher first, for its checkpoint window) whatever its cleanPodPolicy, and asks for its outputs
// once they are done; it is never restarted and nothing is created for it.
TEST(Transfers, ADeletedTaskEndsStopsItsPodsAndAsksForItsOutputs) {
  json task = task_object(with_data(), running_status());
  task["spec"]["runPolicy"]["cleanPodPolicy"] = "None";
  task["metadata"]["deletionTimestamp"] = "2026-11-22T04:00:00Z";
  Observed o = observe(task, running_pods());
  Decision d = decide(o);
  EXPECT_EQ(d.status["phase"], "Failed");
  EXPECT_EQ(d.status["reason"], kDeleted);
  EXPECT_TRUE(d.create.empty());
  EXPECT_EQ(deleted_names(d), std::vector<std::string>{"t-launcher"}) << "the workers wait for the launcher's SIGTERM to reach the ranks";
  EXPECT_FALSE(d.collect_outputs);
  // The launcher ended: the workers go too, though cleanPodPolicy None would have kept them.
  o.task["status"] = d.status;
  o.pods[2].phase = "Failed";
  d = decide(o);
  EXPECT_EQ(d.status["phase"], "Failed");
  EXPECT_EQ(deleted_names(d), (std::vector<std::string>{"t-worker-0", "t-worker-1", "t-launcher"}));
  EXPECT_FALSE(d.collect_outputs);
  // All done: the outputs and report are asked for; no ttl deletion of a task already going.
  o.task["spec"]["runPolicy"]["ttlSecondsAfterFinished"] = 0;
  o.parsed = api::parse_task(o.task);
  for (auto& p : o.pods) p.phase = "Failed";
  d = decide(o);
  EXPECT_TRUE(d.collect_outputs);
  EXPECT_FALSE(d.delete_task);
}

TEST(Transfers, TheOutputsFinalizerHoldsATaskThatRanUntilItsOutputsAreKeptOrTheWaitIsOver) {
  using K = FinalizerStep::Kind;
  const auto give_up = std::chrono::seconds(600);
  const api::TaskSpec spec = *api::parse_task(task_object(with_data())).spec;
  const api::TaskSpec no_outputs = *api::parse_task(task_object()).spec;
  json meta = {{"name", "t"}, {"finalizers", {"other.io/keep"}}};
  const json pending = {{"phase", "Pending"}};
  const json ran = running_status();
  json kept = ran;
  kept["outputs"] = {{"time", "2026-11-22T04:01:00Z"}};
  // Not being deleted: added once the task has run, removed once its outputs are kept.
  EXPECT_EQ(outputs_finalizer(meta, &spec, pending, kNow, give_up, true).kind, K::Keep) << "nothing ran: nothing to keep";
  EXPECT_EQ(outputs_finalizer(meta, &no_outputs, ran, kNow, give_up, true).kind, K::Keep);
  EXPECT_EQ(outputs_finalizer(meta, &spec, ran, kNow, give_up, true).kind, K::Add);
  EXPECT_EQ(outputs_finalizer(meta, &spec, ran, kNow, give_up, false).kind, K::Keep) << "not added unless the operator says so";
  meta["finalizers"] = {"other.io/keep", kOutputsFinalizer};
  EXPECT_EQ(outputs_finalizer(meta, &spec, ran, kNow, give_up, true).kind, K::Keep);
  EXPECT_EQ(outputs_finalizer(meta, &spec, kept, kNow, give_up, true).kind, K::Remove);
  EXPECT_EQ(outputs_finalizer(meta, &spec, kept, kNow, give_up, false).kind, K::Remove) << "removed whatever the setting";
  EXPECT_EQ(outputs_finalizer(meta, nullptr, ran, kNow, give_up, true).kind, K::Remove) << "an invalid spec keeps nothing";
  // Being deleted: held until the outputs are kept, or give_up after the deletion was asked.
  meta["deletionTimestamp"] = kube::format_time(kNow - std::chrono::seconds(60));
  FinalizerStep held = outputs_finalizer(meta, &spec, ran, kNow, give_up, true);
  EXPECT_EQ(held.kind, K::Keep);
  ASSERT_TRUE(held.recheck_in);
  EXPECT_EQ(held.recheck_in->count(), 541);
  FinalizerStep done = outputs_finalizer(meta, &spec, kept, kNow, give_up, true);
  EXPECT_EQ(done.kind, K::Remove);
  EXPECT_FALSE(done.gave_up);
  FinalizerStep late = outputs_finalizer(meta, &spec, ran, kNow + std::chrono::seconds(540), give_up, true);
  EXPECT_EQ(late.kind, K::Remove);
  EXPECT_TRUE(late.gave_up);
  // Never added to a task being deleted (the API server refuses new finalizers then).
  meta["finalizers"] = json::array();
  EXPECT_EQ(outputs_finalizer(meta, &spec, ran, kNow, give_up, true).kind, K::Keep);
}

}  // namespace
}  // namespace valley::lifecycle
