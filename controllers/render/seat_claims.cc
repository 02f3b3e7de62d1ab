#include "controllers/render/seat_claims.h"

#include <algorithm>
#include <map>
#include <set>

#include "controllers/gpu/resources.h"
#include "controllers/render/render.h"
#include "operator/kube/json_fields.h"

namespace valley::render {

namespace {
struct Claim {
  std::string node;
  int64_t seated = 0;
};
}  // namespace

Seating seat_workers(const api::TaskSpec& spec, std::vector<nlohmann::json>& new_pods, const std::vector<SeatsClaim>& claims,
                     const std::vector<const api::Pod*>& owned, kube::SystemTime now, std::chrono::seconds grace) {
  Seating out;
  const int64_t per_device = gpu::seats_per_device(spec.gpus.milli);
  // Every claim the task has or its pods name (one made a moment ago may not be cached yet), and
  // how many of its pods that have not ended sit on each.
  std::map<std::string, Claim> by_name;
  std::set<std::string> known, going;  // names taken; claims being deleted (no new seats there)
  for (const auto& c : claims) {
    known.insert(c.name);
    if (c.deleting) going.insert(c.name);
    else by_name[c.name].node = c.node;
  }
  for (const api::Pod* p : owned) {
    if (p->seat_claim.empty() || going.count(p->seat_claim)) continue;
    known.insert(p->seat_claim);
    Claim& c = by_name[p->seat_claim];
    if (c.node.empty()) c.node = p->node_name.empty() ? p->pinned : p->node_name;
    if (p->phase != "Succeeded" && p->phase != "Failed") ++c.seated;
  }
  int next = 0;
  for (auto& pod : new_pods) {
    if (pod.value("kind", "") != "Pod") continue;
    const auto seat = api::claimed_gpus(kube::string_at(kube::object_at(pod["metadata"], "annotations"), api::kGpuSeatAnnotation));
    if (seat.count <= 0) continue;
    const std::string node = api::pinned_node(pod);
    std::string chosen;
    int64_t fullest = -1;
    for (const auto& [name, c] : by_name)
      if (c.node == node && c.seated < per_device && c.seated > fullest) {
        chosen = name;
        fullest = c.seated;
      }
    if (chosen.empty()) {
      do chosen = spec.name + "-seats-" + std::to_string(next++);
      while (known.count(chosen));
      known.insert(chosen);
      by_name[chosen].node = node;
      out.claims_to_create.push_back(gpu_seats_claim(spec, seat.device_class, node, chosen));
    }
    ++by_name[chosen].seated;
    pod["spec"]["resourceClaims"][0]["resourceClaimName"] = chosen;
  }
  // An ended pod's seat is free: its claim would keep the device allocated for nothing. (A claim
  // still reserved for a pod is removed only once the pod lets it go.)
  for (const auto& c : claims)
    if (!c.deleting && by_name[c.name].seated == 0 && c.created && now - *c.created >= grace) out.claims_to_delete.push_back(c.name);
  return out;
}

}  // namespace valley::render
