// Valley's report of an ended task, kept beside its outputs (valley-report.json and .html): what
// happened (phases and sizes over time from status.history, restarts and disruptions), what it cost
// against the estimate and by pool, GPU-hours and utilization, and what was kept. Pure functions of
// the TrainingTask as Valley last wrote it; fields missing or malformed read as absent.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace valley::cost {

// `kept`: the outputs as listed ({uri, files, bytes}); `now`: RFC 3339, when it is written.
nlohmann::json task_report(const nlohmann::json& task, const nlohmann::json& kept, const std::string& now);
// A self-contained HTML page (inline SVG charts, no scripts or external assets).
std::string report_html(const nlohmann::json& report);

}  // namespace valley::cost
