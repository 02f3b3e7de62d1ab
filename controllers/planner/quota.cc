#include "controllers/planner/quota.h"

#include <algorithm>
#include <limits>

namespace valley::planner {
namespace {
constexpr int64_t kUnlimited = std::numeric_limits<int64_t>::max() / 4;
}

QuotaBook::QuotaBook(std::map<std::string, std::map<std::string, PoolQuota>> quotas, std::map<std::string, int64_t> capacity)
    : enabled_(true), quotas_(std::move(quotas)), capacity_(std::move(capacity)) {
  for (const auto& [tenant, pools] : quotas_)
    for (const auto& [pool, q] : pools) {
      nominal_sum_[pool] += q.nominal_milli;
      lendable_sum_[pool] += lent_capacity(tenant, pool);
    }
}

void QuotaBook::change(const std::string& tenant, const std::string& pool, int64_t milli) {
  const int64_t borrowed_before = borrowed(tenant, pool), lendable_before = lent_capacity(tenant, pool);
  usage_[tenant][pool] += milli;
  borrowed_sum_[pool] += borrowed(tenant, pool) - borrowed_before;
  lendable_sum_[pool] += lent_capacity(tenant, pool) - lendable_before;
}

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
  auto sum = [&](const std::map<std::string, int64_t>& sums) {
    auto it = sums.find(pool);
    return it == sums.end() ? int64_t{0} : it->second;
  };
  const int64_t nominal_sum = sum(nominal_sum_), borrowed_by_all = sum(borrowed_sum_);
  const int64_t lendable = sum(lendable_sum_) - lent_capacity(tenant, pool);  // what the others lend
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

int64_t QuotaBook::total_capacity() const {
  int64_t sum = 0;
  for (const auto& [pool, milli] : capacity_) sum += milli;
  return sum;
}

}  // namespace valley::planner
