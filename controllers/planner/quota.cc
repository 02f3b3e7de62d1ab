#include "controllers/planner/quota.h"

#include <algorithm>
#include <limits>
#include <set>

namespace valley::planner {
namespace {
constexpr int64_t kUnlimited = std::numeric_limits<int64_t>::max() / 4;
}

QuotaBook::QuotaBook(std::map<std::string, std::map<std::string, PoolQuota>> quotas, std::map<std::string, int64_t> capacity)
    : enabled_(true), quotas_(std::move(quotas)), capacity_(std::move(capacity)) {}

const PoolQuota* QuotaBook::quota(const std::string& tenant, const std::string& pool) const {
  auto t = quotas_.find(tenant);
  if (t == quotas_.end()) return nullptr;
  auto p = t->second.find(pool);
  return p == t->second.end() ? nullptr : &p->second;
}

int64_t QuotaBook::usage(const std::string& tenant, const std::string& pool) const {
  auto t = usage_.find(tenant);
  if (t == usage_.end()) return 0;
  auto p = t->second.find(pool);
  return p == t->second.end() ? 0 : p->second;
}

int64_t QuotaBook::nominal(const std::string& tenant, const std::string& pool) const {
  const PoolQuota* q = quota(tenant, pool);
  return q ? q->nominal_milli : 0;
}

int64_t QuotaBook::borrowed(const std::string& tenant, const std::string& pool) const {
  return std::max<int64_t>(0, usage(tenant, pool) - nominal(tenant, pool));
}

int64_t QuotaBook::lent_capacity(const std::string& tenant, const std::string& pool) const {
  const PoolQuota* q = quota(tenant, pool);
  if (!q) return 0;
  const int64_t unused = std::max<int64_t>(0, q->nominal_milli - usage(tenant, pool));
  return std::min(unused, q->lending_limit_milli.value_or(q->nominal_milli));
}

int64_t QuotaBook::room(const std::string& tenant, const std::string& pool) const {
  if (!enabled_) return kUnlimited;
  std::set<std::string> tenants;
  for (const auto& [name, pools] : quotas_) tenants.insert(name);
  for (const auto& [name, pools] : usage_) tenants.insert(name);
  int64_t nominal_sum = 0, lendable = 0, borrowed_by_all = 0;
  for (const auto& name : tenants) {
    nominal_sum += nominal(name, pool);
    borrowed_by_all += borrowed(name, pool);
    if (name != tenant) lendable += lent_capacity(name, pool);
  }
  auto cap = capacity_.find(pool);
  const int64_t unowned = std::max<int64_t>(0, (cap == capacity_.end() ? 0 : cap->second) - nominal_sum);
  const int64_t own_left = std::max<int64_t>(0, nominal(tenant, pool) - usage(tenant, pool));
  const int64_t shared_left = std::max<int64_t>(0, unowned + lendable - borrowed_by_all);
  const PoolQuota* q = quota(tenant, pool);
  const int64_t limit_left =
      q && q->borrowing_limit_milli ? std::max<int64_t>(0, *q->borrowing_limit_milli - borrowed(tenant, pool)) : kUnlimited;
  return own_left + std::min(shared_left, limit_left);
}

int64_t QuotaBook::total_usage(const std::string& tenant) const {
  int64_t sum = 0;
  if (auto t = usage_.find(tenant); t != usage_.end())
    for (const auto& [pool, milli] : t->second) sum += milli;
  return sum;
}

}  // namespace valley::planner
