#include "controllers/api/conditions.h"

#include "operator/text.h"

namespace valley::api {

const nlohmann::json* find_condition(const nlohmann::json& status, const std::string& type) {
  if (!status.is_object() || !status.contains("conditions") || !status["conditions"].is_array()) return nullptr;
  for (const auto& c : status["conditions"])
    if (c.is_object() && c.value("type", "") == type) return &c;
  return nullptr;
}

bool condition_true(const nlohmann::json& status, const std::string& type) {
  const nlohmann::json* c = find_condition(status, type);
  return c && c->value("status", "") == "True";
}

void set_condition(nlohmann::json& status, const std::string& type, bool value, const std::string& reason_in,
                   const std::string& message_in, const std::string& now, int64_t generation) {
  // metav1.Condition's bounds: a message carries a user's or a store's words, of any length or bytes.
  const std::string reason = bounded_text(reason_in, 1024), message = bounded_text(message_in, 32768);
  nlohmann::json& conditions = status["conditions"];
  if (!conditions.is_array()) conditions = nlohmann::json::array();
  const std::string s = value ? "True" : "False";
  for (auto& c : conditions) {
    if (!c.is_object() || c.value("type", "") != type) continue;
    if (c.value("status", "") != s || !c.contains("lastTransitionTime")) c["lastTransitionTime"] = now;
    c["status"] = s;
    c["reason"] = reason;
    c["message"] = message;
    c["observedGeneration"] = generation;
    return;
  }
  conditions.push_back({{"type", type}, {"status", s}, {"reason", reason}, {"message", message},
                        {"lastTransitionTime", now}, {"observedGeneration", generation}});
}

}  // namespace valley::api
