#include "controllers/gpu/resources.h"

namespace valley::gpu {

std::string whole_resource(const std::string& vendor, bool offers_xe) {
  if (vendor == "intel") return offers_xe ? kIntelXe : kIntelI915;
  return vendor + ".com/gpu";
}

std::string vendor_of_whole(const std::string& resource) {
  if (resource == "nvidia.com/gpu") return "nvidia";
  if (resource == "amd.com/gpu") return "amd";
  if (resource == kIntelI915 || resource == kIntelXe) return "intel";
  return "";
}

std::string dra_resource(const std::string& device_class) { return kDraPrefix + device_class; }

std::string dra_class_of(const std::string& resource) {
  return resource.rfind(kDraPrefix, 0) == 0 ? resource.substr(std::char_traits<char>::length(kDraPrefix)) : "";
}

std::string dra_seat_resource(const std::string& device_class) { return kDraSeatPrefix + device_class; }

std::string dra_seat_class_of(const std::string& resource) {
  return resource.rfind(kDraSeatPrefix, 0) == 0 ? resource.substr(std::char_traits<char>::length(kDraSeatPrefix)) : "";
}

int64_t seats_per_device(int gpu_milli) { return gpu_milli <= 0 || gpu_milli >= 1000 ? 1 : 1000 / gpu_milli; }

int64_t seat_milli(int gpu_milli) { return 1000 / seats_per_device(gpu_milli); }

namespace {
constexpr const char* kMpsPrefix = "mps:";
constexpr const char* kTimeSlicedPrefix = "ts:";
}  // namespace

std::string replicas_resource(Sharing sharing, int replicas, const std::string& resource) {
  return (sharing == Sharing::Mps ? kMpsPrefix : kTimeSlicedPrefix) + std::to_string(replicas) + ":" + resource;
}

std::optional<SharedReplicas> replicas_of(const std::string& resource) {
  Sharing sharing = Sharing::Mps;
  size_t prefix = std::char_traits<char>::length(kMpsPrefix);
  if (resource.rfind(kTimeSlicedPrefix, 0) == 0) {
    sharing = Sharing::TimeSliced;
    prefix = std::char_traits<char>::length(kTimeSlicedPrefix);
  } else if (resource.rfind(kMpsPrefix, 0) != 0) {
    return std::nullopt;
  }
  const size_t colon = resource.find(':', prefix);
  if (colon == std::string::npos || colon == prefix || colon - prefix > 3) return std::nullopt;
  int replicas = 0;
  for (size_t i = prefix; i < colon; ++i) {
    if (resource[i] < '0' || resource[i] > '9') return std::nullopt;
    replicas = replicas * 10 + (resource[i] - '0');
  }
  if (replicas < 2 || colon + 1 == resource.size()) return std::nullopt;
  return SharedReplicas{sharing, replicas, resource.substr(colon + 1)};
}

bool is_gpu_resource(const std::string& name) {
  if (replicas_of(name)) return true;
  return !vendor_of_whole(name).empty() || !dra_class_of(name).empty() || !dra_seat_class_of(name).empty() || name == kTimeSliced || name.rfind("nvidia.com/mig-", 0) == 0;
}

std::string sharing_kind(const std::string& resource) {
  if (!dra_class_of(resource).empty()) return "dra";
  if (!dra_seat_class_of(resource).empty()) return "dra-shared";
  if (auto r = replicas_of(resource)) return r->sharing == Sharing::Mps ? "mps" : "time-sliced";
  if (resource == kTimeSliced) return "time-sliced";
  if (resource.rfind("nvidia.com/mig-", 0) == 0) return "mig";
  return "whole";
}

int64_t share_milli(const std::string& resource, int64_t count) {
  for (const auto& p : kMigProfiles)
    if (resource == p.resource) return count * p.sevenths * 1000 / 7;
  if (resource == kTimeSliced) return count * kTimeSlicedShareMilli;
  if (auto r = replicas_of(resource)) return count * 1000 / r->replicas;
  if (!dra_seat_class_of(resource).empty()) return count;
  return count * 1000;
}

std::optional<std::string> smallest_partial_mig(int gpu_milli) {
  for (const auto& p : kMigProfiles)
    if (p.sevenths < 7 && holds(p, gpu_milli)) return std::string(p.resource);
  return std::nullopt;
}

}  // namespace valley::gpu
