// One plan's reduceCost admissions: when a cost-minimizing task starts (plan.h).
#include "controllers/planner/plan.h"

#include <algorithm>
#include <tuple>

namespace valley::planner::detail {

// Outside off-peak and below the idle threshold: not now, unless spot capacity takes the whole gang.
void Plan::wait_off_peak_or_idle(size_t i, int need, int& position) {
  Decision& d = decisions_[i];
  if (auto placed = place(i, need, {}, PlaceOptions{.spot_only = true, .price_cap = std::nullopt})) {
    admit(i, std::move(*placed));
    decisions_[i].reason += " on spot capacity (reduceCost)";
    return;
  }
  d.action = Action::Wait;
  d.queue_position = ++position;
  waiting_.push_back(i);
  d.reason = "ReduceCost: waiting for off-peak electricity" + (config_.next_off_peak.empty() ? std::string() : " from " + config_.next_off_peak) +
             ", spot capacity, or " + std::to_string(config_.idle_percent) + "% idle GPUs (now " + std::to_string(idle_percent()) + "%)";
}

// Before its cheap_until: start now unless an option reachable before it stops waiting saves at
// least the policy's minimum share of the price now.
void Plan::wait_cheapest_reachable(size_t i, int need, int& position) {
  const Task& t = tasks_[i];
  Decision& d = decisions_[i];
  auto option = cheapest_reachable(i, need);
  auto placed = place(i, need, {});
  const int64_t keep = 100 - std::clamp(config_.reduce_cost_min_saving_percent, 0, 100);
  if (placed && (!option || work_price(i, *placed) * keep <= option->price * 100)) {
    admit(i, std::move(*placed));
    decisions_[i].reason += " at the lowest price reachable (reduceCost)";
    return;
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
    d.reason = "ReduceCost: waiting for " + option->pool + " at " + money(option->price) + "/GPU-h from " + kube::format_time(option->start) +
               (placed ? " (now " + money(work_price(i, *placed)) + "/GPU-h)" : " (nothing fits now)") + until;
  } else {
    d.reason = "ReduceCost: " + insufficient(i, need) + until;
  }
}

// The cheapest (pool, tariff window) in which task i's gang of `need` can start before its
// cheap_until: each pool of equal price among its eligible nodes, from the moment its free GPUs
// plus those the running tasks are expected to release hold the gang, at the cheapest tariff from
// then on.
std::optional<Plan::Option> Plan::cheapest_reachable(size_t i, int need) {
  const Task& t = tasks_[i];
  std::map<int, std::vector<size_t>> pools;  // price group -> its nodes the task may use
  for (size_t k = 0; k < nodes_.size(); ++k) {
    const Node* n = nodes_[k];
    if (n->vendor.empty() || !runs_on(t, n->vendor) || !may_place(i, k)) continue;
    pools[info_[k].price_group].push_back(k);
  }
  // GPUs the running tasks release, by when they are expected to end.
  std::vector<std::tuple<SystemTime, std::string, std::string, int64_t, size_t>> releases;
  for (size_t a : admitted_) {
    const auto& end = tasks_[a].expected_end;
    if (!end || (t.cheap_until && *end >= *t.cheap_until)) continue;
    for (const auto& w : decisions_[a].placement) releases.emplace_back(std::max(*end, now_), w.node, w.gpu_resource, w.count, a);
  }
  std::sort(releases.begin(), releases.end());
  const SystemTime horizon = t.cheap_until ? *t.cheap_until : now_ + std::chrono::hours(24 * 7);
  std::optional<Option> best;
  std::vector<size_t> slot(nodes_.size(), kNoNode);  // node -> its place in the pool being tried
  for (const auto& entry : pools) {
    const auto& pool = entry.second;  // not a structured binding: clang 14 cannot capture those
    // The pool's rows of the table, each node's workers over them, and their sum: a release
    // changes one node's count.
    std::vector<int64_t> free(pool.size() * width_);
    std::vector<int> fit(pool.size());
    int total = 0;
    for (size_t j = 0; j < pool.size(); ++j) {
      slot[pool[j]] = j;
      std::copy(row(pool[j]), row(pool[j]) + width_, &free[j * width_]);
      fit[j] = fits(i, pool[j], &free[j * width_], need);
      total += fit[j];
    }
    std::optional<SystemTime> ready;
    if (total >= need) ready = now_;
    for (size_t r = 0; !ready && r < releases.size(); ++r) {
      const auto& [when, node, resource, units, releaser] = releases[r];
      const size_t k = node_at(node);
      if (k == kNoNode || slot[k] == kNoNode) continue;
      int64_t* units_left = &free[slot[k] * width_];
      units_left[resource_id(resource)] += units;
      move_room(releaser, units_left, +1);
      const int now_fits = fits(i, k, units_left, need);
      total += now_fits - fit[slot[k]];
      fit[slot[k]] = now_fits;
      if (total >= need) ready = when;
    }
    for (size_t k : pool) slot[k] = kNoNode;
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
    price = work_price_on(i, pool.front(), price);  // where it would share a GPU: an hour of its work
    if (!best || price < best->price || (price == best->price && at < best->start))
      best = Option{price, at, any->vendor + " " + any->capacity_class, any->name};
  }
  return best;
}

}  // namespace valley::planner::detail
