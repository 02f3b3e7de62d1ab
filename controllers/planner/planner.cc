#include "controllers/planner/planner.h"

#include "controllers/gpu/resources.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <unordered_map>
#include <tuple>

namespace valley::planner {
namespace {

using Free = std::unordered_map<std::string, std::map<std::string, int64_t>>;  // node -> resource -> units

using gpu::kTimeSliced;
using gpu::whole_resource;

int64_t get(const std::map<std::string, int64_t>& m, const std::string& k) {
  auto it = m.find(k);
  return it == m.end() ? 0 : it->second;
}

std::optional<Task::Worker> shape_on(int gpu_milli, const std::string& vendor, const std::map<std::string, int64_t>& free) {
  if (vendor.empty()) return std::nullopt;
  if (gpu_milli % 1000 == 0) {
    int64_t n = gpu_milli / 1000;
    if (get(free, whole_resource(vendor)) >= n) return Task::Worker{"", whole_resource(vendor), n};
    return std::nullopt;
  }
  if (vendor == "nvidia") {
    for (const auto& p : gpu::kMigProfiles)
      if (gpu::holds(p, gpu_milli) && get(free, p.resource) >= 1) return Task::Worker{"", p.resource, 1};
    // Time-sliced GPUs (the device plugin's sharing with renameByDefault): a replica each.
    if (get(free, kTimeSliced) >= 1) return Task::Worker{"", kTimeSliced, 1};
  }
  if (get(free, whole_resource(vendor)) >= 1) return Task::Worker{"", whole_resource(vendor), 1};
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

bool eligible(const Task& t, const Node& n) {
  if (!n.schedulable) return false;
  if (std::find(t.avoid_nodes.begin(), t.avoid_nodes.end(), n.name) != t.avoid_nodes.end()) return false;
  if (!selects(t, n)) return false;
  for (const auto& taint : n.taints)
    if (!tolerates(t, taint)) return false;
  return true;
}

int effective_priority(const Task& t, SystemTime now, const Config& c) {
  if (t.admitted || c.aging_step.count() <= 0 || now <= t.created) return t.priority;
  auto waited = std::chrono::duration_cast<std::chrono::seconds>(now - t.created);
  return t.priority + static_cast<int>(waited / c.aging_step);
}

int whole_gpus(int gpu_milli) { return (gpu_milli + 999) / 1000; }

class Planner {
 public:
  Planner(const std::vector<Node>& nodes, const std::vector<Task>& tasks, SystemTime now, const Config& config)
      : tasks_(tasks), now_(now), config_(config) {
    for (const auto& n : nodes) {
      nodes_.push_back(&n);
      free_[n.name] = n.free;
    }
    std::sort(nodes_.begin(), nodes_.end(), [](const Node* a, const Node* b) { return a->name < b->name; });
    for (const auto* n : nodes_) by_name_[n->name] = n;
    decisions_.resize(tasks.size());
    for (size_t i = 0; i < tasks.size(); ++i) decisions_[i].key = tasks[i].key;
  }

  std::vector<Decision> run() {
    keep_admitted();
    admit_waiting();
    grow();
    return decisions_;
  }

 private:
  // Workers of admitted tasks stay where they are (on nodes that still exist and take work).
  void keep_admitted() {
    for (size_t i : order(/*admitted=*/true)) {
      const Task& t = tasks_[i];
      Decision& d = decisions_[i];
      bool lost = false;
      for (const auto& w : t.workers) {
        auto it = by_name_.find(w.node);
        if (it == by_name_.end() || !eligible(t, *it->second)) {  // lost with its node, or not bindable there
          lost = true;
          continue;
        }
        free_[w.node][w.gpu_resource] -= w.count;
        d.placement.push_back(w);
      }
      int cap = t.pinned_workers ? std::min(*t.pinned_workers, t.max_workers) : t.max_workers;
      while (static_cast<int>(d.placement.size()) > cap) release_last(d);  // max lowered or pinned smaller
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
        auto more = place(t, t.min_workers - d.workers, d.placement);
        if (more) {
          for (auto& w : *more) d.placement.push_back(w);
          d.workers = t.min_workers;
          d.action = Action::Grow;
          d.reason = "replacing lost workers";
        } else {
          while (!d.placement.empty()) release_last(d);
          d.workers = 0;
          d.action = Action::Preempt;
          d.reason = "lost workers and the minimum no longer fits: " + insufficient(t, t.min_workers);
          admitted_.erase(i);
          new_.erase(i);
        }
      }
    }
  }

  void admit_waiting() {
    int position = 0;
    for (size_t i : order(/*admitted=*/false)) {
      const Task& t = tasks_[i];
      Decision& d = decisions_[i];
      int need = t.pinned_workers ? std::clamp(*t.pinned_workers, t.min_workers, t.max_workers) : t.min_workers;
      if (t.reduce_cost && !config_.off_peak && idle_percent() < config_.idle_percent) {
        // Not now, unless spot capacity takes the whole gang.
        spot_only_ = true;
        auto placed = place(t, need, {});
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
      if (auto placed = place(t, need, {})) {
        admit(i, std::move(*placed));
        continue;
      }
      if (reclaim_for(i, need)) continue;
      d.action = Action::Wait;
      d.workers = 0;
      d.queue_position = ++position;
      waiting_.push_back(i);
      d.reason = insufficient(t, need);
    }
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

  // Shrink lower-priority tasks toward their minimum, then preempt whole ones, until task i's gang
  // fits; roll everything back if even that is not enough.
  bool reclaim_for(size_t i, int need) {
    const Task& t = tasks_[i];
    // Only tasks holding GPUs this task could use are worth shrinking (an AMD job frees nothing
    // for an NVIDIA-only one).
    auto usable = [&](const Task::Worker& w) {
      auto it = by_name_.find(w.node);
      if (it == by_name_.end() || !eligible(t, *it->second)) return false;
      return it->second->vendor == "nvidia" || (it->second->vendor == "amd" && t.amd_support);
    };
    std::vector<size_t> victims;
    for (size_t v : admitted_) {
      if (new_.count(v) || tasks_[v].priority >= t.priority) continue;
      const auto& placed = decisions_[v].placement;
      if (std::any_of(placed.begin(), placed.end(), usable)) victims.push_back(v);
    }
    std::sort(victims.begin(), victims.end(), [&](size_t a, size_t b) {
      const Task &x = tasks_[a], &y = tasks_[b];
      return std::make_tuple(!x.reduce_cost, x.priority, -x.created.time_since_epoch().count(), x.key) <
             std::make_tuple(!y.reduce_cost, y.priority, -y.created.time_since_epoch().count(), y.key);
    });
    if (victims.empty()) return false;
    Free saved_free = free_;
    std::vector<Decision> saved;
    for (size_t v : victims) saved.push_back(decisions_[v]);
    auto restore = [&] {
      free_ = saved_free;
      for (size_t k = 0; k < victims.size(); ++k) decisions_[victims[k]] = saved[k];
    };
    // Shrink, one worker at a time, lowest first.
    for (size_t v : victims) {
      Decision& vd = decisions_[v];
      while (vd.workers > tasks_[v].min_workers) {
        release_last(vd);
        if (auto placed = place(t, need, {})) {
          finish_reclaim(victims, saved, t);
          admit(i, std::move(*placed));
          return true;
        }
      }
    }
    // Preempt whole tasks.
    for (size_t v : victims) {
      Decision& vd = decisions_[v];
      while (vd.workers > 0) release_last(vd);
      if (auto placed = place(t, need, {})) {
        finish_reclaim(victims, saved, t);
        admit(i, std::move(*placed));
        return true;
      }
    }
    restore();
    return false;
  }

  void finish_reclaim(const std::vector<size_t>& victims, const std::vector<Decision>& saved, const Task& for_task) {
    for (size_t k = 0; k < victims.size(); ++k) {
      Decision& vd = decisions_[victims[k]];
      if (vd.workers == saved[k].workers) continue;
      if (vd.workers == 0) {
        vd.action = Action::Preempt;
        vd.reason = "preempted for " + for_task.key + " (priority " + std::to_string(for_task.priority) + ")";
        admitted_.erase(victims[k]);
      } else {
        vd.action = Action::Shrink;
        vd.reason = "shrunk for " + for_task.key + " (priority " + std::to_string(for_task.priority) + ")";
      }
    }
  }

  void grow() {
    for (size_t i : order(/*admitted=*/true, /*include_new=*/true)) {
      if (!admitted_.count(i)) continue;
      const Task& t = tasks_[i];
      Decision& d = decisions_[i];
      if (d.action == Action::Preempt || (d.action == Action::Shrink && !new_.count(i))) continue;
      // Nothing of higher priority may be waiting for what this growth would take.
      bool higher_waits = std::any_of(waiting_.begin(), waiting_.end(), [&](size_t w) { return tasks_[w].priority > t.priority; });
      if (higher_waits) continue;
      int target = t.pinned_workers ? std::clamp(*t.pinned_workers, t.min_workers, t.max_workers) : t.max_workers;
      if (d.workers >= target) continue;
      const bool fresh = new_.count(i) > 0;
      if (!fresh) {
        if (t.last_resize && now_ - *t.last_resize < config_.min_resize_interval) continue;
      }
      std::vector<Task::Worker> added;
      std::vector<Task::Worker> around = d.placement;
      while (d.workers + static_cast<int>(added.size()) < target) {
        auto one = place(t, 1, around);
        if (!one) break;
        added.push_back((*one)[0]);
        around.push_back((*one)[0]);
      }
      int gain = static_cast<int>(added.size());
      int worth = t.pinned_workers ? 1
                                   : std::max(config_.min_gain_workers,
                                              static_cast<int>(std::ceil(config_.min_gain_fraction * d.workers)));
      if (gain == 0 || (!fresh && gain < worth && d.workers + gain < target)) {
        for (const auto& w : added) free_[w.node][w.gpu_resource] += w.count;
        continue;
      }
      for (auto& w : added) d.placement.push_back(w);
      d.workers += gain;
      if (!fresh) {
        d.action = Action::Grow;
        d.reason = "grew by " + std::to_string(gain) + " into free capacity";
      } else if (lost_.count(i)) {
        d.reason = "replacing lost workers: " + std::to_string(d.workers) + " workers";
      } else {
        d.reason = "admitted with " + std::to_string(d.workers) + " workers";
      }
    }
  }

  void release_last(Decision& d) {
    const auto& w = d.placement.back();
    free_[w.node][w.gpu_resource] += w.count;
    d.placement.pop_back();
    d.workers = static_cast<int>(d.placement.size());
  }

  // Places `count` workers of t as a gang on one vendor's nodes; commits to free_ on success.
  std::optional<std::vector<Task::Worker>> place(const Task& t, int count, const std::vector<Task::Worker>& prefer) {
    if (count <= 0) return std::vector<Task::Worker>{};
    std::vector<std::string> vendors;
    std::string used_vendor;
    for (const auto& w : prefer)
      if (auto it = by_name_.find(w.node); it != by_name_.end()) used_vendor = it->second->vendor;
    if (!used_vendor.empty()) {
      vendors.push_back(used_vendor);  // a gang stays on one vendor
    } else if (t.amd_support && t.reduce_cost && config_.amd_cheaper) {
      vendors = {"amd", "nvidia"};
    } else if (t.amd_support) {
      vendors = {"nvidia", "amd"};
    } else {
      vendors = {"nvidia"};
    }
    std::set<std::string> preferred;
    for (const auto& w : prefer) preferred.insert(w.node);
    for (const auto& vendor : vendors) {
      // What this gang has claimed so far, by node: committed to free_ only if the whole gang fits
      // (cheaper than copying every node's free capacity for each try).
      Free taken;
      auto free_on = [&](const Node* n) {
        auto f = free_.at(n->name);
        if (auto it = taken.find(n->name); it != taken.end())
          for (const auto& [r, v] : it->second) f[r] -= v;
        return f;
      };
      std::vector<Task::Worker> out;
      int remaining = count;
      while (remaining > 0) {
        const Node* best = nullptr;
        // Most workers here (fewest nodes), then least GPU wasted (a MIG slice over a whole GPU for
        // a fraction), then the task's own nodes, then the capacity class that suits it and the
        // lowest price, then the tightest fit.
        std::tuple<int, int64_t, bool, bool, int64_t, int64_t> best_score{};
        int best_fit = 0;
        for (const Node* n : nodes_) {
          if (n->vendor != vendor || !eligible(t, *n) || (spot_only_ && n->capacity_class != "spot")) continue;
          auto node_free = free_on(n);
          int fit = 0;
          int64_t share = 0;  // thousandths of a GPU taken
          while (fit < remaining) {
            auto s = shape_on(t.gpu_milli, vendor, node_free);
            if (!s) break;
            node_free[s->gpu_resource] -= s->count;
            share += gpu::share_milli(s->gpu_resource, s->count);
            ++fit;
          }
          if (fit == 0) continue;
          int64_t left = 0;
          for (const auto& [r, v] : node_free) left += v;
          bool suits = config_.cost_aware_placement && (n->capacity_class == "spot") == t.checkpointed;
          int64_t price = config_.cost_aware_placement ? n->price_micros : 0;
          std::tuple<int, int64_t, bool, bool, int64_t, int64_t> score{
              fit, -(share - int64_t{fit} * t.gpu_milli), preferred.count(n->name) > 0, suits, -price, -left};
          if (!best || score > best_score) {
            best = n;
            best_score = score;
            best_fit = fit;
          }
        }
        if (!best) break;
        auto best_free = free_on(best);
        for (int k = 0; k < best_fit; ++k) {
          auto s = *shape_on(t.gpu_milli, vendor, best_free);
          s.node = best->name;
          best_free[s.gpu_resource] -= s.count;
          taken[best->name][s.gpu_resource] += s.count;
          out.push_back(s);
        }
        remaining -= best_fit;
      }
      if (remaining == 0) {
        for (const auto& [node, use] : taken)
          for (const auto& [r, v] : use) free_[node][r] -= v;
        return out;
      }
    }
    return std::nullopt;
  }

  // Free whole-GPU-equivalents as a share of all GPUs, now (after what this plan already placed).
  int idle_percent() const {
    int64_t total = 0, free = 0;
    for (const Node* n : nodes_) {
      if (n->vendor.empty() || !n->schedulable) continue;
      for (const auto& [r, units] : n->capacity) {
        total += gpu::share_milli(r, units);
        free += gpu::share_milli(r, std::max<int64_t>(0, get(free_.at(n->name), r)));
      }
    }
    return total <= 0 ? 0 : static_cast<int>(free * 100 / total);
  }

  std::string insufficient(const Task& t, int need) const {
    int64_t free_gpus = 0;
    for (const Node* n : nodes_) {
      if (!eligible(t, *n) || n->vendor.empty() || (n->vendor == "amd" && !t.amd_support)) continue;
      free_gpus += std::max<int64_t>(0, get(free_.at(n->name), whole_resource(n->vendor)));
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
    std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
      const Task &x = tasks_[a], &y = tasks_[b];
      return std::make_tuple(-effective_priority(x, now_, config_), x.created, x.key) <
             std::make_tuple(-effective_priority(y, now_, config_), y.created, y.key);
    });
    idx.erase(std::unique(idx.begin(), idx.end()), idx.end());
    return idx;
  }

  const std::vector<Task>& tasks_;
  SystemTime now_;
  Config config_;
  std::vector<const Node*> nodes_;
  std::map<std::string, const Node*> by_name_;
  Free free_;
  std::vector<Decision> decisions_;
  std::set<size_t> admitted_, new_, lost_;
  bool spot_only_ = false;
  std::vector<size_t> waiting_;
};

}  // namespace

bool selects(const Task& t, const Node& n) {
  for (const auto& [k, v] : t.node_selector) {
    auto it = n.labels.find(k);
    if (it == n.labels.end() || it->second != v) return false;
  }
  return true;
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
  auto s = shape_on(gpu_milli, node.vendor, node.free);
  if (s) s->node = node.name;
  return s;
}

std::vector<Decision> plan(const std::vector<Node>& nodes, const std::vector<Task>& tasks, SystemTime now,
                           const Config& config) {
  return Planner(nodes, tasks, now, config).run();
}

}  // namespace valley::planner
