// One plan's reclaim: shrink, then preempt, to fit a waiting gang.
#include "controllers/planner/plan.h"

#include <algorithm>
#include <limits>
#include <tuple>

namespace valley::planner::detail {

// Shrink tasks toward their minimum, then preempt whole ones, until task i's gang fits; roll
// everything back if even that is not enough. Victims: lower-priority tasks of its own tenant (of
// any task when there are no tenants), and workers of other tenants where those borrow (never
// inside another tenant's nominal, summed over the pools of the vendor the gang may use): up to the
// unused nominal of i's tenant in those pools (its quota comes back), and, while i's tenant stays
// within its fair share with the gang, from tenants beyond theirs. The gang may so start partly on
// its tenant's nominal in several pools of one vendor and partly on borrowed capacity; reclaim is
// tried only when that could hold it. Borrowers go first, lowest priority and most over their fair
// share first; each shrinks only while its tenant still borrows there.
// What `tenant` holds beyond its nominal over `pools` together (negative when within it): a tenant
// borrowing in one pool of a vendor while leaving its nominal in another idle borrows nothing there.
int64_t Plan::over_nominal(const std::string& tenant, const std::vector<std::string>& pools) const {
  int64_t over = 0;
  for (const auto& pool : pools) over += quota_.usage(tenant, pool) - quota_.nominal(tenant, pool);
  return over;
}

// Whether the gang could start on what is free for it now plus what reclaim may take back: its
// tenant's unused nominal, and (on a fair-share claim) what tenants beyond their share borrow in
// the pools it may use; for one vendor at least.
bool Plan::reclaim_could_hold(size_t i, int need, const std::map<std::string, int64_t>& own_by_vendor, bool fair_claim) {
  const Task& t = tasks_[i];
  for (const auto& [vendor, pools] : usable_pools(i)) {
    int64_t workers_free = 0, reclaimable = own_by_vendor.at(vendor);
    for (size_t k = 0; k < nodes_.size(); ++k)
      if (nodes_[k]->vendor == vendor && may_place(i, k)) workers_free += fits(i, k, row(k), need);
    if (fair_claim)
      for (const auto& [name, tenant] : config_.tenants)
        if (name != t.tenant && beyond_fair(name)) reclaimable += std::max<int64_t>(0, over_nominal(name, pools));
    if (workers_free * t.gpu_milli + reclaimable >= int64_t{need} * t.gpu_milli) return true;
  }
  return false;
}

// Shrink tasks toward their minimum, then preempt whole ones, until task i's gang fits; roll
// everything back if even that is not enough. Victims: lower-priority tasks of its own tenant (of
// any task when there are no tenants), and workers of other tenants where those borrow (never
// inside another tenant's nominal, summed over the pools of the vendor the gang may use): up to the
// unused nominal of i's tenant in those pools (its quota comes back), and, while i's tenant stays
// within its fair share with the gang, from tenants beyond theirs. The gang may so start partly on
// its tenant's nominal in several pools of one vendor and partly on borrowed capacity; reclaim is
// tried only when that could hold it. Borrowers go first, lowest priority and most over their fair
// share first; each shrinks only while its tenant still borrows there.
bool Plan::reclaim_for(size_t i, int need, const std::vector<char>* only) {
  if (config_.preempt_in_pool_order && !only) return reclaim_in_pool_order(i, need);
  const Task& t = tasks_[i];
  auto within = [&](size_t k) { return !only || (*only)[k]; };
  // Only tasks holding GPUs this task could use are worth shrinking (an AMD job frees nothing
  // for an NVIDIA-only one).
  auto usable = [&](const Task::Worker& w) {
    const size_t k = node_at(w.node);
    if (k == kNoNode || !within(k) || !may_place(i, k)) return false;
    return runs_on(t, nodes_[k]->vendor);
  };
  const auto& pools_of = usable_pools(i);
  std::map<std::string, int64_t> own;  // vendor -> its tenant's unused nominal in the pools the gang may use
  for (const auto& [pool, milli] : unused_nominal(i)) own[vendor_of_pool(pool)] += milli;
  const bool fair_claim = within_fair(t.tenant, int64_t{need} * t.gpu_milli);
  std::map<std::string, int64_t> freed;  // vendor -> thousandths taken back from other tenants so far
  // A worker of v that reclaim may take: on a pool the gang may use, of a tenant holding more than
  // its nominal over those pools, and either within the unused nominal of i's tenant there or, on a
  // fair-share claim, from a tenant beyond its share.
  auto lent = [&](size_t v, const Task::Worker& w) {
    const size_t k = node_at(w.node);
    if (k == kNoNode || info_[k].whole < 0) return false;
    auto pools = pools_of.find(nodes_[k]->vendor);
    if (pools == pools_of.end() || std::find(pools->second.begin(), pools->second.end(), info_[k].pool) == pools->second.end()) return false;
    if (over_nominal(tasks_[v].tenant, pools->second) <= 0) return false;
    return freed[pools->first] < own[pools->first] || (fair_claim && beyond_fair(tasks_[v].tenant));
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
  if (victims.empty() || (quota_.enabled() && !reclaim_could_hold(i, need, own, fair_claim))) return false;
  // Most over its fair share first (held per fair thousandth).
  auto over_share = [&](size_t v) {
    const int64_t fair = std::max<int64_t>(1, fair_of(tasks_[v].tenant));
    return -static_cast<double>(quota_.total_usage(tasks_[v].tenant)) / static_cast<double>(fair);
  };
  std::sort(victims.begin(), victims.end(), [&](size_t a, size_t b) {
    const Task &x = tasks_[a], &y = tasks_[b];
    if (other_tenant(a) != other_tenant(b)) return other_tenant(a);
    if (other_tenant(a))
      return std::make_tuple(x.priority, over_share(a), !x.reduce_cost, x.key) < std::make_tuple(y.priority, over_share(b), !y.reduce_cost, y.key);
    return std::make_tuple(!x.reduce_cost, x.priority, -x.created.time_since_epoch().count(), x.key) <
           std::make_tuple(!y.reduce_cost, y.priority, -y.created.time_since_epoch().count(), y.key);
  });
  // What fits of the gang on each node alone, summed per vendor: the gang cannot be placed while
  // no vendor's sum reaches `need`, so place() is only tried once it may succeed (each release
  // changes one node's term).
  const std::vector<std::string> vendors = gang_vendors(t);
  std::vector<int> alone(nodes_.size());
  std::map<std::string, int64_t> fit_sum;
  auto refit = [&](size_t k) {
    const std::string& vendor = nodes_[k]->vendor;
    if (std::find(vendors.begin(), vendors.end(), vendor) == vendors.end() || !within(k) || !may_place(i, k)) return;
    const int now_fits = fits(i, k, row(k), need);
    fit_sum[vendor] += now_fits - alone[k];
    alone[k] = now_fits;
  };
  for (size_t k = 0; k < nodes_.size(); ++k) refit(k);
  auto may_fit = [&] {
    return std::any_of(fit_sum.begin(), fit_sum.end(), [&](const auto& s) { return s.second >= need; });
  };
  PlaceOptions options;
  options.only = only;
  const std::vector<int64_t> saved_free = free_;
  const auto saved_seats = seats_;
  const QuotaBook saved_quota = quota_;
  std::vector<std::pair<size_t, Decision>> saved;  // victims touched, as they were
  std::set<size_t> touched;
  auto release = [&](size_t v) {
    if (touched.insert(v).second) saved.emplace_back(v, decisions_[v]);
    const Task::Worker& last = decisions_[v].placement[shrink_pick(v)];
    const size_t k = node_at(last.node);
    if (k != kNoNode && other_tenant(v)) freed[nodes_[k]->vendor] += share_of(resource_id(last.gpu_resource), last.count);
    release_last(v);
    if (k != kNoNode) refit(k);
  };
  auto restore = [&] {
    free_ = saved_free;
    seats_ = saved_seats;
    quota_ = saved_quota;
    for (auto& [v, decision] : saved) decisions_[v] = std::move(decision);
  };
  // Shrink, one worker at a time, in victim order.
  for (size_t v : victims) {
    Decision& vd = decisions_[v];
    // (The worker a shrink takes is the one that leaves the rest in the fewest domains.)
    while (vd.workers > tasks_[v].min_workers && (!other_tenant(v) || lent(v, vd.placement[shrink_pick(v)]))) {
      release(v);
      if (!may_fit()) continue;
      if (auto placed = place(i, need, {}, options)) {
        admit(i, std::move(*placed));
        finish_reclaim(saved, i);
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
    if (auto placed = place(i, need, {}, options)) {
      admit(i, std::move(*placed));
      finish_reclaim(saved, i);
      return true;
    }
  }
  restore();
  return false;
}

// Kueue's order: the pools the gang may use, cheapest first; the first where reclaiming makes it fit.
bool Plan::reclaim_in_pool_order(size_t i, int need) {
  std::map<std::string, int64_t> cheapest;  // pool the gang may use -> its lowest price
  for (const auto& [vendor, pools] : usable_pools(i))
    for (const auto& pool : pools) cheapest.emplace(pool, std::numeric_limits<int64_t>::max());
  for (size_t k = 0; k < nodes_.size(); ++k)
    if (auto it = cheapest.find(info_[k].pool); it != cheapest.end()) it->second = std::min(it->second, info_[k].price);
  std::vector<std::pair<int64_t, std::string>> order;
  for (const auto& [pool, price] : cheapest) order.emplace_back(price, pool);
  std::sort(order.begin(), order.end());
  std::vector<char> in_pool(nodes_.size(), 0);
  for (const auto& [price, pool] : order) {
    for (size_t k = 0; k < nodes_.size(); ++k) in_pool[k] = info_[k].pool == pool;
    if (reclaim_for(i, need, &in_pool)) return true;
  }
  return false;
}

namespace {
// How one task's reason (its status and Events, which its namespace reads) names another: by its
// key within the namespace, as a task of another namespace otherwise (whose names are not theirs
// to read).
std::string named_for(const Task& other, const Task& reader) {
  const auto ns = [](const std::string& key) {
    const size_t slash = key.find('/');
    return slash == std::string::npos ? std::string() : key.substr(0, slash);
  };
  return ns(other.key) == ns(reader.key) ? other.key : "another namespace's task";
}
}  // namespace

// The victims' decisions say for whom they gave workers back; the admitted task's, from whom.
void Plan::finish_reclaim(const std::vector<std::pair<size_t, Decision>>& saved, size_t i) {
  const Task& for_task = tasks_[i];
  std::string from;
  for (const auto& [v, before] : saved) {
    Decision& vd = decisions_[v];
    if (vd.workers == before.workers) continue;
    const Task& victim = tasks_[v];
    const bool other = quota_.enabled() && victim.tenant != for_task.tenant;
    const std::string why = other ? named_for(for_task, victim) + ": tenant " + tenant_name(for_task.tenant) +
                                        " reclaims its quota lent to " + tenant_name(victim.tenant)
                                  : named_for(for_task, victim) + " (priority " + std::to_string(for_task.priority) + ")";
    from += (from.empty() ? "" : ", ") + named_for(victim, for_task) + (other ? " of tenant " + tenant_name(victim.tenant) : "") +
            (vd.workers == 0 ? " preempted" : " shrunk " + std::to_string(before.workers) + " -> " + std::to_string(vd.workers));
    if (vd.workers == 0) {
      vd.action = Action::Preempt;
      vd.reason = "preempted for " + why;
      admitted_.erase(v);
    } else {
      vd.action = Action::Shrink;
      vd.reason = "shrunk for " + why;
    }
  }
  if (!from.empty()) reclaimed_from_[i] = from;
}

}  // namespace valley::planner::detail
