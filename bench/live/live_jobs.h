// The live benchmark's workload, pure: the trace slice's jobs as both systems get them (the same
// classes, elastic ranges and Pollux applications as valley-sim assigns, by the same hashes), the
// work each must do, and the spot interruptions both see (the simulator's own draws, node by node).
// Times are trace seconds; the harness maps them to wall-clock time by its compression.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/sim/simulator.h"

namespace valley::live {

struct LiveJob {
  std::string name;  // its Kubernetes name: "j-" + the trace id, lower case
  sim::TraceJob trace;
  sim::JobTraits traits;
  const sim::Speedup* speedup = nullptr;  // nullptr: scales linearly
  // Its work in 1-GPU seconds: the trace's duration at the trace's GPUs, as the simulator counts it.
  double work_total = 0;
  // Work per second on `gpus` GPUs.
  double rate(int gpus) const;
};
// `in` must outlive the jobs (they point at its speedups).
std::vector<LiveJob> live_jobs(const sim::Inputs& in);

// One spot interruption of a node: the termination notice, the node gone, a node of its pool back
// in its place (trace seconds). `node` is the simulator's name, `<pool>-<i>`.
struct SpotEvent {
  std::string node, pool;
  int64_t notice = 0, kill = 0, back = 0;
};
// Every interruption whose notice comes before `horizon`, in order of notice.
std::vector<SpotEvent> spot_schedule(const sim::Inputs& in, int64_t horizon);

// The slice as an ITP trace (job_id,submission_time,duration,num_gpu; times relative to its start),
// each duration capped at `max_duration` seconds (0: as it is): what both the simulator and the
// live run replay.
std::string slice_csv(const std::vector<sim::TraceJob>& jobs, int64_t max_duration);

}  // namespace valley::live
