// Tenants end to end (#18): two teams on the real API server, one borrowing the other's idle quota
// and shrinking when the owner comes back; a spent money budget holding new work.
#include "operator/kube/error.h"
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
  std::vector<std::string> operator_flags() const override {
    return {"--planner-min-resize-interval=2s", "--unschedulable-timeout=3s", "--pricing-policy=" + ns,
            "--cost-interval=1s",           "--cost-settle=1s",          "--tenant-interval=1s"};
  }
  void tenant(const std::string& name, const std::string& owns, json spec) {
    spec["namespaces"] = {owns};
    admin->create(kTenants, "", {{"apiVersion", "valley.dev/v1alpha1"}, {"kind", "Tenant"}, {"metadata", {{"name", name}}}, {"spec", spec}});
  }
  json tenant_status(const std::string& name) { return admin->get(kTenants, "", name).value("status", json::object()); }
  json apply_in(const std::string& where, const json& spec, const std::string& name) {
    return admin->create(kTrainingTasks, where,
                         {{"apiVersion", "valley.dev/v1alpha1"}, {"kind", "TrainingTask"}, {"metadata", {{"name", name}}}, {"spec", spec}});
  }
  json task_in(const std::string& where, const std::string& name) { return admin->get(kTrainingTasks, where, name); }
  static json on_a100_od(json spec) {
    spec["worker"]["template"] = {{"spec", {{"nodeSelector", {{"valley.dev/pool", "a100-od"}}}}}};
    return spec;
  }
  std::string other;
};

TEST_F(TenantTest, ABorrowerShrinksWhenTheOwnerComesBackForItsQuota) {
  wait_until_no_valley_pods(*admin);
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
  // b's task, of a lower priority, comes for b's own 8: a gives them back by shrinking, not by
  // being preempted, and keeps running on its own 8.
  apply_in(other, on_a100_od(mpi_spec(8, 8)), "owner");
  ASSERT_TRUE(eventually([&] { return task_in(other, "owner").value("status", json::object()).value("phase", "") == "Running"; }, 90s))
      << task_in(other, "owner").dump(2) << task("elastic").dump(2) << operator_log();
  ASSERT_TRUE(eventually([&] { return phase("elastic") == "Running" && workers_of(task("elastic")) == 8; }, 90s)) << task("elastic").dump(2);
  json shrunk = task("elastic");
  EXPECT_EQ(shrunk["status"]["restarts"].value("resizes", 0), 1) << shrunk["status"].dump(2);
  EXPECT_EQ(shrunk["status"]["restarts"].value("preemptions", 0), 0) << "shrinking was enough; no preemption";
  EXPECT_TRUE(eventually([&] { return tenant_status(a).value("borrowed", "") == "0" && tenant_status(b).value("gpus", "") == "8/8"; }, 30s))
      << tenant_status(a).dump(2) << tenant_status(b).dump(2);
  EXPECT_EQ(tenant_status(b)["conditions"][0]["status"], "True") << tenant_status(b).dump(2);
}

TEST_F(TenantTest, ASpentBudgetHoldsNewTasksAndTheTenantSaysUntilWhen) {
  wait_until_no_valley_pods(*admin);
  admin->create(kPricingPolicies, "",
                {{"apiVersion", "valley.dev/v1alpha1"},
                 {"kind", "PricingPolicy"},
                 {"metadata", {{"name", ns}}},
                 {"spec", json::parse(R"({"currency":"USD","gpu":[{"onDemand":"3.60"}]})")}});
  const std::string a = ns + "-a";
  // 2 GPUs at 3.60/h spend 0.01 in 5 s.
  tenant(a, ns, json::parse(R"({"budget":{"amount":"0.01","period":"Day","action":"Wait"}})"));
  json first = {{"taskType", "Single"}, {"image", "valley.dev/examples/train:1"}, {"worker", {{"gpus", "2"}}}};
  apply(first, "first");
  ASSERT_TRUE(wait_phase("Running", 60s, "first")) << task("first").dump(2) << operator_log();
  ASSERT_TRUE(eventually([&] {
    for (const auto& c : tenant_status(a).value("conditions", json::array()))
      if (c["type"] == "BudgetExhausted" && c["status"] == "True") return true;
    return false;
  }, 60s)) << tenant_status(a).dump(2) << task("first").dump(2);
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

}  // namespace
}  // namespace valley::e2e
