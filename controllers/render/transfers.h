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
// A data cache (spec.data->cache_class set and the set's size known): a worker pinned to a node
// copies the data into the task's claim on that node instead of an emptyDir, so the task's next
// pods there (a restart, a new epoch, a second worker) find it and copy only what changed. The
// claim is made before the pod (data_cache_claim: ReadWriteOnce, of the class, sized by the set),
// owned by the task, and deleted when the task ends; the class must bind where the pod is
// scheduled (volumeBindingMode WaitForFirstConsumer: a node-local provisioner or local PVs).
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

inline constexpr const char* kDataCacheRole = "data-cache";  // the claims' valley.dev/role label
// Whether a worker on `node` keeps its data in a claim ("" node: not pinned, so an emptyDir).
bool uses_data_cache(const api::TaskSpec& spec, const std::string& node);
// "<task>-data-<node>" (a hash of the node when that is too long for a name).
std::string data_cache_claim_name(const api::TaskSpec& spec, const std::string& node);
// The PersistentVolumeClaim: the set's size and a tenth more, in whole GiB (at least 1).
nlohmann::json data_cache_claim(const api::TaskSpec& spec, const std::string& node);
// Mounts the claim where add_transfers put the worker's emptyDir, writable by the copy: through
// the pod's fsGroup when it has one, else by running the copy as root.
void use_data_cache(const api::TaskSpec& spec, const std::string& node, nlohmann::json& pod_spec);

}  // namespace valley::render
