// Tenants end to end (#18): two teams on the real API server, one borrowing the other's idle quota
// and shrinking when the owner comes back; a spent money budget holding new work (Wait) or stopping
// what runs (Suspend); the admission policies of deploy/policies refusing a priority above the
// tenant's maximum and a namespace without a tenant.
#include <iterator>
#include <map>
#include <sstream>

#include "operator/kube/config.h"
#include "operator/kube/error.h"
#include "operator/yaml_json.h"
#include "tests/e2e/task_fixture.h"

namespace valley::e2e {
namespace {

using kube::resources::kNamespaces;
using kube::resources::kPricingPolicies;
using kube::resources::kTenants;


int workers_of(const json& t) { return t.value("status", json::object()).value("replicas", 0); }

class TenantTest : public TaskTest {
 protected:
  void SetUp() override {
    TaskTest::SetUp();
    other = ns + "-b";
    ASSERT_NO_THROW(create_namespace_for_operators(*admin, other));
  }
  void TearDown() override {
    for (const auto& name : {ns + "-a", ns + "-b"}) {
      try {
        admin->remove(kTenants, "", name);
      } catch (const kube::KubeError&) {
      }
    }
    try {
      for (const auto& t : admin->list(kTrainingTasks, other).items) admin->remove(kTrainingTasks, other, t["metadata"]["name"]);
      admin->remove(kNamespaces, "", other);
      admin->remove(kPricingPolicies, "", ns);
    } catch (const kube::KubeError&) {
    }
    TaskTest::TearDown();
  }
  // Tenants span namespaces, and a tenant's quota what every task may use: the operator runs the
  // tasks of every namespace (these tests run alone, on the cluster's own nodes).
  std::vector<std::string> operator_flags() const override {
    return {"--planner-min-resize-interval=2s", "--unschedulable-timeout=3s", "--pricing-policy=" + ns,
            "--cost-interval=1s",           "--cost-settle=1s",          "--tenant-interval=1s",
            "--namespace="};
  }
  void tenant(const std::string& name, const std::string& owns, json spec) {
    spec["namespaces"] = {owns};
    admin->create(kTenants, "", {{"apiVersion", "valley.dev/v1beta1"}, {"kind", "Tenant"}, {"metadata", {{"name", name}}}, {"spec", spec}});
  }
  json tenant_status(const std::string& name) { return admin->get(kTenants, "", name).value("status", json::object()); }
  json task_in(const std::string& where, const std::string& name) { return admin->get(kTrainingTasks, where, name); }
  static json on_a100_od(json spec) {
    spec["worker"]["template"] = {{"spec", {{"nodeSelector", {{"valley.dev/pool", "a100-od"}}}}}};
    return spec;
  }
  // A PricingPolicy at 3.60 a GPU-hour, tenant `name` owning this namespace with a daily budget of
  // `amount` and `action`, and a task of 2 GPUs there; the task's spec.
  json two_gpus_under_budget(const std::string& name, const std::string& amount, const std::string& action, const std::string& task_name) {
    wait_until_no_active_valley_work(*admin);
    admin->create(kPricingPolicies, "",
                  {{"apiVersion", "valley.dev/v1beta1"},
                   {"kind", "PricingPolicy"},
                   {"metadata", {{"name", ns}}},
                   {"spec", json::parse(R"({"currency":"USD","gpu":[{"onDemand":"3.60"}]})")}});
    tenant(name, ns, {{"budget", {{"amount", amount}, {"period", "Day"}, {"action", action}}}});
    json spec = {{"taskType", "Single"}, {"image", "valley.dev/examples/train:1"}, {"worker", {{"gpus", "2"}}}};
    apply(spec, task_name);
    return spec;
  }
  std::string other;
};

TEST_F(TenantTest, ABorrowerShrinksWhenTheOwnerComesBackForItsQuota) {
  wait_until_no_active_valley_work(*admin);
  const std::string a = ns + "-a", b = ns + "-b";
  tenant(a, ns, json::parse(R"({"quotas":[{"pool":"nvidia/on-demand","nominal":8}]})"));
  tenant(b, other, json::parse(R"({"quotas":[{"pool":"nvidia/on-demand","nominal":8}]})"));
  // a's elastic task takes all 16 A100s: 8 of its own, and 8 of b's it borrows while b is idle.
  json elastic = on_a100_od(mpi_spec(2, 16));
  elastic["priority"] = 50;
  apply(elastic, "elastic");
  ASSERT_TRUE(eventually([&] { return phase("elastic") == "Running" && workers_of(task("elastic")) == 16; }, 90s))
      << task("elastic").dump(2) << operator_log();
  ASSERT_TRUE(eventually([&] { return tenant_status(a).value("borrowed", "") == "8"; }, 30s)) << tenant_status(a).dump(2);
  EXPECT_EQ(tenant_status(a).value("gpus", ""), "16/8");
  // (b lends nothing here: the pool nvidia/on-demand also has the MIG and time-sliced nodes, which no
  // tenant is guaranteed, and borrowing is counted against those first.)
  EXPECT_EQ(tenant_status(b).value("lent", ""), "0");
  {  // valleyctl tenants: a's row shows what it uses and borrows, b's its idle nominal
    ChildProcess ctl({binary("kubectl-valley"), "tenants", "--kubeconfig=" + admin_kubeconfig_path()},
                     ::testing::TempDir() + "/valleyctl-tenants-" + ns + ".log");
    ASSERT_EQ(ctl.wait(30s), 0) << ctl.output();
    // Its cells by column (TENANT NAMESPACES GPUS BORROWED ...), split at whitespace.
    std::istringstream lines(ctl.output());
    std::string line;
    std::map<std::string, std::vector<std::string>> row;
    while (std::getline(lines, line)) {
      std::istringstream cells(line);
      std::vector<std::string> r{std::istream_iterator<std::string>(cells), std::istream_iterator<std::string>()};
      if (!r.empty()) row[r[0]] = r;
    }
    ASSERT_GE(row[a].size(), 4u) << ctl.output();
    ASSERT_GE(row[b].size(), 4u) << ctl.output();
    EXPECT_EQ(row[a][1], ns) << ctl.output();
    EXPECT_EQ(row[a][2], "16/8") << ctl.output();  // GPUs
    EXPECT_EQ(row[a][3], "8") << ctl.output();     // borrowed
    EXPECT_EQ(row[b][2], "0/8") << ctl.output();
  }
  // b's task, of a lower priority, comes for b's own 8: a gives them back by shrinking, not by
  // being preempted, and keeps running on its own 8.
  apply_in(other, on_a100_od(mpi_spec(8, 8)), "owner");
  ASSERT_TRUE(eventually([&] { return task_in(other, "owner").value("status", json::object()).value("phase", "") == "Running"; }, 90s))
      << task_in(other, "owner").dump(2) << task("elastic").dump(2) << operator_log();
  ASSERT_TRUE(eventually([&] { return phase("elastic") == "Running" && workers_of(task("elastic")) == 8; }, 90s)) << task("elastic").dump(2);
  json shrunk = task("elastic");
  EXPECT_EQ(shrunk["status"]["restarts"].value("resizes", 0), 1) << shrunk["status"].dump(2);
  EXPECT_EQ(shrunk["status"]["restarts"].value("preemptions", 0), 0) << "shrinking was enough; no preemption";
  EXPECT_NE(shrunk["status"].value("lastResizeReason", "").find("tenant " + b + " reclaims its quota lent to " + a), std::string::npos)
      << shrunk["status"].dump(2);
  EXPECT_TRUE(eventually([&] { return tenant_status(a).value("borrowed", "") == "0" && tenant_status(b).value("gpus", "") == "8/8"; }, 30s))
      << tenant_status(a).dump(2) << tenant_status(b).dump(2);
  EXPECT_EQ(tenant_status(b)["conditions"][0]["status"], "True") << tenant_status(b).dump(2);
}

// A gang larger than its tenant's nominal in any one pool: a has 8 A100s of nominal on demand and 8
// on spot; its 12-worker gang is admitted by reclaiming what b borrows across both pools, by
// shrinking b's elastic task (never below b's own 16).
TEST_F(TenantTest, AGangLargerThanEitherPoolsNominalReclaimsAcrossBoth) {
  wait_until_no_active_valley_work(*admin);
  const std::string a = ns + "-a", b = ns + "-b";
  const json quotas = json::parse(R"({"quotas":[{"pool":"nvidia/on-demand","nominal":8},{"pool":"nvidia/spot","nominal":8}]})");
  tenant(a, ns, quotas);
  tenant(b, other, quotas);
  // The A100 nodes of both pools (a task that selects its nodes may use spot ones without a checkpoint).
  auto on_a100s = [](json spec) {
    spec["worker"]["template"] = {{"spec", {{"nodeSelector", {{"node.kubernetes.io/instance-type", "p4de.24xlarge"}}}}}};
    return spec;
  };
  json wide = on_a100s(mpi_spec(4, 32));
  wide["priority"] = 50;
  apply_in(other, wide, "wide");
  auto workers_in = [&](const std::string& where, const std::string& name) { return workers_of(task_in(where, name)); };
  auto phase_in = [&](const std::string& where, const std::string& name) {
    return task_in(where, name).value("status", json::object()).value("phase", "");
  };
  ASSERT_TRUE(eventually([&] { return phase_in(other, "wide") == "Running" && workers_in(other, "wide") == 32; }, 120s))
      << task_in(other, "wide").dump(2) << operator_log();
  ASSERT_TRUE(eventually([&] { return tenant_status(b).value("borrowed", "") == "16"; }, 30s)) << tenant_status(b).dump(2);
  // a's gang of 12: neither pool's nominal (8) holds it; both together (16) do.
  apply(on_a100s(mpi_spec(12, 12)), "gang");
  ASSERT_TRUE(eventually([&] { return phase("gang") == "Running" && workers_of(task("gang")) == 12; }, 120s))
      << task("gang").dump(2) << task_in(other, "wide").dump(2) << operator_log();
  ASSERT_TRUE(eventually([&] { return phase_in(other, "wide") == "Running" && workers_in(other, "wide") == 20; }, 90s))
      << task_in(other, "wide").dump(2);
  // The gang's admission says whose workers it took: a task of tenant b, not named (its namespace's
  // names are not a's to read).
  std::string admitted;
  for (const auto& c : task("gang")["status"].value("conditions", json::array()))
    if (c.value("type", "") == "Admitted") admitted = c.value("message", "");
  EXPECT_NE(admitted.find("its GPUs come back from another namespace's task of tenant " + b + " shrunk 32 -> 20"), std::string::npos) << admitted;
  EXPECT_EQ(admitted.find(other + "/wide"), std::string::npos) << admitted;
  const json shrunk = task_in(other, "wide");
  EXPECT_EQ(shrunk["status"]["restarts"].value("preemptions", 0), 0) << "shrinking was enough; no preemption";
  EXPECT_NE(shrunk["status"].value("lastResizeReason", "").find("tenant " + a + " reclaims its quota lent to " + b), std::string::npos)
      << shrunk["status"].dump(2);
  // a holds 12 of its 16; b its own 16 and 4 of a's idle nominal.
  EXPECT_TRUE(eventually([&] { return tenant_status(a).value("gpus", "") == "12/16" && tenant_status(b).value("gpus", "") == "20/16"; }, 30s))
      << tenant_status(a).dump(2) << tenant_status(b).dump(2);
  // Each tenant's fair share now (both get what they ask for here) and the part of it each held.
  EXPECT_TRUE(eventually([&] { return tenant_status(a)["fairShare"].value("fairGpus", "") == "12"; }, 30s)) << tenant_status(a).dump(2);
  // heldOfFair appears once the decayed fair GPU-hours are above zero (the status after the next update).
  EXPECT_TRUE(eventually([&] { return !tenant_status(b)["fairShare"].value("heldOfFair", "").empty(); }, 30s)) << tenant_status(b).dump(2);
}

TEST_F(TenantTest, ASpentBudgetHoldsNewTasksAndTheTenantSaysUntilWhen) {
  const std::string a = ns + "-a";
  // 2 GPUs at 3.60/h spend 0.01 in 5 s.
  json first = two_gpus_under_budget(a, "0.01", "Wait", "first");
  ASSERT_TRUE(wait_phase("Running", 60s, "first")) << task("first").dump(2) << operator_log();
  ASSERT_TRUE(eventually([&] {
    for (const auto& c : tenant_status(a).value("conditions", json::array()))
      if (c["type"] == "BudgetExhausted" && c["status"] == "True") return true;
    return false;
  }, 60s)) << tenant_status(a).dump(2) << task("first").dump(2);
  // ...and an Event on the Tenant says so (cluster-scoped objects' Events live in "default").
  EXPECT_TRUE(eventually([&] {
    for (const auto& e : admin->list(kube::resources::kEvents, "default").items)
      if (e.value("reason", "") == "BudgetExhausted" && e.value("regarding", json::object()).value("name", "") == a &&
          e.value("note", "").find("until the period resets at") != std::string::npos)
        return true;
    return false;
  }, 30s));
  // Nothing new starts; what runs goes on (Wait, not Suspend); the reason says when it resets.
  apply(first, "second");
  ASSERT_TRUE(eventually([&] {
    return task("second").value("status", json::object()).value("message", "").rfind("TenantBudget: tenant " + a + " spent", 0) == 0;
  }, 30s)) << task("second").dump(2);
  std::this_thread::sleep_for(3s);
  EXPECT_EQ(phase("second"), "Pending");
  EXPECT_TRUE(pods("second").empty());
  EXPECT_EQ(phase("first"), "Running");
  EXPECT_NE(task("second")["status"]["message"].get<std::string>().find("until the period resets at"), std::string::npos);
  EXPECT_NE(tenant_status(a)["spend"].value("summary", "").find("/0.01 USD"), std::string::npos) << tenant_status(a).dump(2);
}

TEST_F(TenantTest, ASpentBudgetWithSuspendStopsWhatRunsAndItsCostStops) {
  const std::string a = ns + "-a";
  two_gpus_under_budget(a, "0.02", "Suspend", "runner");
  ASSERT_TRUE(wait_phase("Running", 60s, "runner")) << task("runner").dump(2) << operator_log();
  // Spent: the running task is stopped (its pods go), says why, and is not charged on.
  ASSERT_TRUE(eventually([&] { return phase("runner") != "Running" && pods("runner").empty(); }, 90s))
      << task("runner").dump(2) << tenant_status(a).dump(2) << operator_log();
  EXPECT_EQ(task("runner")["status"].value("message", "").rfind("TenantBudget: tenant " + a + " spent", 0), 0u) << task("runner").dump(2);
  const std::string accrued = task("runner")["status"]["cost"].value("accrued", "");
  std::this_thread::sleep_for(4s);
  EXPECT_EQ(task("runner")["status"]["cost"].value("accrued", ""), accrued) << "a stopped task costs nothing more";
  EXPECT_TRUE(pods("runner").empty());
  // Raising the budget lets it run again.
  admin->patch(kTenants, "", a, kube::PatchType::Merge, json::parse(R"({"spec":{"budget":{"amount":"100"}}})"));
  EXPECT_TRUE(wait_phase("Running", 60s, "runner")) << task("runner").dump(2) << tenant_status(a).dump(2);
}

// Run it on a fresh API server: one where this test already created and deleted its policies may
// fail to find the binding's ConfigMap params although it exists (kubernetes/kubernetes#133827).
TEST_F(TenantTest, AdmissionRefusesAPriorityAboveTheTenantsMaximumAndANamespaceWithoutTenant) {
  const std::string a = ns + "-a", b = ns + "-b";
  tenant(a, ns, json::parse(R"({"maxPriority":50})"));
  // The operator publishes ownership where its admission policies read it.
  ASSERT_TRUE(eventually([&] {
    try {
      auto data = admin->get(kube::resources::kConfigMaps, ns, "valley-tenancy").value("data", json::object());
      return data.value(ns, "") == a && data.value(ns + ".maxPriority", "") == "50";
    } catch (const kube::KubeError&) {
      return false;
    }
  }, 30s)) << operator_log();
  // Without the policy, the task is accepted; Valley plans it at the tenant's maximum and says so.
  apply(json{{"taskType", "Single"}, {"image", "valley.dev/examples/train:1"}, {"worker", {{"gpus", "1"}}}, {"priority", 80}}, "capped");
  EXPECT_TRUE(eventually([&] {
    for (const auto& e : admin->list(kube::resources::kEvents, ns).items)
      if (e.value("reason", "") == "PriorityCapped" && e.value("regarding", json::object()).value("name", "") == "capped" &&
          e.value("note", "").find("spec.priority 80 is above tenant " + a + "'s maxPriority; planned at 50") != std::string::npos)
        return true;
    return false;
  }, 30s)) << operator_log();
  ASSERT_NO_FATAL_FAILURE(install_policy("tenant-priority.yaml", {ns, other}, ns));
  ASSERT_NO_FATAL_FAILURE(install_policy("require-tenant.yaml", {ns, other}, ns));
  json spec = {{"taskType", "Single"}, {"image", "valley.dev/examples/train:1"}, {"worker", {{"gpus", "1"}}}, {"priority", 90}};
  // Policies take a moment to be in force.
  std::string why;
  ASSERT_TRUE(eventually([&] { return !(why = refused(spec, "too-high", ns)).empty(); }, 30s));
  EXPECT_NE(why.find("spec.priority 90 is above 50, the maxPriority of tenant " + a), std::string::npos) << why;
  spec["priority"] = 50;
  EXPECT_EQ(refused(spec, "at-max", ns), "");
  spec.erase("priority");
  EXPECT_EQ(refused(spec, "unset", ns), "") << "no priority: the tenant's default applies";
  // A namespace no tenant owns is refused, until a tenant takes it. Each policy comes into force on its own
  // (the API server loads policies and bindings asynchronously), so the second is waited for too.
  EXPECT_TRUE(eventually([&] { return !(why = refused(spec, "homeless", other)).empty(); }, 30s));
  EXPECT_NE(why.find("namespace " + other + " belongs to no Tenant"), std::string::npos) << why;
  tenant(b, other, json::object());
  EXPECT_TRUE(eventually([&] { return refused(spec, "homed", other).empty(); }, 30s)) << operator_log();
}

}  // namespace
}  // namespace valley::e2e

namespace valley::e2e {
namespace {

// The priority multiplier bills the priority a task is planned at: its tenant's defaultPriority when
// it sets none, its tenant's maxPriority when it asks for more (no admission policy here). Billing
// the raw spec.priority charged the first 0.8 and the second 1.6 while both were planned at 50.
TEST_F(TenantTest, ThePriorityMultiplierBillsThePriorityTheTaskIsPlannedAt) {
  const std::string a = ns + "-a";
  admin->create(kPricingPolicies, "",
                {{"apiVersion", "valley.dev/v1beta1"},
                 {"kind", "PricingPolicy"},
                 {"metadata", {{"name", ns}}},
                 {"spec", json::parse(R"({"currency":"USD","gpu":[{"onDemand":"3.60"}],"priority":{"multipliers":[
                    {"minPriority":0,"multiplier":"0.8"},{"minPriority":50,"multiplier":"1.2"},{"minPriority":90,"multiplier":"1.6"}]}})")}});
  tenant(a, ns, {{"defaultPriority", 50}, {"maxPriority", 50}});
  json spec = {{"taskType", "Single"}, {"image", "valley.dev/examples/train:1"}, {"worker", {{"gpus", "1"}}}};
  apply(spec, "unset");
  spec["priority"] = 95;
  apply(spec, "above");
  for (const char* name : {"unset", "above"}) {
    json cost;
    ASSERT_TRUE(eventually([&] {
      cost = task(name).value("status", json::object()).value("cost", json::object());
      return cost.value("accruedMicros", int64_t{0}) > 0;
    }, 60s)) << name << ": " << task(name).dump(2) << operator_log();
    EXPECT_EQ(cost.value("priority", -1), 50) << name << ": " << cost.dump(2);
    EXPECT_EQ(cost.value("multiplier", ""), "1.2") << name << ": " << cost.dump(2);
  }
}

}  // namespace
}  // namespace valley::e2e
