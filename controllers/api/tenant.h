// A Tenant (valley.dev/v1beta1, cluster-scoped): a team that shares the cluster and pays for what
// it uses. It owns namespaces (a list and/or a label selector), has a GPU quota per capacity pool
// (guaranteed nominal, how much more it may borrow, how much of its nominal it lends), a fair-share
// weight, a money budget per period with what happens when it is spent, and the priorities its
// tasks may ask for. Parsed purely from the object the API server stored; errors carry their paths.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "controllers/api/money.h"
#include "controllers/api/spec.h"
#include "operator/kube/label_selector.h"

namespace valley::api {

using json = nlohmann::json;

// The capacity pools quotas are kept in: "<vendor>/<class>", as in status.cost.breakdown. A
// fractional worker (MIG slice, time-sliced replica) counts its share in its node's pool.
const std::vector<std::string>& quota_pools();

struct PoolQuota {
  std::string pool;
  int64_t nominal_milli = 0;                     // GPUs guaranteed, thousandths
  std::optional<int64_t> borrowing_limit_milli;  // GPUs it may use beyond nominal; nullopt: no limit
  std::optional<int64_t> lending_limit_milli;    // GPUs of its nominal others may use; nullopt: all
};

enum class BudgetPeriod { Day, Week, Month };  // calendar periods in the PricingPolicy's time zone
enum class BudgetAction { Wait, Suspend };     // Wait: nothing new starts; Suspend: running tasks stop too
struct Budget {
  Micros amount = 0;
  BudgetPeriod period = BudgetPeriod::Month;
  BudgetAction action = BudgetAction::Wait;
};

using SelectorRequirement = kube::LabelRequirement;  // op: In, NotIn, Exists, DoesNotExist
struct LabelSelector {
  std::map<std::string, std::string> match_labels;
  std::vector<SelectorRequirement> match_expressions;
  bool matches(const std::map<std::string, std::string>& labels) const;
};

struct TenantSpec {
  std::string name, uid;
  int64_t generation = 0;
  std::vector<std::string> namespaces;
  std::optional<LabelSelector> namespace_selector;
  std::vector<PoolQuota> quotas;  // one per pool at most; a pool not listed: nominal 0, borrowing unlimited
  int64_t weight_milli = 1000;    // fair-share weight
  std::optional<Budget> budget;
  int max_priority = 100;
  std::optional<int> default_priority;  // for tasks that do not set spec.priority
  std::optional<IdlePolicy> idle_policy;  // for tasks that set no spec.idlePolicy

  // The namespace (with its labels) belongs to this tenant.
  bool owns(const std::string& ns, const std::map<std::string, std::string>& ns_labels) const;
  const PoolQuota* quota(const std::string& pool) const;
};

struct ParsedTenant {
  std::optional<TenantSpec> spec;   // set when errors is empty
  std::vector<std::string> errors;  // "spec.quotas[0].pool: must be one of ..."
};
ParsedTenant parse_tenant(const json& object);

const char* to_string(BudgetPeriod p);
const char* to_string(BudgetAction a);

}  // namespace valley::api
