// Duration spread of cost estimates (duration_spread.h).
#include "controllers/cost/duration_spread.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

namespace valley::cost {

namespace {

// Linear interpolation between the closest ranks of sorted values.
double quantile(const std::vector<double>& sorted, double q) {
  const double at = q * static_cast<double>(sorted.size() - 1);
  const size_t below = static_cast<size_t>(std::floor(at));
  const size_t above = std::min(sorted.size() - 1, below + 1);
  return sorted[below] + (sorted[above] - sorted[below]) * (at - static_cast<double>(below));
}

}  // namespace

std::string DurationSpread::source() const {
  if (samples == 0)
    return "no finished task here to learn from yet: assumes a stated duration is right within a factor of 2";
  return "the 5th-95th percentile of run time / estimatedDuration over " + std::to_string(samples) + " finished tasks here";
}

DurationSpread duration_spread(std::vector<double> ratios) {
  std::erase_if(ratios, [](double r) { return !std::isfinite(r) || r <= 0; });
  DurationSpread s;
  if (ratios.size() < kMinDurationSamples) return s;
  std::sort(ratios.begin(), ratios.end());
  s.samples = static_cast<int>(ratios.size());
  s.low = std::min(1.0, quantile(ratios, 0.05));
  s.high = std::max(1.0, quantile(ratios, 0.95));
  return s;
}

std::optional<double> duration_ratio(const api::TaskSpec& spec, int64_t gpu_milli_seconds) {
  const bool single = spec.type == api::TaskType::Single;
  if (!spec.estimated_duration || spec.estimated_duration->count() <= 0 || gpu_milli_seconds <= 0) return std::nullopt;
  if (!single && spec.min_workers != spec.max_workers) return std::nullopt;
  const int64_t milli_gpus = int64_t{single ? 1 : spec.max_workers} * spec.gpus.milli;
  if (milli_gpus <= 0) return std::nullopt;
  // GPU-ms / GPUs = ms of run time (gpu_milli_seconds counts GPU x milliseconds).
  const double run_ms = static_cast<double>(gpu_milli_seconds) * 1000.0 / static_cast<double>(milli_gpus);
  return run_ms / static_cast<double>(spec.estimated_duration->count());
}

}  // namespace valley::cost
