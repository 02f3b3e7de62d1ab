// Quota arithmetic for tenants sharing capacity pools ("<vendor>/<class>"), in thousandths of a GPU.
// Each tenant has, per pool, a nominal amount it is guaranteed, a limit on what it may borrow beyond
// it (none by default) and a limit on how much of its nominal it lends (all by default). Capacity
// no tenant is guaranteed is lendable by everyone. A tenant may always use its own nominal (when
// others borrowed it, they are reclaimed); beyond it, it borrows from the shared lendable pool:
// the unowned capacity plus what each other tenant lends of its nominal it does not use. Work of
// namespaces without a tenant belongs to tenant "" (nominal 0 everywhere: it only borrows).
// Without any tenant configured the book is disabled and allows everything.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace valley::planner {

struct PoolQuota {
  int64_t nominal_milli = 0;
  std::optional<int64_t> borrowing_limit_milli;  // nullopt: no limit
  std::optional<int64_t> lending_limit_milli;    // nullopt: lends all of its nominal
};

class QuotaBook {
 public:
  QuotaBook() = default;  // disabled
  // quotas: tenant -> pool -> quota; capacity: pool -> thousandths of a GPU.
  QuotaBook(std::map<std::string, std::map<std::string, PoolQuota>> quotas, std::map<std::string, int64_t> capacity);

  bool enabled() const { return enabled_; }
  void add(const std::string& tenant, const std::string& pool, int64_t milli) { change(tenant, pool, milli); }
  void remove(const std::string& tenant, const std::string& pool, int64_t milli) { change(tenant, pool, -milli); }

  int64_t usage(const std::string& tenant, const std::string& pool) const;
  int64_t nominal(const std::string& tenant, const std::string& pool) const;
  // What the tenant uses beyond its nominal in the pool (0 when within it).
  int64_t borrowed(const std::string& tenant, const std::string& pool) const;
  // What the tenant's nominal others may use now (its lending limit, less what it uses itself).
  int64_t lent_capacity(const std::string& tenant, const std::string& pool) const;
  // How much more the tenant may use in the pool now (a large number when the book is disabled).
  int64_t room(const std::string& tenant, const std::string& pool) const;
  // The tenant's usage in all pools, thousandths of a GPU.
  int64_t total_usage(const std::string& tenant) const;
  // Every pool's capacity together, thousandths of a GPU.
  int64_t total_capacity() const;

 private:
  const PoolQuota* quota(const std::string& tenant, const std::string& pool) const;
  void change(const std::string& tenant, const std::string& pool, int64_t milli);
  bool enabled_ = false;
  std::map<std::string, std::map<std::string, PoolQuota>> quotas_;
  std::map<std::string, int64_t> capacity_;
  std::map<std::string, std::map<std::string, int64_t>> usage_;  // tenant -> pool -> thousandths
  // Per pool, over all tenants (kept as usage changes: room() is asked for every node a task might
  // take, and summing over the tenants each time made large plans slow): nominal, borrowed, lendable.
  std::map<std::string, int64_t> nominal_sum_, borrowed_sum_, lendable_sum_;
};

}  // namespace valley::planner
