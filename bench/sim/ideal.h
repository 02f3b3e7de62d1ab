// What a job's work costs at best, shared by the LP bound (bound.cc) and the split of each policy's
// cost into where the money goes (sim_summary.cc): the GPU-seconds of its most efficient allowed
// size, and the cheapest price of a GPU-second of a pool.
#pragma once

#include "bench/sim/simulator.h"
#include "operator/kube/timefmt.h"

namespace valley::sim {

// The GPU-seconds the job's work takes at its most efficient size in [min, max] workers (the best
// speedup per GPU of its app's profile; linear when the app has none).
double ideal_gpu_seconds(const Inputs& in, const TraceJob& j, const JobTraits& t);

// The cheapest price of one GPU-second of `rate` anywhere in [from, to), in micro-units: each part
// between tariff boundaries priced by the cost engine.
double cheapest_per_second(const cost::Policy& p, const cost::NodeRate& rate, kube::SystemTime from, kube::SystemTime to);

}  // namespace valley::sim
