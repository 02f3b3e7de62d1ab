// The loops on an in-memory API server (FakeApi): one cluster cache over its watches, the admission
// board, the planning loop, and the TrainingTask, Tenant, PricingPolicy and ownership reconcilers,
// each called through its reconcile() so a test sees exactly what one reconcile does and returns.
// What only a real API server proves (RBAC, admission, the garbage collector, kwok) stays in e2e.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "controllers/task/accounting.h"
#include "controllers/task/admission_board.h"
#include "controllers/task/cluster_cache.h"
#include "controllers/task/ownership_reconciler.h"
#include "controllers/task/planning_loop.h"
#include "controllers/task/policy_reconciler.h"
#include "controllers/task/task_reconciler.h"
#include "controllers/task/tenant_reconciler.h"
#include "operator/kube/events.h"
#include "operator/kube/json_fields.h"
#include "tests/unit/support/fake_api.h"
#include "tests/unit/support/loops_support.h"

namespace valley::task {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;
namespace res = kube::resources;

using testing::eventually;
using testing::gpu_node;

json mpi_spec(int min, int max) {
  return {{"taskType", "MPI"},
          {"replicas", {{"min", min}, {"max", max}}},
          {"master", {{"image", "valley.dev/examples/launcher:1"}, {"command", {"mpirun", "python", "train.py"}}}},
          {"worker", {{"image", "valley.dev/examples/worker:1"}, {"gpus", "1"}, {"slotsPerWorker", 2}}}};
}

class LoopsTest : public ::testing::Test {
 protected:
  static constexpr const char* ns = "team";
  void SetUp() override {
    options.pricing_policy = "test-policy";
    options.ownership_namespace = "valley-system";
    options.ownership_name = "tenancy";
    options.tenant_interval = std::chrono::seconds(30);
    for (const char* n : {ns, "valley-system"}) api.create(res::kNamespaces, "", {{"metadata", {{"name", n}}}});
    api.create(res::kNodes, "", gpu_node("a100-0", 8));
    api.create(res::kNodes, "", gpu_node("a100-1", 8));
    events = std::make_unique<kube::EventRecorder>(api, kube::EventOptions{});
    cache = std::make_unique<ClusterCache>(api, options);
    refusals = std::make_unique<Refusals>(options.refused_retry);
    planning = std::make_unique<PlanningLoop>(*cache, board, *refusals, *events, options, [this](const std::string& key) { changed.push_back(key); });
    accounting = std::make_unique<Accounting>(api, *cache, options, [this] { return board.admitted_count(); });
    tasks = std::make_unique<TaskReconciler>(api, *events, *cache, board, *refusals, *accounting, options, [this] { ++replans; });
    tenants = std::make_unique<TenantReconciler>(api, *events, *cache, options, [this] { ++replans; });
    policies = std::make_unique<PolicyReconciler>(api, *events, *cache, options, [this] { ++policy_changes; });
    ownership = std::make_unique<OwnershipReconciler>(api, *cache, options);
    // As the operator wires it: the last object of a deleted task is kept for its settling.
    cache->tasks().add_handlers({nullptr, nullptr, [this](const kube::ObjectPtr& o) { tasks->task_deleted(o); }});
    cache->start(stop);
    ASSERT_TRUE(eventually([&] { return cache->node("a100-0") && cache->node("a100-1"); }));
  }
  void TearDown() override {
    stop = true;
    cache->stop();
  }
  json create_task(const std::string& name, const json& spec) {
    return api.create(res::kTrainingTasks, ns, {{"apiVersion", "valley.dev/v1beta1"}, {"kind", "TrainingTask"}, {"metadata", {{"name", name}}}, {"spec", spec}});
  }
  // Waits until the cache shows the task (at this resourceVersion, if given) in its store and in the
  // planning snapshot, which the store's event handlers bring up to date a moment later: a plan
  // made in between would not see the task yet.
  bool cached_task(const std::string& name, const std::string& rv = "") {
    const std::string key = std::string(ns) + "/" + name;
    auto current = [&](const json* t) { return t && (rv.empty() || (*t)["metadata"].value("resourceVersion", "") == rv); };
    return eventually([&] {
      if (!current(cache->task(key).get())) return false;
      for (const auto& entry : cache->snapshot_view().tasks)
        if (entry->key == key) return current(entry->object.get());
      return false;
    });
  }
  json task(const std::string& name) { return api.get(res::kTrainingTasks, ns, name); }
  // A new task `name` as the reconciler observes it, now (whole seconds); false if it did not parse.
  bool observe_new_task(const std::string& name, lifecycle::Observed& o) {
    create_task(name, mpi_spec(1, 1));
    if (!cached_task(name)) return false;
    o.task = *cache->task(std::string(ns) + "/" + name);
    o.parsed = api::parse_task(o.task);
    o.now = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
    return o.parsed.spec.has_value();
  }
  std::string condition(const json& object, const std::string& type, const std::string& field = "status") {
    for (const auto& c : kube::object_at(object, "status").value("conditions", json::array()))
      if (c.value("type", "") == type) return c.value(field, "");
    return "";
  }
  // A Tenant owning the namespace, `nominal` GPUs of nvidia/on-demand.
  void create_tenant(const std::string& name, int nominal) {
    json tenant = {{"apiVersion", "valley.dev/v1beta1"}, {"kind", "Tenant"}, {"metadata", {{"name", name}}}};
    tenant["spec"]["namespaces"] = json::array({ns});
    tenant["spec"]["quotas"] = json::array({{{"pool", "nvidia/on-demand"}, {"nominal", nominal}}});
    api.create(res::kTenants, "", tenant);
    ASSERT_TRUE(eventually([&] { return cache->tenants().store().get(name) != nullptr; }));
  }

  testing::FakeApi api;
  ControllerOptions options;
  std::unique_ptr<kube::EventRecorder> events;
  std::unique_ptr<ClusterCache> cache;
  AdmissionBoard board;
  std::unique_ptr<Refusals> refusals;
  std::unique_ptr<PlanningLoop> planning;
  std::unique_ptr<Accounting> accounting;
  std::unique_ptr<TaskReconciler> tasks;
  std::unique_ptr<TenantReconciler> tenants;
  std::unique_ptr<PolicyReconciler> policies;
  std::unique_ptr<OwnershipReconciler> ownership;
  std::atomic<bool> stop{false};
  std::vector<std::string> changed;
  int replans = 0, policy_changes = 0;
};

TEST_F(LoopsTest, PlanningLoopAdmitsAGangThatFitsAndSaysWhyOneThatDoesNotWaits) {
  create_task("small", mpi_spec(2, 2));
  create_task("huge", mpi_spec(900, 900));
  ASSERT_TRUE(cached_task("small") && cached_task("huge"));
  planning->plan_once();
  const auto small = board.admission("team/small"), huge = board.admission("team/huge");
  ASSERT_TRUE(small && huge);
  EXPECT_TRUE(small->admitted);
  EXPECT_EQ(small->workers, 2);
  ASSERT_EQ(small->placement.size(), 2u);
  for (const auto& w : small->placement) EXPECT_TRUE(cache->node(w.node) != nullptr) << w.node;
  EXPECT_FALSE(huge->admitted);
  EXPECT_NE(huge->reason.find("InsufficientCapacity"), std::string::npos) << huge->reason;
  // Both decisions are new: both tasks are handed to the TrainingTask queue, once each.
  EXPECT_EQ(std::count(changed.begin(), changed.end(), "team/small"), 1);
  EXPECT_EQ(std::count(changed.begin(), changed.end(), "team/huge"), 1);
  // Planned again: the admitted task keeps its placement.
  planning->plan_once();
  ASSERT_TRUE(board.admission("team/small")->admitted);
  for (size_t k = 0; k < 2; ++k) EXPECT_EQ(board.admission("team/small")->placement[k].node, small->placement[k].node);
  // And again with nothing new: nothing handed over.
  changed.clear();
  planning->plan_once();
  EXPECT_TRUE(changed.empty()) << changed.front();
}

TEST_F(LoopsTest, TaskReconcilerCreatesTheAdmittedGangOnceAndWritesItsStatus) {
  create_task("job", mpi_spec(2, 2));
  ASSERT_TRUE(cached_task("job"));
  planning->plan_once();
  EXPECT_TRUE(tasks->reconcile("team/job").ok);
  const json after = task("job");
  EXPECT_EQ(kube::object_at(after, "status").value("phase", ""), "Admitted") << after.dump(2);
  EXPECT_EQ(kube::object_at(after, "status").value("epoch", 0), 1);
  EXPECT_EQ(kube::object_at(after, "status").value("observedGeneration", 0), 1);
  // The launcher and two workers (each held by the accounting finalizer until its cost is
  // written), owned by the task; the headless Service, the SSH keys and the NetworkPolicy.
  const auto pods = api.objects("pods", ns);
  ASSERT_EQ(pods.size(), 3u);
  int workers = 0;
  for (const auto& p : pods) {
    EXPECT_EQ(p["metadata"]["ownerReferences"][0].value("uid", ""), after["metadata"]["uid"]) << p.dump();
    if (p["metadata"]["labels"].value("valley.dev/role", "") != "worker") continue;
    ++workers;
    EXPECT_EQ(p["metadata"].value("finalizers", json::array()), json::array({"valley.dev/accounting"})) << p.dump();
  }
  EXPECT_EQ(workers, 2);
  EXPECT_EQ(api.objects("services", ns).size(), 1u);
  EXPECT_EQ(api.objects("secrets", ns).size(), 1u);
  EXPECT_EQ(api.objects("networkpolicies", ns).size(), 1u);
  // Reconciled again once the cache shows its own writes: nothing is created twice, the status
  // is not written again.
  ASSERT_TRUE(cached_task("job", after["metadata"]["resourceVersion"]));
  ASSERT_TRUE(eventually([&] { return cache->pods_owned_by(ns, after["metadata"]["uid"]).size() == 3; }));
  const int creates = api.count("create", "pods"), status_writes = api.count("status", "trainingtasks");
  EXPECT_TRUE(tasks->reconcile("team/job").ok);
  EXPECT_EQ(api.count("create", "pods"), creates);
  EXPECT_EQ(api.count("status", "trainingtasks"), status_writes);
  EXPECT_EQ(task("job")["status"].value("epoch", 0), 1);
}

// A pod whose create failed for a moment (503) is created at a later reconcile, by an operator
// restarted meanwhile too (no expectations, no memory of what it made): nothing twice.
TEST_F(LoopsTest, APodWhoseCreateFailedIsMadeLaterAndNothingTwice) {
  create_task("job", mpi_spec(2, 2));
  ASSERT_TRUE(cached_task("job"));
  planning->plan_once();
  api.fail_next("create", "pods", 503);
  EXPECT_FALSE(tasks->reconcile("team/job").ok) << "a failed create is retried with backoff";
  ASSERT_EQ(api.objects("pods", ns).size(), 2u);
  const std::string uid = task("job")["metadata"]["uid"];
  ASSERT_TRUE(eventually([&] { return cache->pods_owned_by(ns, uid).size() == 2; }));
  Refusals fresh_refusals(options.refused_retry);
  TaskReconciler restarted(api, *events, *cache, board, fresh_refusals, *accounting, options, [] {});
  ASSERT_TRUE(cached_task("job", task("job")["metadata"]["resourceVersion"]));
  EXPECT_TRUE(restarted.reconcile("team/job").ok);
  EXPECT_EQ(api.objects("pods", ns).size(), 3u);
  EXPECT_EQ(api.count("create", "pods"), 3);
  EXPECT_EQ(task("job")["status"].value("epoch", 0), 1);
}

// The API server refuses the pods in a way retrying will not heal: the task says why (its
// PodsCreated condition and a Warning Event) and holds no capacity; retried once its spec changes.
TEST_F(LoopsTest, APodTheApiServerRefusesIsToldOnTheTaskAndFreesItsCapacity) {
  create_task("job", mpi_spec(2, 2));
  ASSERT_TRUE(cached_task("job"));
  planning->plan_once();
  ASSERT_TRUE(board.admission("team/job")->admitted);
  api.fail_next("create", "pods", 422);
  tasks->reconcile("team/job");
  ASSERT_TRUE(cached_task("job", task("job")["metadata"]["resourceVersion"]));
  tasks->reconcile("team/job");
  const json t = task("job");
  EXPECT_EQ(condition(t, "PodsCreated"), "False") << t["status"].dump(2);
  EXPECT_EQ(condition(t, "PodsCreated", "reason"), "Invalid") << t["status"].dump(2);
  EXPECT_TRUE(eventually([&] {
    for (const auto& e : api.objects("events", ns))
      if (e.value("reason", "") == "CreateFailed" && e.value("type", "") == "Warning") return true;
    return false;
  }));
  EXPECT_GE(replans, 1) << "a blocking refusal frees the task's capacity at once";
  planning->plan_once();
  EXPECT_FALSE(board.admission("team/job") && board.admission("team/job")->admitted) << "a refused task holds nothing";
}

TEST_F(LoopsTest, TenantReconcilerWritesItsStatusAndComesBackAfterTheInterval) {
  create_tenant("lab", 4);
  EXPECT_TRUE(ownership->reconcile().ok);
  const Result r = tenants->reconcile("lab");
  EXPECT_TRUE(r.ok);
  ASSERT_TRUE(r.requeue_after);
  EXPECT_EQ(*r.requeue_after, std::chrono::milliseconds(30000));
  EXPECT_GE(replans, 1) << "a Tenant's status changes what the planner may admit";
  const json status = api.get(res::kTenants, "", "lab").value("status", json::object());
  EXPECT_EQ(status["usage"]["nvidia/on-demand"].value("nominalMilli", int64_t{0}), 4000) << status.dump(2);
  // Nothing but time changed: not written again, and due when the interval since the last write ends.
  const std::string rv = api.get(res::kTenants, "", "lab")["metadata"]["resourceVersion"];
  ASSERT_TRUE(eventually([&] { return (*cache->tenants().store().get("lab"))["metadata"].value("resourceVersion", "") == rv; }));
  const Result again = tenants->reconcile("lab");
  EXPECT_TRUE(again.ok);
  ASSERT_TRUE(again.requeue_after);
  EXPECT_LE(*again.requeue_after, std::chrono::milliseconds(30000));
  EXPECT_EQ(api.get(res::kTenants, "", "lab")["metadata"]["resourceVersion"], rv);
}

TEST_F(LoopsTest, PolicyReconcilerPutsAValidPolicyInForceAndReportsAnInvalidOne) {
  auto policy = [&](const std::string& zone) {
    return json{{"apiVersion", "valley.dev/v1beta1"},
                {"kind", "PricingPolicy"},
                {"metadata", {{"name", "test-policy"}}},
                {"spec", {{"gpu", {{{"onDemand", "1.00"}}}}, {"electricity", {{"timeZone", zone}}}}}};
  };
  api.create(res::kPricingPolicies, "", policy("Mars/Olympus_Mons"));
  ASSERT_TRUE(eventually([&] { return cache->pricing().store().get("test-policy") != nullptr; }));
  EXPECT_TRUE(policies->reconcile("test-policy").ok);
  EXPECT_EQ(cache->policy(), nullptr);
  EXPECT_EQ(policy_changes, 1);
  EXPECT_EQ(condition(api.get(res::kPricingPolicies, "", "test-policy"), "Valid"), "False");
  json current = api.get(res::kPricingPolicies, "", "test-policy");
  current["spec"]["electricity"]["timeZone"] = "UTC";
  const std::string rv = api.update(res::kPricingPolicies, current)["metadata"]["resourceVersion"];
  ASSERT_TRUE(eventually([&] { return (*cache->pricing().store().get("test-policy"))["metadata"].value("resourceVersion", "") == rv; }));
  EXPECT_TRUE(policies->reconcile("test-policy").ok);
  ASSERT_NE(cache->policy(), nullptr);
  EXPECT_EQ(cache->policy()->name, "test-policy");
  EXPECT_EQ(condition(api.get(res::kPricingPolicies, "", "test-policy"), "Valid"), "True");
  EXPECT_EQ(condition(api.get(res::kPricingPolicies, "", "test-policy"), "InUse"), "True");
  // A policy of another name is validated, says it is not in use, and is never put in force.
  json spare = policy("UTC");
  spare["metadata"]["name"] = "spare";
  api.create(res::kPricingPolicies, "", spare);
  ASSERT_TRUE(eventually([&] { return cache->pricing().store().get("spare") != nullptr; }));
  EXPECT_TRUE(policies->reconcile("spare").ok);
  EXPECT_EQ(policy_changes, 2);
  const json spare_now = api.get(res::kPricingPolicies, "", "spare");
  EXPECT_EQ(condition(spare_now, "Valid"), "True");
  EXPECT_EQ(condition(spare_now, "InUse"), "False");
  EXPECT_EQ(condition(spare_now, "InUse", "reason"), "NotSelected") << spare_now.dump(2);
}

// An operator of one namespace (--namespace) writes the status of the Tenant owning it and of the
// policy it prices by, and of no other: those are other instances' (which see their own tasks).
TEST_F(LoopsTest, AnOperatorOfOneNamespaceWritesOnlyItsTenantAndItsPolicy) {
  options.watch_namespace = ns;
  create_tenant("lab", 4);
  json other = {{"apiVersion", "valley.dev/v1beta1"}, {"kind", "Tenant"}, {"metadata", {{"name", "elsewhere"}}}};
  other["spec"]["namespaces"] = json::array({"another-team"});
  other["spec"]["quotas"] = json::array({{{"pool", "nvidia/on-demand"}, {"nominal", 2}}});
  api.create(res::kTenants, "", other);
  for (const char* name : {"test-policy", "another-policy"})
    api.create(res::kPricingPolicies, "", {{"apiVersion", "valley.dev/v1beta1"}, {"kind", "PricingPolicy"}, {"metadata", {{"name", name}}},
                                           {"spec", {{"gpu", {{{"onDemand", "1.00"}}}}}}});
  ASSERT_TRUE(eventually([&] {
    return cache->tenants().store().get("elsewhere") && cache->pricing().store().get("another-policy") && cache->pricing().store().get("test-policy");
  }));
  EXPECT_TRUE(ownership->reconcile().ok);
  for (const char* name : {"lab", "elsewhere"}) EXPECT_TRUE(tenants->reconcile(name).ok);
  for (const char* name : {"test-policy", "another-policy"}) EXPECT_TRUE(policies->reconcile(name).ok);
  EXPECT_TRUE(api.get(res::kTenants, "", "lab").contains("status"));
  EXPECT_FALSE(api.get(res::kTenants, "", "elsewhere").contains("status")) << "another instance's tenant";
  EXPECT_EQ(condition(api.get(res::kPricingPolicies, "", "test-policy"), "Valid"), "True");
  EXPECT_FALSE(api.get(res::kPricingPolicies, "", "another-policy").contains("status")) << "another instance's policy";
}

TEST_F(LoopsTest, OwnershipReconcilerResolvesAndPublishesWhichTenantOwnsWhichNamespace) {
  create_tenant("lab", 1);
  EXPECT_TRUE(ownership->reconcile().ok);
  EXPECT_EQ(cache->owner_of_namespace(ns).value_or(""), "lab");
  const json published = api.get(res::kConfigMaps, "valley-system", "tenancy");
  EXPECT_EQ(published["metadata"]["labels"]["app.kubernetes.io/managed-by"], "valley");
  EXPECT_NE(published["data"].dump().find(ns), std::string::npos) << published["data"].dump();
  // Published again with nothing changed: no write.
  const int applies = api.count("apply", "configmaps") + api.count("patch", "configmaps") + api.count("create", "configmaps");
  EXPECT_TRUE(ownership->reconcile().ok);
  EXPECT_EQ(api.count("apply", "configmaps") + api.count("patch", "configmaps") + api.count("create", "configmaps"), applies);
}

// The pricing policy of the accounting tests, in force: 3.60 a GPU-hour on demand, 1.80 on spot.
void put_test_policy_in_force(testing::FakeApi& api, ClusterCache& cache, PolicyReconciler& policies) {
  api.create(res::kPricingPolicies, "", {{"apiVersion", "valley.dev/v1beta1"}, {"kind", "PricingPolicy"}, {"metadata", {{"name", "test-policy"}}},
                                         {"spec", json::parse(R"({"gpu":[{"onDemand":"3.60","spot":"1.80"}]})")}});
  ASSERT_TRUE(eventually([&] { return cache.pricing().store().get("test-policy") != nullptr; }));
  ASSERT_TRUE(policies.reconcile("test-policy").ok);
  ASSERT_NE(cache.policy(), nullptr);
}

// A worker of 4 GPUs on `node`, running since `since`.
api::Pod running_worker(const std::string& node, kube::SystemTime since) {
  api::Pod worker;
  worker.uid = "worker-uid";
  worker.name = "job-worker-0";
  worker.node_name = node;
  worker.containers.push_back({"worker", {{"nvidia.com/gpu", 4}}, {{"nvidia.com/gpu", 4}}});
  api::PodContainerStatus running;
  running.name = "worker";
  running.running = true;
  running.running_since = since;
  worker.container_statuses.push_back(running);
  return worker;
}

// A worker can start and lose its node before any accrual wrote its ledger entry (the status waits
// out its coalescing window, or the leader is between writes): it is priced by its node as the
// cache last saw it, not dropped.
TEST_F(LoopsTest, APodWhoseNodeWentBeforeItsFirstAccrualIsPricedAsTheNodeWas) {
  put_test_policy_in_force(api, *cache, *policies);
  api.create(res::kNodes, "", gpu_node("gone", 8, {{"karpenter.sh/capacity-type", "spot"}}));
  ASSERT_TRUE(eventually([&] { return cache->node("gone") != nullptr; }));
  api.remove(res::kNodes, "", "gone");
  ASSERT_TRUE(eventually([&] { return cache->node("gone") == nullptr; }));
  ASSERT_TRUE(cache->node_as_last_seen("gone") != nullptr);
  EXPECT_TRUE(cache->node_as_last_seen("never") == nullptr);

  lifecycle::Observed o;
  ASSERT_TRUE(observe_new_task("job", o));
  const api::Pod worker = running_worker("gone", o.now - std::chrono::seconds(100));  // on the node now gone
  const json cost = accounting->cost_status(o, {std::make_shared<const api::Pod>(worker)}, false, true, {worker.uid});
  // 4 GPUs x 100 s at the spot rate, 1.80 a GPU-hour: 0.20.
  EXPECT_EQ(kube::object_at(kube::object_at(cost, "breakdown"), "gpuMilliSeconds").value("nvidia/spot", int64_t{0}), 400'000) << cost.dump(2);
  EXPECT_EQ(cost.value("accruedMicros", int64_t{0}), 200'000) << cost.dump(2);
}

// A worker whose node was deleted before this process started (the last leader priced none of
// it yet) is priced by what its node was when Valley created it (api::kPricedAsAnnotation); with
// nothing to go by it cannot be priced.
TEST_F(LoopsTest, APodWhoseNodeThisProcessNeverSawIsPricedAsValleyCreatedIt) {
  put_test_policy_in_force(api, *cache, *policies);
  lifecycle::Observed o;
  ASSERT_TRUE(observe_new_task("job", o));
  ASSERT_TRUE(cache->node_as_last_seen("never") == nullptr);
  api::Pod worker = running_worker("never", o.now - std::chrono::seconds(100));
  const json unpriced = accounting->cost_status(o, {std::make_shared<const api::Pod>(worker)}, false, true, {worker.uid});
  EXPECT_EQ(unpriced.value("accruedMicros", int64_t{0}), 0) << unpriced.dump(2);
  worker.priced_as = api::price_class("nvidia/spot/A100-SXM4-80GB");
  const json cost = accounting->cost_status(o, {std::make_shared<const api::Pod>(worker)}, false, true, {worker.uid});
  EXPECT_EQ(kube::object_at(kube::object_at(cost, "breakdown"), "gpuMilliSeconds").value("nvidia/spot", int64_t{0}), 400'000) << cost.dump(2);
  EXPECT_EQ(cost.value("accruedMicros", int64_t{0}), 200'000) << cost.dump(2);
}

// A task deleted while it ran: its pods, stopped by their kubelets, are released once their cost
// is in the task's durable record (valley-cost-<uid>).
TEST_F(LoopsTest, ADeletedTaskLeavesNoPodAndKeepsItsCostRecord) {
  api.create(res::kPricingPolicies, "", {{"apiVersion", "valley.dev/v1beta1"}, {"kind", "PricingPolicy"}, {"metadata", {{"name", "test-policy"}}},
                                         {"spec", json::parse(R"({"gpu":[{"onDemand":"3.60"}]})")}});
  ASSERT_TRUE(eventually([&] { return cache->pricing().store().get("test-policy") != nullptr; }));
  ASSERT_TRUE(policies->reconcile("test-policy").ok);
  create_task("job", mpi_spec(2, 2));
  ASSERT_TRUE(cached_task("job"));
  planning->plan_once();
  tasks->reconcile("team/job");
  const std::string uid = task("job")["metadata"]["uid"];
  ASSERT_TRUE(eventually([&] { return cache->pods_owned_by(ns, uid).size() == 3; }));
  api.remove(res::kTrainingTasks, ns, "job");
  ASSERT_TRUE(eventually([&] { return !cache->task("team/job"); }));
  // The garbage collector marked the pods deleted; their kubelets stop them.
  for (const auto& p : api.objects("pods", ns)) {
    EXPECT_TRUE(p["metadata"].contains("deletionTimestamp")) << p.dump();
    api.patch(res::kPods, ns, p["metadata"]["name"], kube::PatchType::Merge, {{"status", {{"phase", "Failed"}}}}, "status");
  }
  EXPECT_TRUE(eventually([&] {
    tasks->reconcile("team/job");
    return api.objects("pods", ns).empty();
  })) << api.objects("pods", ns).size() << " pods left";
  bool kept = false;
  for (const auto& cm : api.objects("configmaps", "valley-system")) kept = kept || cm["metadata"].value("name", "") == "valley-cost-" + uid;
  EXPECT_TRUE(kept) << "no valley-cost-" << uid;
}

}  // namespace
}  // namespace valley::task
