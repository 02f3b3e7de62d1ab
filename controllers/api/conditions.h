// Kubernetes status conditions (type, status, reason, message, lastTransitionTime,
// observedGeneration) kept the API conventions' way: one entry per type, and the transition time
// moves only when the status does, so rewriting an unchanged condition changes nothing.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace valley::api {

// The condition of `type` in any object's status (a TrainingTask's, a Pod's, a Node's), or null.
const nlohmann::json* find_condition(const nlohmann::json& status, const std::string& type);
// Whether that condition is there and "True".
bool condition_true(const nlohmann::json& status, const std::string& type);

// Sets condition `type` in status["conditions"] (made an array if it is not one).
void set_condition(nlohmann::json& status, const std::string& type, bool value, const std::string& reason,
                   const std::string& message, const std::string& now, int64_t generation);

}  // namespace valley::api
