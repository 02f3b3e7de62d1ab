// Growth judged by placement shape (plan.h): a step onto more nodes than the task measured as
// paying is held to what it measured there, and a size that did not pay across nodes is tried again
// on fewer when that is where it would now land.
#include <algorithm>

#include "controllers/planner/plan.h"

namespace valley::planner::detail {

bool Plan::narrower_step(size_t i, int workers) const {
  const Task& t = tasks_[i];
  if (t.shapes.empty() || t.pinned_workers || !t.idle.empty() || workers >= t.max_workers) return false;
  const int next = std::min(t.max_workers, workers + growth_step(workers, config_.min_gain_workers, config_.min_gain_fraction));
  bool measured = false;
  for (const auto& x : t.shapes) {
    if (x.workers != next) continue;
    if (x.nodes <= 1) return false;  // on one node already, or a shape not recorded
    measured = true;
  }
  return measured;
}

bool Plan::keep_paying_shape(size_t i, std::vector<Task::Worker>& added, std::vector<Task::Worker>& around, bool exploring) {
  const Task& t = tasks_[i];
  if (t.shapes.empty() || t.pinned_workers || added.empty()) return !added.empty();
  const Decision& d = decisions_[i];
  const int from_nodes = static_cast<int>(node_count(d.placement));
  const double threshold = growth_threshold(t, config_);
  std::optional<bool> pays;
  while (!added.empty()) {
    pays = shape_step_pays(t.shapes, d.workers, from_nodes, d.workers + static_cast<int>(added.size()),
                           static_cast<int>(node_count(around)), t.min_workers, threshold);
    if (pays != false) break;
    give(i, added.back());
    added.pop_back();
    around.pop_back();
  }
  if (!added.empty() && (!exploring || pays == true)) return true;
  for (const auto& w : added) give(i, w);
  added.clear();
  return false;
}

}  // namespace valley::planner::detail
