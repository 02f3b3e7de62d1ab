// The Tenant API type and the quota arithmetic the planner keeps with it.
#include "controllers/api/tenant.h"
#include "controllers/planner/quota.h"
#include "controllers/tenancy/tenants.h"
#include "controllers/tenancy/usage.h"

#include <cmath>

#include <gtest/gtest.h>

namespace valley {
namespace {

using json = nlohmann::json;

std::string all(const std::vector<std::string>& errors) {
  std::string s;
  for (const auto& e : errors) s += e + "\n";
  return s;
}

TEST(Tenant, ParsesQuotasBudgetPrioritiesAndNamespaces) {
  auto t = api::parse_tenant(json::parse(R"({"metadata":{"name":"vision-lab","uid":"u1","generation":3},
    "spec":{"namespaces":["vision"],"namespaceSelector":{"matchLabels":{"lab":"vision"},
              "matchExpressions":[{"key":"tier","operator":"NotIn","values":["scratch"]}]},
            "quotas":[{"pool":"nvidia/on-demand","nominal":16,"borrowingLimit":"8","lendingLimit":4},
                      {"pool":"amd/on-demand","nominal":"2.5"}],
            "weight":"2","budget":{"amount":"500","period":"Month","action":"Suspend"},
            "maxPriority":60,"defaultPriority":20}})"));
  ASSERT_TRUE(t.spec) << all(t.errors);
  EXPECT_EQ(t.spec->name, "vision-lab");
  EXPECT_EQ(t.spec->generation, 3);
  ASSERT_EQ(t.spec->quotas.size(), 2u);
  EXPECT_EQ(t.spec->quota("nvidia/on-demand")->nominal_milli, 16000);
  EXPECT_EQ(*t.spec->quota("nvidia/on-demand")->borrowing_limit_milli, 8000);
  EXPECT_EQ(*t.spec->quota("nvidia/on-demand")->lending_limit_milli, 4000);
  EXPECT_EQ(t.spec->quota("amd/on-demand")->nominal_milli, 2500);
  EXPECT_FALSE(t.spec->quota("amd/on-demand")->borrowing_limit_milli);
  EXPECT_EQ(t.spec->quota("nvidia/spot"), nullptr);
  EXPECT_EQ(t.spec->weight_milli, 2000);
  ASSERT_TRUE(t.spec->budget);
  EXPECT_EQ(t.spec->budget->amount, 500'000'000);
  EXPECT_EQ(t.spec->budget->action, api::BudgetAction::Suspend);
  EXPECT_EQ(t.spec->max_priority, 60);
  EXPECT_EQ(*t.spec->default_priority, 20);
  EXPECT_TRUE(t.spec->owns("vision", {}));
  EXPECT_TRUE(t.spec->owns("other", {{"lab", "vision"}}));
  EXPECT_FALSE(t.spec->owns("other", {{"lab", "vision"}, {"tier", "scratch"}}));
  EXPECT_FALSE(t.spec->owns("other", {{"lab", "nlp"}}));
}

TEST(Tenant, EveryProblemIsReportedWithItsPath) {
  auto t = api::parse_tenant(json::parse(R"({"metadata":{"name":"x"},
    "spec":{"quotas":[{"pool":"tpu/on-demand","nominal":-1},{"pool":"nvidia/spot","nominal":4,"lendingLimit":5},
                      {"pool":"nvidia/spot","nominal":1}],
            "weight":"0","budget":{"amount":"lots","period":"Year","action":"Panic"},
            "maxPriority":50,"defaultPriority":70}})"));
  EXPECT_FALSE(t.spec);
  const std::string e = all(t.errors);
  for (const char* want : {"spec: namespaces or namespaceSelector is required", "spec.quotas[0].pool: must be one of",
                           "spec.quotas[0].nominal: must be a number of GPUs", "spec.quotas[1].lendingLimit: cannot exceed nominal",
                           "spec.quotas[2].pool: nvidia/spot is listed twice", "spec.weight: must be above 0",
                           "spec.budget.amount: must be an amount", "spec.budget.period: must be Day, Week or Month",
                           "spec.budget.action: must be Wait or Suspend", "spec.defaultPriority: cannot exceed maxPriority"})
    EXPECT_NE(e.find(want), std::string::npos) << want << "\n" << e;
  EXPECT_FALSE(api::parse_tenant(json::parse("[1]")).spec);  // not even an object: an error, no throw
}

planner::QuotaBook book(std::optional<int64_t> b_lends = std::nullopt, std::optional<int64_t> a_borrows = std::nullopt) {
  std::map<std::string, std::map<std::string, planner::PoolQuota>> q;
  q["a"]["nvidia/on-demand"] = {8000, a_borrows, std::nullopt};
  q["b"]["nvidia/on-demand"] = {8000, std::nullopt, b_lends};
  return planner::QuotaBook(q, {{"nvidia/on-demand", 20000}});  // 4 GPUs nobody is guaranteed
}

TEST(Quota, OwnNominalThenWhatOthersLendThenWhatNobodyOwns) {
  auto q = book();
  EXPECT_EQ(q.room("a", "nvidia/on-demand"), 20000);  // its 8, b's idle 8, the 4 unowned
  q.add("a", "nvidia/on-demand", 14000);
  EXPECT_EQ(q.borrowed("a", "nvidia/on-demand"), 6000);
  EXPECT_EQ(q.room("a", "nvidia/on-demand"), 6000);
  // b may always use its own nominal (what a borrowed of it is reclaimed), nothing beyond.
  EXPECT_EQ(q.room("b", "nvidia/on-demand"), 8000);
  EXPECT_EQ(q.lent_capacity("b", "nvidia/on-demand"), 8000);
  q.add("b", "nvidia/on-demand", 8000);
  EXPECT_EQ(q.room("b", "nvidia/on-demand"), 0);  // a borrows more than is lendable now: nothing shared left
  EXPECT_EQ(q.room("", "nvidia/on-demand"), 0);   // work without a tenant too
  EXPECT_EQ(q.total_usage("a"), 14000);
}

TEST(Quota, LendingAndBorrowingLimits) {
  auto lends_two = book(/*b_lends=*/2000);
  EXPECT_EQ(lends_two.room("a", "nvidia/on-demand"), 14000);  // 8 + 2 lent + 4 unowned
  auto borrows_three = book(std::nullopt, /*a_borrows=*/3000);
  EXPECT_EQ(borrows_three.room("a", "nvidia/on-demand"), 11000);
  borrows_three.add("a", "nvidia/on-demand", 10000);
  EXPECT_EQ(borrows_three.room("a", "nvidia/on-demand"), 1000);
  EXPECT_EQ(borrows_three.room("a", "amd/on-demand"), 0);  // no such capacity
}

TEST(Quota, DisabledWithoutTenants) {
  planner::QuotaBook q;
  EXPECT_FALSE(q.enabled());
  EXPECT_GT(q.room("", "nvidia/on-demand"), int64_t{1} << 40);
}

}  // namespace
}  // namespace valley

namespace valley {
namespace {

using namespace std::chrono_literals;

kube::SystemTime at(const std::string& s) { return *kube::parse_time(s); }

TEST(FairShareUsage, DecaysByHalfEachHalfLifeAndSettlesAtTheMeanLife) {
  const auto week = std::chrono::seconds(7 * 24 * 3600);
  EXPECT_NEAR(tenancy::decay_usage(100, 0, week, week), 50, 1e-9);
  EXPECT_NEAR(tenancy::decay_usage(100, 0, 2 * week, week), 25, 1e-9);
  // 8 GPUs held for an hour, half-life a week: a little under 8 GPU-hours (the first minutes
  // have decayed already).
  EXPECT_NEAR(tenancy::decay_usage(0, 8, 1h, week), 7.9835, 1e-4);
  // Held for ever: 8 x 168 h / ln 2.
  EXPECT_NEAR(tenancy::decay_usage(0, 8, 100 * week, week), 8 * 168 / std::log(2.0), 1e-6);
  // Piecewise equals whole: decaying in steps gives the same as in one.
  double u = 10;
  for (int k = 0; k < 60; ++k) u = tenancy::decay_usage(u, 3, 1min, week);
  EXPECT_NEAR(u, tenancy::decay_usage(10, 3, 1h, week), 1e-9);
}

TEST(BudgetPeriod, CalendarPeriodsInTheTimeZoneWithDaylightSaving) {
  std::string error;
  auto berlin = api::TimeZone::from_posix("CET-1CEST,M3.5.0,M10.5.0/3", &error);
  ASSERT_TRUE(berlin) << error;
  // 2026-11-30T23:30Z is already December 1st in Berlin.
  auto m = tenancy::budget_period(api::BudgetPeriod::Month, *berlin, at("2026-11-30T23:30:00Z"));
  EXPECT_EQ(m.name, "2026-12");
  EXPECT_EQ(m.start, at("2026-11-30T23:00:00Z"));
  EXPECT_EQ(m.end, at("2026-12-31T23:00:00Z"));
  // March 2026 spans the switch to summer time: it ends at 22:00Z, not 23:00Z.
  m = tenancy::budget_period(api::BudgetPeriod::Month, *berlin, at("2026-03-15T12:00:00Z"));
  EXPECT_EQ(m.start, at("2026-02-28T23:00:00Z"));
  EXPECT_EQ(m.end, at("2026-03-31T22:00:00Z"));
  auto w = tenancy::budget_period(api::BudgetPeriod::Week, api::TimeZone::utc(), at("2026-11-23T10:00:00Z"));  // a Monday
  EXPECT_EQ(w.name, "2026-W48");
  EXPECT_EQ(w.start, at("2026-11-23T00:00:00Z"));
  EXPECT_EQ(w.end, at("2026-11-30T00:00:00Z"));
  EXPECT_EQ(tenancy::budget_period(api::BudgetPeriod::Week, api::TimeZone::utc(), at("2027-01-01T00:00:00Z")).name, "2026-W53");
  auto d = tenancy::budget_period(api::BudgetPeriod::Day, *berlin, at("2026-07-01T22:30:00Z"));
  EXPECT_EQ(d.name, "2026-07-02");
  EXPECT_EQ(d.start, at("2026-07-01T22:00:00Z"));
}

TEST(BudgetSpend, EachAccrualCountsOnceAndANewPeriodStartsFromZero) {
  tenancy::Period nov{at("2026-11-01T00:00:00Z"), at("2026-12-01T00:00:00Z"), "2026-11"};
  tenancy::Period dec{at("2026-12-01T00:00:00Z"), at("2027-01-01T00:00:00Z"), "2026-12"};
  auto s = tenancy::count_spend({}, {{"t1", 100}, {"t2", 50}}, nov);
  EXPECT_EQ(s.spent, 150);
  s = tenancy::count_spend(s, {{"t1", 100}, {"t2", 50}}, nov);  // read again: nothing new
  EXPECT_EQ(s.spent, 150);
  s = tenancy::count_spend(s, {{"t1", 130}}, nov);  // t2 deleted, t1 accrued 30 more
  EXPECT_EQ(s.spent, 180);
  EXPECT_FALSE(s.counted.count("t2"));
  s = tenancy::count_spend(s, {{"t1", 140}, {"t3", 5}}, dec);  // December: only what accrued since
  EXPECT_EQ(s.period, "2026-12");
  EXPECT_EQ(s.spent, 15);
  s = tenancy::count_spend(s, {{"t1", 120}, {"t3", 5}}, dec);  // a status that went back is not refunded
  EXPECT_EQ(s.spent, 15);
}

}  // namespace
}  // namespace valley

namespace valley {
namespace {

tenancy::TenantObject tenant(const std::string& json_text, const std::string& created = "2026-11-01T00:00:00Z") {
  auto parsed = api::parse_tenant(nlohmann::json::parse(json_text));
  EXPECT_TRUE(parsed.spec) << all(parsed.errors);
  tenancy::TenantObject t;
  t.spec = *parsed.spec;
  t.created = *kube::parse_time(created);
  return t;
}

TEST(Tenancy, ANamespaceBelongsToTheOldestTenantClaimingItAndBothHearOfTheConflict) {
  std::vector<tenancy::TenantObject> ts = {
      tenant(R"({"metadata":{"name":"b"},"spec":{"namespaces":["shared","b"]}})", "2026-11-02T00:00:00Z"),
      tenant(R"({"metadata":{"name":"a"},"spec":{"namespaceSelector":{"matchLabels":{"team":"a"}}}})", "2026-11-01T00:00:00Z")};
  auto own = tenancy::assign_namespaces(ts, {{"shared", {{"team", "a"}}}, {"b", {}}, {"a-dev", {{"team", "a"}}}, {"free", {}}});
  EXPECT_EQ(own.owner["shared"], "a");
  EXPECT_EQ(own.owner["b"], "b");
  EXPECT_EQ(own.owner["a-dev"], "a");
  EXPECT_FALSE(own.owner.count("free"));
  ASSERT_EQ(own.conflicts["a"].size(), 1u);
  EXPECT_EQ(own.conflicts["b"][0], "namespace shared is also claimed by tenant a (it belongs to a, the oldest)");
}

TEST(Tenancy, WhatATenantLendsIsOthersBorrowingBeyondUnownedCapacityByIdleNominal) {
  // 16 GPUs: a is guaranteed 8 and uses 2, b 4 and uses 4, 4 are no one's. Work without a tenant
  // uses 8: 4 of them from the unowned 4, the other 4 from a's idle 6.
  std::vector<tenancy::TenantObject> ts = {
      tenant(R"({"metadata":{"name":"a"},"spec":{"namespaces":["a"],"quotas":[{"pool":"nvidia/on-demand","nominal":8}]}})"),
      tenant(R"({"metadata":{"name":"b"},"spec":{"namespaces":["b"],"quotas":[{"pool":"nvidia/on-demand","nominal":4}]}})")};
  std::map<std::string, std::map<std::string, int64_t>> used = {
      {"a", {{"nvidia/on-demand", 2000}}}, {"b", {{"nvidia/on-demand", 4000}}}, {"", {{"nvidia/on-demand", 8000}}}};
  const std::map<std::string, int64_t> capacity = {{"nvidia/on-demand", 16000}, {"nvidia/spot", 8000}};
  EXPECT_EQ(tenancy::lent_milli("a", ts, used, capacity), (std::map<std::string, int64_t>{{"nvidia/on-demand", 4000}}));
  EXPECT_TRUE(tenancy::lent_milli("b", ts, used, capacity).empty());
  // b borrows 2 more (6 of 4): the unowned 4 are gone, a lends 6 (all it has idle)...
  used["b"]["nvidia/on-demand"] = 6000;
  EXPECT_EQ(tenancy::lent_milli("a", ts, used, capacity)["nvidia/on-demand"], 6000);
  // ...unless its lending limit is 3: then it lends at most 3.
  ts[0] = tenant(R"({"metadata":{"name":"a"},"spec":{"namespaces":["a"],"quotas":[{"pool":"nvidia/on-demand","nominal":8,"lendingLimit":3}]}})");
  EXPECT_EQ(tenancy::lent_milli("a", ts, used, capacity)["nvidia/on-demand"], 3000);
}

TEST(Tenancy, OwnershipIsPublishedForAdmissionWithTheOwnersMaximumPriority) {
  std::vector<tenancy::TenantObject> ts = {
      tenant(R"({"metadata":{"name":"b"},"spec":{"namespaces":["shared","b"],"maxPriority":50}})", "2026-11-02T00:00:00Z"),
      tenant(R"({"metadata":{"name":"a"},"spec":{"namespaces":["shared"]}})", "2026-11-01T00:00:00Z")};
  auto own = tenancy::assign_namespaces(ts, {{"shared", {}}, {"b", {}}, {"free", {}}});
  auto data = tenancy::published_ownership(ts, own);
  EXPECT_EQ(data, (std::map<std::string, std::string>{{"b", "b"}, {"b.maxPriority", "50"}, {"shared", "a"}, {"shared.maxPriority", "100"}}));
}

TEST(Tenancy, StatusCountsUsageShareAndSpendAndABudgetHoldsOrStops) {
  auto t = tenant(R"({"metadata":{"name":"lab","generation":2},"spec":{"namespaces":["lab"],
    "quotas":[{"pool":"nvidia/on-demand","nominal":4}],"weight":"2","budget":{"amount":"1.00","period":"Day","action":"Suspend"}}})");
  const auto now = *kube::parse_time("2026-11-23T12:00:00Z");
  std::vector<tenancy::TaskUse> tasks = {{"t1", 600'000, {{"nvidia/on-demand", 6000}}, false}, {"t2", 0, {}, true}};
  auto s = tenancy::tenant_status(t, tasks, {{"nvidia/on-demand", 0}}, {}, nullptr, now, std::chrono::hours(168));
  EXPECT_EQ(s["gpus"], "6/4");
  EXPECT_EQ(s["borrowed"], "2");
  EXPECT_EQ(s["usage"]["nvidia/on-demand"]["borrowedMilli"], 2000);
  EXPECT_EQ(s["spend"]["period"], "2026-11-23");
  EXPECT_EQ(s["spend"]["spentMicros"], 600'000);
  EXPECT_EQ(s["spend"]["summary"], "0.60/1.00 USD");
  EXPECT_EQ(s["waitingTasks"], 1);
  EXPECT_EQ(s["conditions"][0]["status"], "True");
  EXPECT_EQ(s["conditions"][1]["type"], "BudgetExhausted");
  EXPECT_EQ(s["conditions"][1]["status"], "False");
  t.status = s;
  EXPECT_TRUE(tenancy::planner_tenant(t, nullptr, now, std::chrono::hours(168)).hold.empty());
  // An hour on, t1 accrued 0.50 more: 1.10 of 1.00 spent. The fair share has grown by ~6 GPU-hours.
  tasks[0].accrued = 1'100'000;
  s = tenancy::tenant_status(t, tasks, {{"nvidia/on-demand", 0}}, {}, nullptr, now + std::chrono::hours(1), std::chrono::hours(168));
  EXPECT_NEAR(std::stod(s["fairShare"]["decayedGpuHours"].get<std::string>()), 5.99, 0.01);
  EXPECT_EQ(s["conditions"][1]["status"], "True");
  t.status = s;
  auto p = tenancy::planner_tenant(t, nullptr, now + std::chrono::hours(1), std::chrono::hours(168));
  EXPECT_TRUE(p.stop);
  EXPECT_EQ(p.hold, "TenantBudget: tenant lab spent 1.10 of its 1.00 USD for 2026-11-23; its tasks are suspended until the period resets at 2026-11-24T00:00:00Z");
  EXPECT_EQ(p.quota["nvidia/on-demand"].nominal_milli, 4000);
  EXPECT_DOUBLE_EQ(p.weight, 2);
  // The next day the budget is fresh.
  EXPECT_TRUE(tenancy::planner_tenant(t, nullptr, now + std::chrono::hours(13), std::chrono::hours(168)).hold.empty());
}

TEST(Tenancy, TheFairShareCountsWhatWaitingTasksAskForAndTheStatusKeepsHeldAgainstFair) {
  std::vector<tenancy::TenantObject> ts = {tenant(R"({"metadata":{"name":"big"},"spec":{"namespaces":["big"],"weight":"1"}})"),
                                           tenant(R"({"metadata":{"name":"lab"},"spec":{"namespaces":["lab"],"weight":"1"}})")};
  tenancy::PoolUse use;
  use.capacity = {{"nvidia/on-demand", 24000}};
  use.used = {{"big", {{"nvidia/on-demand", 24000}}}};  // big holds everything; lab waits for a gang of 16
  use.tasks["big"] = {{"b1", 0, {{"nvidia/on-demand", 24000}}, false, 0}};
  use.tasks["lab"] = {{"l1", 0, {}, true, 16000}};
  auto fair = tenancy::fair_shares_now(ts, use);
  EXPECT_EQ(fair["lab"], 12000);
  EXPECT_EQ(fair["big"], 12000);
  // Two hours of lab holding nothing against a fair 12: it held none of its fair share.
  const auto now = *kube::parse_time("2026-11-23T12:00:00Z");
  auto s = tenancy::tenant_status(ts[1], use.tasks["lab"], {}, {}, nullptr, now, std::chrono::hours(168), fair["lab"]);
  ts[1].status = s;
  s = tenancy::tenant_status(ts[1], use.tasks["lab"], {}, {}, nullptr, now + std::chrono::hours(2), std::chrono::hours(168), fair["lab"]);
  EXPECT_EQ(s["fairShare"]["fairGpus"], "12");
  EXPECT_NEAR(std::stod(s["fairShare"]["fairGpuHours"].get<std::string>()), 24, 0.1);
  EXPECT_EQ(s["fairShare"]["heldOfFair"], "0.00");
  // The next two hours it holds its 12: half of its fair share over the four.
  ts[1].status = s;
  s = tenancy::tenant_status(ts[1], {{"l1", 0, {{"nvidia/on-demand", 12000}}, false, 0}}, {}, {}, nullptr, now + std::chrono::hours(4),
                             std::chrono::hours(168), fair["lab"]);
  EXPECT_EQ(s["fairShare"]["heldOfFair"], "0.50");
}

TEST(Tenancy, PrioritiesFollowTheTenantsDefaultAndMaximum) {
  auto t = tenant(R"({"metadata":{"name":"students"},"spec":{"namespaces":["s"],"maxPriority":30,"defaultPriority":10}})");
  bool capped = false;
  EXPECT_EQ(tenancy::effective_priority(std::nullopt, &t.spec, &capped), 10);
  EXPECT_EQ(tenancy::effective_priority(20, &t.spec, &capped), 20);
  EXPECT_FALSE(capped);
  EXPECT_EQ(tenancy::effective_priority(100, &t.spec, &capped), 30);
  EXPECT_TRUE(capped);
  EXPECT_EQ(tenancy::effective_priority(std::nullopt, nullptr), 0);
  EXPECT_EQ(tenancy::effective_priority(100, nullptr), 100);
}

}  // namespace
}  // namespace valley

namespace valley {
namespace {

// Writing an invalid Tenant's status again must change nothing (else every write would trigger
// the next through the watch).
TEST(Tenancy, AnInvalidTenantsStatusIsStableOnceWritten) {
  const auto t0 = *kube::parse_time("2026-11-23T12:00:00Z");
  auto first = tenancy::invalid_tenant_status(nlohmann::json::object(), "spec.weight: must be above 0", 3, t0);
  EXPECT_EQ(first["conditions"][0]["reason"], "InvalidSpec");
  EXPECT_EQ(tenancy::invalid_tenant_status(first, "spec.weight: must be above 0", 3, t0 + std::chrono::minutes(5)), first);
}

}  // namespace
}  // namespace valley
