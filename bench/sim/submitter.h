// What submits a peer's job when its GPU resource must be named at creation (an MPIJob under
// Kueue: the flavors of one resource name are alternatives, two resource names are not): the
// vendor of the cheapest pool whose unreserved GPUs hold the whole gang at submission. The live
// harness asks it of the ClusterQueue's reservations; valley-sim (--peer kueue) of
// the GPUs its admitted jobs hold. One rule, so that the prediction is of what ran.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "bench/sim/simulator.h"

namespace valley::sim {

// An hour of one GPU of `pool` at noon of the workload's first day, energy included (micros).
int64_t gpu_hour_price(const Inputs& in, const Pool& pool);

// The pool an AMD-capable gang of `gpus` GPUs is submitted for: the cheapest (gpu_hour_price)
// whose GPUs less `reserved` (by pool name) hold it; nullptr when none does (the caller's default).
const Pool* cheapest_pool_with_room(const Inputs& in, const std::map<std::string, int64_t>& reserved, int64_t gpus);

}  // namespace valley::sim
