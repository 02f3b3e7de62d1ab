// What a TrainingTask's pod template may not say: the fields through which a tenant's pod would
// leave its namespace's isolation or Valley's placement, quota and billing. Valley refuses such a
// task (InvalidSpec, one error per field, naming it) before any pod exists; the shipped admission
// policy (deploy/policies/template-guard.yaml) refuses the same at `kubectl apply`.
//   isolation: hostNetwork, hostPID, hostIPC, hostPath volumes, privileged containers, capabilities
//              beyond Pod Security Baseline's, hostPorts;
//   placement: nodeName, schedulerName (both bypass Valley's plan), priorityClassName and priority
//              (preemption outside Valley's priorities and quota), a toleration of every taint;
//   identity:  serviceAccountName / serviceAccount (the namespace's default account only);
//   bookkeeping: labels and annotations under valley.dev/ (Valley's own records: replicas, seats),
//              a container's VALLEY_RECORDS (their sealed copy, api::kRecordsEnv);
//   devices:   GPUs asked for by any container (spec.worker.gpus is the task's count, placed and
//              billed by Valley), DRA claims (resourceClaims; Valley claims the devices it places),
//              a container's NVIDIA_VISIBLE_DEVICES (the NVIDIA runtime hands over the GPUs it names).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace valley::api {

// The NVIDIA container runtime's variable: the GPUs of the node a container is handed ("all" in
// CUDA base images; "void": none, as without the runtime).
inline constexpr const char* kNvidiaVisibleDevices = "NVIDIA_VISIBLE_DEVICES";

// Valley's own key space in labels and annotations.
inline constexpr const char* kValleyKeyPrefix = "valley.dev/";

// The refusals for `pod_template` (a PodTemplateSpec) at `path` (e.g. "spec.worker.template"), each
// "<path>.<field>: <why>"; empty when it may be used.
std::vector<std::string> template_escapes(const nlohmann::json& pod_template, const std::string& path);

// The prefixes of GPU device plugins' resources: nvidia.com/gpu and the names it shares under (MIG
// slices, nvidia.com/gpu.shared), amd.com/gpu*, gpu.intel.com/*. The CRD's CEL rules and
// deploy/policies/template-guard.yaml repeat them (a unit test holds the three equal).
inline constexpr const char* kGpuDeviceResourcePrefixes[] = {"nvidia.com/gpu", "nvidia.com/mig-", "amd.com/gpu", "gpu.intel.com/"};

// A resource under one of those prefixes. Other extended resources (RDMA NICs, for example) are the
// template's to ask for.
bool is_gpu_device_resource(const std::string& name);

// The refusals for a container's `resources` (ResourceRequirements) at `path`: a GPU in its limits
// or requests, or DRA claims; empty when it may be used.
std::vector<std::string> resource_escapes(const nlohmann::json& resources, const std::string& path);

}  // namespace valley::api
