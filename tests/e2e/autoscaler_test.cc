// The autoscaled profile (cluster.sh autoscaler-up): real Karpenter, its kwok cloud provider buying
// kwok nodes from tests/cluster/karpenter's NodePools. What Valley's capacity you buy builds on: a
// pod no existing node can hold makes Karpenter buy a node of the NodePool it selects, of the
// instance type and capacity type asked, and the node goes again once it is idle. The seconds from
// the pod's creation to its binding (what buying a node costs in time here) are printed.
#include <chrono>

#include "operator/kube/error.h"
#include "tests/e2e/support.h"

namespace valley::e2e {
namespace {

const kube::Resource kNodeClaims{"karpenter.sh", "v1", "nodeclaims", "NodeClaim", false};
const kube::Resource kNodePools{"karpenter.sh", "v1", "nodepools", "NodePool", false};

// A pod of `gpus` A100s that only a node of NodePool `pool` can hold (tolerating its GPU taint).
json pod_for_pool(const std::string& name, const std::string& pool, int gpus) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"restartPolicy", "Never"},
            {"terminationGracePeriodSeconds", 0},
            {"nodeSelector", {{"karpenter.sh/nodepool", pool}}},
            {"tolerations", {{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}}},
            {"containers",
             {{{"name", "train"}, {"image", "valley.dev/test:1"}, {"resources", {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}}}}}};
}

std::vector<json> nodes_of_pool(kube::Client& client, const std::string& pool) {
  kube::ListOptions lo;
  lo.label_selector = "karpenter.sh/nodepool=" + pool;
  return client.list(kube::resources::kNodes, "", lo).items;
}

using Autoscaler = ClusterTest;

TEST_F(Autoscaler, APodNoNodeHoldsMakesKarpenterBuyANodeOfItsPoolThatGoesOnceIdle) {
  ASSERT_NO_THROW(admin->get(kNodePools, "", "a100-spot")) << "no autoscaler: run tests/cluster/cluster.sh autoscaler-up";
  ASSERT_TRUE(eventually([&] { return nodes_of_pool(*admin, "a100-spot").empty(); }, 120s)) << "the pool is not at zero nodes";
  const auto created = std::chrono::steady_clock::now();
  admin->create(kube::resources::kPods, ns, pod_for_pool("bought", "a100-spot", 8));
  std::string node;
  ASSERT_TRUE(eventually([&] {
    node = admin->get(kube::resources::kPods, ns, "bought")["spec"].value("nodeName", "");
    return !node.empty();
  }, 120s)) << admin->get(kube::resources::kPods, ns, "bought").dump(2);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - created).count();
  std::cout << "[ FIGURE   ] a node bought and the pod bound " << seconds << " s after the pod was created\n";
  const json n = admin->get(kube::resources::kNodes, "", node);
  const json& labels = n["metadata"]["labels"];
  EXPECT_EQ(labels.value("karpenter.sh/nodepool", ""), "a100-spot");
  EXPECT_EQ(labels.value("karpenter.sh/capacity-type", ""), "spot");
  EXPECT_EQ(labels.value("node.kubernetes.io/instance-type", ""), "p4de.24xlarge") << "the cheapest type that holds 8 GPUs";
  EXPECT_EQ(labels.value("nvidia.com/gpu.product", ""), "NVIDIA-A100-SXM4-80GB") << "the NodePool's template label";
  EXPECT_EQ(n["status"]["allocatable"].value("nvidia.com/gpu", ""), "8");
  EXPECT_EQ(admin->list(kNodeClaims, "").items.size(), 1u);
  bool tainted = false;
  for (const auto& t : n["spec"].value("taints", json::array())) tainted |= t.value("key", "") == "nvidia.com/gpu";
  EXPECT_TRUE(tainted) << "only pods that tolerate GPU nodes make Karpenter buy them";
  ASSERT_TRUE(eventually([&] { return admin->get(kube::resources::kPods, ns, "bought")["status"].value("phase", "") == "Running"; }, 60s));

  // Idle (consolidateAfter 30s): Karpenter takes the node and its NodeClaim away.
  admin->remove(kube::resources::kPods, ns, "bought");
  EXPECT_TRUE(eventually([&] { return nodes_of_pool(*admin, "a100-spot").empty() && admin->list(kNodeClaims, "").items.empty(); }, 150s))
      << "node " << node << " is still there";
}

}  // namespace
}  // namespace valley::e2e
