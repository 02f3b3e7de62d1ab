// The trace simulator's inputs, as plain values parsed from files: jobs from a trace (arrival,
// duration, GPUs), the cluster's node pools, the spot interruption model, the workload settings
// that the trace lacks (priorities, elastic range, AMD-capable share, checkpointing), and how a
// job speeds up with more GPUs (Pollux's measured profiles). Parsing is pure (text in, values or
// an error naming the file's field out); reading files is done by the caller.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "controllers/cost/policy.h"

namespace valley::sim {

struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One row of an ITP trace (elasticflow-itp/raw/clusterNN.csv): seconds from the trace's start.
struct TraceJob {
  std::string id;
  int64_t submit = 0, duration = 0;
  int gpus = 1;
  std::string tenant;  // the trace's virtual cluster (Philly); "" when the trace has none
};
// Rows whose submission lies in [from, to) seconds, in submission order, with `submit` made
// relative to `from`. Throws InputError naming the line for a malformed row.
std::vector<TraceJob> parse_trace(const std::string& csv, int64_t from, int64_t to, int max_jobs = 0);
// The Philly-derived job list of the Pollux artifact (timestamp,duration,num_gpus,gpu_time,cluster):
// every row, `submit` in seconds from the earliest timestamp, the virtual cluster as the tenant, ids
// "philly-<line>", in submission order.
std::vector<TraceJob> parse_philly(const std::string& csv);
// Whether the text is such a list (by its header).
bool is_philly(const std::string& csv);
// The jobs submitted in [from, to), relative to `from`, at most max_jobs (0: all).
std::vector<TraceJob> slice_jobs(const std::vector<TraceJob>& jobs, int64_t from, int64_t to, int max_jobs = 0);
// A stable sample of a slice (by a hash of the job id) whose GPU demand inside the slice's first
// `window` seconds is about `load` times what `gpus` GPUs supply then: scales a trace of a larger
// cluster down to the replayed one without choosing jobs. The kept share, 0..1, goes to *kept.
std::vector<TraceJob> sample_to_load(const std::vector<TraceJob>& jobs, int64_t window, int gpus, double load, double* kept = nullptr);
// GPU-hours by tenant (the trace's duration x GPUs).
std::map<std::string, double> gpu_hours_by_tenant(const std::vector<TraceJob>& jobs);

struct Pool {
  std::string name, vendor = "nvidia", product;
  bool spot = false;
  int nodes = 1, gpus_per_node = 8;
  int nodes_per_rack = 0;  // its nodes fill racks of this many, in order (0: no racks)
  // Its GPUs time-sliced into this many replicas each (the NVIDIA device plugin's time-slicing with
  // renameByDefault: nvidia.com/gpu.shared); 0: whole GPUs.
  int replicas = 0;
  std::map<std::string, std::string> labels;  // what the node would carry (pricing matches on them)
};
struct SpotModel {
  double interruptions_per_node_hour = 0;  // Poisson rate per node of the pool
  int64_t notice_seconds = 120;            // termination notice before the node goes
  int64_t replacement_seconds = 600;       // until a new node of the pool is Ready
};
// Capacity bought as it is needed (valley-sim --cloud): each pool of the cluster is a Karpenter
// NodePool whose limit is its `nodes`, and no node is up at the start. A node is billed from its
// launch to its termination, used or not; it binds pods `provisioning` seconds after its launch and
// is given back once it has held no worker for `consolidate_after_seconds` (WhenEmpty). A spot
// node interrupted is gone; what replaces it is bought again.
struct CloudModel {
  int64_t consolidate_after_seconds = 30;
  int64_t provisioning_seconds = 300;
  std::map<std::string, int64_t> provisioning_by_pool;
  int64_t provisioning(const std::string& pool) const {
    auto it = provisioning_by_pool.find(pool);
    return it == provisioning_by_pool.end() ? provisioning_seconds : it->second;
  }
};
struct Cluster {
  std::vector<Pool> pools;
  std::map<std::string, SpotModel> spot;  // by pool name; pools not listed are never interrupted
  std::optional<CloudModel> cloud;        // unset: a fixed fleet, every node up from the start
};
Cluster parse_cluster(const std::string& cluster_yaml, const std::string& spot_yaml);
// The cloud model (consolidateAfterSeconds, provisioningSeconds, pools: {name: seconds}) for
// `cluster`; throws InputError for a pool it does not have or one of time-sliced GPUs.
CloudModel parse_cloud(const std::string& yaml, const Cluster& cluster);

// What the trace does not say, and the simulator must assume (all in the workload file).
struct PriorityClass {
  std::string name;
  int priority = 0;
  bool reduce_cost = false;
  int percent = 0;  // of jobs, by a hash of the job id
};
struct Workload {
  std::vector<PriorityClass> classes;
  int amd_percent = 0;              // jobs whose image also runs on AMD (amdSupport), by hash
  int min_workers_percent = 50;     // elastic min = ceil(gpus x this / 100); max = gpus
  int64_t checkpoint_every_seconds = 1800;  // periodic checkpoints (what a kill without notice loses)
  int64_t restart_seconds = 60;     // one checkpoint-restart: save + pods restarted + state loaded
  int64_t start_epoch = 0;          // the trace's second 0 as Unix time (sets the time of day)
  int64_t tick_seconds = 300;       // the planner also runs this often without an event
  uint64_t seed = 1;                // spot interruptions
  std::vector<std::string> apps;    // Pollux applications jobs are spread over, by hash
  int sharing_percent = 0;          // jobs that allow sharing a GPU (spec.worker.sharing), by hash
};
Workload parse_workload(const std::string& yaml);

// Speedup of an application on n GPUs relative to 1 GPU, at a fixed per-GPU batch size, from
// Pollux's placements.csv (placement,local_bsz,step_time,sync_time): throughput on the fewest nodes
// that hold n GPUs. Between measured sizes interpolated; past the largest, its efficiency is kept.
class Speedup {
 public:
  // `drop`: GPU counts whose measurements are left out (interpolated from the neighbours instead).
  static Speedup from_placements(const std::string& csv, const std::set<int>& drop = {});
  static Speedup linear();
  double at(int gpus) const;
  // Throughput on a placement `extra` nodes wider than the fewest, relative to the fewest: at each
  // measured size, step time on the fewest nodes over step time on that many more, averaged over
  // the sizes measured both ways; past the widest measured, the widest's. 1 for 0.
  double spread(int extra) const;
  int local_batch() const { return local_bsz_; }

 private:
  std::map<int, double> speedup_;  // gpus -> speedup
  std::map<int, double> spread_;   // extra nodes -> throughput factor (non-increasing)
  int local_bsz_ = 0;
};

// Measured rates of applications sharing one GPU (a replica each), from a CSV with the header
// profile,other,rate,other_rate (each one's rate beside the other as a share of its rate alone): the
// pairs as a PricingPolicy's spec.sharing.pairs lists them. Throws InputError naming the line.
std::vector<cost::Policy::SharingPair> parse_pair_rates(const std::string& csv);

// The p-th percentile (nearest rank) of v; 0 when empty.
double percentile(std::vector<double> v, double p);

// A stable hash of a job id into [0, 100), so the same job gets the same class in every policy.
int percentile_of(const std::string& id, const std::string& salt);

}  // namespace valley::sim
