#include "bench/live/objects.h"

#include "bench/sim/submitter.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "controllers/cost/engine.h"
#include "operator/duration.h"

namespace valley::live {

using json = nlohmann::json;

std::string fleet_node_name(const std::string& fleet, const std::string& sim_node) { return fleet + "-" + sim_node; }

json fleet_node(const sim::Pool& pool, int index, const std::string& fleet) {
  const std::string name = fleet_node_name(fleet, pool.name + "-" + std::to_string(index));
  json labels = {{"kubernetes.io/hostname", name}, {"kubernetes.io/os", "linux"}, {"kubernetes.io/arch", "amd64"},
                 {"type", "kwok"}, {"valley.dev/pool", pool.name}, {kFleetLabel, fleet}};
  for (const auto& [k, v] : pool.labels) labels[k] = v;
  json capacity = {{"cpu", "96"}, {"memory", "1152Gi"}, {"ephemeral-storage", "8Ti"}, {"pods", "110"},
                   {pool.vendor + ".com/gpu", std::to_string(pool.gpus_per_node)}};
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}, {"labels", labels}, {"annotations", {{"kwok.x-k8s.io/node", "fake"}, {"node.alpha.kubernetes.io/ttl", "0"}}}}},
          {"spec", json::object()},
          {"status", {{"capacity", capacity}, {"allocatable", capacity}}}};
}

std::string gpu_resource(const sim::Pool& pool) { return pool.vendor + ".com/gpu"; }

std::string choose_gpu_resource(const LiveJob& job, const sim::Inputs& in, const json& cluster_queue) {
  const std::string nvidia = "nvidia.com/gpu";
  if (!job.traits.amd) return nvidia;
  std::map<std::string, int64_t> reserved;  // flavor (pool) -> GPUs reserved
  for (const auto& f : cluster_queue.value("status", json::object()).value("flavorsReservation", json::array()))
    for (const auto& r : f.value("resources", json::array()))
      if (r.value("name", "").ends_with(".com/gpu")) reserved[f.value("name", "")] += std::stoll(r.value("total", "0"));
  const sim::Pool* best = sim::cheapest_pool_with_room(in, reserved, job.trace.gpus);
  return best ? gpu_resource(*best) : nvidia;
}

std::vector<json> kueue_objects(const sim::Inputs& in, const std::string& fleet, const std::string& ns) {
  std::vector<json> out;
  // Per resource (vendor), its pools cheapest first: what the simulator's backfill takes first.
  std::map<std::string, std::vector<std::pair<int64_t, const sim::Pool*>>> by_resource;
  for (const auto& pool : in.cluster.pools) {
    by_resource[gpu_resource(pool)].push_back({sim::gpu_hour_price(in, pool), &pool});
    json labels = {{kFleetLabel, fleet}, {"valley.dev/pool", pool.name}};
    out.push_back({{"apiVersion", "kueue.x-k8s.io/v1beta2"}, {"kind", "ResourceFlavor"}, {"metadata", {{"name", pool.name}}}, {"spec", {{"nodeLabels", labels}}}});
  }
  for (const auto& c : in.workload.classes)
    out.push_back({{"apiVersion", "kueue.x-k8s.io/v1beta2"}, {"kind", "WorkloadPriorityClass"}, {"metadata", {{"name", c.name}}}, {"value", c.priority}});
  json groups = json::array();
  for (auto& [resource, pools] : by_resource) {
    std::stable_sort(pools.begin(), pools.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    json flavors = json::array();
    for (const auto& [price, pool] : pools)
      flavors.push_back({{"name", pool->name}, {"resources", json::array({{{"name", resource}, {"nominalQuota", pool->nodes * pool->gpus_per_node}}})}});
    groups.push_back({{"coveredResources", json::array({resource})}, {"flavors", flavors}});
  }
  out.push_back({{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                 {"kind", "ClusterQueue"},
                 {"metadata", {{"name", kQueue}}},
                 {"spec",
                  {{"namespaceSelector", json::object()},
                   {"queueingStrategy", "BestEffortFIFO"},
                   {"preemption", {{"withinClusterQueue", "LowerPriority"}}},
                   {"flavorFungibility", {{"whenCanBorrow", "MayStopSearch"}, {"whenCanPreempt", "TryNextFlavor"}}},
                   {"resourceGroups", groups}}}});
  out.push_back({{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                 {"kind", "LocalQueue"},
                 {"metadata", {{"name", kQueue}, {"namespace", ns}}},
                 {"spec", {{"clusterQueue", kQueue}}}});
  return out;
}

namespace {
std::string seconds(double s) { return std::to_string(std::max<int64_t>(1, std::llround(s))) + "s"; }
}  // namespace

json training_task(const LiveJob& job, const SubmitContext& c) {
  json spec = {{"taskType", "MPI"},
               {"priority", job.traits.priority},
               {"replicas", {{"min", job.traits.min_workers}, {"max", job.traits.max_workers}}},
               {"amdSupport", job.traits.amd},
               {"reduceCost", job.traits.reduce_cost},
               {"master", {{"image", "sim"}}},
               // The job's app is its image: jobs of one app are the same program (what priors pool).
               {"worker", {{"image", job.traits.app.empty() ? std::string("sim") : job.traits.app}, {"gpus", "1"}}},
               {"checkpoint", {{"uri", c.checkpoint_prefix + job.name + "/"}, {"secretRef", {{"name", c.checkpoint_secret}}}}},
               {"estimatedDuration", seconds(static_cast<double>(job.trace.duration) / c.compression)},
               {"runPolicy", {{"backoffLimit", 100}}}};
  return {{"apiVersion", "valley.dev/v1beta1"}, {"kind", "TrainingTask"}, {"metadata", {{"name", job.name}, {"namespace", c.ns}}}, {"spec", spec}};
}

json mpi_job(const LiveJob& job, const std::string& gpu_resource, const SubmitContext& c) {
  json launcher = {{"restartPolicy", "Never"},
                   {"nodeSelector", {{kFleetLabel, c.fleet}}},
                   {"containers", json::array({{{"name", "launcher"}, {"image", "sim"}}})}};
  json worker = {{"nodeSelector", {{kFleetLabel, c.fleet}}},
                 {"containers", json::array({{{"name", "worker"},
                                              {"image", job.traits.app.empty() ? std::string("sim") : job.traits.app},
                                              {"resources", {{"limits", {{gpu_resource, "1"}}}}}}})}};
  return {{"apiVersion", "kubeflow.org/v2beta1"},
          {"kind", "MPIJob"},
          {"metadata",
           {{"name", job.name},
            {"namespace", c.ns},
            {"labels", {{"kueue.x-k8s.io/queue-name", kQueue}, {"kueue.x-k8s.io/priority-class", job.traits.cls}}}}},
          {"spec",
           {{"runPolicy", {{"suspend", true}, {"cleanPodPolicy", "Running"}, {"backoffLimit", 100}}},
            {"slotsPerWorker", 1},
            {"mpiReplicaSpecs",
             {{"Launcher", {{"replicas", 1}, {"template", {{"spec", launcher}}}}},
              {"Worker", {{"replicas", job.trace.gpus}, {"template", {{"spec", worker}}}}}}}}}};
}

json flat_policy(json policy) {
  if (policy.contains("spec") && policy["spec"].contains("electricity")) policy["spec"]["electricity"].erase("windows");
  return policy;
}

json compressed_policy(json policy, double compression) {
  auto scale = [&](json& at, const char* key) {
    if (!at.is_object() || !at.contains(key)) return;
    auto d = parse_duration(at[key].get<std::string>());
    if (!d) throw sim::InputError(std::string("PricingPolicy: ") + key + " is not a duration: " + at[key].dump());
    at[key] = format_duration(std::chrono::milliseconds(std::llround(static_cast<double>(d->count()) / compression)));
  };
  json& spec = policy["spec"];
  if (spec.contains("reduceCost")) scale(spec["reduceCost"], "patience");
  if (spec.contains("moves")) scale(spec["moves"], "restartCost");
  return policy;
}

}  // namespace valley::live
