// One plan (planner.h's plan()): its tables and decisions, and the phases that fill them, each in a
// file of its own. Internal to controllers/planner.
// - plan_tables.cc: the tables (nodes and resources by index, each node's free units as one row of
//   a flat table: the room kube-scheduler checks, then GPU resources; the tenants' quota book) and
//   what every phase asks of them;
// - plan_cycle.cc: the cycle, in the order planner.h states: keep what is admitted, admit waiting
//   gangs (in fair-share order), grow toward each task's size, then lay gangs out by worker index;
// - plan_queue.cc: queue order (effective priority with aging, age, key; one queue per tenant taken
//   by lowest fair share) and who goes before whom;
// - plan_placement.cc: gang placement on one vendor's nodes, scored by price or packing;
// - plan_reclaim.cc: shrink, then preempt, to fit a gang (reclaiming lent quota across tenants);
// - plan_reduce_cost.cc: when a reduceCost task starts (the cheapest reachable pool and tariff, or
//   off-peak/idle/spot).
// The plan works on node and resource indexes, not names: a plan over a thousand nodes asks "what is
// free here" millions of times. Nodes are indexed in name order (the order every scan goes
// in, so ties resolve by name); resources are interned per plan.
#pragma once

#include <array>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "controllers/api/nodepool.h"
#include "controllers/gpu/resources.h"
#include "controllers/planner/planner.h"

namespace valley::planner::detail {

constexpr size_t kMigCount = std::size(gpu::kMigProfiles);
// What kube-scheduler checks besides GPUs (Node::room): the first columns of every row.
constexpr std::array<const char*, 4> kRoomResources = {"cpu", "memory", "ephemeral-storage", "pods"};
constexpr int kRoomColumns = static_cast<int>(kRoomResources.size());
// A row's room for a resource its node does not report: more than any worker asks.
constexpr int64_t kUnlimitedRoom = int64_t{1} << 60;
constexpr size_t kNoNode = static_cast<size_t>(-1);

// The shape of one worker of `gpu_milli` on a node, over any representation of its free units:
// `units(key)` is what is free of a resource, named by `whole` (the vendor's whole GPU), `time_sliced`
// (replicas of an unknown split), `mig` (one key per gpu::kMigProfiles entry) and `replicas` (the
// node's MPS or time-sliced replicas, 1/`per_gpu` of a GPU each, `mps` saying which; null on a node
// without). Whole GPUs for whole requests; a fraction takes the smallest free MIG slice that holds
// it (isolated in hardware), else an MPS replica that holds it (a memory limit and a compute share),
// else a time-sliced replica (no isolation: any fraction takes one turn), else one whole GPU.
template <class Key, class Units>
std::optional<std::pair<Key, int64_t>> shape_rule(int gpu_milli, bool has_vendor, bool nvidia, const Key& whole, const Key& time_sliced,
                                                   const Key* mig, const Key* replicas, int per_gpu, bool mps, Units units) {
  if (!has_vendor) return std::nullopt;
  if (gpu_milli % 1000 == 0) {
    const int64_t n = gpu_milli / 1000;
    if (units(whole) >= n) return std::make_pair(whole, n);
    return std::nullopt;
  }
  if (nvidia) {
    for (size_t p = 0; p < kMigCount; ++p)
      if (gpu::holds(gpu::kMigProfiles[p], gpu_milli) && units(mig[p]) >= 1) return std::make_pair(mig[p], int64_t{1});
    if (replicas && mps && int64_t{gpu_milli} * per_gpu <= 1000 && units(*replicas) >= 1) return std::make_pair(*replicas, int64_t{1});
    // Time-sliced GPUs (the device plugin's sharing with renameByDefault): a replica each.
    if (replicas && !mps && units(*replicas) >= 1) return std::make_pair(*replicas, int64_t{1});
    if (units(time_sliced) >= 1) return std::make_pair(time_sliced, int64_t{1});
  }
  if (units(whole) >= 1) return std::make_pair(whole, int64_t{1});
  return std::nullopt;
}

// A need of room column `column` (kRoomResources) in the words kubectl uses: "500 CPUs", "64Gi of memory".
std::string amount(int column, int64_t units);

// The spot rule: task t gets no new workers on spot capacity.
bool kept_off_spot(const Task& t, const Config& c);
// Whether task t may get new workers on node n (schedulable, the spot rule, nodes it avoids, its
// node selector, taints it does not tolerate).
bool eligible(const Task& t, const Node& n, const Config& c);
// Whether the workers task t already has on node n stay there (planner.cc says how this differs).
bool keeps(const Task& t, const Task::Worker& w, const Node& n, const Config& c, SystemTime now);

// Where a gang may be placed, beyond the task's own rules.
struct PlaceOptions {
  bool spot_only = false;              // only spot nodes (a reduceCost task starting outside off-peak)
  std::optional<int64_t> price_cap;    // no node dearer than this a GPU-hour (reduceCost growth)
  const std::vector<char>* only = nullptr;  // by node index: only these (one topology domain)
  // Nodes not bought yet may be opened (Node::bought_from): a gang may buy; growth only onto what
  // its step pays for, a move never (the node would idle while it is bought).
  bool may_buy = true;
  // Above 0: a node to buy only where that many workers of the task fill its GPUs (growth: a node
  // bought for fewer is paid whole while partly idle).
  int fill_workers = 0;
};

class Plan {
 public:
  Plan(std::vector<const Node*> nodes, const HeldByPlanned& held, std::vector<const Task*> tasks, SystemTime now, const Config& config);
  std::vector<Decision> run();

 private:
  struct NodeInfo {
    int whole = -1;  // the vendor's whole-GPU resource; -1 without GPUs
    bool nvidia = false;
    int replicas = -1;     // its MPS or time-sliced replicas' resource (Node::replicas_resource); -1 without
    int per_gpu = 0;       // ... how many a GPU is split into
    bool mps = false;      // ... and whether by MPS
    bool seats = false;    // DRA GPUs a task's fractional workers share (Node::dra_shared)
    int seat = -1;         // ... and its seats' resource (gpu::dra_seat_resource)
    bool spot = false;  // capacity_class "spot"
    int vendor = -1;    // into vendors_
    int64_t price = 0;  // a GPU-hour here now, energy included
    std::string pool;   // "<vendor>/<class>" (GPU nodes)
    // Nodes of one vendor, capacity class, price and power draw: one pool to a reduceCost task's
    // search, numbered in that order (GPU nodes; -1 without).
    int price_group = -1;
  };
  struct Shape {
    int resource = -1;
    int64_t count = 0;
  };
  // A pool and tariff window a waiting reduceCost task could start in.
  struct Option {
    int64_t price = 0;  // per GPU-hour
    SystemTime start{};
    std::string pool, node;
  };
  // Tasks in order, one queue per tenant.
  using FairQueue = std::map<std::string, std::deque<size_t>>;

  // plan_tables.cc
  int intern(const std::string& name);
  int vendor_id(const std::string& vendor);
  bool may_place(size_t i, size_t k);  // cached per plan
  // How many workers of task i fit on node k whose free units are `units` (at most `cap`): GPUs
  // by the shape rule, and the room each worker asks for besides.
  int fits(size_t i, size_t k, const int64_t* units, int cap) const;
  // Takes task i's next workers on node k from `units` (a what-if row the call uses up), at most
  // `cap` and as many as `accept(shape, n)` lets through of each run of n workers of one shape; by
  // next_shape's rule, `seats` of its workers sitting there already. Returns how many it took. A
  // task's workers of one shape come in one run (the rule takes a resource until it is used up);
  // seats come one by one, as each may open a device.
  template <class Accept>
  int take_runs(size_t i, size_t k, int64_t* units, int cap, int64_t seats, Accept accept) const;
  // How many workers of task i the room in `units` holds (at most `cap`).
  int room_fit(size_t i, const int64_t* units, int cap) const {
    const auto& demand = demand_[i];
    for (int c = 0; c < kRoomColumns && cap > 0; ++c)
      if (demand[c] > 0) cap = static_cast<int>(std::min<int64_t>(cap, std::max<int64_t>(0, units[c]) / demand[c]));
    return cap;
  }
  // One worker of task i takes (sign -1) or gives back (+1) its room in `units`.
  void move_room(size_t i, int64_t* units, int sign) const {
    for (int c = 0; c < kRoomColumns; ++c) units[c] += sign * demand_[i][c];
  }
  // Why task i can never be placed (no node it may use could hold one worker even empty), or "".
  std::string unplaceable(size_t i);
  // Where task i's launcher may go (plan_launcher.cc): why no node can ever hold it ("" if one can),
  // and whether it goes to spot although the task writes no checkpoint (its template pins it there).
  struct LauncherFit {
    std::string unplaceable;
    bool on_spot = false;
  };
  const LauncherFit& launcher_fit(size_t i);
  // Why task i's gang of `need` can never be placed where nodes can be bought: the nodes it may use
  // and what their NodePools' limits let be bought hold fewer workers even empty ("" if they hold
  // it, or if it may use no node still to be bought).
  std::string beyond_pools(size_t i, int need);
  // Why a task asking for DRA devices (spec.worker.devices) found no node to consider at all.
  std::string devices_unplaceable(const Task& t) const;
  void release_last(size_t i);
  // Task i takes (gives back) worker w's GPUs: the node's free units and its tenant's quota.
  void take(size_t i, const Task::Worker& w) { change(i, w, -1); }
  void give(size_t i, const Task::Worker& w) { change(i, w, +1); }
  void change(size_t i, const Task::Worker& w, int sign);
  // Whether node k may take a worker as far as buying goes: a node that exists or is opened already,
  // else one whose pool has what it costs left, beyond what `opening` (a gang's what-if) opened.
  bool openable(size_t k, const std::map<std::string, std::map<std::string, int64_t>>& opening, bool may_buy) const;
  bool bought(size_t k) const { return !nodes_[k]->bought_from.empty(); }
  // A node that is up and was bought from a NodePool (not one still to buy): paid by the hour
  // whatever runs there, and given back by the autoscaler only once it is empty.
  bool bought_up(size_t k) const { return !bought(k) && nodes_[k]->labels.count(api::karpenter::kNodePool) > 0; }
  // When task i is expected to end: a running task's expected end, else now plus its
  // estimatedDuration; nullopt without an estimate.
  std::optional<SystemTime> end_of(size_t i) const;
  // How many minutes a worker of task i on node k would keep k up beyond the tasks there now (a
  // bought node that is up; 0 for any other node, or when either end is unknown). Placing where
  // this is least keeps a few long tasks from holding many bought nodes up, each mostly idle.
  int64_t extension_minutes(size_t i, size_t k) const;
  // Task i's worker comes to (sign -1) or leaves (+1) bought node k: its expected end in lives_.
  void note_life(size_t i, size_t k, int sign);
  // Node k, to be bought and holding nothing in the plan so far (opened or not), would be left
  // partly unused by `workers` workers of task i (whole GPUs; a fractional task fills anything).
  bool fills_less(size_t i, size_t k, int workers) const;
  int64_t mean_price(const std::vector<Task::Worker>& placed) const;
  // mean_price of an hour of task i's work: a shared GPU's by work_price_on.
  int64_t work_price(size_t i, const std::vector<Task::Worker>& placed) const;
  int idle_percent() const;
  std::string insufficient(size_t i, int need);
  std::string tenant_entitlement(size_t i);
  const Tenant* tenant_of(const Task& t) const { return tenant_of_name(t.tenant); }
  const Tenant* tenant_of_name(const std::string& name) const;
  static std::string money(int64_t micros);
  static std::string tenant_name(const std::string& tenant) { return tenant.empty() ? "(none)" : tenant; }
  // The vendors whose nodes a new gang of t may use.
  static std::vector<std::string> gang_vendors(const Task& t);

  // plan_cycle.cc
  void keep_admitted();
  void admit_waiting();
  void admit(size_t i, std::vector<Task::Worker> placed);
  void grow();
  void move_to_cheaper();
  // A running gang that checkpoints and alone keeps bought nodes up (a NodePool's nodes, paid by
  // the hour used or not, given back by the autoscaler once empty) moves onto GPUs free on other
  // nodes that are up when those nodes' price over its expected remaining run pays more than the
  // move costs; only while nothing waits (what waits would take those GPUs instead).
  void give_back_bought();
  // The hours left of task i's expected run if a move may restart it (kept as it is, checkpointing,
  // not hot-elastic, with an expected end), else 0.
  double movable_hours_left(size_t i) const;
  void by_worker_index();

  // plan_shape.cc: growth judged by the placement shapes the task measured (scaling.h).
  // The size of task i's next growth step from `workers` when it was measured on more than one node
  // (a placement on fewer may run faster than the size's mean, which did not pay); 0 otherwise.
  int narrower_step(size_t i, int workers) const;
  // Trims the workers `added` to task i (placed `around` with them) until the step's shape pays by
  // what the task measured; false (all given back) when nothing is left, or when exploring and the
  // shape left is not measured (or estimated, or untried and narrower) to pay.
  bool keep_paying_shape(size_t i, std::vector<Task::Worker>& added, std::vector<Task::Worker>& around, bool exploring);
  // Whether task i's current size, on the nodes it holds, was measured to pay over `target` (the
  // size its shapes' means would take it back to): a narrower step that paid is kept, not undone.
  bool shape_holds(size_t i, int target) const;

  // plan_queue.cc
  std::vector<size_t> order(bool admitted, bool include_new = false) const;
  const std::vector<size_t>& age_rank() const;
  double share(const std::string& tenant) const;
  FairQueue fair_queue(const std::vector<size_t>& ordered) const;
  std::optional<size_t> next_fair(FairQueue& q) const;
  bool goes_before(size_t w, size_t i);
  // Some waiting task goes before running task i.
  bool one_before_waits(size_t i) {
    return std::any_of(waiting_.begin(), waiting_.end(), [&](size_t w) { return goes_before(w, i); });
  }
  // Each tenant's weighted max-min fair share of the GPU pools (fair_share.h) by what it holds and
  // what it waits for at full size, as the plan starts admitting.
  void measure_fair_shares();
  int64_t fair_of(const std::string& tenant) const;
  // Whether the tenant, holding `adding` more, stays within its fair share; whether it is beyond it.
  bool within_fair(const std::string& tenant, int64_t adding) const;
  bool beyond_fair(const std::string& tenant) const { return quota_.total_usage(tenant) > fair_of(tenant); }
  // The pools whose nodes task i's new gang may use, by vendor ("<vendor>/<class>"; cached).
  const std::map<std::string, std::vector<std::string>>& usable_pools(size_t i);
  // What of its tenant's nominal task i could claim back, per pool: its unused nominal there.
  std::map<std::string, int64_t> unused_nominal(size_t i);
  // Whether the tenant's unused nominal, summed over the pools of one vendor the gang may use,
  // holds `workers` of task i (never without tenants).
  bool nominal_covers(size_t i, int workers);

  // plan_placement.cc
  std::optional<std::vector<Task::Worker>> place(size_t i, int count, const std::vector<Task::Worker>& prefer, const PlaceOptions& options = {});
  std::optional<std::vector<Task::Worker>> place_on(size_t i, const std::string& vendor, int count, const std::vector<size_t>& preferred,
                                                    const PlaceOptions& options);
  // place_on under task i's topology rule: one domain of its level (its own domain first when it
  // has workers; else the cheapest that holds the gang); a preferred rule then spreads wider.
  std::optional<std::vector<Task::Worker>> place_in_domain(size_t i, const std::string& vendor, int count,
                                                           const std::vector<size_t>& preferred, const PlaceOptions& options);
  // Node k's domain at topology level `level` ("" when it has none there).
  const std::string& domain_of(size_t k, size_t level) const;
  // How many topology levels, narrowest first, nodes a and b share a domain at.
  int64_t shared_levels(size_t a, size_t b) const;
  // After task i grew (or was admitted and grew) in this plan, worker by worker: a gang that starts
  // at its new size anyway (a fresh one, or one resized by restart) is placed again as a whole when
  // that takes fewer nodes for no more money. Only with topology levels.
  void regather(size_t i);
  // Index of a level by name in config_.topology (npos if none).
  size_t level_index(const std::string& name) const;
  // Why task i's topology rule can never be met, "" if it can: a level the operator does not
  // declare, or a required level no domain of which holds `need` workers even empty.
  // Node k's whole GPUs when empty: allocatable, or at least what is free now (a node given
  // without capacity).
  int64_t node_whole_gpus(size_t k) const;
  std::string topology_unplaceable(size_t i, int need) const;
  // The worker of task i's placement a shrink takes (release_last): the one whose leaving keeps the
  // rest in the fewest domains (the fewest gang-mates at the widest level, then the narrower ones,
  // then on its node). The last one without topology levels, for a task resized in place, or one
  // whose placement is by worker index (workers keep their index there).
  size_t shrink_pick(size_t i) const;
  // How many distinct nodes a placement uses.
  static size_t node_count(const std::vector<Task::Worker>& placed);

  // plan_reclaim.cc
  // `only` (by node index): victims there only, and the gang placed there only.
  bool reclaim_for(size_t i, int need, const std::vector<char>* only = nullptr);
  // Config::preempt_in_pool_order: reclaim_for one pool at a time, the cheapest first.
  bool reclaim_in_pool_order(size_t i, int need);
  bool reclaim_could_hold(size_t i, int need, const std::map<std::string, int64_t>& own_by_vendor, bool fair_claim);
  int64_t over_nominal(const std::string& tenant, const std::vector<std::string>& pools) const;
  void finish_reclaim(const std::vector<std::pair<size_t, Decision>>& saved, size_t i);

  // plan_reduce_cost.cc: a reduceCost task's turn (admitted, or waiting with its reason).
  void wait_off_peak_or_idle(size_t i, int need, int& position);
  void wait_cheapest_reachable(size_t i, int need, int& position);
  std::optional<Option> cheapest_reachable(size_t i, int need);

  // Hot lookups, kept inline. By name, asked once or more for every worker of every task; a gang's
  // workers mostly name the node and resource the one before did, so the last answer is checked (a
  // compare) before hashing.
  int resource_id(const std::string& name) const {
    if (last_resource_ >= 0 && names_[last_resource_] == name) return last_resource_;
    return last_resource_ = resource_ids_.at(name);
  }
  size_t node_at(const std::string& name) const {
    if (last_node_ != kNoNode && nodes_[last_node_]->name == name) return last_node_;
    auto it = by_name_.find(name);
    if (it == by_name_.end()) return kNoNode;
    return last_node_ = it->second;
  }
  // Thousandths of a GPU that `count` units of resource r stand for.
  int64_t share_of(int r, int64_t count) const { return count * share7_[r] / 7; }
  int64_t* row(size_t k) { return &free_[k * width_]; }
  const int64_t* row(size_t k) const { return &free_[k * width_]; }
  // 0 for a node the plan does not have (a kept worker's node still being bought).
  int64_t price_of(const std::string& node) const {
    const size_t k = node_at(node);
    return k == kNoNode ? 0 : info_[k].price;
  }
  // One worker of `gpu_milli` on node k, whose free units are `units` (a row of the table).
  std::optional<Shape> shape_on(int gpu_milli, size_t k, const int64_t* units) const {
    const NodeInfo& info = info_[k];
    auto s = shape_rule<int>(gpu_milli, info.whole >= 0, info.nvidia, info.whole, time_sliced_, mig_.data(),
                             info.replicas >= 0 ? &info.replicas : nullptr, info.per_gpu, info.mps, [units](int r) { return units[r]; });
    if (!s) return std::nullopt;
    return Shape{s->first, s->second};
  }
  Task::Worker worker(size_t k, const Shape& s) const { return Task::Worker{nodes_[k]->name, names_[s.resource], s.count}; }
  // Seats: task i's fractional workers on node k share its DRA devices, 1000 / gpu_milli to a
  // device. n of them take max(0, ceil(n / per device) - what its shared claims there hold) of the
  // node's free devices: the claims already hold the rest. A seat's Shape counts the devices it
  // opens (0 or 1); its tenant's quota counts the share it is charged (gpu::seat_milli).
  bool seated(size_t i, size_t k) const { return info_[k].seats && tasks_[i].gpu_milli % 1000 != 0; }
  int64_t seat_devices(size_t i, size_t k, int64_t seats) const;
  int64_t seats_of(size_t i, size_t k) const {
    auto it = seats_.find({i, k});
    return it == seats_.end() ? 0 : it->second;
  }
  // The next worker of task i on node k, whose free units are `units`, when `seats` of its workers
  // sit there already: a seat on a seats node, else shape_on's shape.
  std::optional<Shape> next_shape(size_t i, size_t k, const int64_t* units, int64_t seats) const;
  // The worker a placement lists for shape s: a seat is its seat resource and charged share.
  Task::Worker placed_worker(size_t i, size_t k, const Shape& s) const {
    if (!seated(i, k)) return worker(k, s);
    return Task::Worker{nodes_[k]->name, names_[info_[k].seat], gpu::seat_milli(tasks_[i].gpu_milli)};
  }
  // Sharing (sharing.h): node k splits its GPUs two ways and task i (one worker of one GPU, with a
  // sharing profile) may take a replica there beside what the replicas hold now: the fraction of its
  // rate alone it can count on (nullopt: not here). Replicas held by anything but sharing tasks of
  // this plan (a fraction, a pod of someone else's) hold a partner of unknown profile: no.
  std::optional<double> shared_rate_on(size_t i, size_t k) const;
  // (The hot loops ask this of every task and node: the test that rules most out goes first, inline.)
  bool shares_on(size_t i, size_t k) const { return may_share_[i] && info_[k].replicas >= 0 && shared_rate_on(i, k).has_value(); }
  // What an hour of task i's work costs on node k at a GPU-hour `price` (default: the node's now):
  // that price, or where it shares its replica's share of it over the rate it keeps there.
  int64_t work_price_on(size_t i, size_t k, std::optional<int64_t> price = std::nullopt) const;
  // Thousandths of a GPU the worker takes from its tenant's quota, and from the node.
  int64_t quota_share(size_t i, size_t k, const Shape& s) const { return seated(i, k) ? gpu::seat_milli(tasks_[i].gpu_milli) : share_of(s.resource, s.count); }
  int64_t node_share(size_t i, size_t k, const Shape& s) const { return seated(i, k) ? s.count * 1000 : share_of(s.resource, s.count); }

  // The tasks by index, whether the caller holds them by value or by pointer.
  class TaskRefs {
   public:
    explicit TaskRefs(std::vector<const Task*> tasks) : tasks_(std::move(tasks)) {}
    const Task& operator[](size_t i) const { return *tasks_[i]; }
    size_t size() const { return tasks_.size(); }

   private:
    std::vector<const Task*> tasks_;
  };

  TaskRefs tasks_;
  SystemTime now_;
  Config config_;
  std::vector<const Node*> nodes_;                    // by name
  std::vector<NodeInfo> info_;                        // by node index
  std::unordered_map<std::string, size_t> by_name_;   // node name -> index
  mutable size_t last_node_ = kNoNode;                // node_at's last answer
  mutable int last_resource_ = -1;                    // resource_id's last answer
  std::vector<std::string> names_;                    // resource id -> name
  std::vector<int64_t> share7_;                       // resource id -> thousandths of a GPU in 7 units
  std::vector<std::string> vendors_;                  // the nodes' vendors (NodeInfo::vendor)
  std::unordered_map<std::string, int> resource_ids_;
  int time_sliced_ = -1;
  std::array<int, kMigCount> mig_{};
  size_t width_ = 0;                                  // resources per row
  std::vector<int64_t> free_;                         // node index x resource id -> free units
  // Nodes not bought yet that a worker of this plan sits on (their pool's budget paid for them),
  // and what each pool's limits leave (Config::pool_budgets less what was opened).
  std::vector<char> opened_;
  // Bought nodes that are up, by index (empty for the others): the expected end of each worker's
  // task there, and how many workers have none (which keep the node up for as long as they run).
  struct NodeLife {
    std::multiset<SystemTime> ends;
    int open_ended = 0;
  };
  std::vector<NodeLife> lives_;
  std::map<std::string, std::map<std::string, int64_t>> pool_left_;
  std::map<std::pair<size_t, size_t>, int64_t> seats_;  // (task, node) -> its seat workers there
  std::vector<std::map<size_t, int64_t>> sharers_;    // node -> sharing task -> replicas it holds there
  std::vector<std::array<int64_t, kRoomColumns>> demand_;  // task -> room one worker asks for
  std::map<std::string, std::string> unplaceable_;   // unplaceable()'s answers by task shape
  std::map<std::string, LauncherFit> launcher_fit_;  // launcher_fit()'s answers by task or launcher shape
  std::vector<std::vector<char>> eligible_;           // task -> node -> may place new workers (lazily)
  std::vector<char> may_share_;                       // task -> planner::may_share (fixed for the plan)
  std::map<size_t, std::map<std::string, std::vector<std::string>>> usable_pools_;  // usable_pools()
  std::map<std::string, int64_t> fair_;               // tenant -> fair share, thousandths (measure_fair_shares)
  mutable std::vector<int64_t> scratch_;              // fits()' what-if row
  std::set<std::string> pools_;
  QuotaBook quota_;                                   // disabled without tenants
  std::vector<Decision> decisions_;
  std::set<size_t> admitted_, new_, lost_;
  std::map<size_t, std::vector<size_t>> kept_index_;  // tasks that lost workers: the indexes of those kept
  std::vector<size_t> waiting_;
  std::map<size_t, std::string> reclaimed_from_;  // admitted by reclaim: whose workers it takes ("a/x shrunk 4 -> 2")
  mutable std::vector<size_t> age_rank_;  // age_rank()
};

template <class Accept>
int Plan::take_runs(size_t i, size_t k, int64_t* units, int cap, int64_t seats, Accept accept) const {
  cap = room_fit(i, units, cap);
  int n = 0;
  while (n < cap) {
    const auto s = next_shape(i, k, units, seats + n);
    if (!s) break;
    const int64_t most = seated(i, k) ? 1 : s->count == 0 ? cap - n : std::min<int64_t>(cap - n, units[s->resource] / s->count);
    const int64_t run = accept(*s, most);
    if (run <= 0) break;
    units[s->resource] -= run * s->count;
    n += static_cast<int>(run);
    if (run < most) break;
  }
  for (int c = 0; c < kRoomColumns; ++c) units[c] -= n * demand_[i][c];
  return n;
}

}  // namespace valley::planner::detail
