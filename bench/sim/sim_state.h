// The trace replay's state and steps (simulator.h's simulate()): internal to bench/sim.
// simulator.cc holds the clock, arrivals, segments and spot events; sim_planning.cc what the
// planner is given and what its decisions do; sim_estimates.cc the estimates made at submission;
// sim_tenants.cc tenants' quotas and fair share; sim_summary.cc the figures.
#pragma once

#include "bench/sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <optional>
#include <deque>
#include <random>
#include <set>

#include "controllers/inputs/candidates.h"
#include "controllers/inputs/nodepools.h"
#include "controllers/cost/engine.h"
#include "controllers/inputs/planner_config.h"
#include "controllers/inputs/plan_inputs.h"
#include "controllers/inputs/cluster_snapshot.h"
#include "controllers/planner/planner.h"
#include "controllers/planner/scaling.h"
#include "controllers/tenancy/usage.h"

namespace valley::sim::detail {

using kube::SystemTime;




inline constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
inline constexpr const char* kNoticeTaint = "aws-node-termination-handler/spot-itn";

struct SimNode {
  planner::Node node;
  int synced = -1;  // what the snapshot holds: -1 nothing, else alive*2 + notice
  const Pool* pool = nullptr;
  cost::NodeRate rate;
  bool alive = true;
  int64_t notice_at = kNever, kill_at = kNever, back_at = kNever;
  std::mt19937_64 rng;
  // A time-sliced pool's replicas, GPU by GPU (pool->replicas each): the key of the job on each, ""
  // when free. The device plugin hands out the lowest free one, so jobs pair up on a GPU first.
  std::vector<std::string> slots;
  // Bought capacity (--cloud): launched at, Ready at (while `launching`), terminated at (`gone`);
  // the job whose pods it was launched for (its key); Ready and holding no worker since.
  int64_t launched_at = 0, ready_at = kNever, gone_at = kNever, idle_since = kNever;
  bool launching = false, gone = false;
  int64_t promised = 0;  // while launching: GPUs of pending pods it was launched to hold
};

// Provisioning: admitted onto nodes being bought (--cloud); its pods wait to bind.
enum class State { Future, Pending, Provisioning, Running, Done, Rejected };

struct SimJob {
  TraceJob trace;
  JobTraits traits;
  const Speedup* speedup = nullptr;
  State state = State::Future;
  double work_total = 0, work_done = 0;
  // The running segment: placement, since when (cost), from when it progresses (after the
  // restart), and the work it started from (what a kill without notice falls back to, with the
  // periodic checkpoints taken since).
  std::vector<planner::Task::Worker> workers;
  // The vendors its workers may use: those its image runs on, or the one a peer's job was
  // submitted for (Inputs::peer_as_kueue).
  std::vector<std::string> vendors = {"nvidia"};
  std::string launcher_node;  // where its launcher runs this segment (Simulator::launcher_node_for)
  int64_t segment_start = 0, progress_from = 0;
  double segment_work = 0;
  std::optional<int64_t> last_resize;
  bool resumed = false;  // has run before: a start restores a checkpoint
  planner::Scaling scaling;  // what Valley learned from its progress records
  int segment_records = 0;   // progress records (latest.json) written in the running segment
  bool needs_estimate = true;
  std::string last_wait_reason;  // the planner's, while it waits
  cost::Charge charge;
  double held_at_cheapest = 0;      // each GPU-second held x its pool's cheapest price (micros)
  int64_t restart_gpu_seconds = 0;  // GPU-seconds held before progress resumed after each start
  JobResult result;
  // Its objects as the operator would see them (sim_objects.cc): bumped by every change of its
  // state, workers, scaling or restarts; the snapshot holds the version `synced`.
  uint64_t version = 1, synced = 0;
  // While Provisioning: its placement as admitted, each node still to buy replaced by the node
  // bought for it once that is Ready (its pods bind there); by worker, the node being launched that
  // will hold it ("" for a worker on a node that is up).
  std::vector<planner::Task::Worker> awaiting;
  std::vector<std::string> buying;
  int epoch = 0;                       // status.epoch: bumped by every start
  std::vector<std::string> pod_keys;   // its worker pods in the snapshot

  int gpus() const {
    int n = 0;
    for (const auto& w : workers) n += static_cast<int>(w.count);
    return n;
  }
  // Its segment's placement: how many nodes its workers are on (the shape the operator records with
  // a rate), and the share of the fewest-nodes speed it runs at there (Speedup::spread).
  int nodes = 0;
  double placement_factor = 1;
  // On a shared GPU: the share of its rate alone it runs at beside the jobs on the GPU's other
  // replicas (the pair rates), 1 otherwise.
  double pair_factor = 1;
  double rate() const { return (speedup ? speedup->at(gpus()) : gpus()) * placement_factor * pair_factor; }
};

inline bool may_use(const SimJob& j, const Pool& pool) {
  return std::find(j.vendors.begin(), j.vendors.end(), pool.vendor) != j.vendors.end();
}

inline bool same_placement(std::vector<planner::Task::Worker> a, std::vector<planner::Task::Worker> b) {
  auto key = [](const planner::Task::Worker& w) { return std::tie(w.node, w.gpu_resource, w.count); };
  auto less = [&](const auto& x, const auto& y) { return key(x) < key(y); };
  std::sort(a.begin(), a.end(), less);
  std::sort(b.begin(), b.end(), less);
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [&](const auto& x, const auto& y) { return key(x) == key(y); });
}

// The objects the operator's informers would show for a node, a job's TrainingTask (in namespace
// `ns`; trace second 0 is `zero`; its estimatedDuration the trace's duration unless `stated` says
// otherwise) and its worker pods (sim_objects.cc).
nlohmann::json node_object(const SimNode& n);
// topology_aware: a multi-worker job prefers one rack (spec.topology.preferred).
nlohmann::json task_object(const SimJob& j, PolicyKind policy, const std::string& ns, SystemTime zero,
                           std::optional<int64_t> stated_seconds = std::nullopt, bool topology_aware = false);
// A worker pod of its placement (its running workers, or those waiting for bought nodes); bound to
// its node unless that is still to be bought.
nlohmann::json worker_pod(const SimJob& j, const std::vector<planner::Task::Worker>& placement, size_t index, const std::string& ns);

// The node label of the simulated racks (a topology level when Inputs::topology_aware).
inline constexpr const char* kRackLabel = "valley.dev/topology-rack";

class Simulator {
 public:
  Simulator(const Inputs& in, PolicyKind policy);
  Result run();
  // Segments by spread (Result's counters of the same names).
  int multi_gpu_segments_ = 0, spread_node_segments_ = 0, spread_rack_segments_ = 0, spread_far_segments_ = 0;

 private:
  SystemTime at(int64_t t) const { return SystemTime{} + std::chrono::seconds(in_.workload.start_epoch + t); }
  // Each tenant's nominal quota in every pool, and its fair-share weight: its normalized weight.
  // Strict: nothing may be borrowed (what rounding leaves over stays idle).
  void setup_tenants();
  bool tenants_planned() const { return in_.tenancy != Tenancy::None && !tenants_.empty(); }
  // GPUs of running jobs on each node.
  std::map<std::string, int64_t> used_by_node() const;
  // A job arriving when its gang fits in its tenant's unused nominal quota of a pool it may use
  // (quotas are per pool, as the planner keeps them), while that pool has not enough GPUs free: the
  // tenant's quota there is held by others, and must come back.
  bool claims_nominal(const SimJob& j) const;
  // Over [from, to) nothing changes: decays each tenant's usage and, inside the window, takes the
  // fairness figures (weighted max-min fair shares of the live GPUs by demand: what runs plus what
  // waits at its full size).
  void measure_tenants(int64_t from, int64_t to);
  void schedule_interruption(SimNode& n, int64_t from);
  int64_t completion(const SimJob& j) const;
  // Moves the clock to t: progress, and GPU-seconds held and alive for the allocation figure.
  void advance(int64_t t);
  void arrive(SimJob& j);
  // What decides which nodes a job may use (its vendor and node selector), for usable_by.
  planner::Task where_it_may_run(const SimJob& j) const;
  // The vendor a peer's job capable of several is submitted for (bench/sim/submitter.h), by the
  // GPUs the jobs admitted now hold in each pool.
  std::string submitted_vendor(const SimJob& j) const;
  bool usable_by(const planner::Task& t, const SimNode& n) const;
  // Ends the running segment: charges it (GPUs held, restart time included) and takes the GPUs back.
  void end_segment(SimJob& j);
  // Progress records: the workload writes latest.json {step, time} at each periodic checkpoint; two
  // records of one segment give its rate at that size (what the operator folds into status.scaling).
  void learn();
  // new_epoch: its pods are new (false: those of an admission waiting for bought nodes start).
  void start_segment(SimJob& j, std::vector<planner::Task::Worker> placement, bool restart, bool new_epoch = true);
  // How much wider than the fewest nodes (and racks) that hold them j's workers are; counted.
  // Sets j.nodes and j.placement_factor from its workers' placement.
  void place_segment(SimJob& j);
  void finish(SimJob& j);
  // A time-sliced node's replicas: j's replica workers take the lowest free slots there (sit) or give
  // them back (rise), and every job on the node's GPUs runs at its rate beside its partners then.
  void sit(SimJob& j);
  void rise(SimJob& j);
  void pair_rates_on(SimNode& n);
  // What a kill without a checkpoint leaves: the segment's start plus its periodic checkpoints.
  void lose_work(SimJob& j);
  SimNode& node(const std::string& name);
  const SimNode& node(const std::string& name) const;
  void spot_events();
  // --- bought capacity (sim_cloud.cc) -----------------------------------------------------------
  bool cloud() const { return in_.cluster.cloud.has_value(); }
  // The pools as NodePool objects and an instance catalogue, read as the operator reads them; a
  // node of each pool for what its nodes will be (pricing, selectors).
  void setup_cloud();
  SimNode make_node(const Pool& pool, const std::string& name) const;
  const Pool& pool_named(const std::string& name) const;
  // A node's price: a node that is up, or one still to buy (its pool's).
  cost::NodeRate rate_of(const std::string& node_name) const;
  // The nodes still to buy laid beside the view's, and their pools' budgets handed to the inputs.
  void offer_provisionable(planner::SnapshotView& view);
  // An admission (or a restart) onto `placement`: it starts, or waits for the nodes to be bought.
  void admit(SimJob& j, std::vector<planner::Task::Worker> placement);
  SimNode& launch(const Pool& pool);
  // Stops waiting for bought nodes (preempted, or a node it bound to went): back to Pending; the
  // nodes launched for it stay, for whoever takes them, until consolidated.
  void give_up_buying(SimJob& j);
  // Its admission as published while it waits for bought nodes (ClusterFacts::published), else none.
  void publish(const SimJob& j);
  // Nodes turning Ready (its pods bind; a gang whose nodes are all Ready starts) and empty nodes
  // given back after the consolidation delay.
  void cloud_events();
  std::set<std::string> busy_nodes() const;  // holding a worker, or launched for a waiting gang
  // Bought/idle/provisioning time over [now_, t), for Result::bought.
  void measure_bought(int64_t t);
  Result::Bought bill_nodes();
  // The cluster as objects (sim_objects.cc): what the operator's informers would show, kept in a
  // planning snapshot, and the planner's inputs taken from it through controllers/inputs.
  std::string namespace_of(const SimJob& j) const;
  JobTraits as_run(JobTraits asked) const;  // a job's traits (as its workload class asks) as this policy runs it
  std::string launcher_node_for(const SimJob& j) const;
  bool on_node(const SimJob& j, const std::string& node) const;  // a worker of it is there
  void requeue(SimJob& j, bool lose_work);
  std::string key_of(const SimJob& j) const { return namespace_of(j) + "/" + j.trace.id; }
  void touch(SimJob& j) { ++j.version; }
  void sync_snapshot();
  const inputs::PlanInputs::Round& take_inputs();
  // The peers' configuration (Valley's is the operator's, from the round).
  planner::Config config_for(const inputs::PlanInputs::Round& r) const;
  void replan();
  // Plans `jobs` (of the round) and carries the decisions out; true if some waiting job started.
  bool plan_and_apply(const inputs::PlanInputs::Round& r, const std::vector<size_t>& which, const planner::Config& config);
  // --- estimates at submission, as the operator makes them ------------------------------------
  api::TaskSpec spec_of(const SimJob& j, int64_t duration_seconds) const;
  // The user's estimatedDuration off by up to +-duration_error_percent (a stable hash of the id).
  int64_t off_duration(const SimJob& j) const;
  std::vector<cost::NodeRate> candidates_of(const SimJob& j) const;
  void record_estimate(SimJob& j, const cost::EstimateBasis& basis);
  // What a finished job teaches its namespace about stated durations (the trace's, and off), as
  // the operator learns it from the finished TrainingTask (inputs::duration_ratio_of).
  void learn_duration(const SimJob& j);
  // The peers' jobs (and Valley before this change) at their full size on the pool they got, or
  // the cheapest on-demand pool they may use.
  cost::EstimateBasis fixed_basis(const SimJob& j, const planner::Decision* d) const;
  void estimate_naive(SimJob& j) { record_estimate(j, fixed_basis(j, nullptr)); }
  void estimate(SimJob& j, const planner::Task& input, const planner::Decision& d, const planner::Config& config);
  // Carries out decisions; true if some waiting job started.
  bool apply(const std::vector<planner::Decision>& decisions, const std::vector<SimJob*>& jobs, const std::vector<const planner::Task*>& inputs,
             const planner::Config& config);
  Result summarize();
  // The schedule as the KPIs read it (kpi.h): every job not rejected, with the traits this policy
  // ran it with, over the pools' GPUs (bought capacity: their limits).
  std::vector<KpiJob> kpi_jobs() const;
  KpiSettings kpi_settings() const;

  const Inputs& in_;
  PolicyKind policy_;
  std::shared_ptr<const api::Policy> pricing_;
  planner::ClusterSnapshot snapshot_;
  inputs::PlanInputs inputs_{inputs::InputOptions{}};
  inputs::Tenancy tenancy_;  // which namespace (tenant) a job's task is in
  std::map<std::string, SimJob*> by_key_;
  planner::PairRates pairs_;  // how fast jobs of two apps run sharing a GPU (the policy's pairs)
  std::deque<SimNode> nodes_;  // (a deque: a node launched keeps the others where they are)
  std::map<std::string, size_t> node_index_;
  // --cloud: a node of each pool as it would be bought (by pool name), the NodePools and catalogue.
  std::map<std::string, SimNode> prototypes_;
  std::vector<api::NodePool> node_pools_;
  api::Catalogue catalogue_;
  inputs::ProvisioningOptions provisioning_;
  inputs::ProvisionableNodes provisionable_;
  planner::NodeFacts node_facts_;
  inputs::ClusterFacts cluster_facts_;
  std::map<std::string, std::vector<render::WorkerPlacement>> published_;  // by job key
  int launched_ = 0;
  Result::Bought bought_;
  std::vector<SimJob> jobs_;
  int64_t now_ = 0;
  int interruptions_ = 0, plan_calls_ = 0;
  std::map<std::string, int64_t> pool_gpu_seconds_;
  std::map<std::string, double> cheapest_by_pool_;  // a GPU-second's cheapest price in the week (micros)
  void split_cost(const SimJob& j, Result::MoneySplit& split) const;  // adds the job's parts
  // Run time / estimatedDuration of the finished jobs, by namespace: stated exactly, and off.
  std::map<std::string, std::vector<double>> duration_ratios_, duration_ratios_off_;
  std::vector<double> held_hourly_, alive_hourly_;
  // Tenants (with weights): the planner's view, the window the figures cover, and the figures.
  std::map<std::string, planner::Tenant> tenants_;
  int64_t window_end_ = 0;
  std::map<std::string, Result::TenantFigures> figures_;
  double jain_weighted_ = 0, jain_seconds_ = 0;
  std::vector<std::map<std::string, double>> tenant_hourly_;
};

}  // namespace valley::sim::detail
