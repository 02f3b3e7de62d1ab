// Where a task's workers are, at each topology level the operator declares (status.topology), and
// whether that is wider than its spec.topology asked for. Pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "controllers/api/spec.h"

namespace valley::lifecycle {

// status.topology for workers whose nodes are in `worker_domains` (one row per worker: its node's
// domain at each of `levels`, narrowest first, "" where the node has no label), null when no
// worker's node is in any domain:
//   {summary: "rack r1,r2", levels: [{level: "rack", domains: ["r1", "r2"]}, ...]}
// The summary names the rule's level; without a rule, the narrowest level holding all of them in
// one domain, else the widest level they are labelled at.
nlohmann::json topology_status(const std::vector<std::string>& levels, const std::optional<api::TaskSpec::Topology>& rule,
                               const std::vector<std::vector<std::string>>& worker_domains);

// "its 16 workers run in 2 racks (r1, r2), ..." when `status` (topology_status) spreads the workers
// over more than one domain of the level the rule prefers; "" otherwise.
std::string spread_wider(const nlohmann::json& status, const std::optional<api::TaskSpec::Topology>& rule, int workers);

}  // namespace valley::lifecycle
