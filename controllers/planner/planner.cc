// The planner's public functions (planner.h) and the node rules a plan applies; the plan itself is
// detail::Plan (plan.h), its phases in plan_*.cc.
#include "controllers/planner/planner.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

#include "controllers/gpu/resources.h"
#include "controllers/planner/plan.h"

namespace valley::planner {

bool tolerates(const std::vector<Toleration>& tolerations, const Taint& taint) {
  if (taint.effect == "PreferNoSchedule") return true;
  for (const auto& tol : tolerations) {
    if (!tol.effect.empty() && tol.effect != taint.effect) continue;
    if (tol.op == "Exists" && (tol.key.empty() || tol.key == taint.key)) return true;
    if (tol.op != "Exists" && tol.key == taint.key && tol.value == taint.value) return true;
  }
  return false;
}

namespace {
bool tolerates(const Task& t, const Taint& taint) { return tolerates(t.tolerations, taint); }

// A node that taints itself with its own GPU resource (as managed GPU node groups do) keeps off pods
// that ask for no GPU; Valley's workers there ask for that resource and tolerate it (render::worker_pod,
// as Kubernetes' ExtendedResourceToleration admission would).
bool gpu_taint(const Node& n, const Taint& taint) {
  return taint.effect != "NoExecute" && n.capacity.count(taint.key) > 0;
}

bool not_ready_taint(const Taint& taint) {
  return taint.key == "node.kubernetes.io/not-ready" || taint.key == "node.kubernetes.io/unreachable";
}

}  // namespace

namespace detail {

bool kept_off_spot(const Task& t, const Config& c) {
  // A task that cannot checkpoint would lose all its work with a spot node: not there, unless it asks.
  return c.spot_needs_checkpoint && !t.checkpointed && !t.selects_spot && t.node_selector.empty();
}

// Whether task t may get new workers on node n.
bool eligible(const Task& t, const Node& n, const Config& c) {
  if (!n.schedulable) return false;
  if (n.capacity_class == "spot" && kept_off_spot(t, c)) return false;
  if (std::find(t.avoid_nodes.begin(), t.avoid_nodes.end(), n.name) != t.avoid_nodes.end()) return false;
  if (!selects(t, n)) return false;
  for (const auto& taint : n.taints)
    if (!tolerates(t, taint) && !gpu_taint(n, taint)) return false;
  return true;
}

// Whether the workers task t already has on node n stay there. As for new ones, except:
// - a node NotReady for less than the grace the task's lifecycle gives it keeps them (a heartbeat
//   late under load is not a loss: its pods are still there, holding their GPUs, and the lifecycle
//   does not restart the task before the grace is over);
// - taints that only keep new pods away (NoSchedule, PreferNoSchedule, and the NotReady ones, which
//   the grace covers) do not move them; nor does the spot rule.
// - a worker bound there stays on a node the task avoids: the node refused it, then took it;
// - a worker bound there stays on a node with a NoExecute taint: Kubernetes' taint eviction takes
//   its pod if the taint holds, which the lifecycle counts as the platform's disruption. The node's
//   view may also be older than the pod's (a bought node's registration taint, gone before the
//   scheduler bound the pod, still in the node cache): moving then would restart a gang for nothing.
bool keeps(const Task& t, const Task::Worker& w, const Node& n, const Config& c, SystemTime now) {
  const bool briefly_not_ready = !n.ready && !n.cordoned && n.notice.empty() && n.fault.empty() &&
                                 !not_ready_past(n.ready, n.not_ready_since, now, c.node_not_ready_grace);
  if (!n.schedulable && !briefly_not_ready) return false;
  if (!w.bound && std::find(t.avoid_nodes.begin(), t.avoid_nodes.end(), n.name) != t.avoid_nodes.end()) return false;
  if (!selects(t, n)) return false;
  if (w.bound) return true;
  for (const auto& taint : n.taints)
    if (taint.effect == "NoExecute" && !not_ready_taint(taint) && !tolerates(t, taint)) return false;
  return true;
}

}  // namespace detail

namespace {
std::vector<const Task*> refs(const std::vector<Task>& tasks) {
  std::vector<const Task*> out;
  out.reserve(tasks.size());
  for (const auto& t : tasks) out.push_back(&t);
  return out;
}
}  // namespace

std::string pool_of(const Node& n) { return n.vendor + "/" + n.capacity_class; }

std::string vendor_of_pool(const std::string& pool) { return pool.substr(0, pool.find('/')); }

bool not_ready_past(bool ready, const std::optional<SystemTime>& not_ready_since, SystemTime now, std::chrono::seconds grace) {
  return !ready && not_ready_since && now - *not_ready_since >= grace;
}

namespace {
bool integer_of(const std::string& s, int64_t* out) {
  if (s.empty() || s.size() > 18) return false;
  size_t used = 0;
  try {
    *out = std::stoll(s, &used);
  } catch (const std::exception&) {
    return false;
  }
  return used == s.size();
}

bool satisfies(const NodeRequirement& r, const Node& n) {
  const std::string* value = nullptr;
  if (r.key == "metadata.name") {
    value = &n.name;
  } else if (auto it = n.labels.find(r.key); it != n.labels.end()) {
    value = &it->second;
  }
  const bool listed = value && std::find(r.values.begin(), r.values.end(), *value) != r.values.end();
  if (r.op == "In") return listed;
  if (r.op == "NotIn") return !listed;
  if (r.op == "Exists") return value != nullptr;
  if (r.op == "DoesNotExist") return value == nullptr;
  if (r.op == "Gt" || r.op == "Lt") {
    int64_t have = 0, bound = 0;
    if (!value || r.values.size() != 1 || !integer_of(*value, &have) || !integer_of(r.values[0], &bound)) return false;
    return r.op == "Gt" ? have > bound : have < bound;
  }
  return false;  // an operator the API server would have refused
}
}  // namespace

std::string whole_of(const Node& n) {
  if (!n.dra_class.empty()) return gpu::dra_resource(n.dra_class);
  return gpu::whole_resource(n.vendor, n.capacity.count(gpu::kIntelXe) > 0);
}

std::string qualified_attribute(const Node& n, const std::string& name) {
  return name.find('/') == std::string::npos ? n.dra_driver + "/" + name : name;
}

bool devices_match(const Task& t, const Node& n) {
  if (t.device_class.empty()) return true;
  if (n.dra_class != t.device_class) return false;
  for (const auto& [name, value] : t.device_attributes) {
    auto it = n.dra_attributes.find(qualified_attribute(n, name));
    if (it == n.dra_attributes.end() || it->second != value) return false;
  }
  return true;
}

bool selects(const Task& t, const Node& n) { return devices_match(t, n) && selects_labels(t.node_selector, t.node_terms, n); }

bool selects_labels(const std::map<std::string, std::string>& selector, const std::vector<std::vector<NodeRequirement>>& terms,
                    const Node& n) {
  for (const auto& [k, v] : selector) {
    auto it = n.labels.find(k);
    if (it == n.labels.end() || it->second != v) return false;
  }
  if (terms.empty()) return true;
  return std::any_of(terms.begin(), terms.end(), [&](const std::vector<NodeRequirement>& term) {
    // An empty term matches no node, as Kubernetes reads it.
    return !term.empty() && std::all_of(term.begin(), term.end(), [&](const NodeRequirement& r) { return satisfies(r, n); });
  });
}

namespace {
// The measured step a growth rests on, in words: the last step at or below `current` (else the
// first one measured) as a share of linear at the task's minimum.
std::string measured_step(const Scaling& evidence, int current, int min, double min_marginal) {
  const ScalingSample* from = nullptr;
  const ScalingSample* to = nullptr;
  for (size_t k = 1; k < evidence.size(); ++k)
    if (!to || evidence[k].workers <= std::max(current, evidence[1].workers)) {
      from = &evidence[k - 1];
      to = &evidence[k];
    }
  const double linear = linear_rate(evidence, min);
  if (!from || from->rate <= 0 || !(linear > 0) || to->workers <= from->workers) return "no two sizes measured yet: one step at a time";
  const double marginal = (to->rate - from->rate) / (to->workers - from->workers) / linear;
  char buf[160];
  std::snprintf(buf, sizeof buf, "measured speedup from %d to %d workers is %.2f of linear (pays from %.2f)", from->workers, to->workers,
                marginal, min_marginal);
  return buf;
}
}  // namespace

const Scaling& scaling_evidence(const Task& t, int current, const Config& c, bool* by_prior) {
  const bool prior = c.scaling_priors && t.scaling.size() < 2 && t.prior_scaling && !t.prior_scaling->empty() &&
                     std::max(current, t.scaling.empty() ? 0 : t.scaling.back().workers) <= t.prior_scaling->back().workers;
  if (by_prior) *by_prior = prior;
  return prior ? *t.prior_scaling : t.scaling;
}

const Config::TimeBand* time_band(const Task& t, const Config& c) {
  if (t.reduce_cost) return nullptr;
  const Config::TimeBand* band = nullptr;
  for (const auto& b : c.time_bands)
    if (b.min_priority <= t.priority) band = &b;
  return band;
}

double growth_threshold(const Task& t, const Config& c) {
  const Config::TimeBand* band = time_band(t, c);
  return band ? band->min_marginal : c.min_marginal_efficiency;
}

bool grows_regardless(const Task& t, const Config& c) {
  return t.fastest || t.priority >= c.fastest_priority || c.min_marginal_efficiency <= 0;
}

bool buys_for_time(const Task& t, const Config& c) {
  const bool priced = c.min_marginal_efficiency > 0;
  return priced && !t.reduce_cost && (t.pinned_workers || grows_regardless(t, c) || growth_threshold(t, c) <= 0);
}

std::optional<int64_t> growth_price_cap(const Task& t, int from, int to, int64_t price_now, const Config& c) {
  if (t.pinned_workers || grows_regardless(t, c) || price_now <= 0) return std::nullopt;
  const Scaling& evidence = scaling_evidence(t, from, c);
  const double marginal = std::clamp(step_marginal(evidence, from, to, t.min_workers), 0.0, 1.0);
  const double threshold = growth_threshold(t, c);
  if (threshold <= 0) return std::nullopt;
  return std::llround(static_cast<double>(price_now) * marginal / threshold);
}

int target_size(const Task& t, int current, const Config& c, std::string* why) {
  auto said = [why](std::string words) {
    if (why) *why = std::move(words);
  };
  if (t.pinned_workers) {
    if (why) said("replicas.target is " + std::to_string(*t.pinned_workers));
    return std::clamp(*t.pinned_workers, t.min_workers, t.max_workers);
  }
  if (!t.idle.empty()) {
    said(t.idle);
    return t.min_workers;
  }
  if (grows_regardless(t, c)) {
    if (why)
      said(c.min_marginal_efficiency <= 0 && !t.fastest && t.priority < c.fastest_priority
               ? "growth is not priced (no PricingPolicy): grows to max"
               : "priority " + std::to_string(t.priority) + ": speed over cost, grows to max");
    return t.max_workers;
  }
  // No progress records (the workload writes no checkpoint records): its GPUs' utilization is the
  // evidence. Saturated GPUs: try one step up (the step's own utilization decides the next); else stay.
  bool by_prior = false;
  const Scaling& evidence = scaling_evidence(t, current, c, &by_prior);
  if (current > 0 && evidence.empty() && t.gpu_percent) {
    if (why)
      said("its GPUs run at " + std::to_string(*t.gpu_percent) + "% (growing while at least " + std::to_string(c.busy_utilization_percent) +
           "%)");
    const int step = *t.gpu_percent >= c.busy_utilization_percent ? growth_step(current, c.min_gain_workers, c.min_gain_fraction) : 0;
    return std::clamp(current + step, t.min_workers, t.max_workers);
  }
  const double threshold = growth_threshold(t, c);
  const bool timely = time_band(t, c) != nullptr;
  if (why) {
    if (timely && evidence.size() < 2)
      said("without reduceCost, time over cost: no two sizes measured yet, as large as free GPUs allow");
    else
      said(measured_step(evidence, current, t.min_workers, threshold) + (by_prior ? " (as tasks of its image measured)" : "") +
           (timely ? "; without reduceCost, sizes not measured yet are taken to pay" : ""));
  }
  if (timely) return timely_size(evidence, current, t.min_workers, t.max_workers, threshold);
  return paying_size(evidence, current, t.min_workers, t.max_workers, c.min_gain_workers, c.min_gain_fraction, threshold);
}

int64_t price_at(const Node& n, const Config& c, SystemTime t) {
  int64_t per_kwh = 0;
  for (const auto& step : c.tariff) {
    if (step.from > t) break;
    per_kwh = step.per_kwh_micros;
  }
  return n.price_micros + n.kw_milli * per_kwh / 1000;
}

const char* to_string(Action a) {
  switch (a) {
    case Action::Wait: return "Wait";
    case Action::Admit: return "Admit";
    case Action::Keep: return "Keep";
    case Action::Grow: return "Grow";
    case Action::Shrink: return "Shrink";
    case Action::Preempt: return "Preempt";
    case Action::Move: return "Move";
  }
  return "?";
}

bool may_share(const Task& t, const Config& c) {
  return !t.sharing_profile.empty() && t.gpu_milli == 1000 && t.max_workers == 1 && c.pair_rates && !c.pair_rates->empty();
}

std::optional<Task::Worker> worker_shape(int gpu_milli, const Node& node) {
  std::array<std::string, detail::kMigCount> mig;
  for (size_t p = 0; p < detail::kMigCount; ++p) mig[p] = gpu::kMigProfiles[p].resource;
  const auto replicas = gpu::replicas_of(node.replicas_resource);
  auto s = detail::shape_rule<std::string>(gpu_milli, !node.vendor.empty(), node.vendor == "nvidia", whole_of(node), gpu::kTimeSliced,
                                   mig.data(), replicas ? &node.replicas_resource : nullptr, replicas ? replicas->replicas : 0,
                                   replicas && replicas->sharing == gpu::Sharing::Mps, [&node](const std::string& r) {
                                     auto it = node.free.find(r);
                                     return it == node.free.end() ? int64_t{0} : it->second;
                                   });
  if (!s) return std::nullopt;
  return Task::Worker{node.name, s->first, s->second};
}

std::vector<Decision> plan(const std::vector<Node>& nodes, const std::vector<Task>& tasks, SystemTime now,
                           const Config& config) {
  std::vector<const Node*> shared;
  shared.reserve(nodes.size());
  for (const auto& n : nodes) shared.push_back(&n);
  return detail::Plan(std::move(shared), {}, refs(tasks), now, config).run();
}

std::vector<Decision> plan(const std::vector<const Node*>& nodes, const HeldByPlanned& held, const std::vector<Task>& tasks,
                           SystemTime now, const Config& config) {
  return plan(nodes, held, refs(tasks), now, config);
}

std::vector<Decision> plan(const std::vector<const Node*>& nodes, const HeldByPlanned& held, const std::vector<const Task*>& tasks,
                           SystemTime now, const Config& config) {
  return detail::Plan(nodes, held, tasks, now, config).run();
}


}  // namespace valley::planner
