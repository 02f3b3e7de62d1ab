// The workload's checkpoint contract, as Valley reads it: after each checkpoint the workload writes
// its data object first, then `latest.json` in the same place, so latest.json only ever names a
// complete checkpoint:
//   {"step": 1200, "time": "2026-11-22T06:01:02Z", "epoch": 3, "worldSize": 4,
//    "object": "ckpt-00001200.bin"}          ("path" is accepted for "object", as DESIGN.md names it)
// Valley reports step, time (and so age) in the task's status, and the work lost at a disruption.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace valley::storage {

struct CheckpointRecord {
  int64_t step = 0;
  std::string time;  // RFC 3339, UTC
  int epoch = 0;
  int world_size = 0;
  std::string object;
};

inline constexpr const char* kLatestKey = "latest.json";

std::string to_json(const CheckpointRecord& record);
// nullopt + error for text that is not such a record (the workload's bug, reported to the user).
std::optional<CheckpointRecord> parse_checkpoint_record(const std::string& text, std::string* error);

}  // namespace valley::storage
