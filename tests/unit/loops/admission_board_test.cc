// The contract between the planning loop and the TrainingTask reconciler: what the board keeps of
// the plans, and which refusals still hold a task back.
#include "controllers/task/admission_board.h"

#include <gtest/gtest.h>

namespace valley::task {
namespace {

using json = nlohmann::json;

json task(const std::string& uid, int64_t generation) {
  return {{"metadata", {{"namespace", "team"}, {"name", "job"}, {"uid", uid}, {"generation", generation}}}};
}

TEST(Refusals, HoldTheTaskBackUntilItOrItsNamespaceChanges) {
  struct Case {
    const char* what;
    json task;
    std::string labels;
    bool blocking;
    std::chrono::seconds retry;
    bool holds;
  };
  const std::vector<Case> cases = {
      {"nothing changed", task("u1", 3), "tier=a", true, std::chrono::seconds(600), true},
      {"a new incarnation (uid)", task("u2", 3), "tier=a", true, std::chrono::seconds(600), false},
      {"a new spec (generation)", task("u1", 4), "tier=a", true, std::chrono::seconds(600), false},
      {"the namespace relabelled", task("u1", 3), "tier=b", true, std::chrono::seconds(600), false},
      {"blocking, retry time passed", task("u1", 3), "tier=a", true, std::chrono::seconds(0), false},
      {"not blocking: no retry time", task("u1", 3), "tier=a", false, std::chrono::seconds(0), true},
  };
  for (const Case& c : cases) {
    Refusals refusals(c.retry);
    lifecycle::CreateRefusal r;
    r.reason = "Invalid";
    r.blocking = c.blocking;
    refusals.record("team/job", "u1", 3, "tier=a", r);
    EXPECT_EQ(refusals.blocking("team/job"), c.blocking) << c.what;
    int asked = 0;
    const auto held = refusals.of("team/job", c.task, [&](const std::string& ns) {
      ++asked;
      EXPECT_EQ(ns, "team");
      return c.labels;
    });
    EXPECT_EQ(held.has_value(), c.holds) << c.what;
    EXPECT_EQ(asked, 1) << c.what;
    if (held && c.blocking) {
      EXPECT_TRUE(held->retry_in.has_value()) << c.what;
    }
    // Once dropped, it stays dropped.
    if (!c.holds) {
      EXPECT_FALSE(refusals.of("team/job", task("u1", 3), [&](const std::string&) { return std::string("tier=a"); })) << c.what;
    }
  }
  Refusals none(std::chrono::seconds(600));
  EXPECT_FALSE(none.of("team/job", task("u1", 3), [](const std::string&) -> std::string {
    ADD_FAILURE() << "the namespace's labels are asked only for a task with a refusal";
    return "";
  }));
}

TEST(AdmissionBoard, KeepsThePlannedTasksDecisionsAndCountsTheAdmitted) {
  AdmissionBoard board;
  const std::string a = "team/a", b = "team/b", c = "team/c";
  auto admission = [](bool admitted, int workers) {
    lifecycle::Admission x;
    x.admitted = admitted;
    x.workers = workers;
    return x;
  };
  std::vector<std::pair<const std::string*, lifecycle::Admission>> first = {{&a, admission(true, 2)}, {&b, admission(false, 0)}, {&c, admission(true, 1)}};
  EXPECT_EQ(board.publish(first, [](const std::string&) { return true; }), 2u);
  EXPECT_EQ(board.admitted_count(), 2u);
  ASSERT_TRUE(board.admission(a));
  EXPECT_EQ(board.admission(a)->workers, 2);
  // The next plan changes b only and no longer has c (it ended): a keeps its admission, c's goes.
  std::vector<std::pair<const std::string*, lifecycle::Admission>> second = {{&b, admission(true, 4)}};
  EXPECT_EQ(board.publish(second, [&](const std::string& key) { return key != c; }), 2u);
  EXPECT_EQ(board.admission(a)->workers, 2);
  EXPECT_EQ(board.admission(b)->workers, 4);
  EXPECT_FALSE(board.admission(c));
  EXPECT_EQ(board.published().size(), 2u);
}

}  // namespace
}  // namespace valley::task
