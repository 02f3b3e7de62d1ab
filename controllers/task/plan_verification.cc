// PlanningLoop::verify_plan_inputs (ControllerOptions::verify_plan_inputs, for tests): each plan is
// made again from plan inputs rebuilt from the snapshot, and any decision that differs from the
// kept inputs' is logged ("plan inputs differ from a rebuild") and counted.
#include <spdlog/spdlog.h>

#include "controllers/task/metrics.h"
#include "controllers/task/planning_loop.h"

namespace valley::task {

namespace {
std::string describe(const planner::Decision& d) {
  std::string out = d.key + " action=" + std::to_string(static_cast<int>(d.action)) + " workers=" + std::to_string(d.workers) +
                    " reason=" + d.reason + " queue=" + std::to_string(d.queue_position) + " node=" + d.expected_node +
                    " price=" + std::to_string(d.price_micros) + " placement=";
  for (const auto& w : d.placement) out += w.node + ":" + w.gpu_resource + "x" + std::to_string(w.count) + ",";
  return out;
}
}  // namespace

void PlanningLoop::verify_plan_inputs(const inputs::PlanInputs::Round& r, const planner::SnapshotView& view,
                                      const std::vector<planner::Decision>& kept) {
  // Every input made anew from its entry, the per-plan parts (tenant, priority, nodes avoided)
  // taken as this plan laid them, the published admission laid over afresh.
  const std::map<std::string, lifecycle::Admission>& published = board_.published();
  std::vector<inputs::PlanInputs::TaskState> scratch;
  scratch.reserve(r.planned.size());
  std::vector<const planner::Task*> tasks;
  size_t differ = 0;
  std::map<std::string, planner::PlannedTask> planned_by_key;
  for (const inputs::PlanInputs::TaskState* kept_state : r.planned) {
    scratch.push_back(inputs::PlanInputs::task_state(kept_state->entry, kept_state->pricing));
    inputs::PlanInputs::TaskState& s = scratch.back();
    s.task.tenant = kept_state->task.tenant;
    s.task.priority = kept_state->task.priority;
    s.task.avoid_nodes = kept_state->task.avoid_nodes;
    s.task.prior_scaling = kept_state->task.prior_scaling;
    inputs::lay_shared_devices(s.task, view);
    auto admission = published.find(s.task.key);
    inputs::overlay_admission(s.task, *kept_state->entry->task,
                              admission == published.end() || !admission->second.admitted ? nullptr : &admission->second.placement);
    tasks.push_back(&s.task);
    planned_by_key[s.task.key] = planner::PlannedTask{&s.epoch, &s.task.workers};
    if (!s.holds) {
      ++differ;
      spdlog::error("plan inputs differ from a rebuild: {} holds capacity only in the kept input", s.task.key);
    }
  }
  std::set<std::string> node_names;
  for (const planner::Node* n : r.nodes) node_names.insert(n->name);
  const planner::HeldByPlanned held = planner::held_by_planned(
      view,
      [&](const std::string& key) -> std::optional<planner::PlannedTask> {
        auto e = planned_by_key.find(key);
        return e == planned_by_key.end() ? std::nullopt : std::optional(e->second);
      },
      [&](const std::string& node) { return node_names.count(node) > 0; });
  const auto rebuilt = planner::plan(r.nodes, held, tasks, r.now, r.config);
  if (rebuilt.size() != kept.size()) ++differ;
  for (size_t i = 0; i < std::min(rebuilt.size(), kept.size()); ++i) {
    const std::string a = describe(kept[i]), b = describe(rebuilt[i]);
    if (a == b && kept[i].expected_start == rebuilt[i].expected_start) continue;
    ++differ;
    spdlog::error("plan inputs differ from a rebuild: kept [{}] rebuilt [{}]", a, b);
  }
  if (differ) controller_metrics().plan_input_mismatches.inc({}, static_cast<double>(differ));
}

}  // namespace valley::task
