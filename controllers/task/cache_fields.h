// What Valley keeps of the pods and nodes it caches (controller-runtime's cache transform): every
// pod in the cluster and every node sit in memory, and most of each object is never read. Kept are
// the fields the reconciler, the planner, the cost engine and the metrics read; the rest is dropped
// before the object is cached (see cache_fields_test for the readers held equal on full and lean
// objects).
//   pods:  metadata (no annotations or managedFields), spec.nodeName, spec.affinity, the containers'
//          and init containers' names and resources, status phase/reason/message/startTime/
//          conditions and the container statuses' name, state, lastState (which state, its start,
//          exit code, reason, message and end), ready, restartCount;
//   nodes: metadata (no annotations or managedFields), spec (taints, unschedulable), status
//          allocatable/capacity/conditions;
//   conditions: type, status, reason, message, lastTransitionTime (no probe or heartbeat times).
// The masks are what the informers parse with (nothing else of a pod is ever built); lean_pod and
// lean_node apply the same masks to an object already parsed.
#pragma once

#include <memory>

#include <nlohmann/json.hpp>

#include "operator/kube/field_mask.h"

namespace valley::task {

const std::shared_ptr<const kube::FieldMask>& pod_fields();
const std::shared_ptr<const kube::FieldMask>& node_fields();

void lean_pod(nlohmann::json& pod);
void lean_node(nlohmann::json& node);

}  // namespace valley::task
