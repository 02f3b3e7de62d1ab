// Planner inputs from a TrainingTask's status and the PricingPolicy in force: what the planner needs
// of a task beyond its spec and pods (planner::task_from). Pure; the planning loop calls it for each
// task whose object, pods or policy changed.
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "controllers/api/pricing_policy.h"
#include "controllers/api/spec.h"
#include "controllers/planner/planner.h"

namespace valley::inputs {

// The marginal efficiency a task's growth is expected to keep before any is measured, when no
// PricingPolicy says (PricingPolicy spec.growth.minMarginalEfficiency).
constexpr double kDefaultGrowthPrior = 0.8;

// Fills t's measured scaling, idle shrink and GPU utilization from the status; for reduceCost, until
// when it waits for cheaper capacity (its deadline's slack, else the policy's patience, less the work
// it has done); for an admitted task with an estimatedDuration, when it is expected to end (from its
// startTime, stretched at a smaller size). policy may be null (none in force).
void status_inputs(planner::Task& t, const api::TaskSpec& spec, const nlohmann::json& status, const api::Policy* policy);

// What a TrainingTask object teaches about its namespace's stated durations (cost::duration_ratio):
// its run time over its estimatedDuration, when it Succeeded at one size with its GPU time in
// status.cost; nullopt for any other task (running, failed, elastic, unparseable).
std::optional<double> duration_ratio_of(const nlohmann::json& task);

}  // namespace valley::inputs
