// A discrete-event simulator with a virtual clock that replays trace jobs on a cluster of GPU node
// pools under one admission policy, and prices what they used with the operator's cost engine.
//
// Decisions come from the operator's own planner (planner::plan, with cost::planner_config for the
// electricity and AMD facts) for `valley` and for `priority-backfill` (given fixed-size tasks, no
// aging, spot notices ignored: what Kueue or Volcano with gang scheduling do); `fifo` asks the same
// planner about the head of the queue only (strict order, fixed size at max, on-demand NVIDIA only:
// a plain MPI Operator behind the default scheduler). The simulator itself only keeps time: job
// progress at the Pollux-measured speedup of its current size, checkpoint-restarts (resizes,
// preemptions, spot notices) costing `restart_seconds` of held GPUs, and spot nodes interrupted by
// a Poisson process (the same instants for every policy) that lose the work since the last
// checkpoint when no notice-driven checkpoint got the job off the node in time.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bench/sim/model.h"
#include "controllers/cost/policy.h"

namespace valley::sim {

enum class PolicyKind { Fifo, PriorityBackfill, Valley };
const char* to_string(PolicyKind p);
PolicyKind policy_from(const std::string& name);  // throws InputError

struct Inputs {
  std::vector<TraceJob> jobs;
  Cluster cluster;
  Workload workload;
  cost::Policy pricing;
  std::map<std::string, Speedup> speedups;  // by app; missing apps scale linearly
};

struct JobResult {
  std::string id, cls, app;
  int gpus = 0, priority = 0;
  int64_t submit = 0, start = -1, end = -1;  // seconds from the slice's start; -1 = never
  cost::Micros cost = 0;                     // with the priority multiplier
  int64_t gpu_seconds = 0;                   // GPUs held x seconds
  int preemptions = 0, restarts = 0;
  double work_lost_gpu_seconds = 0;
};

struct Result {
  PolicyKind policy;
  std::vector<JobResult> jobs;
  int rejected = 0;      // could never fit this policy's capacity
  int unfinished = 0;    // still queued or running at the horizon
  cost::Micros cost = 0, gpu_cost = 0, energy_cost = 0;  // gpu/energy before priority multipliers
  double useful_gpu_hours = 0;   // the trace's own GPU-hours of the jobs that finished
  double held_gpu_hours = 0;
  double mean_jct = 0, p50_jct = 0, p99_jct = 0, mean_queue = 0, p99_queue = 0;  // seconds
  double allocation_percent = 0;  // GPU-seconds held / GPU-seconds of live nodes, until the last job ends
  int preemptions = 0, restarts = 0, interruptions = 0;
  double work_lost_gpu_hours = 0;
  int64_t makespan = 0;
  int plan_calls = 0;
  std::vector<double> hourly_allocation_percent;  // per hour of simulated time
};

Result simulate(const Inputs& in, PolicyKind policy);

// The class, app and elastic range a trace job gets (stable hashes of its id).
struct JobTraits {
  std::string cls, app;
  int priority = 0;
  bool reduce_cost = false, amd = false;
  int min_workers = 1, max_workers = 1;
};
JobTraits traits_of(const TraceJob& j, const Workload& w);

}  // namespace valley::sim
