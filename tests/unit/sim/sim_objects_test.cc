// The simulator plans from what the operator would see: a replayed job's objects give the planner
// the same inputs as the objects the operator itself makes for that task (its pods rendered by
// controllers/render), through the one input path (controllers/inputs).
#include <gtest/gtest.h>

#include "bench/sim/sim_state.h"
#include "controllers/api/pod.h"
#include "controllers/api/spec.h"
#include "controllers/inputs/plan_inputs.h"
#include "controllers/inputs/task_inputs.h"
#include "controllers/inputs/snapshot.h"
#include "controllers/render/render.h"

namespace valley::sim::detail {
namespace {

const SystemTime kZero = SystemTime{} + std::chrono::seconds(1'795'316'645);

// A job that arrived at second 100, started at 400 on two A100s of node a-0 in its third epoch,
// resized at 900, and has learned how it scales at 1 and 2 workers.
SimJob running_job() {
  SimJob j;
  j.trace.id = "job-7";
  j.trace.submit = 100;
  j.trace.duration = 7200;
  j.traits.priority = 40;
  j.traits.min_workers = 1;
  j.traits.max_workers = 4;
  j.traits.reduce_cost = true;
  j.traits.amd = true;
  j.vendors = {"nvidia", "amd"};
  j.state = State::Running;
  j.epoch = 3;
  j.result.start = 400;
  j.result.gpu_seconds = 1800;
  j.last_resize = 900;
  j.workers = {{"a-0", "nvidia.com/gpu", 1}, {"a-0", "nvidia.com/gpu", 1}};
  j.scaling = planner::observe(planner::observe({}, 1, 1.0), 2, 1.8);
  return j;
}

// The planner's input of a task from its object and pods, as the operator's planning loop makes it.
planner::Task input_of(const nlohmann::json& object, const std::vector<api::Pod>& pods, const api::Policy& policy) {
  const api::ParsedTask parsed = api::parse_task(object);
  EXPECT_TRUE(parsed.spec) << (parsed.errors.empty() ? "" : parsed.errors.front());
  planner::Task t = planner::task_from(*parsed.spec, object, pods);
  inputs::status_inputs(t, *parsed.spec, object["status"], &policy);
  return t;
}

std::string describe(const planner::Task& t) {
  std::string out = t.key + " p" + std::to_string(t.priority) + " " + std::to_string(t.min_workers) + "-" + std::to_string(t.max_workers) +
                    " rc" + std::to_string(t.reduce_cost) + " amd" + std::to_string(runs_on(t, "amd")) + " ck" + std::to_string(t.checkpointed) +
                    " adm" + std::to_string(t.admitted) + " milli" + std::to_string(t.gpu_milli) +
                    " created" + std::to_string(t.created.time_since_epoch().count()) + " scaling" + std::to_string(t.scaling.size()) +
                    " cheap" + (t.cheap_until ? std::to_string(t.cheap_until->time_since_epoch().count()) : "-") +
                    " end" + (t.expected_end ? std::to_string(t.expected_end->time_since_epoch().count()) : "-") +
                    " resize" + (t.last_resize ? std::to_string(t.last_resize->time_since_epoch().count()) : "-") + " workers";
  for (const auto& w : t.workers) out += " " + w.node + ":" + w.gpu_resource + "x" + std::to_string(w.count) + (w.bound ? "b" : "");
  return out;
}

TEST(SimObjects, AReplayedJobGivesThePlannerWhatTheOperatorsOwnObjectsGive) {
  const SimJob j = running_job();
  api::Policy policy;
  policy.name = "default";
  const nlohmann::json object = task_object(j, PolicyKind::Valley, "sim", kZero);
  // The simulator's pods, and the ones the operator renders for the same placement, bound and running.
  std::vector<api::Pod> simulated, rendered;
  const api::ParsedTask parsed = api::parse_task(object);
  ASSERT_TRUE(parsed.spec);
  for (size_t k = 0; k < j.workers.size(); ++k) {
    simulated.push_back(api::pod_from(worker_pod(j, j.workers, k, "sim")));
    render::WorkerPlacement where;
    where.node = j.workers[k].node;
    nlohmann::json pod = render::worker_pod(*parsed.spec, static_cast<int>(k), render::Shape{2, j.epoch}, where);
    pod["metadata"]["uid"] = "pod-" + std::to_string(k);
    pod["metadata"]["ownerReferences"] = nlohmann::json::array({{{"uid", "uid-" + j.trace.id}}});
    pod["spec"]["nodeName"] = where.node;
    pod["status"] = {{"phase", "Running"}};
    rendered.push_back(api::pod_from(pod));
  }
  const planner::Task from_sim = input_of(object, simulated, policy), from_operator = input_of(object, rendered, policy);
  EXPECT_EQ(describe(from_sim), describe(from_operator));
  // And it says what the job is: the operator learns its scaling, start, resize and work done.
  EXPECT_EQ(from_sim.key, "sim/job-7");
  EXPECT_TRUE(from_sim.admitted);
  EXPECT_TRUE(from_sim.checkpointed);
  EXPECT_EQ(from_sim.workers.size(), 2u);
  EXPECT_EQ(from_sim.scaling.size(), 2u);
  EXPECT_EQ(from_sim.created, kZero + std::chrono::seconds(100));
  EXPECT_EQ(from_sim.last_resize, kZero + std::chrono::seconds(900));
  ASSERT_TRUE(from_sim.expected_end);
  ASSERT_TRUE(from_sim.cheap_until);
  EXPECT_LE(*from_sim.cheap_until, from_sim.created + policy.reduce_cost_patience);
}

TEST(SimObjects, APeersJobSaysWhatThePeerWouldRunItAs) {
  SimJob j = running_job();
  j.state = State::Pending;
  j.workers.clear();
  api::Policy policy;
  const nlohmann::json object = task_object(j, PolicyKind::Naive, "sim", kZero);
  const planner::Task t = input_of(object, {}, policy);
  EXPECT_FALSE(t.admitted);
  EXPECT_EQ(t.priority, 0);  // arrival order only
  EXPECT_EQ(t.node_selector.at("karpenter.sh/capacity-type"), "on-demand");
}

}  // namespace
}  // namespace valley::sim::detail
