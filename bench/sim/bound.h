// A lower bound on what any schedule of the jobs can cost: a linear program over time slots x GPU
// pools. Jobs are grouped by price multiplier and by whether they may use AMD GPUs; a group can
// only do work already submitted, each pool holds its GPUs in each slot, every job needs at least
// the GPU-seconds of its most efficient allowed size (Pollux speedups), and a GPU-second in a
// slot costs the cheapest rate the pool has anywhere in that slot (the operator's cost engine,
// split at tariff boundaries). A time-sliced pool holds its GPUs' replicas, usable only by one-GPU
// jobs that allow sharing and pair with some application, a replica-second doing a second of work
// (as if alone on its GPU) for the replica's share of the price. Restarts, gangs, spot
// interruptions and who shares with whom are relaxed away, so every feasible schedule that ends by
// the horizon costs at least the optimum.
#pragma once

#include <optional>
#include <string>

#include "bench/sim/simulator.h"

namespace valley::sim {

// The program in CPLEX LP format (what `glpsol --lp` reads). `objective_scale` micro-units = 1.
std::string bound_program(const Inputs& in, int64_t horizon_seconds, int64_t slot_seconds);

struct Bound {
  std::string status;    // the solver's, e.g. "OPTIMAL"
  api::Micros cost = 0;
  int variables = 0, constraints = 0;
};
// The optimum of a solved program, from glpsol's report (`glpsol --lp F -o REPORT`).
std::optional<Bound> parse_glpsol_report(const std::string& report);

// Writes the program to `dir`, runs `solver` (glpsol) on it; nullopt + error when it cannot.
std::optional<Bound> solve_bound(const Inputs& in, int64_t horizon_seconds, int64_t slot_seconds,
                                 const std::string& dir, const std::string& solver, std::string* error);

}  // namespace valley::sim
