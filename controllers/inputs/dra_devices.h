// GPUs published through Dynamic Resource Allocation, as the planner counts them, purely:
// - a node's DRA GPUs: the devices of the newest generation of each pool its ResourceSlices
//   publish, from drivers NodeFacts names, counted as "dra:<DeviceClass>" units with the driver's
//   vendor, the product their attributes give, and the attributes they all share. A node whose
//   device plugin already advertises GPUs (whole, MIG slices or replicas) keeps those alone: the
//   same GPUs published both ways must not be counted twice.
// - what allocated ResourceClaims hold, by node (the pool's node) and DRA resource. Claims Valley
//   made from its templates are left out: its worker pods say what they hold
//   (api::kClaimedGpusAnnotation), as a device plugin's pod does. Its seats claims count: several
//   pods share one, and none of them holds its device.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "controllers/api/dra.h"
#include "controllers/planner/planner.h"
#include "controllers/inputs/snapshot.h"

namespace valley::planner {

// `n` (from node_from) with the DRA GPUs of the `slices` whose nodeName is n laid over (the others
// are passed over: the caller may hand every slice it has).
void add_dra_devices(Node& n, const std::vector<const api::DraSlice*>& slices, const NodeFacts& facts);

// Node -> DRA resource -> devices held by the allocated claims Valley did not make through its
// templates (those of others, and its seats claims).
std::map<std::string, std::map<std::string, int64_t>> held_by_claims(const std::vector<const api::DraSlice*>& slices,
                                                                     const std::vector<const api::DraClaim*>& claims,
                                                                     const NodeFacts& facts);
// Task ("namespace/name") -> node -> devices its allocated seats claims hold (Task::shared_devices).
std::map<std::string, std::map<std::string, int64_t>> held_by_seats_claims(const std::vector<const api::DraSlice*>& slices,
                                                                           const std::vector<const api::DraClaim*>& claims,
                                                                           const NodeFacts& facts);

}  // namespace valley::planner
