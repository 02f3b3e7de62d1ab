#include "operator/kube/events.h"

#include <gtest/gtest.h>

namespace valley::kube {
namespace {
using namespace std::chrono_literals;
using json = nlohmann::json;

json task(const std::string& name, const std::string& uid) {
  return {{"apiVersion", "valley.dev/v1beta1"},
          {"kind", "TrainingTask"},
          {"metadata", {{"name", name}, {"namespace", "team-a"}, {"uid", uid}, {"resourceVersion", "5"}}}};
}

SystemTime t0() { return SystemTime(std::chrono::seconds(1795316645)); }

TEST(EventAggregator, FirstOccurrenceIsCreatedWithAReference) {
  EventAggregator agg({});
  ASSERT_TRUE(agg.observe(task("resnet", "u1"), "Normal", "Admitted", "Admit", "4 workers fit", t0()));
  auto due = agg.take_due(t0());
  ASSERT_EQ(due.size(), 1u);
  const json& ev = due[0].event;
  EXPECT_EQ(due[0].kind, PendingWrite::Kind::Create);
  EXPECT_EQ(ev["metadata"]["namespace"], "team-a");
  EXPECT_EQ(ev["regarding"]["kind"], "TrainingTask");
  EXPECT_EQ(ev["regarding"]["uid"], "u1");
  EXPECT_EQ(ev["reason"], "Admitted");
  EXPECT_EQ(ev["eventTime"], "2026-11-22T03:04:05.000000Z");
  EXPECT_FALSE(ev.contains("series"));
  EXPECT_TRUE(agg.take_due(t0()).empty());
}

TEST(EventAggregator, RepeatsBecomeOneSeriesPatchedAtMostOncePerFlushInterval) {
  EventOptions opt;
  opt.series_flush = 30s;
  EventAggregator agg(opt);
  agg.observe(task("t", "u1"), "Warning", "Unschedulable", "Admit", "needs 8 GPUs", t0());
  ASSERT_EQ(agg.take_due(t0()).size(), 1u);
  for (int i = 1; i <= 1000; ++i) agg.observe(task("t", "u1"), "Warning", "Unschedulable", "Admit", "needs 8 GPUs", t0() + std::chrono::milliseconds(i));
  EXPECT_TRUE(agg.take_due(t0() + 10s).empty());  // not yet due
  auto due = agg.take_due(t0() + 31s);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].kind, PendingWrite::Kind::UpdateSeries);
  EXPECT_EQ(due[0].event["count"], 1001);
  EXPECT_TRUE(agg.take_due(t0() + 120s).empty());  // nothing new
}

TEST(EventAggregator, DifferentNotesAreDifferentEventsUntilTheSpamFilterStopsThem) {
  EventOptions opt;
  opt.burst = 5;
  opt.refill = 300s;
  EventAggregator agg(opt);
  int accepted = 0;
  for (int i = 0; i < 100; ++i)
    accepted += agg.observe(task("t", "u1"), "Normal", "Resized", "Resize", "to " + std::to_string(i) + " workers", t0());
  EXPECT_EQ(accepted, 5);
  EXPECT_EQ(agg.dropped(), 95u);
  EXPECT_EQ(agg.take_due(t0()).size(), 5u);
  // Another object has its own budget; the first gets a token back after the refill period.
  EXPECT_TRUE(agg.observe(task("other", "u2"), "Normal", "Resized", "Resize", "x", t0()));
  EXPECT_FALSE(agg.observe(task("t", "u1"), "Normal", "Resized", "Resize", "new", t0() + 100s));
  EXPECT_TRUE(agg.observe(task("t", "u1"), "Normal", "Resized", "Resize", "new", t0() + 301s));
}

TEST(EventAggregator, AfterTheSeriesWindowARepeatStartsANewEvent) {
  EventOptions opt;
  opt.series_window = 600s;
  EventAggregator agg(opt);
  agg.observe(task("t", "u1"), "Normal", "Started", "Run", "x", t0());
  agg.take_due(t0());
  agg.observe(task("t", "u1"), "Normal", "Started", "Run", "x", t0() + 700s);
  auto due = agg.take_due(t0() + 700s);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].kind, PendingWrite::Kind::Create);
}

TEST(EventAggregator, LongNotesAreCutToTheApiLimit) {
  EventAggregator agg({});
  agg.observe(task("t", "u1"), "Normal", "R", "A", std::string(5000, 'x'), t0());
  auto due = agg.take_due(t0());
  EXPECT_EQ(due[0].event["note"].get<std::string>().size(), 1024u);
}

TEST(EventAggregator, MemoryIsBounded) {
  EventOptions opt;
  opt.max_tracked = 100;
  opt.burst = 1000000;
  EventAggregator agg(opt);
  for (int i = 0; i < 1000; ++i) agg.observe(task("t" + std::to_string(i), "u" + std::to_string(i)), "Normal", "R", "A", "n", t0());
  EXPECT_LE(agg.tracked(), 100u);
}

}  // namespace
}  // namespace valley::kube
