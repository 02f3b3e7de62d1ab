// valleyctl estimate: what a task would cost, planned as the operator would plan it now.
#include "cmd/valleyctl/common.h"
#include "cmd/valleyctl/market.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>

#include "controllers/inputs/candidates.h"
#include "controllers/cost/engine.h"
#include "controllers/inputs/planner_config.h"
#include "controllers/cost/report.h"
#include "controllers/inputs/cluster_snapshot.h"
#include "controllers/planner/scaling.h"
#include "controllers/inputs/snapshot.h"
#include "controllers/api/seed.h"
#include "controllers/api/spec.h"
#include "controllers/api/tenant.h"
#include "controllers/tenancy/tenants.h"
#include "operator/kube/json_fields.h"
#include "operator/duration.h"
#include "operator/kube/remote_clock.h"
#include "operator/kube/resource.h"
#include "operator/yaml_json.h"

#include "operator/flags.h"
#include "operator/kube/client.h"
#include "operator/kube/error.h"
#include "valley/version.h"
#include "operator/json_text.h"

namespace valley::ctl {

namespace {

namespace planner = valley::planner;
namespace cost = valley::cost;

std::string join_vendors(const std::vector<std::string>& vendors) {
  std::string out;
  for (const auto& v : vendors) out += (out.empty() ? "" : "/") + v;
  return out;
}

// Offline: every GPU price in the policy the task may use, on demand and spot.
std::vector<cost::NodeRate> policy_rates(const cost::Policy& policy, const api::TaskSpec& spec) {
  std::vector<cost::NodeRate> out;
  for (const auto& g : policy.gpu) {
    const std::string vendor = g.vendor.empty() ? "nvidia" : g.vendor;
    if (!spec.runs_on(vendor)) continue;
    std::map<std::string, std::string> labels;
    if (!g.product.empty()) labels[vendor == "amd" ? "amd.com/gpu.product-name" : vendor == "intel" ? "gpu.intel.com/product" : "nvidia.com/gpu.product"] = g.product;
    out.push_back(cost::rate_for(policy, vendor, labels));
    labels[policy.spot_labels.front().first] = policy.spot_labels.front().second;
    out.push_back(cost::rate_for(policy, vendor, labels));
  }
  return out;
}

void print_estimate(const api::TaskSpec& spec, const cost::Policy& policy, const cost::Estimate& e, const json& out,
                    const planner::Decision& d, bool offline, kube::SystemTime now) {
  std::cout << "task        " << spec.name << " (" << api::task_type_name(spec.type) << ", priority "
            << spec.priority << ", " << spec.min_workers << "-" << spec.max_workers << " workers x " << api::format_milli(spec.gpus.milli)
            << " GPU" << (spec.reduce_cost ? ", reduceCost" : "") << (spec.vendors.size() > 1 || spec.vendors[0] != "nvidia" ? ", on " + join_vendors(spec.vendors) : std::string()) << ")\n";
  if (!d.reason.empty()) std::cout << "planner     " << d.reason << "\n";
  std::cout << "expected    " << out["expected"].get<std::string>() << " " << policy.currency << "  " << e.basis << "\n";
  std::cout << "gpu-hours   " << out["gpuHours"].get<std::string>() << " (" << e.workers << " workers for " << out["hours"].get<std::string>()
            << " h; it grows while the measured speedup pays)\n";
  std::cout << "starts      " << kube::format_time(e.start) << (e.start > now + std::chrono::minutes(1) ? " (it waits)" : " (now)") << "\n";
  std::cout << "range       " << out["low"].get<std::string>() << " - " << out["high"].get<std::string>() << " " << policy.currency
            << "  (low: " << e.low_basis << "; high: " << e.high_basis << ")\n";
  std::cout << "policy      " << policy.name << (offline ? " (offline: prices from the policy only)" : "") << "\n";
}

}  // namespace

int cmd_estimate(const Flags& flags, const std::vector<std::string>& args) {
  if (!one_argument(args, "valleyctl estimate FILE [--policy FILE] [--duration 6h]")) return 2;
  auto task = read_task_or_report(args[1]);
  if (!task) return 1;
  if (!flags.get("duration").empty()) (*task)["spec"]["estimatedDuration"] = flags.get("duration");
  if (!(*task)["metadata"].contains("namespace")) (*task)["metadata"]["namespace"] = "default";
  auto parsed = api::parse_task(*task);
  if (!parsed.spec) {
    std::cerr << "valleyctl: " << args[1] << ":";
    for (const auto& e : parsed.errors) std::cerr << "\n  " << e;
    std::cerr << "\n";
    return 1;
  }
  const auto& spec = *parsed.spec;
  if (!spec.estimated_duration) {
    std::cerr << "valleyctl: " << args[1] << ": no estimatedDuration (EstimatedDuration in the seed format); pass --duration 6h\n";
    return 1;
  }
  auto market = read_market(flags, true);
  if (!market) return 1;
  std::vector<std::string> errors;
  auto policy = api::parse_policy(market->policy_object, &errors);
  if (!policy) {
    std::cerr << "valleyctl: the PricingPolicy is invalid:";
    for (const auto& e : errors) std::cerr << "\n  " << e;
    std::cerr << "\n";
    return 1;
  }
  std::vector<cost::NodeRate> candidates = cost::candidate_rates(*policy, spec, *task, market_nodes(*market, false));
  if (candidates.empty()) candidates = policy_rates(*policy, spec);
  if (candidates.empty()) {
    std::cerr << "valleyctl: no GPU the task could use is priced\n";
    return 1;
  }
  // The same decision the operator would make now: the cluster's nodes less what its pods hold,
  // priced by the policy, and this task planned among them (tasks waiting in the queue are not
  // counted). Offline: no nodes, so the cheapest capacity it may use, starting now.
  const auto now = kube::cluster_clock().now();
  if (!(*task)["metadata"].contains("creationTimestamp")) (*task)["metadata"]["creationTimestamp"] = kube::format_time(now);
  planner::Task t = planner::task_from(spec, *task, {});
  std::vector<planner::Node> pn = market_nodes(*market, true);
  planner::Config config = cost::planner_config(*policy, pn, now, {});
  if (spec.reduce_cost) {
    t.cheap_until = planner::cheap_until(now, policy->reduce_cost_patience, spec.deadline(now), spec.estimated_duration, 0, {}, t.min_workers,
                                         t.max_workers, config.min_marginal_efficiency);
  }
  planner::Decision d;
  d.key = t.key;
  if (!pn.empty()) d = planner::plan(pn, {t}, now, config)[0];
  std::map<std::string, cost::NodeRate> rates;
  for (const auto& n : pn)
    if (!n.vendor.empty()) rates[n.name] = cost::rate_for(*policy, n.vendor, n.labels, n.dra_product);
  auto basis = cost::estimate_basis(spec, t, d, config, rates, candidates, now);
  auto e = cost::estimate(*policy, spec, basis);
  json out = cost::estimate_json(*policy, *e);
  out["task"] = spec.name;
  if (!d.reason.empty()) out["decision"] = d.reason;
  if (flags.get("output") == "json") {
    std::cout << json_text(out, 2) << "\n";
    return 0;
  }
  print_estimate(spec, *policy, *e, out, d, market->nodes.empty(), now);
  return 0;
}

}  // namespace valley::ctl
