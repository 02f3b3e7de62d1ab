#include "controllers/inputs/nodepools.h"

#include <algorithm>
#include <set>

#include "controllers/api/quantity.h"
#include "controllers/gpu/resources.h"

namespace valley::inputs {

namespace {
namespace kp = api::karpenter;
using json = nlohmann::json;

// Keys whose value Valley knows for a shape before it is bought: requirements on them choose shapes.
bool shape_key(const std::string& key) {
  return key == kp::kInstanceType || key == kp::kCapacityType || key == kp::kArch || key == kp::kOs || key == kp::kZone;
}

// What a pool's requirements leave of a zone: the one zone they pin, else "" (Karpenter picks).
std::string pinned_zone(const api::NodePool& pool) {
  for (const auto& r : pool.requirements)
    if (r.key == kp::kZone && r.op == "In" && r.values.size() == 1) return r.values[0];
  return "";
}

bool zone_allowed(const api::NodePool& pool, const std::string& zone) {
  for (const auto& r : pool.requirements)
    if (r.key == kp::kZone && !api::satisfies({{kp::kZone, zone}}, r)) return false;
  return true;
}

// A requirement Valley cannot evaluate for a shape: Gt/Lt or Exists on a label neither the
// template nor the well-known labels give (an instance-family or GPU-count label of a cloud).
std::string unreadable(const api::NodePool& pool) {
  for (const auto& r : pool.requirements) {
    if (shape_key(r.key) || pool.labels.count(r.key)) continue;
    if (r.op == "Gt" || r.op == "Lt" || r.op == "Exists")
      return "requirement " + r.key + " " + r.op + (r.values.empty() ? "" : " " + r.values[0]) +
             ": Valley cannot tell which instance types meet it (no label of its catalogue says)";
  }
  return "";
}

// The resources a node of this type has, in Node::room's units and whole GPU units.
std::map<std::string, int64_t> resources_of(const api::InstanceType& type) {
  std::map<std::string, int64_t> out;
  for (const auto& [k, v] : type.resources)
    if (auto q = api::parse_quantity(v, k == api::kCpu ? 1000 : 1)) out[k] = *q;
  return out;
}

json node_object(const api::NodePool& pool, const api::InstanceType& type, const std::string& capacity_type, const std::string& zone,
                 const std::string& name) {
  json labels = json::object();
  for (const auto& [k, v] : pool.labels) labels[k] = v;
  // A requirement of one value is a label its nodes carry.
  for (const auto& r : pool.requirements)
    if (r.op == "In" && r.values.size() == 1 && !labels.contains(r.key)) labels[r.key] = r.values[0];
  labels[kp::kNodePool] = pool.name;
  labels[kp::kInstanceType] = type.name;
  labels[kp::kCapacityType] = capacity_type;
  labels[kp::kArch] = type.architecture;
  labels[kp::kOs] = type.operating_systems.empty() ? "linux" : type.operating_systems.front();
  if (!zone.empty()) labels[kp::kZone] = zone;
  json taints = json::array();
  for (const auto& t : pool.taints) taints.push_back({{"key", t.key}, {"value", t.value}, {"effect", t.effect}});
  json allocatable = json::object();
  for (const auto& [k, v] : type.resources) allocatable[k] = v;
  return {{"metadata", {{"name", name}, {"labels", labels}}},
          {"spec", {{"taints", taints}}},
          {"status", {{"allocatable", allocatable}, {"capacity", allocatable}, {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
}

// What a node takes of a pool's limited resources.
std::map<std::string, int64_t> cost_in(const api::NodePool& pool, const std::map<std::string, int64_t>& has) {
  std::map<std::string, int64_t> out;
  for (const auto& [r, limit] : pool.limits) {
    (void)limit;
    auto it = has.find(r);
    if (it != has.end() && it->second > 0) out[r] = it->second;
  }
  return out;
}

std::map<std::string, int64_t> existing_capacity(const planner::Node& n) {
  std::map<std::string, int64_t> out = n.room_capacity;
  for (const auto& [r, v] : n.capacity) out[r] += v;
  return out;
}
}  // namespace

Provisionable provisionable(const std::vector<api::NodePool>& pools, const api::Catalogue& catalogue,
                            const std::vector<const planner::Node*>& existing, const planner::NodeFacts& facts,
                            const ProvisioningOptions& options) {
  Provisionable out;
  for (const auto& pool : pools) {
    if (pool.deleting) {
      out.unusable[pool.name] = "being deleted";
      continue;
    }
    if (std::string why = unreadable(pool); !why.empty()) {
      out.unusable[pool.name] = why;
      continue;
    }
    // What its limits leave: limit less what its nodes have now, or less what Karpenter counts
    // (its NodeClaims, those still being launched included) when that is more.
    std::map<std::string, int64_t> used;
    for (const planner::Node* n : existing) {
      auto it = n->labels.find(kp::kNodePool);
      if (it == n->labels.end() || it->second != pool.name) continue;
      for (const auto& [r, v] : existing_capacity(*n)) used[r] += v;
    }
    std::map<std::string, int64_t> left = pool.limits;
    for (auto& [r, v] : left) {
      auto counted = pool.in_use.find(r);
      v = std::max<int64_t>(0, v - std::max(used[r], counted == pool.in_use.end() ? 0 : counted->second));
    }
    const auto delay_it = options.delay.find(pool.name);
    const auto delay = delay_it == options.delay.end() ? options.default_delay : delay_it->second;
    const std::string zone = pinned_zone(pool);
    size_t offered = 0;
    std::string spent;
    for (const auto& type : catalogue.types) {
      const auto has = resources_of(type);
      const bool gpus = std::any_of(has.begin(), has.end(), [](const auto& kv) { return gpu::is_gpu_resource(kv.first) && kv.second > 0; });
      if (!gpus) continue;
      std::set<std::string> capacity_types;
      for (const auto& o : type.offerings)
        if (o.available && (o.zone.empty() || zone_allowed(pool, o.zone))) capacity_types.insert(o.capacity_type);
      for (const auto& ct : capacity_types) {
        const api::ProvisionTarget target{pool.name, type.name, ct};
        json object = node_object(pool, type, ct, zone, api::provisionable_name(target, 0));
        std::map<std::string, std::string> labels = object["metadata"]["labels"];
        const bool allowed = std::all_of(pool.requirements.begin(), pool.requirements.end(), [&](const api::NodeRequirement& r) {
          if (r.key == kp::kZone) return true;  // the offerings chose the zones
          return !shape_key(r.key) && !labels.count(r.key) ? true : api::satisfies(labels, r);
        });
        if (!allowed) continue;
        const auto cost = cost_in(pool, has);
        int64_t count = options.max_nodes_per_shape;
        bool bounded = false;
        for (const auto& [r, units] : cost) {
          count = bounded ? std::min(count, left[r] / units) : left[r] / units;
          bounded = true;
        }
        if (count <= 0) {
          for (const auto& [r, units] : cost)
            if (left[r] < units)
              spent = "its limit on " + r + " (" + std::to_string(pool.limits.at(r)) + ") leaves " + std::to_string(left[r]) +
                      ", less than one " + type.name + " node has (" + std::to_string(units) + ")";
          continue;
        }
        ++offered;
        for (int64_t i = 0; i < count; ++i) {
          object["metadata"]["name"] = api::provisionable_name(target, static_cast<int>(i));
          planner::Node n = planner::node_from(object, facts);
          n.bought_from = pool.name;
          n.provisioning = delay;
          n.pool_cost = cost;
          out.nodes.push_back(std::move(n));
        }
      }
    }
    if (offered == 0)
      out.unusable[pool.name] = !spent.empty() ? spent : "no GPU instance type of the catalogue meets its requirements";
    else if (!pool.limits.empty())
      out.budgets[pool.name] = left;
  }
  return out;
}

std::map<std::string, PoolUse> pool_use(const std::vector<const planner::Node*>& existing) {
  std::map<std::string, PoolUse> out;
  for (const planner::Node* n : existing) {
    auto pool = n->labels.find(kp::kNodePool);
    if (pool == n->labels.end()) continue;
    PoolUse& u = out[pool->second];
    u.nodes += 1;
    int64_t held = 0;
    for (const auto& [r, cap] : n->capacity) {
      auto free = n->free.find(r);
      const int64_t h = cap - (free == n->free.end() ? 0 : std::max<int64_t>(0, free->second));
      u.gpus += cap;
      held += std::max<int64_t>(0, h);
    }
    u.gpus_held += held;
    if (held == 0) u.idle += 1;
  }
  return out;
}

const ProvisionableNodes::Taken& ProvisionableNodes::take(const std::vector<api::NodePool>& pools, const api::Catalogue& catalogue,
                                                         const std::vector<const planner::Node*>& existing, const planner::NodeFacts& facts,
                                                         const ProvisioningOptions& options) {
  Provisionable made = provisionable(pools, catalogue, existing, facts, options);
  std::map<std::string, std::shared_ptr<const planner::Node>> by_name;
  for (auto& n : made.nodes) {
    auto old = by_name_.find(n.name);
    auto name = n.name;
    by_name[name] = old != by_name_.end() && *old->second == n ? old->second : std::make_shared<const planner::Node>(std::move(n));
  }
  by_name_ = std::move(by_name);
  last_.nodes.clear();
  for (const auto& [name, node] : by_name_) last_.nodes.push_back(node);
  last_.budgets = std::move(made.budgets);
  last_.unusable = std::move(made.unusable);
  return last_;
}

PoolsUsable pools_usable(const std::vector<api::NodePool>& pools, const api::Catalogue& catalogue, const planner::NodeFacts& facts) {
  PoolsUsable out;
  if (pools.empty()) {
    out.reason = "NoNodePools";
    out.message = "no NodePool (karpenter.sh/v1) exists: Valley plans on the nodes that are up only";
    return out;
  }
  ProvisioningOptions options;
  options.max_nodes_per_shape = 1;  // whether a pool offers a node at all, not how many
  std::vector<api::NodePool> empty = pools;
  for (auto& p : empty) p.in_use.clear();
  const Provisionable offered = provisionable(empty, catalogue, {}, facts, options);
  for (const auto& [pool, why] : offered.unusable) out.message += (out.message.empty() ? "" : "; ") + ("Valley buys nothing from NodePool " + pool + ": " + why);
  out.all = offered.unusable.empty();
  out.reason = out.all ? "AllUsable" : offered.unusable.size() == pools.size() ? "NoneUsable" : "SomeUnusable";
  if (out.all) {
    std::string names;
    for (const auto& p : pools) names += (names.empty() ? "" : ", ") + p.name;
    out.message = "Valley buys nodes from NodePools " + names + " when nothing up holds a gang or buying is cheaper";
  }
  return out;
}

void offer(planner::SnapshotView& view, const ProvisionableNodes::Taken& taken,
           const std::function<bool(const std::map<std::string, std::string>&)>& selected) {
  for (const auto& n : taken.nodes)
    if (selected(n->labels)) view.nodes.push_back(n);
  std::sort(view.nodes.begin(), view.nodes.end(), [](const auto& a, const auto& b) { return a->name < b->name; });
}

}  // namespace valley::inputs
