// Growth judged by placement shape (plan.h): a step onto more nodes than the task measured as
// paying is held to what it measured there, and a size whose mean over its shapes did not pay is
// tried again on fewer nodes when that is where it would now land and the task's measurements say
// it pays there (or nothing says it does not).
#include <algorithm>

#include "controllers/planner/plan.h"

namespace valley::planner::detail {

int Plan::narrower_step(size_t i, int workers) const {
  const Task& t = tasks_[i];
  if (t.pinned_workers || !t.idle.empty() || workers >= t.max_workers) return 0;
  const int next = std::min(t.max_workers, workers + growth_step(workers, config_.min_gain_workers, config_.min_gain_fraction));
  for (const auto& x : t.shapes)
    if (x.workers == next && x.nodes > 1) return next;
  return 0;
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

bool Plan::shape_holds(size_t i, int target) const {
  const Task& t = tasks_[i];
  const Decision& d = decisions_[i];
  if (t.shapes.empty() || !t.idle.empty() || target <= 0) return false;
  const int nodes = static_cast<int>(node_count(d.placement));
  return shape_step_pays(t.shapes, target, nodes, d.workers, nodes, t.min_workers, growth_threshold(t, config_)) == true;
}

}  // namespace valley::planner::detail
