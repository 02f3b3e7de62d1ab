// One plan's reclaim: shrink, then preempt, to fit a waiting gang.
#include "controllers/planner/plan.h"

#include <algorithm>
#include <tuple>

namespace valley::planner::detail {

// Shrink tasks toward their minimum, then preempt whole ones, until task i's gang fits; roll
// everything back if even that is not enough. Victims: lower-priority tasks of its own tenant (of
// any task when there are no tenants), and tasks of other tenants that borrow in a pool where
// i's tenant has the nominal room for i's gang (reclaim: borrowers first, lowest priority and
// most over their share first; each shrinks only while its tenant still borrows there).
bool Plan::reclaim_for(size_t i, int need) {
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
    const int now_fits = fits(i, k, row(k), need);
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

void Plan::finish_reclaim(const std::vector<std::pair<size_t, Decision>>& saved, const Task& for_task) {
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

}  // namespace valley::planner::detail
