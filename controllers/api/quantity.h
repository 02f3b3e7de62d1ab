// Kubernetes resource quantities ("500m", "1.5", "32Gi", "1e3") as integers, rounded up as
// kube-scheduler rounds a request: CPU in thousandths of a core, memory and storage in bytes.
// Anything the API server would not accept as a quantity (or larger than 2^62) reads as nullopt.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace valley::api {

// The quantity times `scale` (1000 for CPU millicores, 1 for bytes), rounded up.
std::optional<int64_t> parse_quantity(const std::string& text, int64_t scale = 1);
// The same for a JSON value: a string, or a plain number as kubectl may send it.
std::optional<int64_t> quantity_of(const nlohmann::json& value, int64_t scale = 1);

// What kube-scheduler counts for pods besides extended resources, in the units above.
inline constexpr const char* kCpu = "cpu";
inline constexpr const char* kMemory = "memory";
inline constexpr const char* kEphemeralStorage = "ephemeral-storage";
inline constexpr const char* kPods = "pods";
// cpu, memory, ephemeral-storage or pods.
bool is_node_room_resource(const std::string& name);

}  // namespace valley::api
