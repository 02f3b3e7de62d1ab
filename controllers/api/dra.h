// Dynamic Resource Allocation objects (resource.k8s.io/v1) as the planner reads them, typed and
// read tolerantly (a field absent or of another type reads as absent):
// - a ResourceSlice: the devices one driver publishes for one node in one pool, at the pool's
//   generation (only the newest generation of a pool counts; a slice without a nodeName, such as
//   network-attached devices, is read but places nothing);
// - a ResourceClaim: the devices its allocation holds (driver, pool, device per result) and
//   whether Valley made it (from one of its templates: the planner counts those through the worker
//   pods instead, so no device is counted twice).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "operator/kube/store.h"
#include "operator/kube/timefmt.h"

namespace valley::api {

struct DraDevice {
  std::string name;
  std::string product;  // the first product attribute it has ("" if none)
  // Every attribute as text (string, version, int, bool), by qualified name ("<domain>/<name>": an
  // unqualified one is the driver's own, so it is qualified by the driver's name).
  std::map<std::string, std::string> attributes;
  bool operator==(const DraDevice&) const = default;
};

struct DraSlice {
  std::string name, driver, pool, node;
  int64_t generation = 0;
  std::vector<DraDevice> devices;
  bool operator==(const DraSlice&) const = default;
};

// product_attributes: device attribute names read as the product, first found wins; each is
// looked up as given and qualified by the driver ("<driver>/<name>").
DraSlice dra_slice_from(const nlohmann::json& slice, const std::vector<std::string>& product_attributes);

struct DraClaimResult {
  std::string driver, pool, device;
  bool operator==(const DraClaimResult&) const = default;
};

// The role label of a claim Valley makes for a task's seats (fractional workers sharing a device):
// one device, owned by the task, annotated with the node its seats are on.
inline constexpr const char* kSeatsClaimRole = "gpu-seats";
inline constexpr const char* kSeatsNodeAnnotation = "valley.dev/node";

struct DraClaim {
  std::string key;  // namespace/name
  std::string resource_version;
  bool valley = false;  // labelled app.kubernetes.io/managed-by=valley
  // A claim Valley made for a task's seats: "namespace/task" and the node it is for ("" otherwise).
  // It, not its pods, holds its device.
  std::string seats_task, seats_node;
  std::optional<kube::SystemTime> created;  // metadata.creationTimestamp
  bool deleting = false;                    // metadata.deletionTimestamp set
  std::vector<DraClaimResult> allocated;  // empty while not allocated
  // Equal when the planner counts them alike: the resourceVersion aside (a claim's reservations and
  // device status change it and say nothing the planner reads).
  bool operator==(const DraClaim& o) const {
    return key == o.key && valley == o.valley && seats_task == o.seats_task && seats_node == o.seats_node && deleting == o.deleting &&
           allocated == o.allocated;
  }
};

DraClaim dra_claim_from(const nlohmann::json& claim);

}  // namespace valley::api

namespace valley::kube {
// The claims informer caches claims typed: each is parsed once, and an update that changes
// nothing the planner counts calls no handler.
template <>
struct ObjectTraits<api::DraClaim> {
  static std::string key(const api::DraClaim& c) { return c.key; }
  static const std::string& resource_version(const api::DraClaim& c) { return c.resource_version; }
  static bool same_but_resource_version(const api::DraClaim& a, const api::DraClaim& b) { return a == b; }
  static api::DraClaim from(nlohmann::json&& o) { return api::dra_claim_from(o); }
  // kSeatsTaskIndex: a task's seats claims, by "namespace/task".
  static void add_indexes(BasicStore<api::DraClaim>& store) {
    store.add_index(kSeatsTaskIndex, [](const api::DraClaim& c) {
      return c.seats_task.empty() ? std::vector<std::string>{} : std::vector<std::string>{c.seats_task};
    });
  }
  static constexpr const char* kSeatsTaskIndex = "seatsTask";
};
}  // namespace valley::kube
