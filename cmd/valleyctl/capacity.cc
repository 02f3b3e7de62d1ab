// valleyctl capacity: the GPUs the cluster offers, as the operator's planner reads them (device
// plugins' whole GPUs, DRA devices, MIG slices, MPS and time-sliced replicas), by vendor, capacity
// class, kind and product: how many nodes, GPUs (fractions by their share) and how many are free,
// and a GPU-hour's price when a PricingPolicy is found. Then, where Karpenter runs, each NodePool:
// its nodes up, those no pod holds a GPU of (paid for, running nothing), its GPUs and how many pods
// hold, and what its GPU limit leaves to buy.
#include <cstdio>
#include <iostream>
#include <map>
#include <tuple>

#include "cmd/valleyctl/common.h"
#include "operator/json_text.h"
#include "cmd/valleyctl/market.h"
#include "cmd/valleyctl/table.h"
#include "controllers/api/money.h"
#include "controllers/api/pricing_policy.h"
#include "controllers/cost/policy.h"
#include "controllers/api/nodepool.h"
#include "controllers/gpu/resources.h"
#include "controllers/inputs/nodepools.h"

namespace valley::ctl {

namespace {

struct Row {
  int nodes = 0;
  int64_t capacity_milli = 0, free_milli = 0;
  int64_t price_micros = -1;  // -1: no policy prices it
};

std::string gpus(int64_t milli) {
  char buf[32];
  std::snprintf(buf, sizeof buf, milli % 1000 == 0 ? "%.0f" : "%.2f", static_cast<double>(milli) / 1000);
  return buf;
}

// What each NodePool bought and what its limits leave (nothing printed without NodePools).
void print_node_pools(const Market& market, const std::vector<planner::Node>& nodes) {
  if (market.node_pools.empty()) return;
  std::vector<const planner::Node*> existing;
  for (const auto& n : nodes) existing.push_back(&n);
  const auto use = inputs::pool_use(existing);
  Table table({"NODEPOOL", "NODES", "IDLE", "GPUS", "HELD", "GPU LIMIT", "LEFT TO BUY"});
  for (const auto& object : market.node_pools) {
    const auto read = api::read_node_pool(object);
    if (!read.pool) {
      std::cerr << "valleyctl: " << read.error << "\n";
      continue;
    }
    const api::NodePool& p = *read.pool;
    const auto u = use.count(p.name) ? use.at(p.name) : inputs::PoolUse{};
    std::string limit = "-", left = "-";
    for (const auto& [r, units] : p.limits)
      if (gpu::is_gpu_resource(r)) {
        limit = std::to_string(units) + " " + r;
        left = std::to_string(std::max<int64_t>(0, units - u.gpus));
      }
    table.add({p.name, std::to_string(u.nodes), std::to_string(u.idle), std::to_string(u.gpus), std::to_string(u.gpus_held), limit, left});
  }
  std::cout << "\n";
  table.print(std::cout);
}

}  // namespace

int cmd_capacity(const Flags& flags) {
  auto market = read_market(flags, false);
  if (!market) return 1;
  std::optional<cost::Policy> policy;
  if (!market->policy_object.is_null()) {
    std::vector<std::string> errors;
    policy = api::parse_policy(market->policy_object, &errors);
  }
  const cost::Policy labels_only;  // the product labels, when no policy is in force
  using Key = std::tuple<std::string, std::string, std::string, std::string>;  // vendor, class, kind, product
  std::map<Key, Row> rows;
  const std::vector<planner::Node> all = market_nodes(*market, true);
  for (const auto& n : all) {
    if (n.vendor.empty() || !n.schedulable) continue;
    const cost::NodeRate rate = cost::rate_for(policy ? *policy : labels_only, n.vendor, n.labels, n.dra_product);
    std::map<std::string, bool> kinds;
    for (const auto& [resource, units] : n.capacity) {
      Row& r = rows[{n.vendor, n.capacity_class, gpu::sharing_kind(resource), rate.product.empty() ? "-" : rate.product}];
      if (!kinds[gpu::sharing_kind(resource)]) ++r.nodes;
      kinds[gpu::sharing_kind(resource)] = true;
      r.capacity_milli += gpu::share_milli(resource, units);
      auto free = n.free.find(resource);
      r.free_milli += gpu::share_milli(resource, std::max<int64_t>(0, free == n.free.end() ? 0 : free->second));
      if (policy) r.price_micros = rate.gpu_per_hour;
    }
  }
  if (flags.get("output") == "json") {
    json out = json::array();
    for (const auto& [k, r] : rows) {
      json row = {{"vendor", std::get<0>(k)}, {"capacityClass", std::get<1>(k)}, {"kind", std::get<2>(k)}, {"product", std::get<3>(k)},
                  {"nodes", r.nodes}, {"gpus", gpus(r.capacity_milli)}, {"free", gpus(r.free_milli)}};
      if (r.price_micros >= 0) row["gpuHour"] = api::format_money(r.price_micros);
      out.push_back(row);
    }
    std::cout << json_text(out, 2) << "\n";
    return 0;
  }
  Table table({"VENDOR", "CLASS", "KIND", "PRODUCT", "NODES", "GPUS", "FREE", policy ? "GPU-HOUR (" + policy->currency + ")" : "GPU-HOUR"});
  for (const auto& [k, r] : rows)
    table.add({std::get<0>(k), std::get<1>(k), std::get<2>(k), std::get<3>(k), std::to_string(r.nodes), gpus(r.capacity_milli),
               gpus(r.free_milli), r.price_micros >= 0 ? api::format_money(r.price_micros) : "-"});
  if (rows.empty())
    std::cout << "(no schedulable GPU node)\n";
  else
    table.print(std::cout);
  print_node_pools(*market, all);
  return 0;
}

}  // namespace valley::ctl
