#include "operator/storage/checkpoint_record.h"

#include <nlohmann/json.hpp>

#include "operator/kube/timefmt.h"

namespace valley::storage {

std::string to_json(const CheckpointRecord& r) {
  return nlohmann::json{{"step", r.step}, {"time", r.time}, {"epoch", r.epoch}, {"worldSize", r.world_size}, {"object", r.object}}
      .dump();
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
  if (j.contains("epoch") && j["epoch"].is_number_integer()) r.epoch = j["epoch"].get<int>();
  if (j.contains("worldSize") && j["worldSize"].is_number_integer()) r.world_size = j["worldSize"].get<int>();
  if (j.contains("object") && j["object"].is_string()) r.object = j["object"].get<std::string>();
  else if (j.contains("path") && j["path"].is_string()) r.object = j["path"].get<std::string>();  // DESIGN.md's name for it
  return r;
}

}  // namespace valley::storage
