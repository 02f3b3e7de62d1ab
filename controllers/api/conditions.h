// Kubernetes status conditions (type, status, reason, message, lastTransitionTime,
// observedGeneration) kept the API conventions' way: one entry per type, and the transition time
// moves only when the status does, so rewriting an unchanged condition changes nothing.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace valley::api {

// Sets condition `type` in status["conditions"] (made an array if it is not one).
void set_condition(nlohmann::json& status, const std::string& type, bool value, const std::string& reason,
                   const std::string& message, const std::string& now, int64_t generation);

}  // namespace valley::api
