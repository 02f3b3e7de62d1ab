// How a task's cost reads to a person: the final (or accrued) cost against the estimate made before
// it ran, and GPU-hours per pool as numbers. Pure functions of a TrainingTask's status.cost (which
// they never trust: a field missing or malformed reads as absent), shared by valleyctl and the demo.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "controllers/api/money.h"

namespace valley::cost {

struct CostReport {
  std::string currency;
  std::optional<api::Micros> estimate, low, high;  // the estimate last made (status.cost.estimate)
  std::optional<api::Micros> accrued, final;
  std::vector<std::pair<std::string, std::string>> gpu_hours;  // pool ("nvidia/spot") -> "12.500"
  // (final − estimate) / estimate, in percent; unset until final, or without an estimate.
  std::optional<double> error_percent;
  std::optional<bool> within_range;  // the final inside low..high (only once final)
  std::optional<double> spent_percent;  // accrued / estimate, in percent, while not final
};

CostReport report_of(const nlohmann::json& status_cost);
// One line: "final 27.90 USD, 2.8% below the estimate 28.71 (range 20.00-40.00: inside)", or while it
// runs "accrued 12.30 USD so far, 43% of the estimate 28.71 (range 20.00-40.00)"; "" if unpriced.
std::string versus_estimate(const CostReport& r);
// "8.000 nvidia/on-demand, 2.500 amd/on-demand" (GPU-hours), or "-".
std::string gpu_hours_text(const CostReport& r);

}  // namespace valley::cost
