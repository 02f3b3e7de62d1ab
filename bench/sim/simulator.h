// A discrete-event simulator with a virtual clock that replays trace jobs on a cluster of GPU node
// pools under one admission policy, and prices what they used with the operator's cost engine.
//
// Decisions come from the operator's own planner (planner::plan, with cost::planner_config for the
// prices and PricingPolicy facts) under four policies:
// - `naive`: the head of the queue only (strict order, fixed size at max, on-demand NVIDIA only,
//   packing): a plain MPI Operator behind the default scheduler;
// - `backfill`: priority queue with backfilling at the requested size, placed cheapest first (AMD
//   when allowed, spot for checkpointing jobs, then on-demand), no aging, spot notices ignored: a
//   well-configured Kueue with cost-ordered flavors;
// - `valley-v1`: Valley before price-first placement (packing first, an "AMD is cheaper" switch,
//   reduceCost waiting for off-peak electricity, growth to max whenever GPUs are free);
// - `valley-v2`: `valley` with the levers added after it turned off, to measure them;
// - `valley`: the planner as it runs in the cluster: placement by price, reduceCost waiting for the
//   cheapest option reachable within the policy's patience, growth only while it pays. It learns a
//   job's speedup only from the progress records (latest.json at each periodic checkpoint) the job
//   writes at the sizes it ran, never from the profile the simulator uses for the truth.
// The simulator itself only keeps time: job progress at the Pollux-measured speedup of its current
// size, checkpoint-restarts (resizes, preemptions, spot notices) costing `restart_seconds` of held
// GPUs, and spot nodes interrupted by a Poisson process (the same instants for every policy) that
// lose the work since the last checkpoint when no notice-driven checkpoint got the job off the node
// in time. A job's launcher (no GPU) sits beside its worker 0 under `valley`, on any live node under
// the others (kube-scheduler's choice, spot included): a spot node lost under a launcher restarts its
// job (Valley's policies checkpoint on the notice; the others lose the work since the last periodic
// checkpoint). Each job's estimate is taken at submission the way the operator computes it (its
// estimatedDuration = the trace's duration at the trace's GPUs; a second estimate with that
// duration off by up to +-50%) and compared with its final cost.
//
// Cloud (Cluster::cloud): no node is up at the start. Every policy plans on the nodes that are up
// and on the NodePools' nodes still to buy, read through the operator's own inputs (NodePool
// objects and an instance catalogue made from the pools); an admission onto nodes to buy launches
// them, and the gang starts once all are Ready. The peers take the cheapest class with room, bought
// or not (Kueue's flavor order in front of Karpenter); Valley takes what is up first unless the
// task is reduceCost. Launchers run on the CPU nodes (the GPU nodes are tainted for GPU work).
//
// Tenants: when the trace names each job's tenant (Philly's virtual clusters) and `tenant_weights`
// gives each tenant's entitlement, every tenant gets a nominal GPU quota in each pool proportional to
// its weight and the same fair-share weight, under one of three tenancies: none (one queue, quotas
// only measured against), borrowing (Valley's Tenants: idle quota lent, reclaimed by shrinking
// borrowers first) or strict (no borrowing). The figures: each tenant's GPU share while it is
// backlogged against its weighted max-min fair share, Jain's index over the backlogged tenants, and
// how long a tenant's job that fits in its unused nominal quota waits when borrowers hold it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "bench/sim/kpi.h"
#include "bench/sim/model.h"
#include "controllers/cost/policy.h"
#include "controllers/planner/planner.h"

namespace valley::sim {

enum class PolicyKind { Naive, Backfill, ValleyV1, ValleyV2, Valley };
// Valley's planner as the operator runs it: today's (`valley`), or as it was before the economics
// levers of issue 41 (`valley-v2`: the same planner with those levers off), which the sweep compares.
bool runs_operator_planner(PolicyKind p);
const char* to_string(PolicyKind p);
PolicyKind policy_from(const std::string& name);  // throws InputError

enum class Tenancy { None, Borrowing, Strict };
const char* to_string(Tenancy t);
Tenancy tenancy_from(const std::string& name);  // throws InputError

struct Inputs {
  std::vector<TraceJob> jobs;
  // Jobs of the same trace that ended before the slice starts (submit relative to their own
  // window): what the namespaces had learned of stated durations before it (cost::DurationSpread).
  std::vector<TraceJob> history;
  Cluster cluster;
  Workload workload;
  cost::Policy pricing;
  std::map<std::string, Speedup> speedups;  // by app; missing apps scale linearly
  int duration_error_percent = 50;          // the second estimate: estimatedDuration off by up to this
  Tenancy tenancy = Tenancy::None;
  // Topology awareness (Kueue-style TAS for the peers, the planner's levels for Valley): racks are a
  // topology level and every multi-worker job prefers one rack (spec.topology.preferred).
  bool topology_aware = false;
  // Jobs run at the throughput measured for their placement (Speedup::spread); else every placement
  // runs as fast as the fewest nodes (the trace's durations as they are).
  bool placement_speed = false;
  // Above 0 (--placement-speed F): a cluster whose nodes talk over a thin network: each node (or
  // rack) beyond the fewest multiplies a job's throughput by this, whatever Pollux measured.
  double spread_per_node = 0;
  // Progress records name the nodes they were measured on (status.scaling[].nodes), so the planner
  // judges growth by placement shape; off: by size only, as an operator of an earlier release did.
  bool shape_learning = true;
  // The peers as real Kueue runs MPIJobs (--peer kueue, bench/live's prediction): a job that runs
  // on either vendor is submitted for one, chosen at submission by bench/sim/submitter.h's rule (an
  // MPIJob names its GPU resource), and a gang preempts in one pool only, the cheapest where that
  // lets it fit (Kueue's flavor order, whenCanPreempt TryNextFlavor). Off (the sweeps' `backfill`):
  // the vendor is picked at admission among all capacity free then, and preemption takes victims
  // wherever they run.
  bool peer_as_kueue = false;
  // Each tenant's entitlement (any scale; normalized over these tenants). Empty: no tenant figures.
  std::map<std::string, double> tenant_weights;
  // Fair-share weights (Tenant spec.weight) equal for every tenant instead of their entitlements;
  // the nominal quotas stay by entitlement. The weight is a platform team's knob: this measures it.
  bool equal_fair_share_weights = false;
  // Fairness and reclaim figures are taken in [0, window) (0: until the last arrival).
  int64_t window_seconds = 0;
  std::chrono::seconds usage_half_life{168 * 3600};
  // Valley's --planner-aging-step (0: off; the planner's default unless told); the peers order by
  // priority, then arrival.
  std::chrono::seconds aging_step = planner::Config{}.aging_step;
};

struct JobResult {
  std::string id, cls, app;
  int gpus = 0, priority = 0;
  // Its class asks to wait for cheap capacity (workload.yaml), whether or not the policy honours
  // it: the set of jobs "without reduceCost" is the same for every policy.
  bool asked_reduce_cost = false;
  int64_t submit = 0, start = -1, end = -1;  // seconds from the slice's start; -1 = never
  api::Micros cost = 0;                     // with the priority multiplier
  int64_t gpu_seconds = 0;                   // GPUs held x seconds
  int preemptions = 0, restarts = 0;
  int launcher_losses = 0;  // restarts because its launcher's node (none of its workers') went
  double work_lost_gpu_seconds = 0;
  // The estimate at submission (range low..high), and with an estimatedDuration off by up to +-50%.
  api::Micros estimate = 0, low = 0, high = 0, estimate_off = 0, low_off = 0, high_off = 0;
  bool estimated = false;
  int final_workers = 0;
  std::string tenant;
  // It arrived (in the window) needing no more than its tenant's unused nominal quota while the GPUs
  // it may use were not free: how long until it started (-1: never).
  bool claim = false;
  int64_t claim_wait = -1;
  std::vector<KpiSegment> segments;  // what it held, start to stop (a resize or move starts another)
};

struct Result {
  PolicyKind policy;
  Tenancy tenancy = Tenancy::None;
  bool topology_aware = false;
  std::vector<JobResult> jobs;
  int rejected = 0;      // could never fit this policy's capacity
  int unfinished = 0;    // still queued or running at the horizon
  api::Micros cost = 0, gpu_cost = 0, energy_cost = 0;  // gpu/energy before priority multipliers
  double useful_gpu_hours = 0;   // the trace's own GPU-hours of the jobs that finished
  double held_gpu_hours = 0;
  double mean_jct = 0, p50_jct = 0, p95_jct = 0, p99_jct = 0, mean_queue = 0, p99_queue = 0;  // seconds
  // Jobs that did not ask for reduceCost (those may wait for cheaper capacity by choice); seconds.
  double mean_jct_not_reduce_cost = 0;
  double allocation_percent = 0;  // GPU-seconds held / GPU-seconds of live nodes, until the last job ends
  int preemptions = 0, restarts = 0, interruptions = 0, launcher_losses = 0;
  double work_lost_gpu_hours = 0;
  // Segments (a start or restart) of more than one GPU; of those, on more nodes than the fewest that
  // hold its GPUs, and in more racks than the fewest.
  int multi_gpu_segments = 0, spread_node_segments = 0, spread_rack_segments = 0;
  int spread_far_segments = 0;  // on 3 or more nodes beyond the fewest (where Pollux measured a cost)
  int64_t makespan = 0;
  int plan_calls = 0;
  std::vector<double> hourly_allocation_percent;  // per hour of simulated time
  std::map<std::string, double> pool_gpu_hours;   // GPU-hours held, by pool
  // Where the money went, in micro-units with the jobs' priority multipliers (the parts sum to
  // `cost`, up to rounding):
  // - ideal: each finished job's work at its most efficient allowed size (ideal_gpu_seconds) on the
  //   cheapest capacity it may use at the cheapest tariff: the LP bound without pool capacities,
  //   arrival times or slots;
  // - size: its other GPU-seconds of useful work (run bigger than that size), at that price;
  // - restarts: GPU-seconds held while restarting (restart_seconds after each start) or redone after
  //   a kill without a checkpoint, at that price;
  // - capacity: paid for a dearer capacity class or vendor than the cheapest it may use, at the
  //   cheapest tariff;
  // - tariff: paid above the cheapest tariff for the GPU-seconds it held;
  // - unfinished: what jobs still queued or running at the end cost (no useful work to split).
  struct MoneySplit {
    double ideal = 0, size = 0, restarts = 0, capacity = 0, tariff = 0, unfinished = 0;
  } split;
  // Estimates vs finals over finished jobs: median |final - estimate| / final, share of finals in
  // [low, high], median (high - low) / estimate; the same with the durations off.
  struct EstimateFit {
    double median_error = 0, inside = 0, median_width = 0;
  } estimates, estimates_off;

  // With tenant weights (all over the window). A tenant is backlogged while a job of it waits that
  // does not wait for cheaper capacity by choice (reduceCost).
  struct TenantFigures {
    double weight = 0;          // normalized
    double nominal_gpus = 0;    // all pools
    double gpu_hours = 0;       // held
    double backlogged_hours = 0;
    double share = 0, fair_share = 0;  // mean share of the live GPUs held, and its fair share, while backlogged
    int jobs = 0;
  };
  std::map<std::string, TenantFigures> tenants;
  // Jain's index of each tenant's GPUs over its fair share, over the tenants with demand, while
  // some tenant is backlogged: its time-weighted mean, and how long that was.
  double jain = 0;
  double jain_hours = 0;
  std::vector<double> claim_waits;  // seconds, of the jobs that claimed their nominal quota back
  double window_allocation_percent = 0;
  std::vector<std::map<std::string, double>> hourly_tenant_gpus;  // mean GPUs held per tenant, per hour

  // With a cloud model (Cluster::cloud): what the platform bought. Node-hours from each launch to
  // its termination; of those, idle (Ready and holding no worker) and provisioning (launched, not
  // Ready yet); GPU-hours bought and sold (held by workers); what the platform pays (each node's
  // hours at its price, with the tariffs; no priority multipliers); nodes launched.
  struct Bought {
    double node_hours = 0, idle_node_hours = 0, provisioning_node_hours = 0, gpu_hours = 0, sold_gpu_hours = 0;
    api::Micros cost = 0;
    int nodes_launched = 0;
  };
  std::optional<Bought> bought;
  // Starvation, priority inversions, occupancy and fairness of the schedule (kpi.h), over the
  // cluster's GPUs (bought capacity: the pools' limits).
  Kpis kpis;
};

Result simulate(const Inputs& in, PolicyKind policy);

// The class, app and elastic range a trace job gets (stable hashes of its id).
struct JobTraits {
  std::string cls, app;
  int priority = 0;
  bool reduce_cost = false, amd = false;
  bool shares = false;  // allows sharing a GPU (spec.worker.sharing, under its app as the profile)
  int min_workers = 1, max_workers = 1;
};
JobTraits traits_of(const TraceJob& j, const Workload& w);

// A spot node's interruptions as every replay draws them (the same instants for every policy, and
// for the live benchmark): a Poisson process per node, seeded by the workload's seed and the node's
// name (`<pool>-<i>`); the next notice after `from` (seconds), when the previous node came back.
std::mt19937_64 spot_rng(const Workload& w, const std::string& node);
int64_t next_notice(std::mt19937_64& rng, const SpotModel& model, int64_t from);

}  // namespace valley::sim
