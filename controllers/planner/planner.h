// The capacity planner: a pure function from a snapshot of the cluster (GPU capacity per node, what
// other pods hold, what each GPU-hour costs) and of every TrainingTask (priority, elastic range, GPUs
// per worker, where its workers are, how it scaled so far) to decisions: admit (with a node for each
// worker), keep, grow, shrink, preempt, or wait with a reason. No I/O, no clock: the same snapshot
// gives the same plan.
//
// Rules, in order:
// 1. Admitted tasks keep the workers they have (stability), on the nodes they are on.
// 2. Waiting tasks, by effective priority (priority + 1 per `aging_step` waited, so nothing starves;
//    then age, then name), are admitted only when their whole minimum gang fits at once. When it does
//    not, lower-priority tasks are first shrunk toward their minimum (reduceCost ones first), and only
//    if that is not enough preempted whole (lowest priority, reduceCost first). A gang never spans GPU
//    vendors (NCCL and RCCL do not mix); AMD nodes only for amdSupport tasks; spot nodes only for
//    tasks that checkpoint (or select spot capacity themselves).
//    A reduceCost task minimizes its cost: until `cheap_until` (its deadline's slack, or the policy's
//    patience) it starts only at the lowest price reachable by then: a cheaper pool whose GPUs the
//    running tasks are expected to free, or a cheaper tariff window. It waits with that option's
//    price and expected start; it is also the first to shrink or be preempted.
// 3. Tasks then move toward their size: max for a pinned or "fastest" task, else the size where the
//    next workers still pay (scaling.h: measured speedup, one step up at a time, sizes that did not
//    pay given back), each step only onto capacity its marginal speedup pays for (growth_price_cap),
//    highest priority first; a running task is resized only if its last resize is
//    `min_resize_interval` old and the gain is worth a checkpoint-restart (`min_gain_workers`,
//    `min_gain_fraction`). A task admitted in this plan takes its size at once (it has not started).
// 4. A running task that checkpoints moves, whole and at its size, to free capacity cheaper than what
//    it holds when the saving until its expected end exceeds what a checkpoint-restart costs
//    (`move_restart_cost`): what a peak left on dearer capacity goes where it is cheaper once the
//    peak has passed. Highest priority first, after everything above took what it needed.
// A worker goes only where it can bind: GPUs and the room kube-scheduler checks (CPU, memory,
// ephemeral storage, pod slots; Task::worker_room against Node::room), its nodeSelector, required
// node affinity and tolerations. A gang whose worker no node could hold even empty waits as
// Unplaceable: not admitted, nobody shrunk for it, nobody's growth held back.
// Placement is by price: each vendor's gang is placed on the cheapest nodes first (GPU-hour price of
// the pool plus energy at the current tariff), the task's own nodes first, packed onto as few nodes
// as possible among equal prices; the cheaper vendor's gang wins. Among bought nodes that are up
// (a NodePool's, given back only once empty) a worker goes where its expected end keeps a node up
// least beyond the tasks already there, then to the tightest fit.
#pragma once

#include <algorithm>
#include <chrono>
#include <map>
#include <unordered_map>
#include <optional>
#include <string>
#include <vector>

#include "controllers/planner/quota.h"
#include "controllers/planner/scaling.h"
#include "controllers/planner/sharing.h"
#include "operator/kube/timefmt.h"

namespace valley::planner {

using kube::SystemTime;

struct Taint {
  std::string key, value, effect;  // effect: NoSchedule, PreferNoSchedule, NoExecute
  bool operator==(const Taint&) const = default;
};
struct Toleration {
  std::string key, op = "Equal", value, effect;  // op: Equal or Exists; empty key + Exists = all
};

struct Node {
  std::string name;
  std::string vendor;                    // "nvidia", "amd", "intel", "" (no GPUs)
  // Its whole GPUs come from a DRA driver through this DeviceClass ("" : a device plugin's), and
  // the product their attributes name (pricing reads it where no product label is set).
  std::string dra_class, dra_product;
  std::string dra_driver;
  // The attributes all its DRA GPUs share, as text by qualified name (api::DraDevice::attributes).
  std::map<std::string, std::string> dra_attributes;
  // Its GPUs are shared through MPS or time-slicing as R replicas each: the key its replicas are
  // counted under (gpu::replicas_resource), "" if not.
  std::string replicas_resource;
  // Its DRA driver lets the pods of one task share a claim's devices: a task's fractional workers
  // sit 1000 / gpu_milli (rounded down) to a device here instead of taking a device each.
  bool dra_shared = false;
  std::string capacity_class = "on-demand";  // or "spot"
  std::map<std::string, int64_t> free;   // GPU resource -> units free for Valley's workers
  std::map<std::string, int64_t> capacity;  // GPU resource -> allocatable units
  // What kube-scheduler also checks (api/quantity.h: cpu in thousandths, memory and
  // ephemeral-storage in bytes, pods): allocatable less what every pod there requests, and
  // allocatable. A resource the node does not report limits nothing.
  std::map<std::string, int64_t> room, room_capacity;
  std::map<std::string, std::string> labels;
  std::vector<Taint> taints;
  bool schedulable = true;               // Ready, not cordoned, no disruption notice, no GPU fault
  bool ready = true;
  bool cordoned = false;                 // spec.unschedulable
  std::optional<SystemTime> not_ready_since;  // the Ready condition's last transition, when not Ready
  std::string notice;                         // the disruption taint's key, "" if none
  // A GPU fault reported by the cluster's health tooling (a node condition or taint, see NodeFacts):
  // what it says, "" if healthy. Its workers checkpoint and move; nothing new is placed here.
  std::string fault;
  int64_t price_micros = 0;                   // a GPU-hour here, from the PricingPolicy (0: unknown)
  int64_t kw_milli = 0;                       // power drawn per GPU incl. PUE, thousandths of a kW
  // A node a NodePool would buy (inputs/nodepools.h), not one that exists: the pool ("" for a node
  // that exists), how long buying takes, and what opening it takes from the pool's budget
  // (Config::pool_budgets): its capacity in each resource the pool limits.
  std::string bought_from;
  std::chrono::seconds provisioning{0};
  std::map<std::string, int64_t> pool_cost;
  bool operator==(const Node&) const = default;
};

// One requirement of a required node affinity term (matchExpressions; matchFields on metadata.name
// reads the node's name): In, NotIn, Exists, DoesNotExist, Gt, Lt.
struct NodeRequirement {
  std::string key, op;
  std::vector<std::string> values;
};

// A topology level: nodes with the same value of `label` share a domain at this level (an NVLink
// clique, a block, a rack, a zone). Config::topology lists the levels narrowest first.
struct TopologyLevel {
  std::string name, label;
};
// A task's topology rule: its gang in one domain of `level` (required: or it waits; preferred: else
// spread wider, as without a rule).
struct TopologyRule {
  std::string level;
  bool required = false;
};

struct Task {
  std::string key;  // namespace/name
  std::string tenant;  // "" without one
  int priority = 0;
  bool reduce_cost = false;
  std::vector<std::string> vendors = {"nvidia"};  // whose GPUs its images run on (api::kVendors order)
  bool checkpointed = false;  // has a checkpoint store: a spot loss costs it a restart, not its work
  bool selects_spot = false;  // its nodeSelector asks for spot capacity itself
  bool fastest = false;       // speed over cost: grows to max whenever GPUs are free
  bool hot_elastic = false;   // resized in place: a shrink drops its highest worker indices
  Scaling scaling;            // measured rate per size (status.scaling by_size)
  // Measured rate per size and placement shape (status.scaling as it is): growth onto a shape the
  // task measured slower is judged by that measurement (shape_step_pays).
  Scaling shapes;
  // What tasks of its kind measured (ScalingPriors), used while it has measured fewer than two sizes.
  std::shared_ptr<const Scaling> prior_scaling;
  // reduceCost: may wait for cheaper capacity until then (deadline slack or patience); unset = no limit.
  std::optional<SystemTime> cheap_until;
  bool has_deadline = false;  // cheap_until is what its deadline leaves (else the policy's patience)
  // Running: when it is expected to finish (frees its GPUs then), from its estimatedDuration.
  std::optional<SystemTime> expected_end;
  // spec.estimatedDuration: its run at max workers (a lower bound at fewer), for a gang not running.
  std::optional<std::chrono::milliseconds> estimated_duration;
  int min_workers = 1, max_workers = 1;
  std::optional<int> pinned_workers;  // replicas.target
  // Admitted: the size its epoch was admitted at (status.epochReplicas; 0 unknown). Workers it has
  // fewer of and did not lose were never created (an operator restarted mid-expansion): restored.
  int epoch_workers = 0;
  int gpu_milli = 1000;               // per worker
  // spec.worker.sharing: the workload profile under which it may take one replica of a GPU split two
  // ways beside another task (sharing.h); "" : never. Only a task of one worker of one GPU shares.
  std::string sharing_profile;
  SystemTime created{};
  std::map<std::string, std::string> node_selector;
  // Its workers' required node affinity: a node must satisfy every requirement of one term (none: any).
  std::vector<std::vector<NodeRequirement>> node_terms;
  std::vector<Toleration> tolerations;
  // What each worker pod requests besides GPUs (Node::room's units, "pods" 1): only nodes with that
  // much room left take it.
  std::map<std::string, int64_t> worker_room;
  std::vector<std::string> avoid_nodes;  // nodes where its pods could not be bound lately
  // An MPI task's launcher (no GPU): where its master template lets it go and what it requests.
  // kube-scheduler places it; the plan only admits a gang whose launcher some node can hold.
  struct Launcher {
    std::map<std::string, std::string> node_selector;
    std::vector<std::vector<NodeRequirement>> node_terms;
    std::vector<Toleration> tolerations;
    std::map<std::string, int64_t> room;  // Node::room's units
  };
  std::optional<Launcher> launcher;
  std::optional<TopologyRule> topology;  // none: the fewest nodes, then the narrowest common domain
  // spec.worker.devices: only nodes whose DRA GPUs are of this class and share these attributes
  // (qualified, or the driver's own when unqualified); "" : any GPU.
  std::string device_class;
  std::map<std::string, std::string> device_attributes;
  // Devices its shared DRA claims hold, by node. The claims hold them, not its pods, so a node's free
  // units already lack them; its fractional workers there sit on them before taking more.
  std::map<std::string, int64_t> shared_devices;
  // Current state.
  bool admitted = false;
  struct Worker {
    std::string node, gpu_resource;
    int64_t count = 0;
    // Its pod is bound to the node (not just pinned there): the node took it, so a refusal there
    // before (avoid_nodes) does not move it. Set from pods, never by a plan.
    bool bound = false;
    int index = -1;  // its worker index, when read from its pod
  };
  std::vector<Worker> workers;        // the task's live workers, by index
  std::optional<SystemTime> last_resize;
  // Its GPUs sit idle and its idlePolicy says Shrink: why ("" otherwise). It is sized at min_workers.
  std::string idle;
  // The latest mean utilization of its GPUs (DCGM), when known: the growth evidence of a task
  // without measured progress (Config::busy_utilization_percent).
  std::optional<int> gpu_percent;
};

// A tenant as the planner sees it (controllers/api/tenant.h for what each part means).
struct Tenant {
  std::map<std::string, PoolQuota> quota;  // by pool "<vendor>/<class>"
  double weight = 1;
  double decayed_gpu_hours = 0;  // its usage, decayed with the configured half-life
  std::string hold;              // non-empty: its waiting tasks are not admitted (budget spent): why
  bool stop = false;             // its running tasks are stopped too (budget spent, action Suspend)
};

// The energy price from `from` on (until the next step).
struct TariffStep {
  SystemTime from{};
  int64_t per_kwh_micros = 0;
};

// How workers are put on nodes: by price (cheapest pool first, the current Valley), packing first and
// then capacity class and price (Valley before price-first placement), or packing alone (the peers).
enum class Placement { Price, PackThenClass, Pack };
// What reduceCost waits for: the cheapest option reachable within its patience, or (Valley before
// it) off-peak electricity unless spot capacity or enough idle GPUs take it now.
enum class ReduceCostRule { CheapestReachable, OffPeakOrIdle };

struct Config {
  // A node NotReady this long is lost (its workers move); before that they stay (the lifecycle's
  // --node-not-ready-grace).
  std::chrono::seconds node_not_ready_grace{30};
  std::chrono::seconds min_resize_interval{300};
  int min_gain_workers = 1;
  double min_gain_fraction = 0.25;
  std::chrono::seconds aging_step{600};
  // Growth pays while the marginal speedup per added worker is at least this share of linear;
  // 0 grows every task to max whenever GPUs are free (without a PricingPolicy nothing is priced,
  // so nothing has to pay: the policy's growth.minMarginalSpeedup, 0.8 by default, sets it).
  double min_marginal_efficiency = 0;
  int fastest_priority = 101;  // tasks of this priority or above grow to max regardless
  // Tasks that did not set reduceCost trade money for time: by the first band (highest
  // min_priority at or below theirs) their growth pays from `min_marginal`, they start as large as
  // no measurement rules out and are not shrunk for cost alone (timely_size). No band: they grow
  // as reduceCost tasks do (paying_size at min_marginal_efficiency).
  struct TimeBand {
    int min_priority = 0;
    double min_marginal = 0;
  };
  std::vector<TimeBand> time_bands;  // sorted by min_priority
  // A task that has measured fewer than two sizes sizes by what tasks of its kind measured
  // (Task::prior_scaling) instead of starting at its minimum.
  bool scaling_priors = true;
  // Without measured progress, a task grows one step at a time only while its GPUs run at this
  // mean utilization or more (DCGM); below it, more GPUs would sit idle too.
  int busy_utilization_percent = 80;
  Placement placement = Placement::Price;
  // A task without a checkpoint store stays off spot capacity (it would lose all its work there),
  // unless its nodeSelector picks it. Set with a PricingPolicy (cost::planner_config), which is what
  // makes spot attractive; without one such tasks only prefer on-demand capacity, as before.
  bool spot_needs_checkpoint = false;
  // Launchers: the operator's launcher pool (--launcher-node-selector labels every launcher must
  // carry), and whether the plan sees every node a launcher may use (the simulator does not model
  // its CPU nodes: it sets this false and launchers are not checked).
  std::vector<std::pair<std::string, std::string>> launcher_pool;
  bool launcher_nodes_known = true;
  ReduceCostRule reduce_cost = ReduceCostRule::CheapestReachable;
  // CheapestReachable: a task waits only for an option at least this much cheaper (percent of the
  // price now; the PricingPolicy's reduceCost.minSavingPercent).
  int reduce_cost_min_saving_percent = 0;
  std::vector<TariffStep> tariff;  // sorted by time; empty: energy is not priced
  // OffPeakOrIdle only: whether electricity is off-peak now, when it next is (for the reason), the idle
  // share that admits a reduceCost task anyway, and whether AMD is the cheaper vendor.
  bool off_peak = true;
  std::string next_off_peak;
  int idle_percent = 50;
  bool amd_cheaper = true;
  // Tenants by name; empty: no quotas, one queue by priority. With tenants, work of namespaces
  // without one is tenant "" (nominal 0: it runs on what is idle and is reclaimed first).
  std::map<std::string, Tenant> tenants;
  // Fair share: a tenant holding g GPUs adds g x this many hours to its decayed usage when tenants
  // are compared (the usage it would settle at: half-life / ln 2).
  double usage_mean_life_hours = 168 / 0.6931471805599453;
  // What one checkpoint-restart costs a task, as time its GPUs are held without progress. Above 0, a
  // running task that checkpoints moves to cheaper free capacity at its size when what it saves
  // until its expected end is more than that restart costs at the new price (0: tasks never move).
  std::chrono::seconds move_restart_cost{0};
  // Topology levels, narrowest first (none: nodes only). Among placements of equal price a gang
  // takes nodes in the narrowest domain it already has; a task's TopologyRule bounds it to one.
  std::vector<TopologyLevel> topology;
  // Measured pair rates (the PricingPolicy's spec.sharing.pairs): a task with a sharing profile
  // takes a replica of a GPU split two ways where every pair it may land in pays (sharing.h) and it
  // is cheaper per unit of work than a whole GPU it can have now; a task that is not reduceCost
  // shares only where no whole GPU is free for it. Null or empty: nothing shares.
  std::shared_ptr<const PairRates> pair_rates;
  bool pair_nodes = false;  // some node splits its GPUs two ways (where pairs may share)
  // Capacity that can be bought: pool -> resource -> units its limits leave. A node of such a pool
  // (Node::bought_from) is opened only while every resource it costs is left.
  std::map<std::string, std::map<std::string, int64_t>> pool_budgets;
  // A task that did not ask to wait (not reduceCost) takes nodes that are up before buying one.
  // Off: the cheapest capacity with room first, bought or not (Kueue's flavor order in front of an
  // autoscaler: what the simulator's autoscaled backfill is).
  bool up_before_bought = true;
  // On bought nodes that are up, a worker goes where its task's expected end keeps a node up least
  // (Plan::extension_minutes). Off: the tightest fit alone, as kube-scheduler places the peers' pods
  // (it knows no durations).
  bool weigh_node_lifetimes = true;
  // Preemption as Kueue does it (the simulator's peers): a gang that does not fit reclaims from
  // lower-priority tasks of one pool only, the cheapest where that makes the whole gang fit (the
  // peers' jobs are fixed-size, so reclaiming preempts). Off: wherever the victims run.
  bool preempt_in_pool_order = false;
};

enum class Action { Wait, Admit, Keep, Grow, Shrink, Preempt, Move };
const char* to_string(Action a);

struct Decision {
  std::string key;
  Action action = Action::Wait;
  int workers = 0;                       // size after the decision
  // One per worker index. A worker that stays keeps its index and a lost one's replacement takes
  // its place: the controller re-creates a pod only where its planned node changed.
  std::vector<Task::Worker> placement;
  std::string reason;
  int queue_position = 0;                // for Wait: 1 = next in line
  // Wait: when it is expected to start (reduceCost: the cheaper option it waits for) and a node of
  // the pool it expects; Admit/Grow/Keep: its placement's mean price per GPU-hour now.
  std::optional<SystemTime> expected_start;
  std::string expected_node;
  int64_t price_micros = 0;
  // Its launcher goes to spot capacity although the task writes no checkpoint: its master template
  // pins it there (every node the template allows is spot). Honoured; the task is warned.
  bool launcher_on_spot = false;
};

// The capacity pool of a GPU node, as quotas and cost breakdowns name it: "<vendor>/<class>".
std::string pool_of(const Node& n);
// The vendor of a pool name pool_of made ("nvidia/spot" -> "nvidia").
std::string vendor_of_pool(const std::string& pool);
// A node NotReady (or Unknown) for `grace` or longer is lost: its pods will not be heard from again.
// Before that its pods run on (the planner keeps its workers there; the lifecycle waits).
bool not_ready_past(bool ready, const std::optional<SystemTime>& not_ready_since, SystemTime now, std::chrono::seconds grace);

// The task's worker template selects the node (its nodeSelector labels all match, and one of its
// required node affinity terms, if it has any), and so do its devices (devices_match).
bool selects(const Task& t, const Node& n);
// The node carries every label of `selector` and satisfies one of `terms` (or there are none).
bool selects_labels(const std::map<std::string, std::string>& selector, const std::vector<std::vector<NodeRequirement>>& terms,
                    const Node& n);
// A pod with these tolerations may be scheduled onto a node with this taint.
bool tolerates(const std::vector<Toleration>& tolerations, const Taint& taint);
// The node's DRA GPUs are what spec.worker.devices asks for (always, for a task that asks nothing).
bool devices_match(const Task& t, const Node& n);
// Where a task's attribute name is found in the node's dra_attributes: as given when qualified
// ("domain/name"), else under the node's driver's domain.
std::string qualified_attribute(const Node& n, const std::string& name);
// Whether the task's images run on this vendor's GPUs.
inline bool runs_on(const Task& t, const std::string& vendor) {
  return std::find(t.vendors.begin(), t.vendors.end(), vendor) != t.vendors.end();
}
// The node's whole-GPU resource (its vendor's; for Intel, xe when the node offers it).
std::string whole_of(const Node& n);

// The size t should run at when it runs `current` workers (0: not running): pinned; min when its
// idlePolicy shrinks it; max for a fastest task, one at `fastest_priority` or when growth is not
// priced; without measured progress but with its GPUs' utilization, one step up while they are
// saturated, else its size; in a time band, timely_size at the band's threshold; else where the
// next workers still pay (paying_size): by its own measurements, or by
// its kind's (prior_scaling) while it has measured fewer than two sizes and runs no larger than
// its kind measured (scaling_evidence).
// With `why`, also which rule decided, in words for a resize Event ("measured speedup from 4 to 6
// workers is 0.91 of linear (pays from 0.80)").
int target_size(const Task& t, int current, const Config& c, std::string* why = nullptr);

// The scaling a growth decision of t at `current` workers rests on: its kind's pooled curve while it
// has measured fewer than two sizes itself and neither runs nor measured above the largest size its
// kind measured (*by_prior true), else its own.
const Scaling& scaling_evidence(const Task& t, int current, const Config& c, bool* by_prior = nullptr);

// The time band t's growth is judged by: none for a reduceCost task or when no band reaches its
// priority (it grows where the speedup pays at min_marginal_efficiency).
const Config::TimeBand* time_band(const Task& t, const Config& c);

// The share of linear speedup from which t's added workers pay: its time band's, else
// min_marginal_efficiency.
double growth_threshold(const Task& t, const Config& c);

// True when t grows to max whatever its scaling: pinned aside, a fastest task, one at
// `fastest_priority`, or growth not priced.
bool grows_regardless(const Task& t, const Config& c);

// The dearest GPU-hour a growth of t from `from` to `to` workers may take, when it runs at
// `price_now` a GPU-hour: the step pays as long as its added work costs no more per unit than the
// work it does now allows at the threshold (price_now x marginal / min_marginal, the marginal capped
// at linear). None where growth is not priced or t grows regardless.
std::optional<int64_t> growth_price_cap(const Task& t, int from, int to, int64_t price_now, const Config& c);
// Under a PricingPolicy, a task that did not set reduceCost and grows whatever its speedup
// (replicas.target, speed over cost, or a time band whose threshold is 0): its growth has no price
// to pay, and may buy nodes.
bool buys_for_time(const Task& t, const Config& c);

// Whether t may share a GPU at all: one worker of one GPU, a sharing profile, measured pairs
// (Config::pair_rates). Where it does, sharing.h says with whom.
bool may_share(const Task& t, const Config& c);

// What a GPU-hour on the node costs at `t`: its price plus energy at the tariff then (micro-units).
int64_t price_at(const Node& n, const Config& c, SystemTime t);

// Decisions for every task, in the order of `tasks`.
std::vector<Decision> plan(const std::vector<Node>& nodes, const std::vector<Task>& tasks, SystemTime now,
                           const Config& config = {});

// GPUs a node's `free` does not count that the plan may use anyway: what the current workers of the
// tasks being planned hold (the plan places those workers itself). Node name -> resource -> units.
using HeldByPlanned = std::unordered_map<std::string, std::map<std::string, int64_t>>;

// The same over nodes shared with others (the operator's planning snapshot): each node's free GPUs
// are its `free` plus what `held` gives back on it. Node names unique.
std::vector<Decision> plan(const std::vector<const Node*>& nodes, const HeldByPlanned& held, const std::vector<Task>& tasks,
                           SystemTime now, const Config& config = {});
// The same over tasks the caller keeps (none null).
std::vector<Decision> plan(const std::vector<const Node*>& nodes, const HeldByPlanned& held, const std::vector<const Task*>& tasks,
                           SystemTime now, const Config& config = {});

// The GPU resource and count one worker of `gpu_milli` needs on a node of `vendor` whose free
// resources are `free` (whole GPUs as "<vendor>.com/gpu"; a fraction as the smallest free MIG slice
// that holds it, else an MPS replica that holds it, else a time-sliced replica, else one whole GPU). nullopt when the node cannot host such a worker at all.
std::optional<Task::Worker> worker_shape(int gpu_milli, const Node& node);

}  // namespace valley::planner
