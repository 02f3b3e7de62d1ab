#include "controllers/gpu/resources.h"

namespace valley::gpu {

bool is_gpu_resource(const std::string& name) {
  return name == "nvidia.com/gpu" || name == "amd.com/gpu" || name == kTimeSliced || name.rfind("nvidia.com/mig-", 0) == 0;
}

int64_t share_milli(const std::string& resource, int64_t count) {
  for (const auto& p : kMigProfiles)
    if (resource == p.resource) return count * p.sevenths * 1000 / 7;
  if (resource == kTimeSliced) return count * kTimeSlicedShareMilli;
  return count * 1000;
}

std::optional<std::string> smallest_partial_mig(int gpu_milli) {
  for (const auto& p : kMigProfiles)
    if (p.sevenths < 7 && holds(p, gpu_milli)) return std::string(p.resource);
  return std::nullopt;
}

}  // namespace valley::gpu
