#include "operator/storage/checkpoint_record.h"

#include <cstdint>

#include <nlohmann/json.hpp>

#include "operator/kube/timefmt.h"
#include "operator/json_text.h"

namespace valley::storage {

std::string to_json(const CheckpointRecord& r) {
  nlohmann::json j{{"step", r.step}, {"time", r.time}, {"epoch", r.epoch}, {"object", r.object}};
  if (r.world_size > 0) j["worldSize"] = r.world_size;  // 0: not known
  return json_text(j);
}

std::optional<CheckpointRecord> parse_checkpoint_record(const std::string& text, std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<CheckpointRecord> {
    if (error) *error = "latest.json: " + why;
    return std::nullopt;
  };
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return fail("not a JSON object");
  CheckpointRecord r;
  if (!j.contains("step") || !j["step"].is_number_integer() || j["step"].get<int64_t>() < 0)
    return fail("\"step\" must be a non-negative integer");
  r.step = j["step"].get<int64_t>();
  if (!j.contains("time") || !j["time"].is_string() || !kube::parse_time(j["time"].get<std::string>()))
    return fail("\"time\" must be an RFC 3339 time");
  r.time = j["time"].get<std::string>();
  // The optional fields, when present, must be what they say: a writer that gets them wrong is
  // broken, and Valley would rather say so than resume from a record it half understands.
  auto small_int = [&](const char* key, int64_t lo, int* out) {
    if (!j.contains(key)) return true;
    const auto& v = j[key];
    if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > INT32_MAX) || v.get<int64_t>() < lo ||
        v.get<int64_t>() > INT32_MAX)
      return false;
    *out = static_cast<int>(v.get<int64_t>());
    return true;
  };
  if (!small_int("epoch", 0, &r.epoch)) return fail("\"epoch\" must be a non-negative integer");
  if (!small_int("worldSize", 1, &r.world_size)) return fail("\"worldSize\" must be a positive integer");
  for (const char* key : {"object", "path"}) {  // "path": DESIGN.md's name for it
    if (!j.contains(key)) continue;
    if (!j[key].is_string()) return fail("\"" + std::string(key) + "\" must be a string");
    if (r.object.empty()) r.object = j[key].get<std::string>();
  }
  return r;
}

}  // namespace valley::storage
