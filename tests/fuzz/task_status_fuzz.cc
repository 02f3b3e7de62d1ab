// libFuzzer target: everything the controllers read back from the API server about a running task:
// its status (which they wrote, but which anyone with RBAC can edit), its pods' status (written by
// kubelets and runtimes that leave optional fields out or null), its node. The input is JSON
//   {"spec": {merge patch onto a valid spec}, "status": any, "pods": [any...], "node": any}
// and every pure reader and decision must take it without throwing: the pod view, the cost ledger,
// the planner's snapshot (and the cluster snapshot kept from events), the lifecycle's decision, the
// cost report; and a pod cached lean (controllers/task/cache_fields.h) must read as the whole pod.
#include "controllers/api/task_status.h"
#include "controllers/cost/engine.h"
#include "controllers/cost/report.h"
#include "controllers/gpu/pod_requests.h"
#include "controllers/inputs/cluster_snapshot.h"
#include "controllers/inputs/snapshot.h"
#include "controllers/task/cache_fields.h"
#include "controllers/lifecycle/lifecycle.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

using valley::fuzz::json_of;
using json = nlohmann::json;

const json kTask = json::parse(R"({"apiVersion":"valley.dev/v1beta1","kind":"TrainingTask",
  "metadata":{"name":"t","namespace":"ns","uid":"u-1","generation":1,"creationTimestamp":"2026-11-22T03:00:00Z"},
  "spec":{"taskType":"MPI","replicas":{"min":1,"max":4},"master":{"image":"l"},"worker":{"image":"w"},
          "maxCost":"50.00","estimatedDuration":"2h"}})");

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace valley;
  auto input = json_of(fuzz::text_of(data, size));
  if (!input || !input->is_object()) return 0;
  json task = kTask;
  if (auto it = input->find("spec"); it != input->end() && it->is_object()) task["spec"].merge_patch(*it);
  if (auto it = input->find("status"); it != input->end()) task["status"] = *it;
  std::vector<json> pods;
  if (auto it = input->find("pods"); it != input->end() && it->is_array())
    for (const auto& p : *it) pods.push_back(p);
  json node = input->value("node", json::object());

  const auto now = kube::SystemTime(std::chrono::seconds(1795316645));
  lifecycle::Observed observed;
  observed.task = api::readable_task(task);  // as the reconciler reads it back
  observed.parsed = api::parse_task(task);
  observed.now = now;
  observed.nodes_known = true;
  std::vector<cost::PodUse> uses;
  auto free = planner::node_from(node);
  planner::ClusterSnapshot snapshot;
  snapshot.upsert_task(std::make_shared<const json>(task));
  if (node.is_object()) {
    json lean_node = node;
    task::lean_node(lean_node);
    snapshot.upsert_node(std::make_shared<const json>(lean_node));
  }
  std::vector<api::Pod> typed;
  for (const auto& p : pods) {
    // The typed pod the cache would hold is the same made from the whole pod or through the mask.
    json lean = p;
    task::lean_pod(lean);
    const api::Pod pod = api::pod_from(p);
    if (!(pod == api::pod_from(lean))) __builtin_trap();
    auto view = lifecycle::view_pod(pod);
    snapshot.upsert_pod(std::make_shared<const api::Pod>(pod));
    if (!view.node.empty()) observed.nodes[view.node] = lifecycle::NodeView{};
    observed.pods.push_back(view);
    uses.push_back(cost::pod_use(pod));
    (void)gpu::gpu_requests(pod);
    (void)gpu::gpu_usage(pod);
    planner::subtract(free, pod);
    typed.push_back(pod);
  }
  const json status = task.value("status", json::object());
  if (observed.parsed.spec) {
    const auto& spec = *observed.parsed.spec;
    lifecycle::Admission admission;
    admission.admitted = true;
    admission.workers = lifecycle::desired_workers(spec);
    admission.placement.assign(admission.workers, render::default_placement(spec));
    observed.admission = admission;
    (void)lifecycle::decide(observed);
    (void)planner::task_from(spec, task, typed);
    (void)lifecycle::over_budget(spec, status);
  }
  observed.admission.reset();
  (void)lifecycle::decide(observed);
  (void)snapshot.view();

  cost::Policy policy;
  std::map<std::string, cost::NodeRate> rates;
  for (const auto& use : uses) rates[use.node] = cost::rate_for(policy, "nvidia", {});
  const json cost_status = status.is_object() ? status.value("cost", json::object()) : json::object();
  for (bool finished : {false, true}) {
    json after = cost::accrue(policy, cost_status, uses, rates, 0, now, finished);
    (void)cost::report_of(after);
  }
  (void)cost::report_of(cost_status);
  return 0;
}
