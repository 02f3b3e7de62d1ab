// The GPU extended resources Valley understands, in one place: whole GPUs per vendor, NVIDIA MIG
// slices (by compute share in sevenths of an A100/H100), MPS and time-sliced replicas, and whole
// GPUs a DRA driver publishes. Used by the
// planner (placement), the snapshot (what a node offers, what a pod holds) and render (the default
// request when no plan exists).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace valley::gpu {

struct MigProfile {
  int sevenths;  // compute share of one GPU
  const char* resource;
};

// Smallest first.
inline constexpr MigProfile kMigProfiles[] = {{1, "nvidia.com/mig-1g.10gb"}, {2, "nvidia.com/mig-2g.20gb"},
                                              {3, "nvidia.com/mig-3g.40gb"}, {4, "nvidia.com/mig-4g.40gb"},
                                              {7, "nvidia.com/mig-7g.80gb"}};

// The NVIDIA device plugin's time-slicing with renameByDefault.
inline constexpr const char* kTimeSliced = "nvidia.com/gpu.shared";
// A time-sliced replica of a node that does not say how many a GPU is split into counts as half a
// GPU (the node's replicas label, when set, gives the exact share: SharedReplicas).
inline constexpr int64_t kTimeSlicedShareMilli = 500;

// The NVIDIA device plugin's sharing strategies, as GPU feature discovery labels a node:
// nvidia.com/gpu.sharing-strategy=mps or time-slicing, and nvidia.com/gpu.replicas=R. Each of a
// GPU's R replicas is 1/R of it: under MPS a client with 1/R of its memory and compute, under
// time-slicing a turn on it with no isolation. The planner counts them as "mps:<R>:<resource>" or
// "ts:<R>:<resource>" (the device plugin's resource: nvidia.com/gpu.shared when renamed, else
// nvidia.com/gpu), whose unit is 1/R of a GPU; the colons keep them apart from any extended
// resource name.
inline constexpr const char* kSharingStrategyLabel = "nvidia.com/gpu.sharing-strategy";
inline constexpr const char* kReplicasLabel = "nvidia.com/gpu.replicas";
// The device plugin's resource for replicas, renamed or not.
inline constexpr const char* kReplicaDeviceResources[] = {kTimeSliced, "nvidia.com/gpu"};
enum class Sharing { Mps, TimeSliced };
struct SharedReplicas {
  Sharing sharing = Sharing::Mps;
  int replicas = 0;      // per GPU
  std::string resource;  // the device plugin's
};
std::string replicas_resource(Sharing sharing, int replicas, const std::string& resource);
// The replicas of a replicas_resource key, nullopt for anything else.
std::optional<SharedReplicas> replicas_of(const std::string& resource);

// Intel's GPU device plugin: i915 (and xe, for the newer kernel driver) whole GPUs.
inline constexpr const char* kIntelI915 = "gpu.intel.com/i915";
inline constexpr const char* kIntelXe = "gpu.intel.com/xe";

// Whole GPUs a DRA driver publishes, as the planner counts them: "dra:<DeviceClass>". The colon
// cannot occur in a resource name, so these never meet a device plugin's extended resources.
inline constexpr const char* kDraPrefix = "dra:";
std::string dra_resource(const std::string& device_class);
// The DeviceClass of a DRA resource, "" for anything else.
std::string dra_class_of(const std::string& resource);
// A seat on the DRA devices a task's shared claim holds (fractional workers of one task sharing a
// device, where the driver allows it): "dra-seat:<DeviceClass>", whose unit is a thousandth of a
// device (a seat counts the share it is charged, 1000 / the seats a device has). The claim holds
// the device; the seat's pod holds no device of its own.
inline constexpr const char* kDraSeatPrefix = "dra-seat:";
std::string dra_seat_resource(const std::string& device_class);
// The DeviceClass of a seat resource, "" for anything else.
std::string dra_seat_class_of(const std::string& resource);
// How many workers asking for `gpu_milli` (below 1000) sit on one device: 1000 / gpu_milli rounded
// down (1 for anything else); and the thousandths of a device each of them is charged, the device
// split by its seats.
int64_t seats_per_device(int gpu_milli);
int64_t seat_milli(int gpu_milli);

// The whole-GPU resource of a vendor's node: nvidia.com/gpu, amd.com/gpu, gpu.intel.com/i915 (xe
// when the node offers that instead: `offers` says whether it does).
std::string whole_resource(const std::string& vendor, bool offers_xe = false);
// The vendor of a whole-GPU resource ("" for anything else, MIG slices and replicas included).
std::string vendor_of_whole(const std::string& resource);

bool is_gpu_resource(const std::string& name);

// How a GPU resource hands its GPU out: "dra" (a DRA driver's whole devices), "mig", "mps",
// "time-sliced" (replicas of a known split or not), else "whole" (a device plugin's whole GPUs).
std::string sharing_kind(const std::string& resource);

// Thousandths of a GPU that `count` units of `resource` stand for.
int64_t share_milli(const std::string& resource, int64_t count);

// True if the profile's share covers a request of `gpu_milli`.
inline bool holds(const MigProfile& p, int gpu_milli) { return gpu_milli * 7 <= p.sevenths * 1000; }

// The smallest MIG slice smaller than a whole GPU that holds `gpu_milli`; nullopt if only a
// whole GPU does.
std::optional<std::string> smallest_partial_mig(int gpu_milli);

}  // namespace valley::gpu
