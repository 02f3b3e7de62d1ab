#include "controllers/inputs/dra_devices.h"

#include <set>
#include <tuple>

#include "controllers/gpu/resources.h"

namespace valley::planner {
namespace {

const DraDriver* driver_of(const NodeFacts& facts, const std::string& driver) {
  for (const auto& d : facts.dra_drivers)
    if (d.driver == driver) return &d;
  return nullptr;
}

// (driver, pool) -> its newest generation among `slices`.
std::map<std::pair<std::string, std::string>, int64_t> newest_generations(const std::vector<const api::DraSlice*>& slices) {
  std::map<std::pair<std::string, std::string>, int64_t> newest;
  for (const auto* s : slices) {
    auto [it, fresh] = newest.try_emplace({s->driver, s->pool}, s->generation);
    if (!fresh && s->generation > it->second) it->second = s->generation;
  }
  return newest;
}

}  // namespace

void add_dra_devices(Node& n, const std::vector<const api::DraSlice*>& all, const NodeFacts& facts) {
  for (const auto& [resource, units] : n.capacity)
    if (gpu::is_gpu_resource(resource) && gpu::dra_class_of(resource).empty() && units > 0) return;  // a device plugin's GPUs
  std::vector<const api::DraSlice*> slices;
  for (const auto* s : all)
    if (s->node == n.name) slices.push_back(s);
  const auto newest = newest_generations(slices);
  std::set<std::tuple<std::string, std::string, std::string>> seen;  // a device listed twice counts once
  for (const auto* s : slices) {
    const DraDriver* d = driver_of(facts, s->driver);
    if (d == nullptr || s->generation != newest.at({s->driver, s->pool})) continue;
    // One vendor and class per node: a second GPU driver on the same node is not placed on.
    if (!n.dra_class.empty() && n.dra_class != d->device_class) continue;
    for (const auto& device : s->devices) {
      if (!seen.insert({s->driver, s->pool, device.name}).second) continue;
      const std::string resource = gpu::dra_resource(d->device_class);
      ++n.capacity[resource];
      ++n.free[resource];
      if (n.dra_class.empty()) {
        n.dra_attributes = device.attributes;
      } else {
        std::erase_if(n.dra_attributes, [&](const auto& a) {
          auto it = device.attributes.find(a.first);
          return it == device.attributes.end() || it->second != a.second;
        });
      }
      n.vendor = d->vendor;
      n.dra_class = d->device_class;
      n.dra_driver = d->driver;
      n.dra_shared = d->shared;
      if (n.dra_product.empty()) n.dra_product = device.product;
    }
  }
}

namespace {
// Calls f(claim, node, device class) for each device an allocated claim holds on a node.
template <class F>
void for_each_held(const std::vector<const api::DraSlice*>& slices, const std::vector<const api::DraClaim*>& claims, const NodeFacts& facts, F f) {
  std::map<std::pair<std::string, std::string>, std::string> node_of_pool;
  for (const auto* s : slices)
    if (!s->node.empty()) node_of_pool[{s->driver, s->pool}] = s->node;
  for (const auto* c : claims)
    for (const auto& r : c->allocated) {
      const DraDriver* d = driver_of(facts, r.driver);
      auto node = node_of_pool.find({r.driver, r.pool});
      if (d != nullptr && node != node_of_pool.end()) f(*c, node->second, d->device_class);
    }
}
}  // namespace

std::map<std::string, std::map<std::string, int64_t>> held_by_claims(const std::vector<const api::DraSlice*>& slices,
                                                                     const std::vector<const api::DraClaim*>& claims,
                                                                     const NodeFacts& facts) {
  std::map<std::string, std::map<std::string, int64_t>> held;
  for_each_held(slices, claims, facts, [&](const api::DraClaim& c, const std::string& node, const std::string& device_class) {
    if (!c.valley || !c.seats_task.empty()) ++held[node][gpu::dra_resource(device_class)];
  });
  return held;
}

std::map<std::string, std::map<std::string, int64_t>> held_by_seats_claims(const std::vector<const api::DraSlice*>& slices,
                                                                           const std::vector<const api::DraClaim*>& claims,
                                                                           const NodeFacts& facts) {
  std::map<std::string, std::map<std::string, int64_t>> held;
  for_each_held(slices, claims, facts, [&](const api::DraClaim& c, const std::string& node, const std::string&) {
    if (!c.seats_task.empty()) ++held[c.seats_task][node];
  });
  return held;
}

}  // namespace valley::planner
