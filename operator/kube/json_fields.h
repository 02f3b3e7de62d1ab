// Tolerant readers for fields of Kubernetes objects. Optional fields may be absent, null or (from a
// buggy client or runtime) of the wrong type; a controller reads those as absent rather than
// throwing (nlohmann's value() throws on null, which wedges every reconcile of the object).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "operator/kube/timefmt.h"

namespace valley::kube {

// o[key] if it is an object, else an empty object (also when o is not an object).
inline const nlohmann::json& object_at(const nlohmann::json& o, const char* key) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  if (!o.is_object()) return kEmpty;
  auto it = o.find(key);
  return it == o.end() || !it->is_object() ? kEmpty : *it;
}

// o[key] if it is an array, else an empty array.
inline const nlohmann::json& array_at(const nlohmann::json& o, const char* key) {
  static const nlohmann::json kEmpty = nlohmann::json::array();
  if (!o.is_object()) return kEmpty;
  auto it = o.find(key);
  return it == o.end() || !it->is_array() ? kEmpty : *it;
}

// A copy of object o without its field `skipped` (an empty object when o is not one): for a caller
// about to replace that field, so it is not copied only to be thrown away.
inline nlohmann::json all_but(const nlohmann::json& o, const char* skipped) {
  nlohmann::json out = nlohmann::json::object();
  if (!o.is_object()) return out;
  for (auto field = o.begin(); field != o.end(); ++field)
    if (field.key() != skipped) out[field.key()] = *field;
  return out;
}

// o[key] if it is a string, else `fallback`.
inline std::string string_at(const nlohmann::json& o, const char* key, const std::string& fallback = "") {
  if (!o.is_object()) return fallback;
  auto it = o.find(key);
  return it == o.end() || !it->is_string() ? fallback : it->get<std::string>();
}

// o[key] if it is an integer that fits, else nullopt.
inline std::optional<int64_t> int_at(const nlohmann::json& o, const char* key) {
  if (!o.is_object()) return std::nullopt;
  auto it = o.find(key);
  if (it == o.end() || !it->is_number_integer()) return std::nullopt;
  if (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  return it->get<int64_t>();
}

// o[key] as an RFC 3339 time if it is one, else nullopt.
inline std::optional<std::chrono::system_clock::time_point> time_at(const nlohmann::json& o, const char* key) {
  if (!o.is_object()) return std::nullopt;
  auto it = o.find(key);
  if (it == o.end() || !it->is_string()) return std::nullopt;
  return parse_time(it->get<std::string>());
}

// An object's metadata.labels (string values only).
inline std::map<std::string, std::string> labels_of(const nlohmann::json& object) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : object_at(object_at(object, "metadata"), "labels").items())
    if (v.is_string()) out[k] = v.get<std::string>();
  return out;
}

}  // namespace valley::kube
