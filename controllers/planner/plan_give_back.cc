// Bought nodes given back (plan.h's give_back_bought): a node of a NodePool is paid for by the hour
// while it is up, whatever runs there, and the autoscaler takes it away once it is empty. Growth
// and finishing tasks leave gangs spread over nodes that are mostly idle; a gang that checkpoints
// and is the last on such a node moves onto GPUs free on nodes others keep up when that pays, so
// that the node empties and goes. Karpenter's own consolidation cannot do this: it moves pods one by one and
// Valley's gang pods carry do-not-disrupt, because only the whole gang can restart from a checkpoint.
#include "controllers/planner/plan.h"

#include "controllers/gpu/resources.h"

#include <set>

namespace valley::planner::detail {

void Plan::give_back_bought() {
  if (config_.move_restart_cost.count() <= 0 || config_.placement != Placement::Price || !waiting_.empty()) return;
  const double restart_hours = std::chrono::duration<double>(config_.move_restart_cost).count() / 3600.0;
  // Whether nothing holds a GPU of node k in the plan as it stands.
  auto empty = [&](size_t k) {
    for (const auto& [resource, capacity] : nodes_[k]->capacity) {
      if (!gpu::is_gpu_resource(resource) || capacity <= 0) continue;
      auto id = resource_ids_.find(resource);
      if (id != resource_ids_.end() && row(k)[id->second] < capacity) return false;
    }
    return true;
  };
  for (size_t i : order(/*admitted=*/true)) {
    const Task& t = tasks_[i];
    Decision& d = decisions_[i];
    const double hours_left = movable_hours_left(i);
    // A task that did not ask to wait is not restarted for the platform's cost: it would be moved
    // off, grow back onto free GPUs (time over money), and be moved again.
    if (hours_left <= restart_hours || planner::time_band(t, config_)) continue;
    std::set<size_t> on;
    for (const auto& w : d.placement)
      if (const size_t k = node_at(w.node); k != kNoNode && bought_up(k)) on.insert(k);
    if (on.empty()) continue;
    const int64_t price_before = work_price(i, d.placement);
    const std::vector<Task::Worker> held = d.placement;
    for (const auto& w : held) give(i, w);
    std::vector<char> elsewhere(nodes_.size(), 1);
    double freed = 0;  // what the nodes it alone keeps up cost an hour
    std::string names;
    for (const size_t k : on) {
      if (!empty(k)) continue;
      elsewhere[k] = 0;
      for (const auto& [resource, capacity] : nodes_[k]->capacity)
        if (gpu::is_gpu_resource(resource)) freed += static_cast<double>(info_[k].price) * static_cast<double>(capacity);
      names += (names.empty() ? "" : ", ") + nodes_[k]->name;
    }
    std::optional<std::vector<Task::Worker>> moved;
    if (freed > 0) {
      // Only onto nodes others keep up: a bought node nothing holds is going too, and moving onto
      // it would only trade one idle node for another (and back, at the next plan).
      for (size_t k = 0; k < nodes_.size(); ++k)
        if (elsewhere[k] && bought_up(k) && empty(k)) elsewhere[k] = 0;
      PlaceOptions options;
      options.may_buy = false;
      options.only = &elsewhere;
      moved = place(i, static_cast<int>(held.size()), {}, options);
    }
    if (moved) {
      const int64_t price_after = work_price(i, *moved);
      const double gpus = static_cast<double>(held.size()) * t.gpu_milli / 1000.0;
      const double costs = static_cast<double>(price_after - price_before) * gpus * hours_left + static_cast<double>(price_after) * gpus * restart_hours;
      if (freed * hours_left > costs) {
        d.placement = std::move(*moved);
        d.action = Action::Move;
        d.reason = "moving onto GPUs free on nodes that are up, so that " + names +
                   " (bought, and kept up by this task alone) empties and is given back: saves more than a checkpoint-restart costs";
        continue;
      }
      for (const auto& w : *moved) give(i, w);
    }
    for (const auto& w : held) take(i, w);
  }
}

}  // namespace valley::planner::detail
