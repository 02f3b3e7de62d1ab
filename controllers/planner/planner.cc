#include "controllers/planner/planner.h"

#include "controllers/gpu/resources.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <tuple>

namespace valley::planner {
namespace {

using gpu::kTimeSliced;
using gpu::whole_resource;

constexpr size_t kMigCount = std::size(gpu::kMigProfiles);

// The shape of one worker of `gpu_milli` on a node, over any representation of its free units:
// `units(key)` is what is free of a resource, named by `whole` (the vendor's whole GPU), `time_sliced`
// and `mig` (one key per gpu::kMigProfiles entry). Whole GPUs for whole requests; a fraction takes
// the smallest free MIG slice that holds it, else a time-sliced replica, else one whole GPU.
template <class Key, class Units>
std::optional<std::pair<Key, int64_t>> shape_rule(int gpu_milli, bool has_vendor, bool nvidia, const Key& whole, const Key& time_sliced,
                                                   const Key* mig, Units units) {
  if (!has_vendor) return std::nullopt;
  if (gpu_milli % 1000 == 0) {
    const int64_t n = gpu_milli / 1000;
    if (units(whole) >= n) return std::make_pair(whole, n);
    return std::nullopt;
  }
  if (nvidia) {
    for (size_t p = 0; p < kMigCount; ++p)
      if (gpu::holds(gpu::kMigProfiles[p], gpu_milli) && units(mig[p]) >= 1) return std::make_pair(mig[p], int64_t{1});
    // Time-sliced GPUs (the device plugin's sharing with renameByDefault): a replica each.
    if (units(time_sliced) >= 1) return std::make_pair(time_sliced, int64_t{1});
  }
  if (units(whole) >= 1) return std::make_pair(whole, int64_t{1});
  return std::nullopt;
}

bool tolerates(const Task& t, const Taint& taint) {
  if (taint.effect == "PreferNoSchedule") return true;
  for (const auto& tol : t.tolerations) {
    if (!tol.effect.empty() && tol.effect != taint.effect) continue;
    if (tol.op == "Exists" && (tol.key.empty() || tol.key == taint.key)) return true;
    if (tol.op != "Exists" && tol.key == taint.key && tol.value == taint.value) return true;
  }
  return false;
}

bool not_ready_taint(const Taint& taint) {
  return taint.key == "node.kubernetes.io/not-ready" || taint.key == "node.kubernetes.io/unreachable";
}

// Whether task t may get new workers on node n.
bool eligible(const Task& t, const Node& n, const Config& c) {
  if (!n.schedulable) return false;
  // A task that cannot checkpoint would lose all its work with a spot node: not there, unless it asks.
  if (c.spot_needs_checkpoint && n.capacity_class == "spot" && !t.checkpointed && !t.selects_spot && t.node_selector.empty())
    return false;
  if (std::find(t.avoid_nodes.begin(), t.avoid_nodes.end(), n.name) != t.avoid_nodes.end()) return false;
  if (!selects(t, n)) return false;
  for (const auto& taint : n.taints)
    if (!tolerates(t, taint)) return false;
  return true;
}

// Whether the workers task t already has on node n stay there. As for new ones, except:
// - a node NotReady for less than the grace the task's lifecycle gives it keeps them (a heartbeat
//   late under load is not a loss: its pods are still there, holding their GPUs, and the lifecycle
//   does not restart the task before the grace is over);
// - taints that only keep new pods away (NoSchedule, PreferNoSchedule, and the NotReady ones, which
//   the grace covers) do not move them; nor does the spot rule.
// - a worker bound there stays on a node the task avoids: the node refused it, then took it.
bool keeps(const Task& t, const Task::Worker& w, const Node& n, const Config& c, SystemTime now) {
  const bool briefly_not_ready = !n.ready && !n.cordoned && n.notice.empty() && n.fault.empty() &&
                                 !not_ready_past(n.ready, n.not_ready_since, now, c.node_not_ready_grace);
  if (!n.schedulable && !briefly_not_ready) return false;
  if (!w.bound && std::find(t.avoid_nodes.begin(), t.avoid_nodes.end(), n.name) != t.avoid_nodes.end()) return false;
  if (!selects(t, n)) return false;
  for (const auto& taint : n.taints)
    if (taint.effect == "NoExecute" && !not_ready_taint(taint) && !tolerates(t, taint)) return false;
  return true;
}

int effective_priority(const Task& t, SystemTime now, const Config& c) {
  if (t.admitted || c.aging_step.count() <= 0 || now <= t.created) return t.priority;
  auto waited = std::chrono::duration_cast<std::chrono::seconds>(now - t.created);
  return t.priority + static_cast<int>(waited / c.aging_step);
}

int whole_gpus(int gpu_milli) { return (gpu_milli + 999) / 1000; }

constexpr size_t kNoNode = static_cast<size_t>(-1);

// The tasks by index, whether the caller holds them by value or by pointer (the operator keeps each
// task's planner input from plan to plan, and does not copy a thousand of them for every plan).
class TaskRefs {
 public:
  explicit TaskRefs(std::vector<const Task*> tasks) : tasks_(std::move(tasks)) {}
  const Task& operator[](size_t i) const { return *tasks_[i]; }
  size_t size() const { return tasks_.size(); }

 private:
  std::vector<const Task*> tasks_;
};

std::vector<const Task*> refs(const std::vector<Task>& tasks) {
  std::vector<const Task*> out;
  out.reserve(tasks.size());
  for (const auto& t : tasks) out.push_back(&t);
  return out;
}

// The plan works on node and resource indexes, not names: a plan of 1,000 nodes and 500 tasks asks
// "what is free here" millions of times, and hashing names dominated it. Nodes are indexed in name
// order (the order every scan goes in, so ties resolve as before); resources are interned per plan,
// and each node's free units are one row of a flat table (cheap to copy for what-if rounds).
class Planner {
 public:
  Planner(std::vector<const Node*> nodes, const Returned& returned, std::vector<const Task*> tasks, SystemTime now, const Config& config)
      : tasks_(std::move(tasks)), now_(now), config_(config), nodes_(std::move(nodes)) {
    // The operator's snapshot hands them over in name order already: checking costs N compares,
    // sorting again N log N.
    auto by_name = [](const Node* a, const Node* b) { return a->name < b->name; };
    if (!std::is_sorted(nodes_.begin(), nodes_.end(), by_name)) std::sort(nodes_.begin(), nodes_.end(), by_name);
    // Resources: the shapes' own (time-sliced replicas, MIG slices) first, then whatever nodes and
    // workers name (each vendor's whole GPU among them).
    time_sliced_ = intern(kTimeSliced);
    for (size_t p = 0; p < kMigCount; ++p) mig_[p] = intern(gpu::kMigProfiles[p].resource);
    std::vector<const std::map<std::string, int64_t>*> given_back(nodes_.size(), nullptr);
    for (size_t k = 0; k < nodes_.size(); ++k) {
      const Node* n = nodes_[k];
      if (!n->vendor.empty()) intern(whole_resource(n->vendor));
      for (const auto& [r, units] : n->free) intern(r);
      // A resource's id is only its column in the table (no scan goes by id order): interning what
      // is given back after `free` decides nothing.
      if (auto it = returned.find(n->name); it != returned.end()) {
        given_back[k] = &it->second;
        for (const auto& [r, units] : it->second) intern(r);
      }
      for (const auto& [r, units] : n->capacity) intern(r);
    }
    // Workers mostly name the same resource as the one before: a compare instead of a hash each.
    const std::string* last_interned = nullptr;
    for (size_t i = 0; i < tasks_.size(); ++i)
      for (const auto& w : tasks_[i].workers)
        if (!last_interned || w.gpu_resource != *last_interned) {
          intern(w.gpu_resource);
          last_interned = &w.gpu_resource;
        }
    width_ = names_.size();
    // A GPU share by resource id, so that the hot loops compare no resource names: seven units'
    // share, from which any count's is exact (MIG slices are sevenths).
    for (const auto& name : names_) share7_.push_back(gpu::share_milli(name, 7));
    free_.assign(nodes_.size() * width_, 0);
    info_.resize(nodes_.size());
    by_name_.reserve(nodes_.size());
    std::map<std::string, int64_t> capacity;  // pool -> thousandths of a GPU
    for (size_t k = 0; k < nodes_.size(); ++k) {
      const Node* n = nodes_[k];
      NodeInfo& info = info_[k];
      by_name_.emplace(n->name, k);
      for (const auto& [r, units] : n->free) free_[k * width_ + resource_id(r)] = units;
      if (given_back[k])
        for (const auto& [r, units] : *given_back[k])
          if (units != 0) free_[k * width_ + resource_id(r)] += units;
      info.price = price_at(*n, config_, now_);
      info.nvidia = n->vendor == "nvidia";
      info.spot = n->capacity_class == "spot";
      info.vendor = vendor_id(n->vendor);
      if (n->vendor.empty()) continue;
      info.whole = resource_id(whole_resource(n->vendor));
      info.pool = planner::pool_of(*n);
      pools_.insert(info.pool);
      if (n->schedulable)
        for (const auto& [r, units] : n->capacity) capacity[info.pool] += gpu::share_milli(r, units);
    }
    if (!config_.tenants.empty()) {
      std::map<std::string, std::map<std::string, PoolQuota>> quotas;
      for (const auto& [name, tenant] : config_.tenants) quotas[name] = tenant.quota;
      quota_ = QuotaBook(std::move(quotas), std::move(capacity));
    }
    eligible_.resize(tasks_.size());
    decisions_.resize(tasks_.size());
    for (size_t i = 0; i < tasks_.size(); ++i) decisions_[i].key = tasks_[i].key;
  }

  std::vector<Decision> run() {
    keep_admitted();
    admit_waiting();
    grow();
    by_worker_index();
    return std::move(decisions_);
  }

 private:
  struct NodeInfo {
    int whole = -1;  // the vendor's whole-GPU resource; -1 without GPUs
    bool nvidia = false;
    bool spot = false;  // capacity_class "spot"
    int vendor = -1;    // into vendors_
    int64_t price = 0;  // a GPU-hour here now, energy included
    std::string pool;   // "<vendor>/<class>" (GPU nodes)
  };
  struct Shape {
    int resource = -1;
    int64_t count = 0;
  };

  int intern(const std::string& name) {
    auto [it, added] = resource_ids_.try_emplace(name, static_cast<int>(names_.size()));
    if (added) names_.push_back(name);
    return it->second;
  }
  // By name, asked once or more for every worker of every task; a gang's workers mostly name the
  // node and resource the one before did, so the last answer is checked (a compare) before hashing.
  int resource_id(const std::string& name) const {
    if (last_resource_ >= 0 && names_[last_resource_] == name) return last_resource_;
    return last_resource_ = resource_ids_.at(name);
  }
  int vendor_id(const std::string& vendor) {
    auto it = std::find(vendors_.begin(), vendors_.end(), vendor);
    if (it != vendors_.end()) return static_cast<int>(it - vendors_.begin());
    vendors_.push_back(vendor);
    return static_cast<int>(vendors_.size()) - 1;
  }
  // Thousandths of a GPU that `count` units of resource r stand for.
  int64_t share_of(int r, int64_t count) const { return count * share7_[r] / 7; }

  int64_t* row(size_t k) { return &free_[k * width_]; }
  const int64_t* row(size_t k) const { return &free_[k * width_]; }
  size_t node_at(const std::string& name) const {
    if (last_node_ != kNoNode && nodes_[last_node_]->name == name) return last_node_;
    auto it = by_name_.find(name);
    if (it == by_name_.end()) return kNoNode;
    return last_node_ = it->second;
  }

  // One worker of `gpu_milli` on node k, whose free units are `units` (a row of the table).
  std::optional<Shape> shape_on(int gpu_milli, size_t k, const int64_t* units) const {
    const NodeInfo& info = info_[k];
    auto s = shape_rule<int>(gpu_milli, info.whole >= 0, info.nvidia, info.whole, time_sliced_, mig_.data(),
                             [units](int r) { return units[r]; });
    if (!s) return std::nullopt;
    return Shape{s->first, s->second};
  }
  Task::Worker worker(size_t k, const Shape& s) const { return Task::Worker{nodes_[k]->name, names_[s.resource], s.count}; }

  // Whether task i may get new workers on node k (cached per plan: it only depends on the two).
  bool may_place(size_t i, size_t k) {
    auto& cached = eligible_[i];
    if (cached.empty()) {
      cached.resize(nodes_.size());
      for (size_t n = 0; n < nodes_.size(); ++n) cached[n] = eligible(tasks_[i], *nodes_[n], config_);
    }
    return cached[k];
  }

  // Workers of admitted tasks stay where they are (on nodes that still exist and take work).
  void keep_admitted() {
    for (size_t i : order(/*admitted=*/true)) {
      const Task& t = tasks_[i];
      Decision& d = decisions_[i];
      bool lost = false;
      d.placement.reserve(t.workers.size());
      std::vector<size_t> kept;  // the worker indexes kept, in order
      kept.reserve(t.workers.size());
      for (size_t x = 0; x < t.workers.size(); ++x) {
        const auto& w = t.workers[x];
        const size_t k = node_at(w.node);
        if (k == kNoNode) {  // lost with its node
          lost = true;
          continue;
        }
        if (!keeps(t, w, *nodes_[k], config_, now_)) {
          // It moves; its pods hold the GPUs here until they are gone: nothing else goes there meanwhile.
          row(k)[resource_id(w.gpu_resource)] -= w.count;
          lost = true;
          continue;
        }
        take(i, w);
        d.placement.push_back(w);
        kept.push_back(x);
      }
      if (lost) kept_index_[i] = std::move(kept);
      if (const Tenant* tenant = tenant_of(t); tenant && tenant->stop) {
        while (!d.placement.empty()) release_last(i);
        d.workers = 0;
        d.action = Action::Preempt;
        d.reason = tenant->hold;
        admitted_.erase(i);
        continue;
      }
      int cap = t.pinned_workers ? std::min(*t.pinned_workers, t.max_workers) : t.max_workers;
      while (static_cast<int>(d.placement.size()) > cap) release_last(i);  // max lowered or pinned smaller
      d.action = static_cast<int>(d.placement.size()) == static_cast<int>(t.workers.size()) ? Action::Keep : Action::Shrink;
      d.workers = static_cast<int>(d.placement.size());
      if (d.action == Action::Shrink) d.reason = "size above max or pinned size, or workers lost";
      admitted_.insert(i);
      // It restarts anyway (a checkpoint-restart at a new world size): it may as well take what is
      // free up to its target, like a task admitted now.
      if (lost) {
        new_.insert(i);
        lost_.insert(i);
      }
      if (d.workers < t.min_workers) {
        // Below its gang (a node went away): take what it needs now, or wait like a new task.
        auto more = place(i, t.min_workers - d.workers, d.placement);
        if (more) {
          for (auto& w : *more) d.placement.push_back(w);
          d.workers = t.min_workers;
          d.action = Action::Grow;
          d.reason = "replacing lost workers";
        } else {
          while (!d.placement.empty()) release_last(i);
          d.workers = 0;
          d.action = Action::Preempt;
          d.reason = "lost workers and the minimum no longer fits: " + insufficient(i, t.min_workers);
          admitted_.erase(i);
          new_.erase(i);
        }
      }
    }
  }

  void admit_waiting() {
    int position = 0;
    FairQueue queue = fair_queue(order(/*admitted=*/false));
    while (auto next = next_fair(queue)) {
      const size_t i = *next;
      const Task& t = tasks_[i];
      Decision& d = decisions_[i];
      int need = t.pinned_workers ? std::clamp(*t.pinned_workers, t.min_workers, t.max_workers) : t.min_workers;
      if (const Tenant* tenant = tenant_of(t); tenant && !tenant->hold.empty()) {
        d.action = Action::Wait;
        d.queue_position = ++position;
        d.reason = tenant->hold;
        continue;  // not in waiting_: it holds nobody's growth back
      }
      if (t.reduce_cost && config_.reduce_cost == ReduceCostRule::OffPeakOrIdle && !config_.off_peak &&
          idle_percent() < config_.idle_percent) {
        // Not now, unless spot capacity takes the whole gang.
        spot_only_ = true;
        auto placed = place(i, need, {});
        spot_only_ = false;
        if (placed) {
          admit(i, std::move(*placed));
          decisions_[i].reason += " on spot capacity (reduceCost)";
          continue;
        }
        d.action = Action::Wait;
        d.queue_position = ++position;
        waiting_.push_back(i);
        d.reason = "ReduceCost: waiting for off-peak electricity" +
                   (config_.next_off_peak.empty() ? std::string() : " from " + config_.next_off_peak) +
                   ", spot capacity, or " + std::to_string(config_.idle_percent) + "% idle GPUs (now " +
                   std::to_string(idle_percent()) + "%)";
        continue;
      }
      if (t.reduce_cost && config_.reduce_cost == ReduceCostRule::CheapestReachable &&
          (!t.cheap_until || now_ < *t.cheap_until)) {
        // Start now only at the lowest price reachable before it stops waiting.
        auto option = cheapest_reachable(i, need);
        auto placed = place(i, need, {});
        if (placed && (!option || mean_price(*placed) <= option->price)) {
          admit(i, std::move(*placed));
          decisions_[i].reason += " at the lowest price reachable (reduceCost)";
          continue;
        }
        if (placed)
          for (const auto& w : *placed) give(i, w);
        d.action = Action::Wait;
        d.queue_position = ++position;
        waiting_.push_back(i);
        std::string until = t.cheap_until ? " (waits at most until " + kube::format_time(*t.cheap_until) + ")" : "";
        if (option) {
          d.expected_start = option->start;
          d.expected_node = option->node;
          d.reason = "ReduceCost: waiting for " + option->pool + " at " + money(option->price) + "/GPU-h from " +
                     kube::format_time(option->start) +
                     (placed ? " (now " + money(mean_price(*placed)) + "/GPU-h)" : " (nothing fits now)") + until;
        } else {
          d.reason = "ReduceCost: " + insufficient(i, need) + until;
        }
        continue;
      }
      if (auto placed = place(i, need, {})) {
        admit(i, std::move(*placed));
        // Say why a cost-minimizing task now takes what it waited to avoid.
        if (t.reduce_cost && config_.reduce_cost == ReduceCostRule::CheapestReachable && t.cheap_until)
          decisions_[i].reason += std::string(" (reduceCost: ") + (t.has_deadline ? "its deadline" : "its patience") +
                                  " let it wait for cheaper capacity until " + kube::format_time(*t.cheap_until) + ")";
        continue;
      }
      if (reclaim_for(i, need)) continue;
      d.action = Action::Wait;
      d.workers = 0;
      d.queue_position = ++position;
      waiting_.push_back(i);
      d.reason = insufficient(i, need);
    }
  }

  struct Option {
    int64_t price = 0;  // per GPU-hour
    SystemTime start{};
    std::string pool, node;
  };

  static std::string money(int64_t micros) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4f", static_cast<double>(micros) / 1e6);
    return buf;
  }

  int64_t price_of(const std::string& node) const { return info_[node_at(node)].price; }

  int64_t mean_price(const std::vector<Task::Worker>& placed) const {
    if (placed.empty()) return 0;
    int64_t sum = 0;
    for (const auto& w : placed) sum += price_of(w.node);
    return sum / static_cast<int64_t>(placed.size());
  }

  // How many workers of t fit on node k whose free units are `units` (at most `cap`).
  int fits(const Task& t, size_t k, const int64_t* units, int cap) const {
    const int whole = info_[k].whole;
    if (whole < 0 || cap <= 0) return 0;
    if (t.gpu_milli % 1000 == 0) {  // whole GPUs: the shape rule's answer, without trying it worker by worker
      const int64_t per = t.gpu_milli / 1000;
      if (units[whole] < per) return 0;
      return per == 0 ? cap : static_cast<int>(std::min<int64_t>(cap, units[whole] / per));
    }
    scratch_.assign(units, units + width_);
    int n = 0;
    while (n < cap) {
      auto s = shape_on(t.gpu_milli, k, scratch_.data());
      if (!s) break;
      scratch_[s->resource] -= s->count;
      ++n;
    }
    return n;
  }

  // The cheapest (pool, tariff window) in which task i's gang of `need` can start before its
  // cheap_until: each pool of equal price among its eligible nodes, from the moment its free GPUs
  // plus those the running tasks are expected to release hold the gang, at the cheapest tariff from
  // then on.
  std::optional<Option> cheapest_reachable(size_t i, int need) {
    const Task& t = tasks_[i];
    std::map<std::tuple<std::string, std::string, int64_t, int64_t>, std::vector<size_t>> pools;
    for (size_t k = 0; k < nodes_.size(); ++k) {
      const Node* n = nodes_[k];
      if (n->vendor.empty() || (n->vendor == "amd" && !t.amd_support) || !may_place(i, k)) continue;
      pools[{n->vendor, n->capacity_class, n->price_micros, n->kw_milli}].push_back(k);
    }
    // GPUs the running tasks release, by when they are expected to end.
    std::vector<std::tuple<SystemTime, std::string, std::string, int64_t>> releases;
    for (size_t a : admitted_) {
      const auto& end = tasks_[a].expected_end;
      if (!end || (t.cheap_until && *end >= *t.cheap_until)) continue;
      for (const auto& w : decisions_[a].placement) releases.emplace_back(std::max(*end, now_), w.node, w.gpu_resource, w.count);
    }
    std::sort(releases.begin(), releases.end());
    const SystemTime horizon = t.cheap_until ? *t.cheap_until : now_ + std::chrono::hours(24 * 7);
    std::optional<Option> best;
    for (const auto& entry : pools) {
      const auto& pool = entry.second;  // not a structured binding: clang 14 cannot capture those
      std::vector<int64_t> free = free_;
      std::vector<char> in_pool(nodes_.size());
      for (size_t k : pool) in_pool[k] = 1;
      auto count = [&] {
        int total = 0;
        for (size_t k : pool) total += fits(t, k, &free[k * width_], need - total);
        return total;
      };
      std::optional<SystemTime> ready;
      if (count() >= need) ready = now_;
      for (size_t r = 0; !ready && r < releases.size(); ++r) {
        const auto& [when, node, resource, units] = releases[r];
        const size_t k = node_at(node);
        if (k == kNoNode || !in_pool[k]) continue;
        free[k * width_ + resource_id(resource)] += units;
        if (count() >= need) ready = when;
      }
      if (!ready || *ready >= horizon) continue;
      // The cheapest tariff between ready and the horizon.
      const Node* any = nodes_[pool.front()];
      SystemTime at = *ready;
      int64_t price = price_at(*any, config_, at);
      for (const auto& step : config_.tariff) {
        if (step.from <= *ready || step.from >= horizon) continue;
        int64_t p = price_at(*any, config_, step.from);
        if (p < price) {
          price = p;
          at = step.from;
        }
      }
      if (!best || price < best->price || (price == best->price && at < best->start))
        best = Option{price, at, std::get<0>(entry.first) + " " + std::get<1>(entry.first), any->name};
    }
    return best;
  }

  void admit(size_t i, std::vector<Task::Worker> placed) {
    Decision& d = decisions_[i];
    d.action = Action::Admit;
    d.placement = std::move(placed);
    d.workers = static_cast<int>(d.placement.size());
    d.reason = "minimum gang of " + std::to_string(d.workers) + " fits";
    admitted_.insert(i);
    new_.insert(i);
  }

  // The vendors whose nodes a new gang of t may use.
  static std::vector<std::string> gang_vendors(const Task& t) {
    return t.amd_support ? std::vector<std::string>{"nvidia", "amd"} : std::vector<std::string>{"nvidia"};
  }

  // Shrink tasks toward their minimum, then preempt whole ones, until task i's gang fits; roll
  // everything back if even that is not enough. Victims: lower-priority tasks of its own tenant (of
  // any task when there are no tenants), and tasks of other tenants that borrow in a pool where
  // i's tenant has the nominal room for i's gang (reclaim: borrowers first, lowest priority and
  // most over their share first; each shrinks only while its tenant still borrows there).
  bool reclaim_for(size_t i, int need) {
    const Task& t = tasks_[i];
    // Only tasks holding GPUs this task could use are worth shrinking (an AMD job frees nothing
    // for an NVIDIA-only one).
    auto usable = [&](const Task::Worker& w) {
      const size_t k = node_at(w.node);
      if (k == kNoNode || !may_place(i, k)) return false;
      return info_[k].nvidia || (nodes_[k]->vendor == "amd" && t.amd_support);
    };
    const std::set<std::string> claim_pools = nominal_room(t, need);
    // A worker of v that reclaim may take: in a claim pool where v's tenant borrows.
    auto lent = [&](size_t v, const Task::Worker& w) {
      const size_t k = node_at(w.node);
      if (k == kNoNode || info_[k].whole < 0) return false;
      return claim_pools.count(info_[k].pool) && quota_.borrowed(tasks_[v].tenant, info_[k].pool) > 0;
    };
    auto other_tenant = [&](size_t v) { return quota_.enabled() && tasks_[v].tenant != t.tenant; };
    std::vector<size_t> victims;
    for (size_t v : admitted_) {
      if (new_.count(v)) continue;
      const auto& placed = decisions_[v].placement;
      if (other_tenant(v)) {
        if (std::any_of(placed.begin(), placed.end(), [&](const Task::Worker& w) { return usable(w) && lent(v, w); })) victims.push_back(v);
      } else if (tasks_[v].priority < t.priority && std::any_of(placed.begin(), placed.end(), usable)) {
        victims.push_back(v);
      }
    }
    auto over_share = [&](size_t v) {
      const Tenant* tenant = tenant_of(tasks_[v]);
      const double weight = tenant ? std::max(tenant->weight, 1e-3) : 1.0;
      int64_t borrowed = 0;
      for (const auto& pool : claim_pools) borrowed += quota_.borrowed(tasks_[v].tenant, pool);
      return -static_cast<double>(borrowed) / weight;
    };
    std::sort(victims.begin(), victims.end(), [&](size_t a, size_t b) {
      const Task &x = tasks_[a], &y = tasks_[b];
      if (other_tenant(a) != other_tenant(b)) return other_tenant(a);
      if (other_tenant(a))
        return std::make_tuple(x.priority, over_share(a), !x.reduce_cost, x.key) < std::make_tuple(y.priority, over_share(b), !y.reduce_cost, y.key);
      return std::make_tuple(!x.reduce_cost, x.priority, -x.created.time_since_epoch().count(), x.key) <
             std::make_tuple(!y.reduce_cost, y.priority, -y.created.time_since_epoch().count(), y.key);
    });
    if (victims.empty()) return false;
    // What fits of the gang on each node alone, summed per vendor: the gang cannot be placed while
    // no vendor's sum reaches `need`, so place() is only tried once it may succeed (each release
    // changes one node's term).
    const std::vector<std::string> vendors = gang_vendors(t);
    std::vector<int> alone(nodes_.size());
    std::map<std::string, int64_t> fit_sum;
    auto refit = [&](size_t k) {
      const std::string& vendor = nodes_[k]->vendor;
      if (std::find(vendors.begin(), vendors.end(), vendor) == vendors.end() || !may_place(i, k)) return;
      const int now_fits = fits(t, k, row(k), need);
      fit_sum[vendor] += now_fits - alone[k];
      alone[k] = now_fits;
    };
    for (size_t k = 0; k < nodes_.size(); ++k) refit(k);
    auto may_fit = [&] {
      return std::any_of(fit_sum.begin(), fit_sum.end(), [&](const auto& s) { return s.second >= need; });
    };
    const std::vector<int64_t> saved_free = free_;
    const QuotaBook saved_quota = quota_;
    std::vector<std::pair<size_t, Decision>> saved;  // victims touched, as they were
    std::set<size_t> touched;
    auto release = [&](size_t v) {
      if (touched.insert(v).second) saved.emplace_back(v, decisions_[v]);
      const size_t k = node_at(decisions_[v].placement.back().node);
      release_last(v);
      if (k != kNoNode) refit(k);
    };
    auto restore = [&] {
      free_ = saved_free;
      quota_ = saved_quota;
      for (auto& [v, decision] : saved) decisions_[v] = std::move(decision);
    };
    // Shrink, one worker at a time, in victim order.
    for (size_t v : victims) {
      Decision& vd = decisions_[v];
      while (vd.workers > tasks_[v].min_workers && (!other_tenant(v) || lent(v, vd.placement.back()))) {
        release(v);
        if (!may_fit()) continue;
        if (auto placed = place(i, need, {})) {
          finish_reclaim(saved, t);
          admit(i, std::move(*placed));
          return true;
        }
      }
    }
    // Preempt whole tasks (of other tenants only while they still borrow what this task reclaims).
    for (size_t v : victims) {
      Decision& vd = decisions_[v];
      if (other_tenant(v) && std::none_of(vd.placement.begin(), vd.placement.end(), [&](const Task::Worker& w) { return lent(v, w); }))
        continue;
      while (vd.workers > 0) release(v);
      if (!may_fit()) continue;
      if (auto placed = place(i, need, {})) {
        finish_reclaim(saved, t);
        admit(i, std::move(*placed));
        return true;
      }
    }
    restore();
    return false;
  }

  void finish_reclaim(const std::vector<std::pair<size_t, Decision>>& saved, const Task& for_task) {
    for (const auto& [v, before] : saved) {
      Decision& vd = decisions_[v];
      if (vd.workers == before.workers) continue;
      const Task& victim = tasks_[v];
      const std::string why = quota_.enabled() && victim.tenant != for_task.tenant
                                  ? for_task.key + ": tenant " + tenant_name(for_task.tenant) + " reclaims its quota lent to " +
                                        tenant_name(victim.tenant)
                                  : for_task.key + " (priority " + std::to_string(for_task.priority) + ")";
      if (vd.workers == 0) {
        vd.action = Action::Preempt;
        vd.reason = "preempted for " + why;
        admitted_.erase(v);
      } else {
        vd.action = Action::Shrink;
        vd.reason = "shrunk for " + why;
      }
    }
  }

  static std::string tenant_name(const std::string& tenant) { return tenant.empty() ? "(none)" : tenant; }

  int target_size(const Task& t, int current) const { return planner::target_size(t, current, config_); }

  void grow() {
    FairQueue queue = fair_queue(order(/*admitted=*/true, /*include_new=*/true));
    while (auto next = next_fair(queue)) {
      const size_t i = *next;
      if (!admitted_.count(i)) continue;
      const Task& t = tasks_[i];
      Decision& d = decisions_[i];
      if (d.action == Action::Preempt || (d.action == Action::Shrink && !new_.count(i))) continue;
      const bool fresh = new_.count(i) > 0;
      const bool interval_passed = fresh || !t.last_resize || now_ - *t.last_resize >= config_.min_resize_interval;
      int target = target_size(t, fresh ? 0 : d.workers);
      if (d.workers > target && !fresh && interval_passed && !t.pinned_workers) {
        // Measured not to pay: give the workers back (a checkpoint-restart at the smaller size).
        int from = d.workers;
        while (d.workers > target) release_last(i);
        d.action = Action::Shrink;
        if (!t.idle.empty())
          d.reason = "gave back " + std::to_string(from - target) + " workers (replicas.min is " + std::to_string(t.min_workers) +
                     "): " + t.idle;
        else
          d.reason = "gave back " + std::to_string(from - target) + " workers: the measured speedup from " +
                     std::to_string(target) + " to " + std::to_string(from) + " workers is below " +
                     std::to_string(static_cast<int>(config_.min_marginal_efficiency * 100)) + "% of linear";
        continue;
      }
      // Nothing that goes first may be waiting for what this growth would take.
      if (std::any_of(waiting_.begin(), waiting_.end(), [&](size_t w) { return goes_before(w, i); })) continue;
      if (d.workers >= target) continue;
      if (!interval_passed) continue;
      // A reduceCost task grows only onto capacity no dearer than what it runs on.
      if (t.reduce_cost && config_.placement == Placement::Price && !d.placement.empty()) {
        int64_t dearest = 0;
        for (const auto& w : d.placement) dearest = std::max(dearest, price_of(w.node));
        price_cap_ = dearest;
      }
      std::vector<Task::Worker> added;
      std::vector<Task::Worker> around = d.placement;
      while (d.workers + static_cast<int>(added.size()) < target) {
        auto one = place(i, 1, around);
        if (!one) break;
        added.push_back((*one)[0]);
        around.push_back((*one)[0]);
      }
      price_cap_.reset();
      int gain = static_cast<int>(added.size());
      int worth = t.pinned_workers ? 1
                                   : std::max(config_.min_gain_workers,
                                              static_cast<int>(std::ceil(config_.min_gain_fraction * d.workers)));
      if (gain == 0 || (!fresh && gain < worth && d.workers + gain < target)) {
        for (const auto& w : added) give(i, w);
        continue;
      }
      for (auto& w : added) d.placement.push_back(w);
      d.workers += gain;
      if (!fresh) {
        d.action = Action::Grow;
        d.reason = "grew by " + std::to_string(gain) + " into free capacity";
        if (target < t.max_workers || (!t.scaling.empty() && t.scaling.back().workers < target))
          d.reason += " (growth still pays at this size)";
      } else if (lost_.count(i)) {
        d.reason = "replacing lost workers: " + std::to_string(d.workers) + " workers";
      } else {
        d.reason = "admitted with " + std::to_string(d.workers) + " workers";
      }
    }
    for (size_t i = 0; i < decisions_.size(); ++i)
      if (!decisions_[i].placement.empty()) decisions_[i].price_micros = mean_price(decisions_[i].placement);
  }

  // The workers of a task that lost some are planned as its kept ones in order, then the added
  // ones (release_last only ever takes the added ones, or kept ones from the end). By worker index
  // instead: kept ones at their own index, the added ones in the lost ones' places, then after the
  // end. Kept ones whose index is now beyond the size take what places are left (their pods go).
  // A gang not started yet then re-creates the pods of its lost workers alone; in order, all the
  // pods after the first lost one moved, and bound ones, which stay, held GPUs the plan gave away.
  void by_worker_index() {
    for (const auto& [i, kept] : kept_index_) {
      auto& placement = decisions_[i].placement;
      const size_t size = placement.size();
      const size_t still_kept = std::min(kept.size(), size);
      std::vector<std::optional<Task::Worker>> slots(size);
      std::vector<Task::Worker> movers(placement.begin() + static_cast<std::ptrdiff_t>(still_kept), placement.end());
      for (size_t x = 0; x < still_kept; ++x) {
        if (kept[x] < size) slots[kept[x]] = std::move(placement[x]);
        else movers.push_back(std::move(placement[x]));
      }
      auto next = movers.begin();
      for (auto& slot : slots)
        if (!slot) slot = std::move(*next++);
      placement.clear();
      for (auto& slot : slots) placement.push_back(std::move(*slot));
    }
  }

  void release_last(size_t i) {
    Decision& d = decisions_[i];
    give(i, d.placement.back());
    d.placement.pop_back();
    d.workers = static_cast<int>(d.placement.size());
  }

  // Task i takes (gives back) worker w's GPUs: the node's free units and its tenant's quota.
  void take(size_t i, const Task::Worker& w) { change(i, w, -1); }
  void give(size_t i, const Task::Worker& w) { change(i, w, +1); }
  void change(size_t i, const Task::Worker& w, int sign) {
    const size_t k = node_at(w.node);
    if (k == kNoNode) return;
    row(k)[resource_id(w.gpu_resource)] += sign * w.count;
    if (quota_.enabled() && info_[k].whole >= 0) {
      const int64_t milli = gpu::share_milli(w.gpu_resource, w.count);
      if (sign < 0)
        quota_.add(tasks_[i].tenant, info_[k].pool, milli);
      else
        quota_.remove(tasks_[i].tenant, info_[k].pool, milli);
    }
  }

  const Tenant* tenant_of(const Task& t) const { return tenant_of_name(t.tenant); }

  // A tenant's fair share now: its decayed usage plus what it holds (as the usage it would settle
  // at), per unit of weight; lower goes first. Work without a tenant goes after every tenant's.
  double share(const std::string& tenant) const {
    const Tenant* t = tenant.empty() ? nullptr : tenant_of_name(tenant);
    if (!t) return std::numeric_limits<double>::infinity();
    const double held = static_cast<double>(quota_.total_usage(tenant)) / 1000.0;
    return (t->decayed_gpu_hours + held * config_.usage_mean_life_hours) / std::max(t->weight, 1e-3);
  }
  const Tenant* tenant_of_name(const std::string& name) const {
    auto it = config_.tenants.find(name);
    return it == config_.tenants.end() ? nullptr : &it->second;
  }

  // Tasks in order, one queue per tenant: each next task comes from the tenant of the lowest share
  // at that moment (so what was admitted just before counts), within a tenant in the given order.
  using FairQueue = std::map<std::string, std::deque<size_t>>;
  FairQueue fair_queue(const std::vector<size_t>& ordered) const {
    FairQueue q;
    for (size_t i : ordered) q[quota_.enabled() ? tasks_[i].tenant : ""].push_back(i);
    return q;
  }
  std::optional<size_t> next_fair(FairQueue& q) const {
    if (q.empty()) return std::nullopt;
    auto best = q.begin();
    if (q.size() > 1) {
      double best_share = share(best->first);
      for (auto it = std::next(q.begin()); it != q.end(); ++it)
        if (double s = share(it->first); s < best_share) {
          best = it;
          best_share = s;
        }
    }
    const size_t i = best->second.front();
    best->second.pop_front();
    if (best->second.empty()) q.erase(best);
    return i;
  }

  // Waiting task w goes before running task i (so i may not grow into what w waits for): by
  // priority without tenants or within one; across tenants, when w's tenant has the lower share or
  // the nominal room to reclaim what i would take.
  bool goes_before(size_t w, size_t i) const {
    const Task &x = tasks_[w], &y = tasks_[i];
    if (!quota_.enabled() || x.tenant == y.tenant) return x.priority > y.priority;
    return share(x.tenant) < share(y.tenant) || !nominal_room(x, x.min_workers).empty();
  }

  // The pools where t's tenant has the nominal room for `workers` of t (none without tenants).
  std::set<std::string> nominal_room(const Task& t, int workers) const {
    std::set<std::string> out;
    if (quota_.enabled())
      for (const auto& pool : pools_)
        if (quota_.usage(t.tenant, pool) + int64_t{workers} * t.gpu_milli <= quota_.nominal(t.tenant, pool)) out.insert(pool);
    return out;
  }

  // Places `count` workers of task i as a gang on one vendor's nodes; commits to free_ on success.
  // By price: every allowed vendor is tried and the cheaper gang wins. Before price-first placement
  // (and for the peers), the first vendor in a fixed order that fits.
  std::optional<std::vector<Task::Worker>> place(size_t i, int count, const std::vector<Task::Worker>& prefer) {
    const Task& t = tasks_[i];
    if (count <= 0) return std::vector<Task::Worker>{};
    const bool by_price = config_.placement == Placement::Price;
    std::vector<std::string> vendors;
    std::string used_vendor;
    for (const auto& w : prefer)
      if (const size_t k = node_at(w.node); k != kNoNode) used_vendor = nodes_[k]->vendor;
    if (!used_vendor.empty()) {
      vendors.push_back(used_vendor);  // a gang stays on one vendor
    } else if (t.amd_support && t.reduce_cost && config_.amd_cheaper && !by_price) {
      vendors = {"amd", "nvidia"};
    } else {
      vendors = gang_vendors(t);
    }
    std::vector<size_t> preferred;
    for (const auto& w : prefer)
      if (const size_t k = node_at(w.node); k != kNoNode) preferred.push_back(k);
    std::optional<std::vector<Task::Worker>> chosen;
    int64_t chosen_price = 0;
    for (const auto& vendor : vendors) {
      auto gang = place_on(i, vendor, count, preferred);
      if (!gang) continue;
      int64_t price = by_price ? mean_price(*gang) : 0;
      if (!chosen || price < chosen_price) {
        chosen = std::move(gang);
        chosen_price = price;
      }
      if (!by_price) break;
    }
    if (!chosen) return std::nullopt;
    for (const auto& w : *chosen) take(i, w);
    return chosen;
  }

  // One vendor's gang (not yet committed to free_): greedily, the best-scoring node takes what fits
  // there, until the gang is placed.
  std::optional<std::vector<Task::Worker>> place_on(size_t i, const std::string& vendor, int count, const std::vector<size_t>& preferred) {
    const Task& t = tasks_[i];
    // The candidates, in name order: what this gang has claimed on each so far is kept apart from
    // free_ (cheaper than copying the whole table for each try).
    std::vector<size_t> candidates;
    std::vector<std::pair<size_t, std::vector<int64_t>>> claimed;  // nodes this gang took from: what is left there
    auto left_on = [&](size_t k) -> const int64_t* {
      for (const auto& [node, left] : claimed)
        if (node == k) return left.data();
      return row(k);
    };
    int64_t fit_alone = 0;  // what fits on the candidates one by one: the gang cannot exceed it
    const auto of_vendor = std::find(vendors_.begin(), vendors_.end(), vendor);
    if (of_vendor == vendors_.end()) return std::nullopt;  // no node of this vendor
    const int wanted = static_cast<int>(of_vendor - vendors_.begin());
    for (size_t k = 0; k < nodes_.size(); ++k) {
      if (info_[k].vendor != wanted || !may_place(i, k) || (spot_only_ && !info_[k].spot)) continue;
      if (price_cap_ && info_[k].price > *price_cap_) continue;
      const int f = fits(t, k, row(k), count);
      if (f == 0) continue;
      fit_alone += f;
      candidates.push_back(k);
    }
    if (fit_alone < count) return std::nullopt;
    std::vector<Task::Worker> out;
    std::map<std::string, int64_t> quota_taken;  // pool -> thousandths this gang has claimed
    int remaining = count;
    while (remaining > 0) {
      size_t best = kNoNode;
      // Score, highest wins. By price: least GPU wasted (a MIG slice over a whole GPU for a
      // fraction), the task's own nodes, the lowest price now, the capacity class that suits it
      // (spot if it checkpoints), most workers here (fewest nodes), the tightest fit. Packing first
      // (before price-first placement): most workers here, least waste, own nodes, the capacity
      // class that suits the task, the lowest price, the tightest fit.
      std::array<int64_t, 6> best_score{};
      int best_fit = 0;
      std::vector<int64_t> node_free;
      for (const size_t k : candidates) {
        const Node* n = nodes_[k];
        const int64_t* units = left_on(k);
        node_free.assign(units, units + width_);
        int fit = 0;
        int64_t share = 0;  // thousandths of a GPU taken
        // The tenant's quota in this node's pool bounds the workers too.
        const std::string& pool = info_[k].pool;
        const int64_t quota_left = quota_.enabled() ? quota_.room(t.tenant, pool) - quota_taken[pool] : 0;
        while (fit < remaining) {
          auto s = shape_on(t.gpu_milli, k, node_free.data());
          if (!s) break;
          const int64_t one = share_of(s->resource, s->count);
          if (quota_.enabled() && share + one > quota_left) break;
          node_free[s->resource] -= s->count;
          share += one;
          ++fit;
        }
        if (fit == 0) continue;
        int64_t left = 0;
        for (int64_t v : node_free) left += v;
        const int64_t waste = -(share - int64_t{fit} * t.gpu_milli);
        const int64_t own = std::find(preferred.begin(), preferred.end(), k) != preferred.end();
        const int64_t price = info_[k].price;
        std::array<int64_t, 6> score{};
        switch (config_.placement) {
          case Placement::Price:
            score = {waste, own, -price, info_[k].spot == t.checkpointed, fit, -left};
            break;
          case Placement::PackThenClass:
            score = {fit, waste, own, info_[k].spot == t.checkpointed, -n->price_micros, -left};
            break;
          case Placement::Pack:
            score = {fit, waste, own, -left, 0, 0};
            break;
        }
        if (best == kNoNode || score > best_score) {
          best = k;
          best_score = score;
          best_fit = fit;
        }
      }
      if (best == kNoNode) return std::nullopt;
      auto mine = std::find_if(claimed.begin(), claimed.end(), [best](const auto& c) { return c.first == best; });
      if (mine == claimed.end()) mine = claimed.insert(mine, {best, std::vector<int64_t>(row(best), row(best) + width_)});
      int64_t* left = mine->second.data();
      for (int w = 0; w < best_fit; ++w) {
        const Shape s = *shape_on(t.gpu_milli, best, left);
        left[s.resource] -= s.count;
        quota_taken[info_[best].pool] += share_of(s.resource, s.count);
        out.push_back(worker(best, s));
      }
      remaining -= best_fit;
    }
    return out;
  }

  // Free whole-GPU-equivalents as a share of all GPUs, now (after what this plan already placed).
  int idle_percent() const {
    int64_t total = 0, free = 0;
    for (size_t k = 0; k < nodes_.size(); ++k) {
      const Node* n = nodes_[k];
      if (n->vendor.empty() || !n->schedulable) continue;
      for (const auto& [r, units] : n->capacity) {
        total += gpu::share_milli(r, units);
        free += gpu::share_milli(r, std::max<int64_t>(0, row(k)[resource_id(r)]));
      }
    }
    return total <= 0 ? 0 : static_cast<int>(free * 100 / total);
  }

  std::string insufficient(size_t i, int need) {
    const Task& t = tasks_[i];
    int64_t free_gpus = 0;
    for (size_t k = 0; k < nodes_.size(); ++k) {
      const Node* n = nodes_[k];
      if (!may_place(i, k) || n->vendor.empty() || (n->vendor == "amd" && !t.amd_support)) continue;
      free_gpus += std::max<int64_t>(0, row(k)[info_[k].whole]);
    }
    int per = whole_gpus(t.gpu_milli);
    return "InsufficientCapacity: needs " + std::to_string(need * per) + " GPUs (" + std::to_string(need) +
           " workers x " + (t.gpu_milli % 1000 ? std::to_string(t.gpu_milli / 1000.0).substr(0, 5) : std::to_string(per)) +
           "), " + std::to_string(free_gpus) + " free";
  }

  // Indexes of tasks (admitted or waiting) by effective priority, then age, then key.
  std::vector<size_t> order(bool admitted, bool include_new = false) const {
    std::vector<size_t> idx;
    for (size_t i = 0; i < tasks_.size(); ++i) {
      bool is_admitted = tasks_[i].admitted || (include_new && new_.count(i));
      if (is_admitted == admitted || (include_new && admitted_.count(i))) idx.push_back(i);
    }
    std::vector<int> priority(tasks_.size());
    for (size_t i : idx) priority[i] = effective_priority(tasks_[i], now_, config_);
    const std::vector<size_t>& age = age_rank();
    std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return std::tie(priority[b], age[a]) < std::tie(priority[a], age[b]); });
    idx.erase(std::unique(idx.begin(), idx.end()), idx.end());
    return idx;
  }

  // Each task's place by age, then key (the order among equal priorities): sorted once a plan,
  // so the orderings by priority compare integers, not keys.
  const std::vector<size_t>& age_rank() const {
    if (age_rank_.size() != tasks_.size()) {
      std::vector<size_t> by_age(tasks_.size());
      for (size_t i = 0; i < by_age.size(); ++i) by_age[i] = i;
      std::sort(by_age.begin(), by_age.end(), [&](size_t a, size_t b) {
        return std::tie(tasks_[a].created, tasks_[a].key) < std::tie(tasks_[b].created, tasks_[b].key);
      });
      age_rank_.resize(by_age.size());
      for (size_t r = 0; r < by_age.size(); ++r) age_rank_[by_age[r]] = r;
    }
    return age_rank_;
  }

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
  std::vector<std::vector<char>> eligible_;           // task -> node -> may place new workers (lazily)
  mutable std::vector<int64_t> scratch_;              // fits()' what-if row
  std::optional<int64_t> price_cap_;                  // placing no dearer than this (reduceCost growth)
  std::set<std::string> pools_;
  QuotaBook quota_;                                   // disabled without tenants
  std::vector<Decision> decisions_;
  std::set<size_t> admitted_, new_, lost_;
  std::map<size_t, std::vector<size_t>> kept_index_;  // tasks that lost workers: the indexes of those kept
  bool spot_only_ = false;
  std::vector<size_t> waiting_;
  mutable std::vector<size_t> age_rank_;  // age_rank()
};

}  // namespace

std::string pool_of(const Node& n) { return n.vendor + "/" + n.capacity_class; }

bool not_ready_past(bool ready, const std::optional<SystemTime>& not_ready_since, SystemTime now, std::chrono::seconds grace) {
  return !ready && not_ready_since && now - *not_ready_since >= grace;
}

bool selects(const Task& t, const Node& n) {
  for (const auto& [k, v] : t.node_selector) {
    auto it = n.labels.find(k);
    if (it == n.labels.end() || it->second != v) return false;
  }
  return true;
}

int target_size(const Task& t, int current, const Config& c) {
  if (t.pinned_workers) return std::clamp(*t.pinned_workers, t.min_workers, t.max_workers);
  if (!t.idle.empty()) return t.min_workers;
  if (t.fastest || t.priority >= c.fastest_priority || c.min_marginal_efficiency <= 0) return t.max_workers;
  // No progress records (the workload writes no checkpoint records): its GPUs' utilization is the
  // evidence. Saturated GPUs: try one step up (the step's own utilization decides the next); else stay.
  if (current > 0 && t.scaling.empty() && t.gpu_percent) {
    const int step = *t.gpu_percent >= c.busy_utilization_percent ? growth_step(current, c.min_gain_workers, c.min_gain_fraction) : 0;
    return std::clamp(current + step, t.min_workers, t.max_workers);
  }
  return paying_size(t.scaling, current, t.min_workers, t.max_workers, c.min_gain_workers, c.min_gain_fraction,
                     c.min_marginal_efficiency);
}

int64_t price_at(const Node& n, const Config& c, SystemTime t) {
  int64_t per_kwh = 0;
  for (const auto& step : c.tariff) {
    if (step.from > t) break;
    per_kwh = step.per_kwh_micros;
  }
  return n.price_micros + n.kw_milli * per_kwh / 1000;
}

const char* to_string(Action a) {
  switch (a) {
    case Action::Wait: return "Wait";
    case Action::Admit: return "Admit";
    case Action::Keep: return "Keep";
    case Action::Grow: return "Grow";
    case Action::Shrink: return "Shrink";
    case Action::Preempt: return "Preempt";
  }
  return "?";
}

std::optional<Task::Worker> worker_shape(int gpu_milli, const Node& node) {
  std::array<std::string, kMigCount> mig;
  for (size_t p = 0; p < kMigCount; ++p) mig[p] = gpu::kMigProfiles[p].resource;
  auto s = shape_rule<std::string>(gpu_milli, !node.vendor.empty(), node.vendor == "nvidia", whole_resource(node.vendor), kTimeSliced,
                                   mig.data(), [&node](const std::string& r) {
                                     auto it = node.free.find(r);
                                     return it == node.free.end() ? int64_t{0} : it->second;
                                   });
  if (!s) return std::nullopt;
  return Task::Worker{node.name, s->first, s->second};
}

std::vector<Decision> plan(const std::vector<Node>& nodes, const std::vector<Task>& tasks, SystemTime now,
                           const Config& config) {
  std::vector<const Node*> shared;
  shared.reserve(nodes.size());
  for (const auto& n : nodes) shared.push_back(&n);
  return Planner(std::move(shared), {}, refs(tasks), now, config).run();
}

std::vector<Decision> plan(const std::vector<const Node*>& nodes, const Returned& returned, const std::vector<Task>& tasks,
                           SystemTime now, const Config& config) {
  return plan(nodes, returned, refs(tasks), now, config);
}

std::vector<Decision> plan(const std::vector<const Node*>& nodes, const Returned& returned, const std::vector<const Task*>& tasks,
                           SystemTime now, const Config& config) {
  return Planner(nodes, returned, tasks, now, config).run();
}

}  // namespace valley::planner
