// The four figures the platform notes name for a multi-user training scheduler, taken from a
// replayed schedule alone (each job's run segments), the same way for every policy:
// - starvation: each job's wait (its time from submission to its end, or to the horizon, not
//   running) against its own run time as the trace states it; the worst ratio, and how many waited
//   longer than `starved_factor` times that run time and longer than `starved_floor_seconds`;
// - priority inversions: GPUs given to a job (a start, or growth) while a job of higher priority
//   waited whose smallest gang fitted in the GPUs free then; jobs that wait for cheaper capacity
//   by choice (reduceCost) are not counted as held back. Counted in GPU-hours: the GPUs added times
//   the length of the segment they were added to. "Fitted" is by GPU count over the whole capacity
//   (not by pool, vendor or node shape): an upper bound;
// - occupancy: GPU-hours held over the capacity's GPU-hours up to the last end, and of those the
//   useful ones: held by finished jobs while they advanced (not restarting, not redoing lost
//   work), no more than each job's work at the size it asked for (running wider than that is not
//   more work);
// - fairness: Jain's index over users of each user's service rate (the run time the trace states
//   for its finished jobs over their time from submission to end); a job whose trace names no user
//   or tenant is a user of its own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace valley::sim {

struct KpiSegment {
  int64_t start = 0, end = 0;  // seconds
  int64_t gpu_milli = 0;       // thousandths of a GPU held (a shared GPU's replica: its share)
};

struct KpiJob {
  std::string id, user;
  int priority = 0;
  bool waits_by_choice = false;  // reduceCost: waiting is what it asked for
  int64_t submit = 0, end = -1;  // -1: unfinished at the horizon
  int64_t min_gpu_milli = 0;     // its smallest gang as the policy runs it
  int64_t run_seconds = 0;       // the trace's duration at the trace's GPUs
  double useful_gpu_seconds = 0;  // of its held GPU-seconds, those that advanced it (see above)
  std::vector<KpiSegment> segments;  // in time order, not overlapping
};

struct KpiSettings {
  int64_t capacity_gpu_milli = 0;
  int64_t horizon = 0;  // where unfinished jobs' waits end
  double starved_factor = 2;
  int64_t starved_floor_seconds = 3600;
};

struct Kpis {
  // Starvation.
  double worst_wait_over_run = 0;
  std::string most_starved;          // that job's id
  int64_t longest_wait_seconds = 0;
  int starved = 0, starved_not_by_choice = 0;
  // Priority inversions.
  int inversions = 0;
  double inversion_gpu_hours = 0;
  double inversion_share = 0;  // of the GPU-hours held
  // Occupancy.
  double held_gpu_hours = 0;
  double allocated = 0;  // held / capacity over [0, last end]
  double useful = 0;     // the finished jobs' trace GPU-hours / capacity over the same
  // Fairness.
  double jain_users = 0;
  int users = 0;
};

// Throws std::invalid_argument for a segment that ends before it starts or a capacity of zero.
Kpis measure_kpis(const std::vector<KpiJob>& jobs, const KpiSettings& settings);

}  // namespace valley::sim
