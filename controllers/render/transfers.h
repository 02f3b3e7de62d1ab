// The pods' side of data in and outputs out, run by valley-io (cmd/valley-io) from the operator's
// image (TaskSpec::io_image):
//  - spec.data: workers get an init container `valley-data` that copies the data set into an
//    emptyDir before the workload starts; the workload's container mounts it read-only at
//    spec.data.mountPath (VALLEY_DATA_DIR, set in every pod: a launcher hands it on to its ranks).
//  - outputs (spec.outputs, or beside an s3:// checkpoint): every pod gets a sidecar
//    `valley-outputs` (an init container with restartPolicy Always, so the kubelet stops it after
//    the workload's containers) that uploads the emptyDir mounted at VALLEY_OUTPUT_DIR when it is
//    stopped: when the workload ends, or when Valley deletes the pod (an epoch's end, a resize).
// Both read the store's credentials from the Secret named in the spec (envFrom).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "controllers/api/spec.h"

namespace valley::render {

inline constexpr const char* kDataContainer = "valley-data";
inline constexpr const char* kOutputsContainer = "valley-outputs";
// Used when the operator names none (its own image, see --io-image).
inline constexpr const char* kDefaultIoImage = "ghcr.io/valley-dev/valley-operator:0.1.0";

// Adds the containers, volumes, mounts and VALLEY_DATA_DIR/VALLEY_OUTPUT_DIR to a pod spec whose
// workload container is `container` (not yet placed in it).
void add_transfers(const api::TaskSpec& spec, const std::string& role, nlohmann::json& pod_spec, nlohmann::json& container);

}  // namespace valley::render
