// What Valley keeps of the pods and nodes it caches (controller-runtime's cache transform): every
// pod in the cluster and every node sit in memory, and most of each object is never read. Kept are
// the fields the reconciler, the planner, the cost engine and the metrics read; the rest is dropped
// before the object is cached (see cache_fields_test for the readers held equal on full and lean
// objects).
//   pods:  metadata name, namespace, uid, resourceVersion, labels, ownerReferences' UIDs, finalizers,
//          deletionTimestamp, the launcher's hostfile annotation; spec.nodeName, spec.affinity's required node affinity, the containers'
//          and init containers' names and resources; status phase/reason/startTime/conditions and
//          the container statuses' name, state (running's start; terminated's exit code, reason,
//          message, start and end) and lastState's terminated start;
//   nodes: metadata (no annotations or managedFields), spec (taints, unschedulable), status
//          allocatable/capacity/conditions;
//   conditions: type, status, reason, message, lastTransitionTime (no probe or heartbeat times);
//   ResourceClaims: metadata name, namespace, uid, resourceVersion, labels; the allocation's
//          results (driver, pool, device): no spec, reservedFor, devices' status or conditions.
// The masks are what the informers parse with (nothing else of a pod is ever built); lean_pod and
// lean_node apply the same masks to an object already parsed. Pods are then cached typed
// (controllers/api/pod.h: the same fields, less what no reader reads), nodes as the lean JSON.
#pragma once

#include <memory>

#include <nlohmann/json.hpp>

#include "operator/kube/field_mask.h"

namespace valley::task {

const std::shared_ptr<const kube::FieldMask>& pod_fields();
const std::shared_ptr<const kube::FieldMask>& node_fields();
const std::shared_ptr<const kube::FieldMask>& claim_fields();

void lean_pod(nlohmann::json& pod);
void lean_node(nlohmann::json& node);
void lean_claim(nlohmann::json& claim);

}  // namespace valley::task
