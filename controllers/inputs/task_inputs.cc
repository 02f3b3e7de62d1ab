#include "controllers/inputs/task_inputs.h"

#include "controllers/cost/duration_spread.h"
#include "controllers/planner/scaling.h"
#include "controllers/lifecycle/lifecycle.h"
#include "operator/kube/json_fields.h"
#include "operator/kube/timefmt.h"

namespace valley::inputs {

namespace {
// The GPU time the task has held, as status.cost's breakdown counts it (GPU-seconds x 1000).
int64_t gpu_milli_seconds(const nlohmann::json& status) {
  int64_t gpu_ms = 0;
  const auto& gpu_time = kube::object_at(kube::object_at(kube::object_at(status, "cost"), "breakdown"), "gpuMilliSeconds");
  for (const auto& [k, v] : gpu_time.items())
    if (v.is_number_integer()) gpu_ms += v.get<int64_t>();
  return gpu_ms;
}

// The work done so far, as GPU-time over what estimatedDuration at max workers takes.
double work_done(const planner::Task& t, const api::TaskSpec& spec, const nlohmann::json& status) {
  if (!spec.estimated_duration) return 0;
  const int64_t gpu_ms = gpu_milli_seconds(status);
  const double total = static_cast<double>(spec.estimated_duration->count()) * t.max_workers * spec.gpus.milli / 1000.0;
  return total > 0 ? static_cast<double>(gpu_ms) / total : 0;
}
}  // namespace

void status_inputs(planner::Task& t, const api::TaskSpec& spec, const nlohmann::json& status, const api::Policy* policy) {
  // References into the cached status, not copies (this runs for every changed task at every plan).
  t.shapes = planner::scaling_from(kube::array_at(status, "scaling"));
  t.scaling = planner::by_size(t.shapes);
  t.idle = lifecycle::idle_shrink(status);
  if (auto pct = kube::int_at(kube::object_at(status, "utilization"), "gpuPercent")) t.gpu_percent = static_cast<int>(*pct);
  const double prior = policy ? static_cast<double>(policy->growth_min_marginal_milli) / 1000.0 : kDefaultGrowthPrior;
  if (spec.reduce_cost) {
    const auto patience = policy ? policy->reduce_cost_patience : std::chrono::seconds(6 * 3600);
    t.has_deadline = spec.deadline(t.created).has_value();
    t.cheap_until = planner::cheap_until(t.created, patience, spec.deadline(t.created), spec.estimated_duration, work_done(t, spec, status),
                                         t.scaling, t.min_workers, t.max_workers, prior);
  }
  if (t.admitted && spec.estimated_duration)
    if (auto start = kube::parse_time(status.value("startTime", "")))
      t.expected_end = planner::expected_end(*start, *spec.estimated_duration, t.scaling, static_cast<int>(t.workers.size()),
                                             t.max_workers, prior);
}

std::optional<double> duration_ratio_of(const nlohmann::json& task) {
  const auto& status = kube::object_at(task, "status");
  if (kube::string_at(status, "phase") != "Succeeded") return std::nullopt;
  const api::ParsedTask parsed = api::parse_task(task);
  if (!parsed.spec) return std::nullopt;
  return cost::duration_ratio(*parsed.spec, gpu_milli_seconds(status));
}

}  // namespace valley::inputs
