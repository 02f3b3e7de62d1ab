#include "cmd/valleyctl/market.h"

#include <iostream>

#include "cmd/valleyctl/common.h"
#include "controllers/api/pod.h"
#include "operator/kube/error.h"
#include "operator/kube/label_selector.h"
#include "operator/kube/resource.h"

namespace valley::ctl {

using json = nlohmann::json;

std::optional<Market> read_market(const Flags& flags, bool need_policy) {
  Market m;
  std::string error;
  if (!kube::valid_label_selector(flags.get("node-selector"))) {
    std::cerr << "valleyctl: --node-selector=" << flags.get("node-selector") << " is not a label selector like pool=a100,!dedicated\n";
    return std::nullopt;
  }
  if (!flags.get("policy").empty()) {
    auto doc = read_document(flags.get("policy"), &error);
    if (!doc) {
      std::cerr << "valleyctl: " << error << "\n";
      return std::nullopt;
    }
    m.policy_object = doc->value;
  }
  try {
    m.client = std::make_unique<kube::Client>(kube::load_default(flags.get("kubeconfig"), flags.get("context")));
    if (m.policy_object.is_null()) {
      try {
        m.policy_object = m.client->get(kube::resources::kPricingPolicies, "", flags.get("pricing-policy"));
      } catch (const kube::KubeError&) {
        if (need_policy) throw;
      }
    }
    kube::ListOptions selected;
    selected.label_selector = flags.get("node-selector");
    m.nodes = m.client->list(kube::resources::kNodes, "", selected).items;
    try {
      for (auto& s : m.client->list(kube::resources::kResourceSlices, "").items) m.slices.push_back(std::make_shared<const json>(std::move(s)));
      for (auto& c : m.client->list(kube::resources::kResourceClaims, "").items) m.claims.push_back(std::make_shared<const api::DraClaim>(api::dra_claim_from(c)));
    } catch (const kube::KubeError&) {
      // No resource.k8s.io/v1 (before Kubernetes 1.34) or not allowed: device plugins' GPUs only.
    }
    try {
      m.node_pools = m.client->list(kube::resources::kNodePools, "").items;
    } catch (const kube::KubeError&) {
      // No Karpenter (or not allowed): no capacity that can be bought.
    }
  } catch (const kube::KubeError& e) {
    if (!need_policy) {
      std::cerr << "valleyctl: cannot read the cluster: " << e.what() << "\n";
      return std::nullopt;
    }
    if (m.policy_object.is_null()) {
      std::cerr << "valleyctl: no PricingPolicy: " << e.what() << " (pass --policy FILE to estimate offline)\n";
      return std::nullopt;
    }
  }
  return m;
}

std::vector<planner::Node> market_nodes(const Market& m, bool free) {
  std::vector<planner::ObjectPtr> nodes;
  for (const auto& n : m.nodes) nodes.push_back(std::make_shared<const json>(n));
  std::vector<planner::PodPtr> pods;
  if (free && m.client && !nodes.empty()) {
    try {
      for (const auto& pod : m.client->list(kube::resources::kPods, "").items) pods.push_back(std::make_shared<const api::Pod>(api::pod_from(pod)));
    } catch (const kube::KubeError& e) {
      std::cerr << "valleyctl: cannot list pods (" << e.what() << "); estimating as if the cluster were empty\n";
    }
  }
  const auto view = planner::rebuild(nodes, pods, {}, {}, m.slices, free ? m.claims : std::vector<planner::ClaimPtr>{});
  std::vector<planner::Node> out;
  for (const auto& n : view.nodes) out.push_back(*n);
  return out;
}

}  // namespace valley::ctl
