// How far a task's real run time may be from the estimatedDuration its user gave, for the ends of
// its cost estimate's range. Users rarely know a duration exactly, so without history the range
// assumes a factor of 2 either way; once a namespace has finished enough tasks whose run time can
// be compared with what their users stated, the 5th and 95th percentiles of that ratio are used.
// Pure: the operator feeds it the namespace's finished TrainingTasks, the simulator its finished jobs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "controllers/api/spec.h"

namespace valley::cost {

struct DurationSpread {
  double low = 0.5, high = 2.0;  // run time / estimatedDuration at the range's low and high ends
  int samples = 0;               // finished tasks it was learned from (0: the prior)
  std::string source() const;    // for the user, e.g. "the 5th-95th percentile of 40 finished tasks here"
};

// The fewest samples the percentiles are taken from; fewer keep the prior.
inline constexpr size_t kMinDurationSamples = 10;

// From the run-time ratios of finished tasks (any order); the prior when there are too few. The
// range always holds the stated duration (low <= 1 <= high).
DurationSpread duration_spread(std::vector<double> ratios);

// The ratio one finished task gives: its run time (GPU-milliseconds held / the GPUs of its size) over
// its estimatedDuration. Only a task that ran at one size has it (Single, or min = max workers): an
// elastic task's run time depends on sizes its user did not state. nullopt otherwise.
std::optional<double> duration_ratio(const api::TaskSpec& spec, int64_t gpu_milli_seconds);

}  // namespace valley::cost
