// The lifecycle's side of data in and outputs out (pure; the I/O is the controller's):
//  - A task with spec.data is admitted the first time only once its data can be listed: the
//    DataReady condition says so (True for the spec's generation), the planner passes the task
//    over until then, and a store or prefix that is missing is the task's reason (DataUnavailable)
//    before any GPU is held.
//  - Once a task with outputs has ended and none of its pods runs any more (their sidecars have
//    uploaded), Valley lists what was kept and writes its report there; status.outputs records it.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "controllers/api/spec.h"

namespace valley::lifecycle {

inline constexpr const char* kDataReady = "DataReady";
inline constexpr const char* kDataUnavailable = "DataUnavailable";
inline constexpr const char* kReportJson = "valley-report.json";
inline constexpr const char* kReportHtml = "valley-report.html";

// What the controller last learned of the task's data store: nullopt = not asked yet.
struct DataCheck {
  bool ready = false;
  std::string message;  // "s3://b/p: 3 objects listed" or why it cannot be read
};

// Never admitted yet (no epoch) and its data not confirmed readable for this generation.
bool waits_for_data(const api::TaskSpec& spec, const nlohmann::json& status);

// The task ended, keeps outputs, and has not recorded them yet; `pods_done` = none of its pods runs.
bool outputs_due(const api::TaskSpec& spec, const nlohmann::json& status, bool pods_done);

}  // namespace valley::lifecycle
