// The replayed cluster as the objects the operator's informers would show (nodes, TrainingTasks,
// their worker pods), kept in a planning snapshot; the planner's inputs are taken from it through
// controllers/inputs, the operator's own path (sim_state.h). Only what the operator could know goes
// into the objects: a job's stated duration, the progress records it wrote (status.scaling), its
// starts and resizes; never its true speed.
#include "bench/sim/sim_state.h"

#include "controllers/api/nodepool.h"
#include "controllers/api/pod.h"
#include "controllers/gpu/resources.h"
#include "controllers/render/render.h"
#include "operator/kube/timefmt.h"

namespace valley::sim::detail {

namespace label = render::label;

std::string Simulator::namespace_of(const SimJob& j) const {
  // A tenant's jobs in its namespace (the Tenancy below says which tenant owns it).
  if (tenants_planned() && tenants_.count(j.trace.tenant)) return "tenant-" + j.trace.tenant;
  return "sim";
}

nlohmann::json node_object(const SimNode& n) {
  nlohmann::json labels = nlohmann::json::object();
  for (const auto& [k, v] : n.node.labels) labels[k] = v;
  nlohmann::json node = {{"apiVersion", "v1"},
                         {"kind", "Node"},
                         {"metadata", {{"name", n.node.name}, {"labels", labels}}},
                         {"spec", nlohmann::json::object()},
                         {"status",
                          {{"allocatable", {{n.pool->replicas > 0 ? std::string(gpu::kTimeSliced) : n.pool->vendor + ".com/gpu",
                                             std::to_string(n.pool->gpus_per_node * std::max(1, n.pool->replicas))}}},
                           {"conditions", nlohmann::json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
  // A termination notice, as aws-node-termination-handler taints the node.
  if (!n.node.notice.empty()) node["spec"]["taints"] = nlohmann::json::array({{{"key", n.node.notice}, {"effect", "NoSchedule"}}});
  return node;
}

nlohmann::json task_object(const SimJob& j, PolicyKind policy, const std::string& ns, SystemTime zero, std::optional<int64_t> stated_seconds,
                           bool topology_aware) {
  auto at = [zero](int64_t t) { return zero + std::chrono::seconds(t); };
  // The job's app is its image: jobs of one app are the same program (what scaling priors pool).
  nlohmann::json worker = {{"image", j.traits.app.empty() ? std::string("sim") : j.traits.app}, {"gpus", "1"}};
  // The MPI Operator's jobs as a peer runs them: on-demand NVIDIA capacity only.
  if (policy == PolicyKind::Naive) worker["template"] = {{"spec", {{"nodeSelector", {{"karpenter.sh/capacity-type", "on-demand"}}}}}};
  if (j.traits.shares) worker["sharing"] = {{"allowed", true}, {"profile", j.traits.app}};
  nlohmann::json spec = {{"taskType", "MPI"},
                         {"priority", policy == PolicyKind::Naive ? 0 : j.traits.priority},
                         {"replicas", {{"min", j.traits.min_workers}, {"max", j.traits.max_workers}}},
                         {"vendors", j.vendors},
                         {"reduceCost", j.traits.reduce_cost},
                         {"master", {{"image", "sim"}}},
                         {"worker", worker},
                         // Every replayed job checkpoints (periodically, and on SIGTERM).
                         {"checkpoint", {{"uri", "s3://sim/" + j.trace.id + "/"}}},
                         {"estimatedDuration", std::to_string(std::max<int64_t>(1, stated_seconds.value_or(j.trace.duration))) + "s"}};
  if (topology_aware && j.traits.max_workers > 1) spec["topology"] = {{"preferred", "rack"}};
  nlohmann::json status = nlohmann::json::object();
  status["phase"] = j.state == State::Running        ? "Running"
                    : j.state == State::Provisioning ? "Admitted"
                    : j.state == State::Done         ? "Succeeded"
                                                     : "Pending";
  status["epoch"] = j.epoch;
  if (j.result.start >= 0) status["startTime"] = kube::format_time(at(j.result.start));
  if (j.last_resize) status["lastResizeTime"] = kube::format_time(at(*j.last_resize));
  if (!j.scaling.empty()) status["scaling"] = planner::scaling_json(j.scaling);
  // The work done so far, as the accrued cost's breakdown counts GPU time.
  if (j.result.gpu_seconds > 0) status["cost"] = {{"breakdown", {{"gpuMilliSeconds", {{"all", j.result.gpu_seconds * 1000}}}}}};
  return {{"apiVersion", "valley.dev/v1beta1"},
          {"kind", "TrainingTask"},
          {"metadata",
           {{"name", j.trace.id},
            {"namespace", ns},
            {"uid", "uid-" + j.trace.id},
            {"generation", 1},
            {"creationTimestamp", kube::format_time(at(j.trace.submit))}}},
          {"spec", spec},
          {"status", status}};
}

nlohmann::json worker_pod(const SimJob& j, const std::vector<planner::Task::Worker>& placement, size_t index, const std::string& ns) {
  const auto& w = placement[index];
  // As render asks for it: a replica by the device plugin's resource, the split in a sealed record.
  const auto replicas = gpu::replicas_of(w.gpu_resource);
  nlohmann::json annotations = nlohmann::json::object();
  if (replicas)
    annotations[replicas->sharing == gpu::Sharing::Mps ? api::kMpsReplicasAnnotation : api::kTimeSlicedReplicasAnnotation] = std::to_string(replicas->replicas);
  nlohmann::json pod = {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", render::worker_name(j.trace.id, static_cast<int>(index))},
            {"namespace", ns},
            {"uid", "uid-" + j.trace.id + "-w" + std::to_string(index) + "-e" + std::to_string(j.epoch)},
            {"labels",
             {{label::kManagedBy, "valley"},
              {label::kTask, j.trace.id},
              {label::kRole, "worker"},
              {label::kEpoch, std::to_string(j.epoch)},
              {label::kWorkerIndex, std::to_string(index)}}},
            {"annotations", annotations},
            {"ownerReferences", nlohmann::json::array({{{"uid", "uid-" + j.trace.id}, {"kind", "TrainingTask"}, {"name", j.trace.id}}})}}},
          {"spec",
           {{"nodeName", api::is_provisionable(w.node) ? std::string() : w.node},
            {"containers", nlohmann::json::array({{{"name", "worker"},
                                                   {"resources", {{"limits", {{replicas ? replicas->resource : w.gpu_resource, std::to_string(w.count)}}}}}}})}}},
          {"status", {{"phase", "Running"}}}};
  api::seal_records(pod);
  return pod;
}

void Simulator::sync_snapshot() {
  for (auto& n : nodes_) {
    const int now = (n.alive ? 2 : 0) + (n.node.notice.empty() ? 0 : 1);
    if (now == n.synced) continue;
    if (n.alive) snapshot_.upsert_node(std::make_shared<const nlohmann::json>(node_object(n)));
    else snapshot_.remove_node(n.node.name);
    n.synced = now;
  }
  for (auto& j : jobs_) {
    if (j.version == j.synced) continue;
    j.synced = j.version;
    for (const auto& key : j.pod_keys) snapshot_.remove_pod(key);
    j.pod_keys.clear();
    if (j.state != State::Pending && j.state != State::Running && j.state != State::Provisioning) {
      snapshot_.remove_task(key_of(j));
      continue;
    }
    const std::string ns = namespace_of(j);
    snapshot_.upsert_task(std::make_shared<const nlohmann::json>(task_object(j, policy_, ns, at(0), std::nullopt, in_.topology_aware)));
    const auto& placement = j.state == State::Provisioning ? j.awaiting : j.workers;
    for (size_t k = 0; k < placement.size(); ++k) {
      auto pod = std::make_shared<const api::Pod>(api::pod_from(worker_pod(j, placement, k, ns)));
      j.pod_keys.push_back(pod->key());
      snapshot_.upsert_pod(pod);
    }
  }
}

const inputs::PlanInputs::Round& Simulator::take_inputs() {
  sync_snapshot();
  if (!cloud()) return inputs_.take(snapshot_.view(), pricing_, tenancy_, at(now_), cluster_facts_);
  planner::SnapshotView view = snapshot_.view();
  offer_provisionable(view);
  return inputs_.take(view, pricing_, tenancy_, at(now_), cluster_facts_);
}

}  // namespace valley::sim::detail
