// Planner decision time on a large snapshot: N nodes (mixed NVIDIA 8-GPU on-demand/spot, AMD, MIG)
// and T pending tasks of mixed sizes and priorities, planned from scratch; then the same cluster
// re-planned with the result as its state (the steady-state case). Prints JSON.
//   bench_planner [nodes=1000] [tasks=500] [repeats=5] [dra]: with `dra`, half the nodes (every
//   other one; whole NVIDIA or AMD GPUs) have their GPUs through DRA instead of a device plugin
//   bench_planner running N [repeats=5]: the cluster of bench/controlplane once all is admitted: N
//   nodes of 8 GPUs and N tasks of 8 one-GPU workers, each task on a node of its own, re-planned
//   (what every plan of the operator costs while a burst of N tasks runs; its growth with N): the
//   GPUs the live workers give back (held_by_planned, returned_ms), then the plan (plan_ms).
#include <chrono>
#include <cstdio>
#include <random>
#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "controllers/inputs/cluster_snapshot.h"
#include "controllers/planner/planner.h"

using namespace valley::planner;

namespace {
int running(int n, int repeats) {
  auto now = SystemTime(std::chrono::seconds(1795316645));
  std::vector<Node> nodes;
  std::vector<Task> tasks;
  for (int i = 0; i < n; ++i) {
    Node node;
    node.name = "kwok-node-" + std::to_string(i);
    node.vendor = "nvidia";
    node.capacity_class = "on-demand";
    node.capacity = {{"nvidia.com/gpu", 8}};
    node.free = {{"nvidia.com/gpu", 0}};  // its task's workers hold all 8 (given back: held_by_planned)
    nodes.push_back(node);
    Task t;
    t.key = "cp/t" + std::to_string(i);
    t.min_workers = t.max_workers = 8;
    t.gpu_milli = 1000;
    t.created = now - std::chrono::seconds(600);
    t.admitted = true;
    for (int w = 0; w < 8; ++w) t.workers.push_back({node.name, "nvidia.com/gpu", 1});
    tasks.push_back(t);
  }
  std::vector<const Node*> node_refs;
  std::unordered_set<std::string> node_names;
  SnapshotView view;  // each task's eight pods, bound where its input has them, epoch "1"
  std::unordered_map<std::string, const Task*> by_key;
  const std::string epoch = "1";
  for (size_t i = 0; i < nodes.size(); ++i) {
    node_refs.push_back(&nodes[i]);
    node_names.insert(nodes[i].name);
    view.workers[tasks[i].key] = std::make_shared<const std::vector<SnapshotView::Worker>>(
        8, SnapshotView::Worker{nodes[i].name, {{"nvidia.com/gpu", 1}}, epoch, {{"cpu", 4000}, {"memory", int64_t{16} << 30}, {"pods", 1}}});
    by_key[tasks[i].key] = &tasks[i];
  }
  double best_returned = 1e9, best = 1e9;
  size_t kept = 0;
  for (int r = 0; r < repeats; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    const HeldByPlanned returned = held_by_planned(
        view, [&](const std::string& key) { return std::optional(PlannedTask{&epoch, &by_key.at(key)->workers}); },
        [&](const std::string& node) { return node_names.count(node) > 0; });
    auto t1 = std::chrono::steady_clock::now();
    auto ds = plan(node_refs, returned, tasks, now);
    auto t2 = std::chrono::steady_clock::now();
    best_returned = std::min(best_returned, std::chrono::duration<double, std::milli>(t1 - t0).count());
    best = std::min(best, std::chrono::duration<double, std::milli>(t2 - t1).count());
    kept = std::count_if(ds.begin(), ds.end(), [](const Decision& d) { return d.workers == 8; });
  }
  std::printf("{\"benchmark\":\"planner-running\",\"nodes\":%d,\"tasks\":%d,\"kept\":%zu,\"returned_ms\":%.1f,\"plan_ms\":%.1f}\n", n,
              n, kept, best_returned, best);
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc > 2 && std::string(argv[1]) == "running") return running(std::atoi(argv[2]), argc > 3 ? std::atoi(argv[3]) : 5);
  int n_nodes = argc > 1 ? std::atoi(argv[1]) : 1000;
  int n_tasks = argc > 2 ? std::atoi(argv[2]) : 500;
  int repeats = argc > 3 ? std::atoi(argv[3]) : 5;
  const bool dra = argc > 4 && std::string(argv[4]) == "dra";
  std::mt19937 rng(42);
  std::vector<Node> nodes;
  for (int i = 0; i < n_nodes; ++i) {
    int kind = i % 10;
    Node n;
    n.name = "node-" + std::to_string(i);
    if (kind < 6) {
      n.vendor = "nvidia";
      n.capacity_class = kind < 4 ? "on-demand" : "spot";
      n.free = {{"nvidia.com/gpu", 8}};
    } else if (kind < 9) {
      n.vendor = "amd";
      n.free = {{"amd.com/gpu", 8}};
    } else {
      n.vendor = "nvidia";
      n.free = {{"nvidia.com/gpu", 4}, {"nvidia.com/mig-1g.10gb", 14}, {"nvidia.com/mig-3g.40gb", 4}};
    }
    if (dra && i % 2 == 0) {  // kinds 0-8 only: whole GPUs of NVIDIA or AMD
      n.dra_class = "gpu." + n.vendor + ".com";
      n.free = {{"dra:" + n.dra_class, 8}};
    }
    nodes.push_back(n);
  }
  auto now = SystemTime(std::chrono::seconds(1795316645));
  std::vector<Task> tasks;
  for (int i = 0; i < n_tasks; ++i) {
    Task t;
    t.key = "ns/task-" + std::to_string(i);
    t.priority = static_cast<int>(rng() % 5) * 20;
    t.min_workers = 1 + static_cast<int>(rng() % 16);
    t.max_workers = t.min_workers + static_cast<int>(rng() % 32);
    t.gpu_milli = std::vector<int>{1000, 1000, 2000, 500, 8000}[rng() % 5];
    if (rng() % 2) t.vendors = {"nvidia", "amd"};
    t.reduce_cost = rng() % 4 == 0;
    t.created = now - std::chrono::seconds(rng() % 7200);
    tasks.push_back(t);
  }
  double cold_best = 1e9, warm_best = 1e9;
  std::vector<Decision> ds;
  for (int r = 0; r < repeats; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    ds = plan(nodes, tasks, now);
    cold_best = std::min(cold_best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::vector<Task> state = tasks;
  int admitted = 0, workers = 0;
  for (size_t i = 0; i < state.size(); ++i) {
    state[i].admitted = ds[i].workers > 0;
    state[i].workers = ds[i].placement;
    admitted += state[i].admitted;
    workers += ds[i].workers;
  }
  for (int r = 0; r < repeats; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    plan(nodes, state, now + std::chrono::minutes(1));
    warm_best = std::min(warm_best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::printf("{\"benchmark\":\"planner\",\"nodes\":%d,\"tasks\":%d,\"draNodes\":%d,\"admitted\":%d,\"workers_placed\":%d,"
              "\"plan_ms_from_scratch\":%.1f,\"plan_ms_steady_state\":%.1f}\n",
              n_nodes, n_tasks, static_cast<int>(std::count_if(nodes.begin(), nodes.end(), [](const Node& n) { return !n.dra_class.empty(); })),
              admitted, workers, cold_best, warm_best);
  return 0;
}
