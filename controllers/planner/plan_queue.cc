// One plan's queue order: effective priority (aging), age, key; fair share across tenants.
#include "controllers/planner/plan.h"

#include <algorithm>
#include <limits>
#include <tuple>

#include "controllers/planner/fair_share.h"

namespace valley::planner::detail {

namespace {
int effective_priority(const Task& t, SystemTime now, const Config& c) {
  if (t.admitted || c.aging_step.count() <= 0 || now <= t.created) return t.priority;
  auto waited = std::chrono::duration_cast<std::chrono::seconds>(now - t.created);
  return t.priority + static_cast<int>(waited / c.aging_step);
}
}  // namespace

// Indexes of tasks (admitted or waiting) by effective priority, then age, then key.
std::vector<size_t> Plan::order(bool admitted, bool include_new) const {
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
const std::vector<size_t>& Plan::age_rank() const {
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

// A tenant's fair share now: its decayed usage plus what it holds (as the usage it would settle
// at), per unit of weight; lower goes first. Work without a tenant goes after every tenant's.
double Plan::share(const std::string& tenant) const {
  const Tenant* t = tenant.empty() ? nullptr : tenant_of_name(tenant);
  if (!t) return std::numeric_limits<double>::infinity();
  const double held = static_cast<double>(quota_.total_usage(tenant)) / 1000.0;
  return (t->decayed_gpu_hours + held * config_.usage_mean_life_hours) / std::max(t->weight, 1e-3);
}

// Each next task comes from the tenant of the lowest share at that moment (so what was admitted
// just before counts), within a tenant in the given order.
Plan::FairQueue Plan::fair_queue(const std::vector<size_t>& ordered) const {
  FairQueue q;
  for (size_t i : ordered) q[quota_.enabled() ? tasks_[i].tenant : ""].push_back(i);
  return q;
}

std::optional<size_t> Plan::next_fair(FairQueue& q) const {
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
bool Plan::goes_before(size_t w, size_t i) {
  const Task &x = tasks_[w], &y = tasks_[i];
  if (!quota_.enabled() || x.tenant == y.tenant) return x.priority > y.priority;
  return share(x.tenant) < share(y.tenant) || nominal_covers(w, x.min_workers);
}

void Plan::measure_fair_shares() {
  if (!quota_.enabled()) return;
  std::map<std::string, FairShareClaim> claims;
  for (const auto& [name, tenant] : config_.tenants) claims[name] = {tenant.weight, quota_.total_usage(name)};
  for (size_t i = 0; i < tasks_.size(); ++i) {
    if (admitted_.count(i) || tasks_[i].tenant.empty()) continue;
    if (auto c = claims.find(tasks_[i].tenant); c != claims.end()) c->second.demand += int64_t{tasks_[i].max_workers} * tasks_[i].gpu_milli;
  }
  fair_ = fair_shares(quota_.total_capacity(), claims);
}

int64_t Plan::fair_of(const std::string& tenant) const {
  auto it = fair_.find(tenant);
  return it == fair_.end() ? 0 : it->second;
}

bool Plan::within_fair(const std::string& tenant, int64_t adding) const {
  return quota_.enabled() && !tenant.empty() && quota_.total_usage(tenant) + adding <= fair_of(tenant);
}

const std::map<std::string, std::vector<std::string>>& Plan::usable_pools(size_t i) {
  auto [it, added] = usable_pools_.try_emplace(i);
  if (added) {
    const std::vector<std::string> vendors = gang_vendors(tasks_[i]);
    for (size_t k = 0; k < nodes_.size(); ++k) {
      const std::string& vendor = nodes_[k]->vendor;
      if (info_[k].whole < 0 || std::find(vendors.begin(), vendors.end(), vendor) == vendors.end() || !may_place(i, k)) continue;
      auto& pools = it->second[vendor];
      if (std::find(pools.begin(), pools.end(), info_[k].pool) == pools.end()) pools.push_back(info_[k].pool);
    }
  }
  return it->second;
}

std::map<std::string, int64_t> Plan::unused_nominal(size_t i) {
  std::map<std::string, int64_t> out;
  if (!quota_.enabled()) return out;
  const std::string& tenant = tasks_[i].tenant;
  for (const auto& [vendor, pools] : usable_pools(i))
    for (const auto& pool : pools) out[pool] = std::max<int64_t>(0, quota_.nominal(tenant, pool) - quota_.usage(tenant, pool));
  return out;
}

bool Plan::nominal_covers(size_t i, int workers) {
  if (!quota_.enabled()) return false;
  const std::map<std::string, int64_t> unused = unused_nominal(i);
  for (const auto& [vendor, pools] : usable_pools(i)) {
    int64_t sum = 0;
    for (const auto& pool : pools) sum += unused.at(pool);
    if (sum >= int64_t{workers} * tasks_[i].gpu_milli) return true;
  }
  return false;
}

}  // namespace valley::planner::detail
