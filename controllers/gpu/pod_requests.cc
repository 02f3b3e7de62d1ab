#include "controllers/gpu/pod_requests.h"

#include "controllers/gpu/resources.h"

namespace valley::gpu {

std::map<std::string, int64_t> device_requests(const api::Pod& pod) {
  auto out = pod_requests(pod, [](const std::string& k) { return is_gpu_resource(k); });
  if (pod.claimed_count > 0) out[dra_resource(pod.claimed_class)] += pod.claimed_count;
  if (pod.seat_milli > 0) out[dra_seat_resource(pod.seat_class)] += pod.seat_milli;
  return out;
}

std::map<std::string, int64_t> gpu_requests(const api::Pod& pod) {
  auto out = device_requests(pod);
  const int replicas = pod.mps_replicas > 0 ? pod.mps_replicas : pod.time_sliced_replicas;
  if (replicas > 0)
    for (const char* resource : kReplicaDeviceResources)
      if (auto it = out.find(resource); it != out.end()) {
        out[replicas_resource(pod.mps_replicas > 0 ? Sharing::Mps : Sharing::TimeSliced, replicas, resource)] += it->second;
        out.erase(it);
      }
  return out;
}

std::map<std::string, int64_t> gpu_usage(const api::Pod& pod) {
  if (pod.phase == "Succeeded" || pod.phase == "Failed") return {};
  return gpu_requests(pod);
}

}  // namespace valley::gpu
