// What the live benchmark puts in the cluster, pure (JSON in Kubernetes' shapes): the fleet's kwok
// nodes from the simulator's cluster file, Kueue's queues for them (flavors ordered by the
// PricingPolicy's price, each pool's GPUs as quota, the workload's classes as priorities), and a
// job as each system is asked to run it: a TrainingTask for Valley, a suspended MPIJob of the
// Kubeflow MPI Operator in a LocalQueue for Kueue.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/live/live_jobs.h"
#include "controllers/cost/policy.h"

namespace valley::live {

inline constexpr const char* kFleetLabel = "valley.dev/fleet";
inline constexpr const char* kQueue = "live";

// The kwok node `<fleet>-<pool>-<i>` (i counts from 0), as tests/cluster's node generator makes them.
nlohmann::json fleet_node(const sim::Pool& pool, int index, const std::string& fleet);
std::string fleet_node_name(const std::string& fleet, const std::string& sim_node);

// ResourceFlavors (one per pool, selecting the fleet's nodes of it), WorkloadPriorityClasses (one
// per workload class), the ClusterQueue `live` (per GPU resource a group whose flavors go cheapest
// first, quota = the pool's GPUs; preemption of lower priorities within it; BestEffortFIFO) and the
// LocalQueue `live` in `ns`.
std::vector<nlohmann::json> kueue_objects(const sim::Inputs& in, const std::string& fleet, const std::string& ns);

// What a submitting script that reads the ClusterQueue's status would ask for: an MPIJob's GPU
// resource is fixed at creation (Kueue cannot move a job between resource names), so an
// AMD-capable job asks for the vendor of the cheapest flavor (by the PricingPolicy at noon) whose
// unreserved quota holds its whole gang now; NVIDIA, the larger fleet, when none does. Jobs that
// cannot run on AMD always ask for NVIDIA.
std::string choose_gpu_resource(const LiveJob& job, const sim::Inputs& in, const nlohmann::json& cluster_queue);

struct SubmitContext {
  std::string ns, fleet;
  double compression = 60;  // trace seconds per wall-clock second
  std::string checkpoint_prefix;  // s3://bucket/prefix/ (Valley's tasks: each job's records under <prefix><name>/)
  std::string checkpoint_secret;  // the Secret with the store's AWS_* credentials
};

// Valley: the job as the simulator's TrainingTask (sim_objects.cc), with its wall-clock
// estimatedDuration and a real checkpoint store.
nlohmann::json training_task(const LiveJob& job, const SubmitContext& c);

// Kueue: its workers at the trace's size, one GPU each, of `gpu_resource` (the vendor chosen at
// submission); the launcher on the fleet (any node); retried as a Job would be after mpirun fails.
nlohmann::json mpi_job(const LiveJob& job, const std::string& gpu_resource, const SubmitContext& c);

// The PricingPolicy of a live run: the file's without time-of-use electricity windows (the flat
// rate all day), because the operator reads the wall clock's time of day while the trace's day
// passes `compression` times faster; the simulator and the meter price with the same.
nlohmann::json flat_policy(nlohmann::json policy);
// The same as the operator runs with it: its durations that are the operator's timers
// (reduceCost.patience, moves.restartCost) divided by `compression`. Throws InputError when they
// cannot be read.
nlohmann::json compressed_policy(nlohmann::json policy, double compression);

}  // namespace valley::live
