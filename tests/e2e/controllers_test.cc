// Each of the controllers' pieces on its own, in this process, against the real API server (no
// operator process): the planning loop (snapshot -> plan -> AdmissionBoard), the TrainingTask,
// Tenant, PricingPolicy and namespace-ownership reconcilers, each called directly through its
// reconcile(), so a test sees exactly what one reconcile does and returns.
#include <atomic>
#include <thread>

#include "controllers/task/accounting.h"
#include "controllers/task/admission_board.h"
#include "controllers/task/cluster_cache.h"
#include "controllers/task/ownership_reconciler.h"
#include "controllers/task/planning_loop.h"
#include "controllers/task/policy_reconciler.h"
#include "controllers/task/task_reconciler.h"
#include "controllers/task/tenant_reconciler.h"
#include "operator/kube/error.h"
#include "operator/kube/events.h"
#include "operator/kube/json_fields.h"
#include "tests/e2e/task_fixture.h"

namespace valley::e2e {
namespace {

using kube::resources::kConfigMaps;
using kube::resources::kPricingPolicies;
using kube::resources::kTenants;

// The pieces, wired by hand: one cache, the board, the planning loop, and the reconcilers (their
// loops never started: the tests call reconcile()).
class ControllersTest : public ClusterTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    wait_until_no_active_valley_work(*admin);
    options.pricing_policy = ns;  // absent unless a test makes it
    options.ownership_namespace = ns;
    options.ownership_name = "tenancy";
    options.tenant_interval = std::chrono::seconds(30);
    client = std::make_unique<kube::Client>(admin_config());
    events = std::make_unique<kube::EventRecorder>(*client, kube::EventOptions{});
    cache = std::make_unique<task::ClusterCache>(*client, options);
    refusals = std::make_unique<task::Refusals>(options.refused_retry);
    planning = std::make_unique<task::PlanningLoop>(*cache, board, *refusals, *events, options,
                                                    [this](const std::string& key) { changed.push_back(key); });
    auto replan = [this] { ++replans; };
    accounting = std::make_unique<task::Accounting>(*client, *cache, options, [this] { return board.admitted_count(); });
    tasks = std::make_unique<task::TaskReconciler>(*client, *events, *cache, board, *refusals, *accounting, options, replan);
    tenants = std::make_unique<task::TenantReconciler>(*client, *events, *cache, options, replan);
    policies = std::make_unique<task::PolicyReconciler>(*client, *events, *cache, options, [this] { ++policy_changes; });
    ownership = std::make_unique<task::OwnershipReconciler>(*client, *cache, options);
    cache->start(stop);
  }
  void TearDown() override {
    stop = true;
    cache->stop();
    // Pods this test's reconciler made hold the accounting finalizer and no operator runs to
    // release them: released here, so the namespace can go.
    try {
      for (const auto& p : admin->list(kPods, ns).items)
        admin->patch(kPods, ns, p["metadata"]["name"], kube::PatchType::Merge, {{"metadata", {{"finalizers", nullptr}}}});
    } catch (const kube::KubeError&) {
    }
    for (const auto& name : {ns}) {
      try {
        admin->remove(kTenants, "", name);
      } catch (const kube::KubeError&) {
      }
      try {
        admin->remove(kPricingPolicies, "", name);
      } catch (const kube::KubeError&) {
      }
    }
    ClusterTest::TearDown();
  }
  json create_task(const std::string& name, const json& spec) {
    return admin->create(kTrainingTasks, ns,
                         {{"apiVersion", "valley.dev/v1beta1"}, {"kind", "TrainingTask"}, {"metadata", {{"name", name}}}, {"spec", spec}});
  }
  // A Tenant of the test's name owning its namespace, `nominal` GPUs of nvidia/on-demand.
  void create_tenant(int nominal) {
    json tenant = {{"apiVersion", "valley.dev/v1beta1"}, {"kind", "Tenant"}, {"metadata", {{"name", ns}}}};
    tenant["spec"]["namespaces"] = json::array({ns});
    tenant["spec"]["quotas"] = json::array({{{"pool", "nvidia/on-demand"}, {"nominal", nominal}}});
    admin->create(kTenants, "", tenant);
  }
  // Waits until the cache shows the object (and for a task, at least this resourceVersion).
  bool cached_task(const std::string& name, const std::string& rv = "") {
    return eventually(
        [&] {
          auto t = cache->task(ns + "/" + name);
          return t && (rv.empty() || (*t)["metadata"].value("resourceVersion", "") == rv);
        },
        10s);
  }

  task::ControllerOptions options;
  std::unique_ptr<kube::Client> client;
  std::unique_ptr<kube::EventRecorder> events;
  std::unique_ptr<task::ClusterCache> cache;
  task::AdmissionBoard board;
  std::unique_ptr<task::Refusals> refusals;
  std::unique_ptr<task::PlanningLoop> planning;
  std::unique_ptr<task::Accounting> accounting;
  std::unique_ptr<task::TaskReconciler> tasks;
  std::unique_ptr<task::TenantReconciler> tenants;
  std::unique_ptr<task::PolicyReconciler> policies;
  std::unique_ptr<task::OwnershipReconciler> ownership;
  std::atomic<bool> stop{false};
  std::vector<std::string> changed;
  int replans = 0, policy_changes = 0;
};

TEST_F(ControllersTest, PlanningLoopAdmitsAGangThatFitsAndSaysWhyOneThatDoesNotWaits) {
  create_task("small", mpi_spec(2, 2));
  create_task("huge", mpi_spec(900, 900));
  ASSERT_TRUE(cached_task("small") && cached_task("huge"));
  planning->plan_once();
  const auto small = board.admission(ns + "/small"), huge = board.admission(ns + "/huge");
  ASSERT_TRUE(small && huge);
  EXPECT_TRUE(small->admitted);
  EXPECT_EQ(small->workers, 2);
  ASSERT_EQ(small->placement.size(), 2u);
  for (const auto& w : small->placement) EXPECT_TRUE(cache->node(w.node) != nullptr) << w.node;
  EXPECT_FALSE(huge->admitted);
  EXPECT_NE(huge->reason.find("InsufficientCapacity"), std::string::npos) << huge->reason;
  EXPECT_GE(board.admitted_count(), 1u);
  // Both decisions are new: both tasks are handed to the TrainingTask queue, once each.
  EXPECT_EQ(std::count(changed.begin(), changed.end(), ns + "/small"), 1);
  EXPECT_EQ(std::count(changed.begin(), changed.end(), ns + "/huge"), 1);
  // Planned again: the admitted task keeps its placement (its decision now reads Keep, and the
  // waiting one's reason counts the GPUs the first plan published as taken: both handed over once).
  planning->plan_once();
  ASSERT_TRUE(board.admission(ns + "/small")->admitted);
  EXPECT_EQ(board.admission(ns + "/small")->placement.size(), 2u);
  for (size_t k = 0; k < 2; ++k) EXPECT_EQ(board.admission(ns + "/small")->placement[k].node, small->placement[k].node);
  // And again with nothing new: nothing handed over.
  changed.clear();
  planning->plan_once();
  EXPECT_TRUE(changed.empty()) << changed.front();
}

TEST_F(ControllersTest, TaskReconcilerCreatesTheAdmittedGangOnceAndWritesItsStatus) {
  create_task("job", mpi_spec(2, 2));
  ASSERT_TRUE(cached_task("job"));
  planning->plan_once();
  const task::Result first = tasks->reconcile(ns + "/job");
  EXPECT_TRUE(first.ok);
  const json after = admin->get(kTrainingTasks, ns, "job");
  EXPECT_EQ(after["status"].value("phase", ""), "Admitted") << after.dump(2);
  EXPECT_EQ(after["status"].value("epoch", 0), 1);
  // The launcher and two workers (each held until its cost is written: the accounting finalizer),
  // and the headless Service.
  auto pods = admin->list(kPods, ns).items;
  EXPECT_EQ(pods.size(), 3u);
  int workers = 0;
  for (const auto& p : pods) {
    if (kube::string_at(kube::object_at(kube::object_at(p, "metadata"), "labels"), "valley.dev/role") != "worker") continue;
    ++workers;
    EXPECT_EQ(kube::object_at(p, "metadata").value("finalizers", json::array()), json::array({"valley.dev/accounting"})) << p.dump();
  }
  EXPECT_EQ(workers, 2);
  EXPECT_NO_THROW(admin->get(kube::resources::kServices, ns, "job-workers"));
  // Reconciled again once the cache shows its own write: nothing is created twice.
  ASSERT_TRUE(cached_task("job", after["metadata"]["resourceVersion"]));
  ASSERT_TRUE(eventually([&] { return cache->pods_owned_by(ns, after["metadata"]["uid"]).size() == 3; }, 10s));
  EXPECT_TRUE(tasks->reconcile(ns + "/job").ok);
  EXPECT_EQ(admin->list(kPods, ns).items.size(), 3u);
  EXPECT_EQ(admin->get(kTrainingTasks, ns, "job")["status"].value("epoch", 0), 1);
}

TEST_F(ControllersTest, TenantReconcilerWritesItsStatusAndComesBackAfterTheInterval) {
  create_tenant(4);
  ASSERT_TRUE(eventually([&] { return cache->tenants().store().get(ns) != nullptr; }, 10s));
  EXPECT_TRUE(ownership->reconcile().ok);
  const task::Result r = tenants->reconcile(ns);
  EXPECT_TRUE(r.ok);
  ASSERT_TRUE(r.requeue_after);
  EXPECT_EQ(*r.requeue_after, std::chrono::milliseconds(30000));
  EXPECT_GE(replans, 1) << "a Tenant's status changes what the planner may admit";
  const json status = admin->get(kTenants, "", ns).value("status", json::object());
  EXPECT_TRUE(status.contains("usage")) << status.dump(2);
  EXPECT_EQ(status["usage"]["nvidia/on-demand"].value("nominalMilli", int64_t{0}), 4000) << status.dump(2);
  // Nothing but time changed: not written again, and due when the interval since the last write ends.
  const std::string rv = admin->get(kTenants, "", ns)["metadata"]["resourceVersion"];
  ASSERT_TRUE(eventually([&] { return (*cache->tenants().store().get(ns))["metadata"].value("resourceVersion", "") == rv; }, 10s));
  const task::Result again = tenants->reconcile(ns);
  EXPECT_TRUE(again.ok);
  ASSERT_TRUE(again.requeue_after);
  EXPECT_LE(*again.requeue_after, std::chrono::milliseconds(30000));
  EXPECT_EQ(admin->get(kTenants, "", ns)["metadata"]["resourceVersion"], rv);
}

TEST_F(ControllersTest, PolicyReconcilerPutsAValidPolicyInForceAndReportsAnInvalidOne) {
  auto policy = [&](const std::string& zone) {
    return json{{"apiVersion", "valley.dev/v1beta1"},
                {"kind", "PricingPolicy"},
                {"metadata", {{"name", ns}}},
                {"spec", {{"gpu", {{{"onDemand", "1.00"}}}}, {"electricity", {{"timeZone", zone}}}}}};
  };
  admin->create(kPricingPolicies, "", policy("Mars/Olympus_Mons"));
  ASSERT_TRUE(eventually([&] { return cache->pricing().store().get(ns) != nullptr; }, 10s));
  EXPECT_TRUE(policies->reconcile(ns).ok);
  EXPECT_EQ(cache->policy(), nullptr);
  EXPECT_EQ(policy_changes, 1);
  auto valid = [&] {
    for (const auto& c : admin->get(kPricingPolicies, "", ns).value("status", json::object()).value("conditions", json::array()))
      if (c["type"] == "Valid") return c["status"].get<std::string>();
    return std::string();
  };
  EXPECT_EQ(valid(), "False");
  json current = admin->get(kPricingPolicies, "", ns);
  current["spec"]["electricity"]["timeZone"] = "UTC";
  const std::string rv = admin->update(kPricingPolicies, current)["metadata"]["resourceVersion"];
  ASSERT_TRUE(eventually([&] { return (*cache->pricing().store().get(ns))["metadata"].value("resourceVersion", "") == rv; }, 10s));
  EXPECT_TRUE(policies->reconcile(ns).ok);
  ASSERT_NE(cache->policy(), nullptr);
  EXPECT_EQ(cache->policy()->name, ns);
  EXPECT_EQ(valid(), "True");
  // A policy of another name is validated but never put in force.
  EXPECT_TRUE(policies->reconcile(ns + "-absent").ok);
  EXPECT_EQ(policy_changes, 2);
}

// A worker can start and lose its node before any accrual wrote its ledger entry (the status waits
// out its coalescing window, or the leader is between writes): it is priced by its node as the
// cache last saw it, not dropped.
TEST_F(ControllersTest, APodWhoseNodeWentBeforeItsFirstAccrualIsPricedAsTheNodeWas) {
  admin->create(kPricingPolicies, "",
                {{"apiVersion", "valley.dev/v1beta1"},
                 {"kind", "PricingPolicy"},
                 {"metadata", {{"name", ns}}},
                 {"spec", json::parse(R"({"gpu":[{"onDemand":"3.60","spot":"1.80"}]})")}});
  ASSERT_TRUE(eventually([&] { return cache->pricing().store().get(ns) != nullptr; }, 10s));
  EXPECT_TRUE(policies->reconcile(ns).ok);
  ASSERT_NE(cache->policy(), nullptr);
  const std::string node = ns + "-gone";
  admin->create(kube::resources::kNodes, "", kwok_gpu_node(node, {{"karpenter.sh/capacity-type", "spot"}}, 8));
  ASSERT_TRUE(eventually([&] { return cache->node(node) != nullptr; }, 10s));
  admin->remove(kube::resources::kNodes, "", node);
  ASSERT_TRUE(eventually([&] { return cache->node(node) == nullptr; }, 10s));
  ASSERT_TRUE(cache->node_as_last_seen(node) != nullptr);
  EXPECT_TRUE(cache->node_as_last_seen(ns + "-never") == nullptr);

  create_task("job", mpi_spec(1, 1));
  ASSERT_TRUE(cached_task("job"));
  lifecycle::Observed o;
  o.task = *cache->task(ns + "/job");
  o.parsed = api::parse_task(o.task);
  ASSERT_TRUE(o.parsed.spec);
  o.now = std::chrono::system_clock::now();
  api::Pod worker;  // 4 GPUs, running for 100 s on the node now gone
  worker.uid = ns + "-worker";
  worker.name = "job-worker-0";
  worker.node_name = node;
  worker.containers.push_back({"worker", {{"nvidia.com/gpu", 4}}, {{"nvidia.com/gpu", 4}}});
  api::PodContainerStatus running;
  running.name = "worker";
  running.running = true;
  running.running_since = std::chrono::floor<std::chrono::seconds>(o.now) - std::chrono::seconds(100);
  worker.container_statuses.push_back(running);
  o.now = *running.running_since + std::chrono::seconds(100);
  const json cost = accounting->cost_status(o, {std::make_shared<const api::Pod>(worker)}, false, true, {worker.uid});
  // 4 GPUs x 100 s at the spot rate, 1.80 a GPU-hour: 0.20.
  EXPECT_EQ(kube::object_at(kube::object_at(cost, "breakdown"), "gpuMilliSeconds").value("nvidia/spot", int64_t{0}), 400'000) << cost.dump(2);
  EXPECT_EQ(cost.value("accruedMicros", int64_t{0}), 200'000) << cost.dump(2);
}

TEST_F(ControllersTest, OwnershipReconcilerResolvesAndPublishesWhichTenantOwnsWhichNamespace) {
  create_tenant(1);
  ASSERT_TRUE(eventually([&] { return cache->tenants().store().get(ns) != nullptr; }, 10s));
  EXPECT_TRUE(ownership->reconcile().ok);
  EXPECT_EQ(cache->owner_of_namespace(ns).value_or(""), ns);
  const json published = admin->get(kConfigMaps, ns, "tenancy");
  EXPECT_EQ(published["metadata"]["labels"]["app.kubernetes.io/managed-by"], "valley");
  EXPECT_NE(published["data"].dump().find(ns), std::string::npos) << published["data"].dump();
}

}  // namespace
}  // namespace valley::e2e
