// Data in and outputs out as the lifecycle decides them: a task waits for its data before its first
// admission (holding nothing), the planner passes it over meanwhile, outputs are asked for once the
// task ended and its pods are done, and the timeline and report they leave.
#include "controllers/lifecycle/transfers.h"

#include <gtest/gtest.h>

#include "controllers/api/conditions.h"
#include "controllers/render/task_report.h"
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
  json task = task_object({}, {{"phase", "Succeeded"},
                               {"startTime", "2026-11-22T03:00:00Z"},
                               {"completionTime", "2026-11-22T05:00:00Z"},
                               {"history", json::array({{{"time", "2026-11-22T03:00:00Z"}, {"phase", "Running"}, {"workers", 2}},
                                                        {{"time", "2026-11-22T04:00:00Z"}, {"phase", "Running"}, {"workers", 4}},
                                                        {{"time", "2026-11-22T05:00:00Z"}, {"phase", "Succeeded"}, {"workers", 0}}})},
                               {"cost", {{"currency", "USD"}, {"final", "12.50"}, {"estimate", {{"expected", "10.00"}}},
                                         {"breakdown", {{"gpuHours", {{"nvidia/spot", "6.000"}}}}}}}});
  json report = render::task_report(task, {{"uri", "s3://o"}, {"files", 1}, {"bytes", 10}}, "2026-11-22T05:01:00Z");
  EXPECT_EQ(report["runSeconds"], 7200);
  EXPECT_EQ(report["cost"]["final"], "12.50");
  EXPECT_EQ(report["cost"]["gpuHoursByPool"]["nvidia/spot"], "6.000");
  EXPECT_NEAR(report["cost"]["errorPercent"].get<double>(), 25.0, 1e-9);
  const std::string html = render::report_html(report);
  EXPECT_NE(html.find("ns/t"), std::string::npos);
  EXPECT_NE(html.find("4 workers"), std::string::npos) << "the chart's scale is the largest size";
  EXPECT_NE(html.find("nvidia/spot"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
}

}  // namespace
}  // namespace valley::lifecycle
