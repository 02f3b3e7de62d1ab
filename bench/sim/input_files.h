// The trace replay's inputs read from the files its options name (valley-sim's flags, which the
// live benchmark takes too, so that both replay exactly the same slice, classes and prices).
#pragma once

#include <map>
#include <string>

#include "bench/sim/simulator.h"
#include "controllers/cost/policy.h"

namespace valley::sim {

// --name value, by name without the dashes.
using Options = std::map<std::string, std::string>;
// What an option not given means (see bench/sim/main.cc's comment for each).
Options default_options();

// The PricingPolicy in a YAML file (the operator's own parser); throws InputError.
cost::Policy read_policy(const std::string& path);

// The trace slice, cluster, workload, pricing and profiles the options name; *kept_share: the share
// of jobs a --load sample kept. Throws InputError.
Inputs read_inputs(Options& opt, double* kept_share);

}  // namespace valley::sim
