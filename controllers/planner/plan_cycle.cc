// One plan's cycle, in the order planner.h states: keep, admit, grow, move, lay out by worker index.
#include "controllers/planner/plan.h"

#include "controllers/api/nodepool.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace valley::planner::detail {

std::vector<Decision> Plan::run() {
  keep_admitted();
  admit_waiting();
  grow();
  move_to_cheaper();
  give_back_bought();
  by_worker_index();
  for (const auto& [i, from] : reclaimed_from_)  // (after grow: it words a fresh task's admission anew)
    if (decisions_[i].action == Action::Admit) decisions_[i].reason += "; its GPUs come back from " + from;
  for (size_t i : admitted_) decisions_[i].launcher_on_spot = launcher_fit(i).on_spot;
  return std::move(decisions_);
}

// Workers of admitted tasks stay where they are (on nodes that still exist and take work).
void Plan::keep_admitted() {
  // Every task keeps what it has before any lost worker is replaced: a replacement placed while a
  // later task had not taken its workers yet would be counted onto GPUs that task still holds.
  std::vector<size_t> short_of_size;
  for (size_t i : order(/*admitted=*/true)) {
    const Task& t = tasks_[i];
    Decision& d = decisions_[i];
    bool lost = false;
    bool gaps = false;  // workers missing between those it has (their pods were never created)
    d.placement.reserve(t.workers.size());
    std::vector<size_t> kept;  // the worker indexes kept, in order
    kept.reserve(t.workers.size());
    for (size_t x = 0; x < t.workers.size(); ++x) {
      const auto& w = t.workers[x];
      const size_t index = w.index >= 0 ? static_cast<size_t>(w.index) : x;
      gaps = gaps || index != x;
      const size_t k = node_at(w.node);
      if (k == kNoNode && !w.bound && api::is_provisionable(w.node)) {
        // A node still to buy that is no longer offered: bought meanwhile (its pool's budget went to
        // the node now arriving, which the pod will bind to) or given up on (the lifecycle's
        // provisioning timeout gives the gang back). Either way not a loss to restart for.
        d.placement.push_back(w);
        kept.push_back(index);
        continue;
      }
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
      kept.push_back(index);
    }
    if (lost || gaps) kept_index_[i] = std::move(kept);
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
    if (d.workers < std::max(t.min_workers, std::min(t.epoch_workers, cap))) short_of_size.push_back(i);
  }
  for (size_t i : short_of_size) {
    const Task& t = tasks_[i];
    Decision& d = decisions_[i];
    const int cap = t.pinned_workers ? std::min(*t.pinned_workers, t.max_workers) : t.max_workers;
    const int epoch_size = std::min(t.epoch_workers, cap);
    // Workers it never had (their pods were not all created before an operator restart): placed
    // so that its epoch starts at the size it was admitted at, without a restart.
    const bool never_created = !lost_.count(i) && d.workers < epoch_size;
    std::optional<std::vector<Task::Worker>> more;
    // As many as fit (all-or-nothing per try): a resize before it ever ran, but never a shrink.
    for (int n = epoch_size - d.workers; never_created && !more && n > 0 && d.workers + n >= t.min_workers; --n)
      more = place(i, n, d.placement);
    // Below its gang (a node went away): take what it needs now, or wait like a new task.
    if (!more && d.workers < t.min_workers) more = place(i, t.min_workers - d.workers, d.placement);
    if (more) {
      for (auto& w : *more) d.placement.push_back(w);
      d.workers = static_cast<int>(d.placement.size());
      if (!never_created || d.workers != epoch_size) {
        d.action = Action::Grow;
        d.reason = "replacing lost workers";
      }
    } else if (d.workers < t.min_workers) {
      while (!d.placement.empty()) release_last(i);
      d.workers = 0;
      d.action = Action::Preempt;
      d.reason = "lost workers and the minimum no longer fits: " + insufficient(i, t.min_workers);
      admitted_.erase(i);
      new_.erase(i);
    }
  }
}

void Plan::admit_waiting() {
  measure_fair_shares();
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
    // A gang no node set can hold waits holding nothing, and nobody is shrunk or kept from growing
    // for it.
    if (std::string why = unplaceable(i); !why.empty() || !(why = launcher_fit(i).unplaceable).empty() ||
                                          !(why = topology_unplaceable(i, need)).empty() || !(why = beyond_pools(i, need)).empty()) {
      d.action = Action::Wait;
      d.workers = 0;
      d.reason = std::move(why);
      continue;
    }
    if (t.reduce_cost && config_.reduce_cost == ReduceCostRule::OffPeakOrIdle && !config_.off_peak &&
        idle_percent() < config_.idle_percent) {
      wait_off_peak_or_idle(i, need, position);
      continue;
    }
    if (t.reduce_cost && config_.reduce_cost == ReduceCostRule::CheapestReachable && (!t.cheap_until || now_ < *t.cheap_until)) {
      wait_cheapest_reachable(i, need, position);
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

void Plan::admit(size_t i, std::vector<Task::Worker> placed) {
  Decision& d = decisions_[i];
  d.action = Action::Admit;
  d.placement = std::move(placed);
  d.workers = static_cast<int>(d.placement.size());
  d.reason = "minimum gang of " + std::to_string(d.workers) + " fits";
  // Nodes still to buy: which pools buy how many, and how long that takes.
  std::map<std::string, std::set<std::string>> buying;  // NodePool -> its nodes this gang opens
  std::chrono::seconds longest{0};
  for (const auto& w : d.placement)
    if (const size_t k = node_at(w.node); k != kNoNode && bought(k)) {
      buying[nodes_[k]->bought_from].insert(w.node);
      longest = std::max(longest, nodes_[k]->provisioning);
    }
  if (!buying.empty()) {
    std::string what;
    size_t count = 0;
    for (const auto& [pool, nodes] : buying) {
      what += (what.empty() ? "" : " and ") + std::to_string(nodes.size()) + " node" + (nodes.size() == 1 ? "" : "s") + " of NodePool " + pool;
      count += nodes.size();
    }
    d.reason += " once " + what + (count == 1 ? " is" : " are") + " bought (about " + std::to_string(longest.count()) + "s)";
  }
  admitted_.insert(i);
  new_.insert(i);
}

void Plan::grow() {
  FairQueue queue = fair_queue(order(/*admitted=*/true, /*include_new=*/true));
  while (auto next = next_fair(queue)) {
    const size_t i = *next;
    if (!admitted_.count(i)) continue;
    const Task& t = tasks_[i];
    Decision& d = decisions_[i];
    if (d.action == Action::Preempt || (d.action == Action::Shrink && !new_.count(i))) continue;
    const bool fresh = new_.count(i) > 0;
    const bool interval_passed = fresh || !t.last_resize || now_ - *t.last_resize >= config_.min_resize_interval;
    int target = planner::target_size(t, fresh ? 0 : d.workers, config_);
    if (d.workers > target && !fresh && interval_passed && !t.pinned_workers && !shape_holds(i, target)) {
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
                   std::to_string(static_cast<int>(planner::growth_threshold(t, config_) * 100)) + "% of linear";
      continue;
    }
    // Nothing that goes first may be waiting for what this growth would take.
    if (one_before_waits(i)) continue;
    if (!interval_passed) continue;
    // A size that did not pay as measured across nodes is tried where it would take fewer.
    const int narrower = !fresh && d.workers >= target ? narrower_step(i, d.workers) : 0;
    const bool exploring = narrower > 0;
    if (exploring) target = narrower;
    if (d.workers >= target) continue;
    PlaceOptions options;
    if (config_.placement == Placement::Price && !d.placement.empty()) {
      // The added workers' price must be paid by the step's marginal speedup; a reduceCost task
      // grows only onto capacity no dearer than what it runs on, too.
      options.price_cap = planner::growth_price_cap(t, d.workers, target, mean_price(d.placement), config_);
      if (t.reduce_cost) {
        int64_t dearest = 0;
        for (const auto& w : d.placement) dearest = std::max(dearest, price_of(w.node));
        options.price_cap = std::min(options.price_cap.value_or(dearest), dearest);
      }
    }
    // A node is bought for growth only when the step's measured speedup pays its price, or, under
    // a PricingPolicy, for a task that trades money for time whatever the speedup (a pinned size,
    // speed over cost, a time band that grows regardless): what backfill gives it at admission.
    options.may_buy = options.price_cap.has_value() || planner::buys_for_time(t, config_);
    std::vector<Task::Worker> added;
    std::vector<Task::Worker> around = d.placement;
    while (d.workers + static_cast<int>(added.size()) < target) {
      // A running task's growth buys a node only for as many workers as fill it: a node bought
      // for fewer is paid whole while partly idle, and no one else may fill it in time.
      if (!fresh) options.fill_workers = target - d.workers - static_cast<int>(added.size());
      auto one = place(i, 1, around, options);
      if (!one) break;
      added.push_back((*one)[0]);
      around.push_back((*one)[0]);
    }
    if (!keep_paying_shape(i, added, around, exploring)) continue;
    int gain = static_cast<int>(added.size());
    int worth = t.pinned_workers ? 1
                                 : std::max(config_.min_gain_workers,
                                            static_cast<int>(std::ceil(config_.min_gain_fraction * d.workers)));
    if (gain == 0 || (!fresh && gain < worth && d.workers + gain < target)) {
      for (const auto& w : added) give(i, w);
      continue;
    }
    for (auto& w : added) d.placement.push_back(w);
    regather(i);
    const int before = d.workers;
    d.workers += gain;
    if (!fresh) {
      d.action = Action::Grow;
      std::set<std::string> pools;
      for (const auto& w : added)
        if (const size_t k = node_at(w.node); k != kNoNode) pools.insert(info_[k].pool);
      std::string where;
      for (const auto& p : pools) where += (where.empty() ? "" : ", ") + p;
      std::string rule;
      if (exploring)
        rule = "its measurements at " + std::to_string(d.workers) + " workers across more nodes did not pay; on " +
               std::to_string(node_count(d.placement)) + (node_count(d.placement) == 1 ? " node" : " nodes") + " they may";
      else
        planner::target_size(t, before, config_, &rule);  // (the words only when it grew)
      d.reason = "grew " + std::to_string(before) + " -> " + std::to_string(d.workers) + ": " + rule + "; " +
                 std::to_string(gain) + (gain == 1 ? " worker" : " workers") + " placed on free " + where;
    } else if (lost_.count(i)) {
      d.reason = "replacing lost workers: " + std::to_string(d.workers) + " workers";
    } else {
      d.reason = "admitted with " + std::to_string(d.workers) + " workers";
    }
  }
  for (size_t i = 0; i < decisions_.size(); ++i)
    if (!decisions_[i].placement.empty()) decisions_[i].price_micros = mean_price(decisions_[i].placement);
}

// A running task that checkpoints moves, whole and at its size, to free capacity cheaper than what
// it holds, when the saving until its expected end exceeds a restart's held time at the new price.
// Highest priority first; after admission and growth, so it takes only what nobody else did.
void Plan::move_to_cheaper() {
  if (config_.move_restart_cost.count() <= 0 || config_.placement != Placement::Price) return;
  // The lowest price of a node with a free GPU unit, by vendor: a task paying no more than that for
  // every vendor it runs on has nowhere cheaper to go (most tasks, most plans; no placement tried).
  std::map<std::string, int64_t> cheapest_free;
  auto measure_free = [&] {
    cheapest_free.clear();
    for (size_t k = 0; k < nodes_.size(); ++k) {
      if (info_[k].whole < 0 || row(k)[info_[k].whole] <= 0) continue;
      auto [it, added] = cheapest_free.try_emplace(nodes_[k]->vendor, info_[k].price);
      if (!added) it->second = std::min(it->second, info_[k].price);
    }
  };
  measure_free();
  for (size_t i : order(/*admitted=*/true)) {
    const Task& t = tasks_[i];
    Decision& d = decisions_[i];
    const double hours_left = movable_hours_left(i);
    // Nothing that goes first may be waiting for what the move would take.
    if (hours_left <= 0 || one_before_waits(i)) continue;
    // What an hour of its work costs (a shared GPU's: its share over the rate it keeps there).
    const int64_t price = work_price(i, d.placement);
    const auto vendors = gang_vendors(t);
    if (std::none_of(vendors.begin(), vendors.end(), [&](const std::string& v) {
          auto it = cheapest_free.find(v);
          return it != cheapest_free.end() && it->second < price;
        }))
      continue;
    PlaceOptions options;
    options.price_cap = price - 1;
    options.may_buy = false;
    const std::vector<Task::Worker> held = d.placement;
    for (const auto& w : held) give(i, w);
    auto moved = place(i, static_cast<int>(held.size()), {}, options);
    if (moved) {
      const int64_t now_price = work_price(i, *moved);
      const double gpus = static_cast<double>(held.size()) * t.gpu_milli / 1000.0;
      const double saving = static_cast<double>(price - now_price) * gpus * hours_left;
      const double restart = static_cast<double>(now_price) * gpus * std::chrono::duration<double>(config_.move_restart_cost).count() / 3600.0;
      if (saving > restart) {
        d.placement = std::move(*moved);
        d.action = Action::Move;
        d.reason = "moving to cheaper capacity: " + money(now_price) + "/GPU-h instead of " + money(price) +
                   " saves more than a checkpoint-restart costs before its expected end";
        measure_free();
        continue;
      }
      for (const auto& w : *moved) give(i, w);
    }
    for (const auto& w : held) take(i, w);
  }
}

double Plan::movable_hours_left(size_t i) const {
  const Task& t = tasks_[i];
  const Decision& d = decisions_[i];
  if (d.action != Action::Keep || new_.count(i) || kept_index_.count(i) || !t.checkpointed || t.hot_elastic || !t.expected_end ||
      d.placement.empty())
    return 0;
  return std::chrono::duration<double>(*t.expected_end - now_).count() / 3600.0;
}

void Plan::regather(size_t i) {
  const Task& t = tasks_[i];
  Decision& d = decisions_[i];
  if (config_.topology.empty() || t.hot_elastic || kept_index_.count(i)) return;
  const size_t spread = node_count(d.placement);
  if (spread <= 1) return;
  const int64_t price = mean_price(d.placement);
  PlaceOptions options;
  if (t.reduce_cost && config_.placement == Placement::Price) options.price_cap = price;
  for (const auto& w : d.placement) give(i, w);
  auto gathered = place(i, static_cast<int>(d.placement.size()), {}, options);
  if (gathered && node_count(*gathered) < spread && mean_price(*gathered) <= price) {
    d.placement = std::move(*gathered);
    return;
  }
  if (gathered)
    for (const auto& w : *gathered) give(i, w);
  for (const auto& w : d.placement) take(i, w);
}

// The workers of a task that lost some are planned as its kept ones in order, then the added
// ones (release_last only ever takes the added ones, or kept ones from the end). By worker index
// instead: kept ones at their own index, the added ones in the lost ones' places, then after the
// end. Kept ones whose index is now beyond the size take what places are left (their pods go).
// A gang not started yet then re-creates the pods of its lost workers alone; in order, all the
// pods after the first lost one moved, and bound ones, which stay, held GPUs the plan gave away.
void Plan::by_worker_index() {
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

}  // namespace valley::planner::detail
