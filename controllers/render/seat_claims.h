// Which seats claim each new seat worker of a task sits on, purely. A seats claim holds one DRA
// device on one node for the task (render::gpu_seats_claim); up to 1000 / gpu_milli of its
// workers on that node sit on it. A new worker takes the fullest claim on its node with a free
// seat (so the fewest devices stay held), else a new claim "<task>-seats-<n>" (the lowest n no
// claim of the task has). A claim none of the task's pods that have not ended sits on, older than
// `grace` (a claim made a moment ago for pods the cache does not show yet stays), is to be
// deleted: its device goes back to the cluster.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "controllers/api/pod.h"
#include "controllers/api/spec.h"
#include "operator/kube/timefmt.h"

namespace valley::render {

struct SeatsClaim {
  std::string name, node;
  std::optional<kube::SystemTime> created;
  bool deleting = false;  // seats no new worker; its name stays taken until it is gone
};

struct Seating {
  std::vector<nlohmann::json> claims_to_create;
  std::vector<std::string> claims_to_delete;
};

// `new_pods`: the pods about to be created (any kind); a seat worker's resourceClaimName is filled
// in. `claims`: the task's seats claims as cached; `owned`: its pods as cached.
Seating seat_workers(const api::TaskSpec& spec, std::vector<nlohmann::json>& new_pods, const std::vector<SeatsClaim>& claims,
                     const std::vector<const api::Pod*>& owned, kube::SystemTime now, std::chrono::seconds grace);

}  // namespace valley::render
