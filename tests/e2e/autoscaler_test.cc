// The autoscaled profile (cluster.sh autoscaler-up): real Karpenter, its kwok cloud provider buying
// kwok nodes from tests/cluster/karpenter's NodePools. Each test buys from a NodePool of its own (a
// copy of one of the profile's), which starts at zero nodes whatever the others bought and takes its
// nodes with it when deleted: the tests run side by side (make autoscaler-e2e), as they mostly wait
// on Karpenter. What Valley's capacity you buy builds on: a
// pod no existing node can hold makes Karpenter buy a node of the NodePool it selects, of the
// instance type and capacity type asked, and the node goes again once it is idle. The seconds from
// the pod's creation to its binding (what buying a node costs in time here) are printed.
// Then Valley with --instance-types: a task whose workers only those pools can hold buys its whole
// gang, runs to Succeeded, and leaves nothing bought behind; a gang larger than a pool's limit
// waits Unplaceable with the numbers and buys nothing; an elastic task buys a node to grow only
// while its GPUs are saturated; a NodeClaim taken away under a running gang
// is a notice, and the gang runs on a node bought again; the PricingPolicy in force names a NodePool
// Valley cannot buy from, and why; a task goes to the bought node it keeps up least.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>
#include <thread>

#include "operator/kube/error.h"
#include "operator/kube/json_fields.h"
#include "tests/e2e/dcgm.h"
#include "tests/e2e/support.h"
#include "tests/e2e/task_fixture.h"

namespace valley::e2e {
namespace {

const kube::Resource kNodeClaims{"karpenter.sh", "v1", "nodeclaims", "NodeClaim", false};
const kube::Resource kNodePools{"karpenter.sh", "v1", "nodepools", "NodePool", false};

// A pod of `gpus` A100s that only a node of NodePool `pool` (one of pool_copy's) can hold, tolerating its GPU taint.
json pod_for_pool(const std::string& name, const std::string& pool, int gpus) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"restartPolicy", "Never"},
            {"terminationGracePeriodSeconds", 0},
            {"nodeSelector", {{"valley.dev/pool", pool}}},
            {"tolerations", {{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}}},
            {"containers",
             {{{"name", "train"}, {"image", "valley.dev/test:1"}, {"resources", {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}}}}}};
}

std::vector<json> of_pool(kube::Client& client, const kube::Resource& kind, const std::string& pool) {
  kube::ListOptions lo;
  lo.label_selector = "karpenter.sh/nodepool=" + pool;
  return client.list(kind, "", lo).items;
}
std::vector<json> nodes_of_pool(kube::Client& client, const std::string& pool) { return of_pool(client, kube::resources::kNodes, pool); }
std::vector<json> claims_of_pool(kube::Client& client, const std::string& pool) { return of_pool(client, kNodeClaims, pool); }
bool pool_empty(kube::Client& client, const std::string& pool) { return nodes_of_pool(client, pool).empty() && claims_of_pool(client, pool).empty(); }

// A gang on bought capacity restarts only for a disruption by the platform, never for Valley's own
// doing: no resize or move, and no pod of the gang deleted without being counted as Valley's (what
// an operator acting anew on pods it made before a restart, or on nodes arriving, would look like).
// Under load the taint-eviction controller can evict a worker bound the moment Karpenter took its
// new node's unregistered taint off, its view of the node still showing the taint: a NodeTaint
// disruption, recovered from like any other.
void expect_restarts_only_by_the_platform(const json& st) {
  const json restarts = st.value("restarts", json::object());
  EXPECT_EQ(restarts.value("total", 0), restarts.value("disruptions", 0)) << st.dump(2);
  if (st.value("epoch", 0) > 1) {
    EXPECT_NE(kube::object_at(st, "lastDisruption").value("cause", ""), "PodDeleted") << st.dump(2);
    std::printf("restarted by a disruption: %s\n", kube::object_at(st, "lastDisruption").value("message", "").c_str());
  }
}

// A NodePool named `name`, a copy of the profile's `from` whose nodes carry valley.dev/pool=`name`
// (what the test's pods and tasks select), with `limits` when given.
json pool_copy(kube::Client& admin, const std::string& from, const std::string& name, const json& limits = nullptr) {
  json pool = admin.get(kNodePools, "", from);
  pool["metadata"] = {{"name", name}};
  pool.erase("status");
  pool["spec"]["template"]["metadata"]["labels"]["valley.dev/pool"] = name;
  if (!limits.is_null()) pool["spec"]["limits"] = limits;
  return pool;
}

// Deleting a NodePool deletes its NodeClaims, and Karpenter its nodes.
void remove_pool(kube::Client& admin, const std::string& name) {
  try {
    admin.remove(kNodePools, "", name);
  } catch (const kube::KubeError&) {
  }
}

class Autoscaler : public ClusterTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    ASSERT_NO_THROW(admin->create(kNodePools, "", pool_copy(*admin, "a100-spot", ns))) << "no autoscaler: run tests/cluster/cluster.sh autoscaler-up";
  }
  void TearDown() override {
    if (admin) remove_pool(*admin, ns);
    ClusterTest::TearDown();
  }
};

TEST_F(Autoscaler, APodNoNodeHoldsMakesKarpenterBuyANodeOfItsPoolThatGoesOnceIdle) {
  const auto created = std::chrono::steady_clock::now();
  admin->create(kube::resources::kPods, ns, pod_for_pool("bought", ns, 8));
  std::string node;
  ASSERT_TRUE(eventually([&] {
    node = admin->get(kube::resources::kPods, ns, "bought")["spec"].value("nodeName", "");
    return !node.empty();
  }, 120s)) << admin->get(kube::resources::kPods, ns, "bought").dump(2);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - created).count();
  std::cout << "[ FIGURE   ] a node bought and the pod bound " << seconds << " s after the pod was created\n";
  const json n = admin->get(kube::resources::kNodes, "", node);
  const json& labels = n["metadata"]["labels"];
  EXPECT_EQ(labels.value("karpenter.sh/nodepool", ""), ns);
  EXPECT_EQ(labels.value("karpenter.sh/capacity-type", ""), "spot");
  EXPECT_EQ(labels.value("node.kubernetes.io/instance-type", ""), "p4de.24xlarge") << "the cheapest type that holds 8 GPUs";
  EXPECT_EQ(labels.value("nvidia.com/gpu.product", ""), "NVIDIA-A100-SXM4-80GB") << "the NodePool's template label";
  EXPECT_EQ(n["status"]["allocatable"].value("nvidia.com/gpu", ""), "8");
  EXPECT_EQ(claims_of_pool(*admin, ns).size(), 1u);
  bool tainted = false;
  for (const auto& t : n["spec"].value("taints", json::array())) tainted |= t.value("key", "") == "nvidia.com/gpu";
  EXPECT_TRUE(tainted) << "only pods that tolerate GPU nodes make Karpenter buy them";
  ASSERT_TRUE(eventually([&] { return admin->get(kube::resources::kPods, ns, "bought")["status"].value("phase", "") == "Running"; }, 60s));

  // Idle (consolidateAfter 30s): Karpenter takes the node and its NodeClaim away.
  admin->remove(kube::resources::kPods, ns, "bought");
  EXPECT_TRUE(eventually([&] { return pool_empty(*admin, ns); }, 150s)) << "node " << node << " is still there";
}

// The operator plans on the NodePools as well (the catalogue Karpenter's kwok provider reads).
class BoughtCapacity : public TaskTest {
 protected:
  std::vector<std::string> operator_flags() const override {
    auto flags = TaskTest::operator_flags();
    flags.push_back("--instance-types=" + std::string(VALLEY_SOURCE_DIR) + "/tests/cluster/karpenter/instance-types.json");
    flags.push_back("--provisioning-delay=5s");
    return flags;
  }
  // The test's NodePool (named as its namespace): a copy of the profile's on-demand A100 pool, 16 GPUs at most.
  void SetUp() override {
    TaskTest::SetUp();
    ASSERT_NO_THROW(own(kNodePools, pool_copy(*admin, "a100-od", ns))) << "no autoscaler: run tests/cluster/cluster.sh autoscaler-up";
  }
  // A gang of `workers` x 8 A100s that only nodes of the test's NodePool hold (its template label).
  json on_pool(int workers) const {
    json spec = mpi_spec(workers, workers, {{"sim.valley.dev/run-time", "5s"}});
    spec["worker"]["gpus"] = "8";
    spec["worker"]["template"] = {{"spec", {{"nodeSelector", {{"valley.dev/pool", ns}}}}}};
    return spec;
  }
};

TEST_F(BoughtCapacity, ATaskOnAScaleToZeroPoolBuysItsGangRunsToSucceededAndTheNodesGoAfterwards) {
  const auto applied = std::chrono::steady_clock::now();
  apply(on_pool(2));
  std::set<std::string> bought;
  ASSERT_TRUE(eventually([&] {
    bought.clear();
    for (const auto& p : pods())
      if (p["metadata"]["labels"].value("valley.dev/role", "") == "worker" && !p["spec"].value("nodeName", "").empty())
        bought.insert(p["spec"]["nodeName"].get<std::string>());
    return bought.size() == 2;
  }, 120s)) << task().dump(2);
  std::cout << "[ FIGURE   ] a gang of 2 x 8 GPUs on a pool at zero nodes: both workers bound "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - applied).count() << " s after the task was applied\n";
  for (const auto& name : bought) {
    const json n = admin->get(kube::resources::kNodes, "", name);
    EXPECT_EQ(n["metadata"]["labels"].value("karpenter.sh/nodepool", ""), ns) << name;
    EXPECT_EQ(n["metadata"]["labels"].value("node.kubernetes.io/instance-type", ""), "p4de.24xlarge") << name;
  }
  for (const auto& p : pods())
    EXPECT_EQ(p["metadata"]["annotations"].value("karpenter.sh/do-not-disrupt", ""), "true") << p["metadata"]["name"];
  ASSERT_TRUE(wait_phase("Succeeded", 120s)) << task().dump(2);
  expect_restarts_only_by_the_platform(task()["status"]);  // none when its nodes arrived
  // Nothing bought stays: the workers went with the run, and Karpenter takes the idle nodes.
  EXPECT_TRUE(eventually([&] { return pool_empty(*admin, ns); }, 180s)) << "bought nodes still there";
}

// A NodePool's node is given back only once empty: among bought nodes that are up, a task goes
// where its expected end keeps a node up least beyond the tasks already there, before the tightest
// fit. Node A holds a task expected to run 10 hours, node B one expected to end within the hour
// and fewer GPUs free: a 1-GPU task of 5 hours goes to A (on B it would keep B up 4 hours longer),
// though B is the tighter fit.
TEST_F(BoughtCapacity, ATaskGoesToTheBoughtNodeItKeepsUpLeastBeforeTheTightestFit) {
  const auto single = [&](int gpus, const std::string& estimate) {
    json spec = {{"taskType", "Single"},
                 {"image", "valley.dev/examples/train:1"},
                 {"worker",
                  {{"gpus", std::to_string(gpus)},
                   {"template",
                    {{"metadata", {{"annotations", {{"sim.valley.dev/run-time", "900s"}}}}},
                     {"spec", {{"nodeSelector", {{"valley.dev/pool", ns}}}}}}}}}};
    if (!estimate.empty()) spec["estimatedDuration"] = estimate;
    return spec;
  };
  const auto node_of = [&](const std::string& task_name) {
    std::string node;
    EXPECT_TRUE(eventually([&] {
      const auto w = workers(task_name);
      node = w.size() == 1 ? w[0]["spec"].value("nodeName", "") : "";
      return !node.empty();
    }, 120s)) << task(task_name).dump(2) << operator_log();
    return node;
  };
  const auto gpus_of = [&](const std::string& node) {
    return std::stoi(admin->get(kube::resources::kNodes, "", node)["status"]["allocatable"].value("nvidia.com/gpu", "0"));
  };
  apply(single(2, "10h"), "long");
  const std::string a = node_of("long");
  ASSERT_FALSE(a.empty());
  const int a_gpus = gpus_of(a);
  // A filled while B is bought: a task that waits for nothing takes a node that is up first.
  apply(single(a_gpus - 2, ""), "filler");
  ASSERT_EQ(node_of("filler"), a);
  apply(single(3, "1h"), "short");
  const std::string b = node_of("short");
  ASSERT_FALSE(b.empty());
  ASSERT_NE(b, a);
  ASSERT_LT(gpus_of(b) - 3, a_gpus - 2) << "B must be the tighter fit once the filler goes: " << a << " " << a_gpus << ", " << b << " "
                                        << gpus_of(b);
  admin->remove(kTrainingTasks, ns, "filler");
  ASSERT_TRUE(eventually([&] { return pods("filler").empty(); }, 60s));
  apply(single(1, "5h"), "medium");
  EXPECT_EQ(node_of("medium"), a) << "the 5-hour task went to the node it keeps up 4 hours longer";
  // (Its pod bound a moment before the operator saw it run.)
  for (const auto* name : {"long", "short", "medium"}) EXPECT_TRUE(wait_phase("Running", 60s, name)) << task(name).dump(2);
  EXPECT_EQ(claims_of_pool(*admin, ns).size(), 2u) << "nothing more was bought";
  for (const auto* name : {"long", "short", "medium"}) admin->remove(kTrainingTasks, ns, name);
  EXPECT_TRUE(eventually([&] { return pool_empty(*admin, ns); }, 180s)) << "bought nodes still there";
}

TEST_F(BoughtCapacity, AnOperatorKilledWhileNodesAreBoughtLeavesNoDuplicatePodAndNoOrphanedNode) {
  apply(on_pool(2));
  // Killed as soon as the gang's pods exist, before their nodes came.
  ASSERT_TRUE(eventually([&] { return pods().size() >= 2; }, 60s)) << task().dump(2);
  stop_operator(SIGKILL);
  start_operator();
  // The restarted operator finds the gang's pods and makes none again: the nodes bought are the
  // gang's two (a duplicate pod would have bought a third).
  size_t most_claims = 0, most_workers = 0;
  ASSERT_TRUE(eventually([&] {
    most_claims = std::max(most_claims, claims_of_pool(*admin, ns).size());
    size_t workers = 0;
    for (const auto& p : pods()) workers += p["metadata"]["labels"].value("valley.dev/role", "") == "worker";
    most_workers = std::max(most_workers, workers);
    return phase() == "Succeeded";
  }, 150s)) << task().dump(2);
  EXPECT_LE(most_claims, 2u);
  EXPECT_LE(most_workers, 2u);
  expect_restarts_only_by_the_platform(task()["status"]);  // none for the operator's
  EXPECT_TRUE(eventually([&] { return pool_empty(*admin, ns); }, 180s)) << "bought nodes still there";
}

TEST_F(BoughtCapacity, AGangLargerThanThePoolsLimitWaitsUnplaceableWithTheNumbersAndBuysNothing) {
  // The pool's limit is 16 GPUs (a100-od's): two 8-GPU workers at most.
  apply(on_pool(3));
  ASSERT_TRUE(eventually([&] {
    const json st = task().value("status", json::object());
    return st.value("reason", "") == "Unplaceable" &&
           st.value("message", "").find("needs 3 workers of 8 GPUs at once; the nodes it may use hold 0 and its NodePools' limits let 2 more "
                                        "be bought") != std::string::npos;
  }, 60s)) << task().dump(2);
  EXPECT_TRUE(pods().empty());
  EXPECT_TRUE(claims_of_pool(*admin, ns).empty());
}

TEST_F(BoughtCapacity, ANodeClaimDeletedUnderARunningGangIsANoticeAndTheGangRunsOnANodeBoughtAgain) {
  json spec = on_pool(1);
  spec["master"]["template"]["metadata"]["annotations"]["sim.valley.dev/run-time"] = "40s";  // each epoch's launcher
  apply(spec);
  std::string first;
  ASSERT_TRUE(eventually([&] {
    for (const auto& p : pods())
      if (p["metadata"]["labels"].value("valley.dev/role", "") == "worker") first = p["spec"].value("nodeName", "");
    return phase() == "Running" && !first.empty();
  }, 120s)) << task().dump(2);
  // What Karpenter does to a node it takes away (an interruption, an expiry, a drift, or by hand):
  // the NodeClaim goes, its node is tainted karpenter.sh/disrupted and drained; the gang's pods
  // carry do-not-disrupt, so the drain waits for them. Valley reads the taint as a notice.
  // (Karpenter writes the node's name into its NodeClaim's status once it registered the node, which
  // may be after kube-scheduler bound a pod there.)
  std::string claim;
  ASSERT_TRUE(eventually([&] {
    for (const auto& c : claims_of_pool(*admin, ns))
      if (c.value("status", json::object()).value("nodeName", "") == first) claim = c["metadata"]["name"].get<std::string>();
    return !claim.empty();
  }, 30s)) << "no NodeClaim of node " << first;
  admin->remove(kNodeClaims, "", claim);
  std::string second;
  ASSERT_TRUE(eventually([&] {
    second.clear();
    for (const auto& p : pods())
      if (p["metadata"]["labels"].value("valley.dev/role", "") == "worker" && p["metadata"]["labels"].value("valley.dev/epoch", "") != "1")
        second = p["spec"].value("nodeName", "");
    return !second.empty() && second != first;
  }, 150s)) << task().dump(2) << events_text();
  EXPECT_EQ(admin->get(kube::resources::kNodes, "", second)["metadata"]["labels"].value("karpenter.sh/nodepool", ""), ns);
  EXPECT_NE(events_text().find("the node has the termination notice karpenter.sh/disrupted"), std::string::npos) << events_text();
  ASSERT_TRUE(wait_phase("Succeeded", 150s)) << task().dump(2);
  EXPECT_GE(task()["status"].value("epoch", 0), 2);
  EXPECT_TRUE(eventually([&] { return pool_empty(*admin, ns); }, 180s)) << "bought nodes still there";
}

TEST_F(BoughtCapacity, ThePricingPolicyInForceSaysWhichNodePoolsValleyCannotBuyFromAndWhy) {
  const json price = {{"onDemand", "3.60"}, {"spot", "1.80"}};
  const json spec = {{"currency", "USD"}, {"gpu", json::array({price})}};
  admin->create(kube::resources::kPricingPolicies, "",
                {{"apiVersion", "valley.dev/v1beta1"}, {"kind", "PricingPolicy"}, {"metadata", {{"name", ns}}}, {"spec", spec}});
  auto condition = [&] {
    for (const auto& c : admin->get(kube::resources::kPricingPolicies, "", ns).value("status", json::object()).value("conditions", json::array()))
      if (c.value("type", "") == "NodePoolsUsable") return c;
    return json::object();
  };
  // The tests beside this one make and delete NodePools of their own (one being deleted is named
  // unusable meanwhile): what is asserted is what the condition says of this test's two pools.
  auto names = [&](const std::string& pool) {
    return condition().value("message", "").find("Valley buys nothing from NodePool " + pool + ":") != std::string::npos;
  };
  ASSERT_TRUE(eventually([&] { return !condition().value("reason", "").empty() && !names(ns); }, 60s)) << condition().dump(2);
  // A NodePool of limit zero: the condition says so, names it and why; the tasks are not wedged.
  const std::string bad = "zero-" + ns.substr(ns.size() > 20 ? ns.size() - 20 : 0);
  admin->create(kNodePools, "", pool_copy(*admin, "a100-spot", bad, {{"nvidia.com/gpu", "0"}}));
  const bool said = eventually([&] {
    const json c = condition();
    return c.value("status", "") == "False" && c.value("reason", "") == "SomeUnusable" &&
           c.value("message", "").find("NodePool " + bad + ": its limit on nvidia.com/gpu (0)") != std::string::npos;
  }, 60s);
  remove_pool(*admin, bad);
  ASSERT_TRUE(said) << condition().dump(2);
  EXPECT_TRUE(eventually([&] { return !names(bad) && !names(ns); }, 60s)) << condition().dump(2);
  admin->remove(kube::resources::kPricingPolicies, "", ns);
}

// Growth that buys, told by its GPUs' utilization (no progress records): DCGM metrics of the bought
// nodes' GPUs in a real Prometheus (a test exporter stands in for DCGM-exporter), growth priced by
// a PricingPolicy.
class BoughtGrowth : public BoughtCapacity {
 protected:
  void SetUp() override {
    exporter_ = std::make_unique<DcgmExporter>(std::map<std::string, int>{});
    prometheus_ = std::make_unique<PrometheusServer>(exporter_->port());
    BoughtCapacity::SetUp();
    const json price = {{"match", {{"vendor", "nvidia"}}}, {"onDemand", "3.60"}, {"spot", "1.80"}};
    admin->create(kube::resources::kPricingPolicies, "",
                  {{"apiVersion", "valley.dev/v1beta1"},
                   {"kind", "PricingPolicy"},
                   {"metadata", {{"name", ns}}},
                   // Growth judged by the cost rule, as for a reduceCost task (no time band): a
                   // task that did not ask to wait would otherwise start at max when nothing
                   // measured says otherwise.
                   {"spec", {{"currency", "USD"}, {"gpu", json::array({price})}, {"growth", {{"withoutReduceCost", json::array()}}}}}});
  }
  void TearDown() override {
    admin->remove(kube::resources::kPricingPolicies, "", ns);
    BoughtCapacity::TearDown();
    prometheus_.reset();
    exporter_.reset();
  }
  std::vector<std::string> operator_flags() const override {
    auto flags = BoughtCapacity::operator_flags();
    flags.push_back("--prometheus-url=" + prometheus_->url());
    flags.push_back("--gpu-utilization-interval=2s");
    return flags;
  }
  // Each worker's 8 GPUs at `percent`, labelled with its pod as DCGM-exporter's Kubernetes mode does.
  void utilization(double percent) {
    for (const auto& p : pods()) {
      if (p["metadata"]["labels"].value("valley.dev/role", "") != "worker" || p["spec"].value("nodeName", "").empty()) continue;
      const std::string node = p["spec"]["nodeName"].get<std::string>();
      if (seen_.insert(node).second) exporter_->add_node(node, 8);
      for (int g = 0; g < 8; ++g) {
        exporter_->assign(node, g, ns, p["metadata"].value("name", ""));
        exporter_->set(node, g, "DCGM_FI_DEV_GPU_UTIL", percent);
      }
    }
  }
  std::set<std::string> worker_nodes() {
    std::set<std::string> out;
    for (const auto& p : pods())
      if (p["metadata"]["labels"].value("valley.dev/role", "") == "worker" && !p["spec"].value("nodeName", "").empty())
        out.insert(p["spec"]["nodeName"].get<std::string>());
    return out;
  }
  std::unique_ptr<DcgmExporter> exporter_;
  std::unique_ptr<PrometheusServer> prometheus_;
  std::set<std::string> seen_;
};

TEST_F(BoughtGrowth, AnElasticTaskBuysANodeToGrowOnlyWhileItsGpusAreSaturated) {
  json spec = mpi_spec(1, 2, {{"sim.valley.dev/run-time", "600s"}});
  spec["worker"]["gpus"] = "8";
  spec["worker"]["template"] = {{"spec", {{"nodeSelector", {{"valley.dev/pool", ns}}}}}};
  apply(spec);
  ASSERT_TRUE(eventually([&] { return phase() == "Running" && worker_nodes().size() == 1; }, 120s)) << task().dump(2);
  // Its GPUs half busy: growth would not pay, so nothing more is bought.
  utilization(40);
  ASSERT_TRUE(eventually([&] { return task()["status"].value("utilization", json::object()).value("gpuPercent", 0) == 40; }, 60s))
      << task().dump(2) << operator_log();
  // What must not happen: no growth and no second NodeClaim meanwhile. (The epoch is compared
  // across the window: a node just bought may still evict its first pod, a restart, not a resize.)
  const int epoch = task()["status"].value("epoch", 0);
  std::this_thread::sleep_for(15s);
  EXPECT_EQ(worker_nodes().size(), 1u) << task().dump(2);
  EXPECT_EQ(claims_of_pool(*admin, ns).size(), 1u);
  EXPECT_EQ(task()["status"].value("epoch", 0), epoch) << task()["status"].dump(2);
  // Saturated: one step up pays at the node's price, so a second node is bought and the gang grows onto it.
  utilization(97);
  ASSERT_TRUE(eventually([&] { return phase() == "Running" && worker_nodes().size() == 2; }, 150s)) << task().dump(2) << events_text();
  for (const auto& n : worker_nodes())
    EXPECT_EQ(admin->get(kube::resources::kNodes, "", n)["metadata"]["labels"].value("karpenter.sh/nodepool", ""), ns) << n;
  EXPECT_GE(task()["status"].value("epoch", 0), 2);
  EXPECT_NE(task()["status"].value("lastResizeReason", "").find("97%"), std::string::npos) << task()["status"].dump(2);
  admin->remove(kTrainingTasks, ns, "job");
  EXPECT_TRUE(eventually([&] { return pool_empty(*admin, ns); }, 180s)) << "bought nodes still there";
}

}  // namespace
}  // namespace valley::e2e
