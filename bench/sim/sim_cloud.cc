// The trace replay on bought capacity (Cluster::cloud; sim_state.h): NodePools read through the
// operator's inputs, nodes launched for the gangs admitted onto them, Ready after the pool's
// provisioning delay, given back once empty for the consolidation delay, billed from launch to
// termination.
#include "bench/sim/sim_state.h"

#include <algorithm>
#include <cctype>

#include "controllers/api/nodepool.h"

namespace valley::sim::detail {

namespace kp = api::karpenter;
using json = nlohmann::json;

namespace {
// The shape a pool's nodes are: one instance type per product and GPU count, offered on demand and
// as spot (pools of one shape in both classes share it, as a cloud's catalogue would).
std::string instance_type_of(const Pool& pool) {
  std::string name = pool.product.empty() ? pool.vendor : pool.product;
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::isalnum(c) ? std::tolower(c) : '-'; });
  return name + "-x" + std::to_string(pool.gpus_per_node);
}

std::string capacity_type_of(const Pool& pool) { return pool.spot ? "spot" : "on-demand"; }
}  // namespace

SimNode Simulator::make_node(const Pool& pool, const std::string& name) const {
  SimNode n;
  n.pool = &pool;
  n.node.name = name;
  n.node.vendor = pool.vendor;
  n.node.capacity_class = pool.spot ? "spot" : "on-demand";
  const std::string resource = pool.vendor + ".com/gpu";
  n.node.capacity[resource] = pool.gpus_per_node;
  n.node.free[resource] = pool.gpus_per_node;
  if (pool.replicas > 0) n.slots.assign(static_cast<size_t>(pool.gpus_per_node * pool.replicas), "");
  n.node.labels = pool.labels;
  if (cloud()) {  // what Karpenter labels its nodes with
    n.node.labels[kp::kNodePool] = pool.name;
    n.node.labels[kp::kInstanceType] = instance_type_of(pool);
  }
  n.rate = cost::rate_for(in_.pricing, pool.vendor, pool.labels);
  n.rng = spot_rng(in_.workload, name);
  return n;
}

void Simulator::setup_cloud() {
  const CloudModel& model = *in_.cluster.cloud;
  std::map<std::string, json> types;  // by instance type
  for (const auto& pool : in_.cluster.pools) {
    prototypes_.emplace(pool.name, make_node(pool, pool.name + "-0"));
    const std::string type = instance_type_of(pool), klass = capacity_type_of(pool);
    json labels = json::object();
    for (const auto& [k, v] : pool.labels)
      if (k != kp::kCapacityType) labels[k] = v;
    const json object = {
        {"apiVersion", "karpenter.sh/v1"},
        {"kind", "NodePool"},
        {"metadata", {{"name", pool.name}}},
        {"spec",
         {{"template",
           {{"metadata", {{"labels", labels}}},
            {"spec",
             {{"requirements", json::array({{{"key", kp::kCapacityType}, {"operator", "In"}, {"values", {klass}}},
                                            {{"key", kp::kInstanceType}, {"operator", "In"}, {"values", {type}}}})}}}}},
          {"limits", {{pool.vendor + ".com/gpu", std::to_string(pool.nodes * pool.gpus_per_node)}}},
          {"disruption", {{"consolidationPolicy", "WhenEmpty"}, {"consolidateAfter", std::to_string(model.consolidate_after_seconds) + "s"}}}}}};
    const auto read = api::read_node_pool(object);
    if (!read.pool) throw InputError("cloud: pool " + pool.name + " as a NodePool: " + read.error);
    node_pools_.push_back(*read.pool);
    json& t = types[type];
    if (t.is_null())
      t = {{"name", type}, {"resources", {{pool.vendor + ".com/gpu", std::to_string(pool.gpus_per_node)}}}, {"offerings", json::array()}};
    // The catalogue's price is the cloud's list price; Valley prices by the PricingPolicy (rate_for).
    t["offerings"].push_back({{"Price", 1.0}, {"Available", true},
                              {"Requirements", json::array({{{"key", kp::kCapacityType}, {"operator", "In"}, {"values", {klass}}}})}});
    provisioning_.delay[pool.name] = std::chrono::seconds(model.provisioning(pool.name));
  }
  json catalogue = json::array();
  for (auto& [name, t] : types) catalogue.push_back(std::move(t));
  catalogue_ = api::read_catalogue(catalogue);
  if (!catalogue_.error.empty()) throw InputError("cloud: the instance catalogue: " + catalogue_.error);
  // An admission published onto nodes still to buy counts as taken until its pods bind (the
  // operator's admission board; here the job's own placement, kept by admit and cloud_events).
  cluster_facts_.published = [this](const std::string& key) -> const std::vector<render::WorkerPlacement>* {
    auto it = published_.find(key);
    return it == published_.end() ? nullptr : &it->second;
  };
}

const Pool& Simulator::pool_named(const std::string& name) const {
  for (const auto& p : in_.cluster.pools)
    if (p.name == name) return p;
  throw std::logic_error("no pool " + name);
}

cost::NodeRate Simulator::rate_of(const std::string& node_name) const {
  if (auto target = api::provision_target(node_name)) return prototypes_.at(target->pool).rate;
  return node(node_name).rate;
}

void Simulator::offer_provisionable(planner::SnapshotView& view) {
  // What the pools hold counts against their limits: the nodes up and those being launched (the
  // autoscaler's NodeClaims in flight).
  std::vector<const planner::Node*> existing;
  for (const auto& n : nodes_)
    if (!n.gone) existing.push_back(&n.node);
  const auto& taken = provisionable_.take(node_pools_, catalogue_, existing, node_facts_, provisioning_);
  inputs_.set_pool_budgets(taken.budgets);
  inputs::offer(view, taken, [](const auto&) { return true; });
}

SimNode& Simulator::launch(const Pool& pool) {
  SimNode n = make_node(pool, pool.name + "-" + std::to_string(launched_++));
  n.alive = false;
  n.launching = true;
  n.launched_at = now_;
  n.ready_at = now_ + in_.cluster.cloud->provisioning(pool.name);
  node_index_[n.node.name] = nodes_.size();
  nodes_.push_back(std::move(n));
  return nodes_.back();
}

void Simulator::admit(SimJob& j, std::vector<planner::Task::Worker> placement) {
  const bool buys = std::any_of(placement.begin(), placement.end(), [](const auto& w) { return api::is_provisionable(w.node); });
  if (!buys) return start_segment(j, std::move(placement), j.resumed);
  // As the autoscaler does for pending pods: each goes onto a node of its pool being launched that
  // has room left for it (NodeClaims in flight count), else onto a node launched now.
  j.buying.assign(placement.size(), "");
  for (size_t x = 0; x < placement.size(); ++x) {
    const auto& w = placement[x];
    if (!api::is_provisionable(w.node)) continue;
    const Pool& pool = pool_named(api::provision_target(w.node)->pool);
    SimNode* bought = nullptr;
    for (auto& n : nodes_)
      if (n.launching && n.pool == &pool && n.pool->gpus_per_node - n.promised >= w.count) {
        bought = &n;
        break;
      }
    if (!bought) bought = &launch(pool);
    bought->promised += w.count;
    j.buying[x] = bought->node.name;
  }
  j.awaiting = std::move(placement);
  j.state = State::Provisioning;
  ++j.epoch;
  publish(j);
  touch(j);
}

void Simulator::publish(const SimJob& j) {
  if (j.state != State::Provisioning) {
    published_.erase(key_of(j));
    return;
  }
  auto& placed = published_[key_of(j)];
  placed.clear();
  for (const auto& w : j.awaiting) {
    render::WorkerPlacement p;
    p.gpu_resource = w.gpu_resource;
    p.gpu_count = static_cast<int>(w.count);
    p.node = w.node;
    placed.push_back(std::move(p));
  }
}

void Simulator::give_up_buying(SimJob& j) {
  for (size_t x = 0; x < j.buying.size(); ++x)
    if (!j.buying[x].empty())
      if (SimNode& n = node(j.buying[x]); n.launching) n.promised -= j.awaiting[x].count;
  j.awaiting.clear();
  j.buying.clear();
  j.state = State::Pending;
  publish(j);
  touch(j);
}

std::set<std::string> Simulator::busy_nodes() const {
  std::set<std::string> busy;
  for (const auto& j : jobs_) {
    if (j.state == State::Running)
      for (const auto& w : j.workers) busy.insert(w.node);
    if (j.state == State::Provisioning)
      for (size_t x = 0; x < j.awaiting.size(); ++x) busy.insert(j.buying[x].empty() ? j.awaiting[x].node : j.buying[x]);
  }
  return busy;
}

void Simulator::cloud_events() {
  if (!cloud()) return;
  bool ready = false;
  for (auto& n : nodes_) {
    if (!n.launching || n.ready_at > now_) continue;
    n.launching = false;
    n.alive = true;
    n.promised = 0;
    schedule_interruption(n, now_);
    ready = true;
  }
  // The pending pods bind to the nodes launched for them that are Ready; a gang all bound starts.
  for (auto& j : jobs_) {
    if (!ready || j.state != State::Provisioning) continue;
    bool all_up = true;
    for (size_t x = 0; x < j.awaiting.size(); ++x) {
      if (!j.buying[x].empty() && node(j.buying[x]).alive) {
        j.awaiting[x].node = j.buying[x];
        j.buying[x].clear();
        touch(j);
      }
      all_up = all_up && j.buying[x].empty();
    }
    publish(j);
    if (!all_up) continue;
    auto placement = std::move(j.awaiting);
    j.awaiting.clear();
    j.buying.clear();
    start_segment(j, std::move(placement), j.resumed, /*new_epoch=*/false);  // the pods of its admission start
    publish(j);
    if (j.resumed) ++j.result.restarts;
    j.resumed = true;
  }
  const auto busy = busy_nodes();
  const int64_t after = in_.cluster.cloud->consolidate_after_seconds;
  for (auto& n : nodes_) {
    if (!n.alive) continue;
    if (busy.count(n.node.name)) {
      n.idle_since = kNever;
      continue;
    }
    if (n.idle_since == kNever) n.idle_since = now_;
    if (now_ - n.idle_since >= after) {  // consolidated: the autoscaler gives the empty node back
      n.alive = false;
      n.gone = true;
      n.gone_at = now_;
      n.notice_at = n.kill_at = kNever;  // (an interruption it would have had)
    }
  }
}

void Simulator::measure_bought(int64_t t) {
  if (!cloud() || t <= now_) return;
  const double hours = static_cast<double>(t - now_) / 3600.0;
  const auto busy = busy_nodes();
  for (const auto& n : nodes_) {
    if (n.gone) continue;
    bought_.node_hours += hours;
    bought_.gpu_hours += hours * n.pool->gpus_per_node;
    if (n.launching) bought_.provisioning_node_hours += hours;
    else if (!busy.count(n.node.name)) bought_.idle_node_hours += hours;
  }
}

Result::Bought Simulator::bill_nodes() {
  Result::Bought b = bought_;
  const int64_t after = in_.cluster.cloud->consolidate_after_seconds;
  for (auto& n : nodes_) {
    if (!n.gone) {  // still up when the replay ends: billed until it would have been given back
      const int64_t idle_from = n.launching ? n.ready_at : std::max(now_, n.idle_since == kNever ? now_ : n.idle_since);
      n.gone_at = std::max(now_, idle_from + after);
      const double hours = static_cast<double>(n.gone_at - now_) / 3600.0;
      b.node_hours += hours;
      b.gpu_hours += hours * n.pool->gpus_per_node;
      b.idle_node_hours += static_cast<double>(n.gone_at - std::max(now_, n.launching ? n.ready_at : now_)) / 3600.0;
      if (n.launching) b.provisioning_node_hours += static_cast<double>(n.ready_at - now_) / 3600.0;
    }
    if (n.gone_at > n.launched_at) {
      const auto charge = cost::charge_interval(in_.pricing, n.rate, int64_t{n.pool->gpus_per_node} * 1000, at(n.launched_at), at(n.gone_at));
      b.cost += charge.gpu + charge.energy;
    }
  }
  b.nodes_launched = launched_;
  return b;
}

}  // namespace valley::sim::detail
