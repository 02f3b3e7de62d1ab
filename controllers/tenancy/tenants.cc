#include "controllers/tenancy/tenants.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "controllers/gpu/resources.h"
#include "controllers/planner/fair_share.h"
#include "controllers/tenancy/usage.h"
#include "operator/kube/json_fields.h"
#include "operator/text.h"

namespace valley::tenancy {
namespace {

using json = nlohmann::json;

const api::TimeZone& zone_of(const api::Policy* policy) {
  static const api::TimeZone utc = api::TimeZone::utc();
  return policy ? policy->zone : utc;
}

// A decayed figure of the status's fairShare (`field`: GPU-hours), brought to `now` with `gpus_since`
// taken as the rate since its last update.
double decayed_at(const json& status, kube::SystemTime now, std::chrono::seconds half_life, double gpus_since,
                  const char* field = "decayedGpuHours") {
  const json& fs = kube::object_at(status, "fairShare");
  double usage = 0;
  const std::string text = kube::string_at(fs, field);
  if (!text.empty()) usage = std::max(0.0, std::strtod(text.c_str(), nullptr));
  auto updated = kube::time_at(fs, "updated");
  if (!updated || *updated >= now) return usage;
  return decay_usage(usage, gpus_since, std::chrono::duration_cast<std::chrono::seconds>(now - *updated), half_life);
}

json condition(const std::string& type, bool status, const std::string& reason, const std::string& message, const json& old,
               kube::SystemTime now, int64_t generation) {
  std::string since = kube::format_time(now);
  for (const auto& c : kube::array_at(old, "conditions"))
    if (kube::string_at(c, "type") == type && kube::string_at(c, "status") == (status ? "True" : "False") &&
        !kube::string_at(c, "lastTransitionTime").empty())
      since = kube::string_at(c, "lastTransitionTime");
  return {{"type", type}, {"status", status ? "True" : "False"}, {"reason", reason}, {"message", message},
          {"lastTransitionTime", since}, {"observedGeneration", generation}};
}

}  // namespace

Ownership assign_namespaces(const std::vector<TenantObject>& tenants,
                            const std::map<std::string, std::map<std::string, std::string>>& namespace_labels) {
  std::vector<const TenantObject*> order;
  for (const auto& t : tenants) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](const TenantObject* a, const TenantObject* b) {
    return std::tie(a->created, a->spec.name) < std::tie(b->created, b->spec.name);
  });
  Ownership out;
  for (const auto& [ns, labels] : namespace_labels) {
    std::vector<const TenantObject*> claim;
    for (const auto* t : order)
      if (t->spec.owns(ns, labels)) claim.push_back(t);
    if (claim.empty()) continue;
    out.owner[ns] = claim.front()->spec.name;
    for (const auto* t : claim)
      for (const auto* other : claim)
        if (t != other)
          out.conflicts[t->spec.name].push_back("namespace " + ns + " is also claimed by tenant " + other->spec.name +
                                                " (it belongs to " + claim.front()->spec.name + ", the oldest)");
  }
  return out;
}

BudgetState budget_state(const api::TenantSpec& t, const json& spend, const api::Policy* policy, kube::SystemTime now) {
  BudgetState b;
  if (!t.budget) return b;
  const Period period = budget_period(t.budget->period, zone_of(policy), now);
  if (kube::string_at(spend, "period") != period.name) return b;  // a new period: nothing spent yet
  const api::Micros spent = kube::int_at(spend, "spentMicros").value_or(0);
  if (spent < t.budget->amount) return b;
  b.spent = true;
  const std::string currency = policy ? policy->currency : "USD";
  b.reason = "TenantBudget: tenant " + t.name + " spent " + api::format_money(spent) + " of its " + api::format_money(t.budget->amount) +
             " " + currency + " for " + period.name + "; " +
             (t.budget->action == api::BudgetAction::Suspend ? "its tasks are suspended" : "new tasks wait") +
             " until the period resets at " + kube::format_time(period.end);
  return b;
}

planner::Tenant planner_tenant(const TenantObject& t, const api::Policy* policy, kube::SystemTime now, std::chrono::seconds half_life) {
  planner::Tenant p;
  for (const auto& q : t.spec.quotas) p.quota[q.pool] = planner::PoolQuota{q.nominal_milli, q.borrowing_limit_milli, q.lending_limit_milli};
  p.weight = static_cast<double>(t.spec.weight_milli) / 1000.0;
  // Held GPUs are added by the planner itself: here only the past, decayed to now.
  p.decayed_gpu_hours = decayed_at(t.status, now, half_life, 0);
  const BudgetState b = budget_state(t.spec, kube::object_at(t.status, "spend"), policy, now);
  if (b.spent) {
    p.hold = b.reason;
    p.stop = t.spec.budget->action == api::BudgetAction::Suspend;
  }
  return p;
}

std::map<std::string, int64_t> lent_milli(const std::string& tenant, const std::vector<TenantObject>& tenants,
                                          const std::map<std::string, std::map<std::string, int64_t>>& used,
                                          const std::map<std::string, int64_t>& capacity) {
  auto used_in = [&](const std::string& name, const std::string& pool) -> int64_t {
    auto t = used.find(name);
    if (t == used.end()) return 0;
    auto p = t->second.find(pool);
    return p == t->second.end() ? 0 : p->second;
  };
  std::map<std::string, int64_t> out;
  for (const auto& [pool, cap] : capacity) {
    int64_t nominal_all = 0, borrowed = 0, idle_all = 0, idle_mine = 0;
    std::set<std::string> with_tenant;
    for (const auto& t : tenants) {
      with_tenant.insert(t.spec.name);
      const api::PoolQuota* q = t.spec.quota(pool);
      const int64_t nominal = q ? q->nominal_milli : 0, u = used_in(t.spec.name, pool);
      nominal_all += nominal;
      borrowed += std::max<int64_t>(0, u - nominal);
      int64_t idle = std::max<int64_t>(0, nominal - u);
      if (q && q->lending_limit_milli) idle = std::min(idle, *q->lending_limit_milli);
      idle_all += idle;
      if (t.spec.name == tenant) idle_mine = idle;
    }
    for (const auto& [name, pools] : used)  // work of no (known) tenant only borrows
      if (!with_tenant.count(name)) borrowed += used_in(name, pool);
    const int64_t from_tenants = std::max<int64_t>(0, borrowed - std::max<int64_t>(0, cap - nominal_all));
    if (idle_all > 0 && idle_mine > 0 && from_tenants > 0)
      out[pool] = std::min(idle_mine, from_tenants * idle_mine / idle_all);
  }
  return out;
}

json tenant_status(const TenantObject& t, const std::vector<TaskUse>& tasks, const std::map<std::string, int64_t>& lent,
                   const std::vector<std::string>& conflicts, const api::Policy* policy, kube::SystemTime now,
                   std::chrono::seconds half_life, int64_t fair_now) {
  json s = json::object();
  s["observedGeneration"] = t.spec.generation;
  std::map<std::string, int64_t> used;
  std::map<std::string, api::Micros> accrued;
  int waiting = 0;
  for (const auto& task : tasks) {
    for (const auto& [pool, milli] : task.held_milli) used[pool] += milli;
    accrued[task.uid] = task.accrued;
    waiting += task.waiting;
  }
  json usage = json::object();
  int64_t used_all = 0, nominal_all = 0, borrowed_all = 0, lent_all = 0;
  for (const auto& pool : api::quota_pools()) {
    const api::PoolQuota* q = t.spec.quota(pool);
    const int64_t u = used.count(pool) ? used[pool] : 0, n = q ? q->nominal_milli : 0;
    if (!q && u == 0) continue;
    const auto l = lent.find(pool);
    const int64_t lent_here = l == lent.end() ? 0 : l->second;
    usage[pool] = {{"usedMilli", u}, {"nominalMilli", n}, {"borrowedMilli", std::max<int64_t>(0, u - n)}, {"lentMilli", lent_here}};
    used_all += u;
    nominal_all += n;
    borrowed_all += std::max<int64_t>(0, u - n);
    lent_all += lent_here;
  }
  s["usage"] = usage;
  s["gpus"] = api::format_milli(used_all) + "/" + api::format_milli(nominal_all);
  s["borrowed"] = api::format_milli(borrowed_all);
  s["lent"] = api::format_milli(lent_all);
  const double decayed = decayed_at(t.status, now, half_life, static_cast<double>(used_all) / 1000.0);
  const double fair = decayed_at(t.status, now, half_life, static_cast<double>(fair_now) / 1000.0, "fairGpuHours");
  char buf[32], fair_text[32], ratio[32];
  std::snprintf(buf, sizeof buf, "%.3f", decayed);
  std::snprintf(fair_text, sizeof fair_text, "%.3f", fair);
  s["fairShare"] = {{"decayedGpuHours", buf}, {"fairGpuHours", fair_text}, {"fairGpus", api::format_milli(fair_now)},
                    {"updated", kube::format_time(now)}};
  if (fair > 1e-3) {
    std::snprintf(ratio, sizeof ratio, "%.2f", decayed / fair);
    s["fairShare"]["heldOfFair"] = ratio;
  }
  std::snprintf(buf, sizeof buf, "%.3f", decayed / (static_cast<double>(t.spec.weight_milli) / 1000.0));
  s["share"] = buf;
  // Spend, in the budget's period (a calendar month without a budget).
  const api::BudgetPeriod kind = t.spec.budget ? t.spec.budget->period : api::BudgetPeriod::Month;
  const Period period = budget_period(kind, zone_of(policy), now);
  Spend before;
  const json& old = kube::object_at(t.status, "spend");
  before.period = kube::string_at(old, "period");
  before.spent = kube::int_at(old, "spentMicros").value_or(0);
  for (const auto& [uid, v] : kube::object_at(old, "counted").items()) before.counted[uid] = kube::int_at(kube::object_at(old, "counted"), uid.c_str()).value_or(0);
  const Spend after = count_spend(before, accrued, period);
  const std::string currency = policy ? policy->currency : "USD";
  s["spend"] = {{"period", after.period}, {"periodEnd", kube::format_time(period.end)}, {"spentMicros", after.spent},
                {"spent", api::format_money(after.spent)}, {"counted", after.counted},
                {"summary", api::format_money(after.spent) + (t.spec.budget ? "/" + api::format_money(t.spec.budget->amount) : "") + " " + currency}};
  s["waitingTasks"] = waiting;
  // Conditions.
  json conds = json::array();
  std::string conflict;
  for (const auto& c : conflicts) conflict += (conflict.empty() ? "" : "; ") + c;
  conds.push_back(conflict.empty() ? condition("Ready", true, "Accepted", "quotas in force", t.status, now, t.spec.generation)
                                   : condition("Ready", false, "NamespaceConflict", conflict, t.status, now, t.spec.generation));
  if (t.spec.budget) {
    const BudgetState b = budget_state(t.spec, s["spend"], policy, now);
    conds.push_back(b.spent ? condition("BudgetExhausted", true, "BudgetSpent", b.reason, t.status, now, t.spec.generation)
                            : condition("BudgetExhausted", false, "WithinBudget",
                                        api::format_money(after.spent) + " of " + api::format_money(t.spec.budget->amount) + " " + currency +
                                            " spent for " + period.name,
                                        t.status, now, t.spec.generation));
  }
  s["conditions"] = conds;
  return s;
}

json invalid_tenant_status(const json& old_status, const std::string& errors, int64_t generation, kube::SystemTime now) {
  return {{"observedGeneration", generation},
          {"conditions", json::array({condition("Ready", false, "InvalidSpec", utf8_head(errors, 2000), old_status, now, generation)})}};
}

int effective_priority(std::optional<int> asked, const api::TenantSpec* tenant, bool* capped) {
  if (capped) *capped = false;
  if (!tenant) return asked.value_or(0);
  int p = asked ? *asked : tenant->default_priority.value_or(0);
  if (p > tenant->max_priority) {
    if (capped) *capped = true;
    p = tenant->max_priority;
  }
  return p;
}

std::map<std::string, std::string> published_ownership(const std::vector<TenantObject>& tenants, const Ownership& ownership) {
  std::map<std::string, const api::TenantSpec*> by_name;
  for (const auto& t : tenants) by_name[t.spec.name] = &t.spec;
  std::map<std::string, std::string> out;
  for (const auto& [ns, tenant] : ownership.owner) {
    auto spec = by_name.find(tenant);
    if (spec == by_name.end()) continue;
    out[ns] = tenant;
    out[ns + ".maxPriority"] = std::to_string(spec->second->max_priority);
  }
  return out;
}

PoolUse pool_use(const std::vector<planner::Node>& nodes, std::vector<TaskPods> tasks, const Ownership& ownership) {
  PoolUse out;
  std::map<std::string, std::string> pool_of;  // node -> pool
  for (const auto& n : nodes) {
    if (n.vendor.empty()) continue;
    const std::string pool = planner::pool_of(n);
    pool_of[n.name] = pool;
    for (const auto& [resource, units] : n.capacity) out.capacity[pool] += gpu::share_milli(resource, units);
  }
  for (auto& t : tasks) {
    auto owner = ownership.owner.find(t.ns);
    const std::string tenant = owner == ownership.owner.end() ? "" : owner->second;
    for (const auto& [node, milli] : t.running)
      if (auto pool = pool_of.find(node); pool != pool_of.end()) {
        t.use.held_milli[pool->second] += milli;
        out.used[tenant][pool->second] += milli;
      }
    out.tasks[tenant].push_back(std::move(t.use));
  }
  return out;
}

std::map<std::string, int64_t> fair_shares_now(const std::vector<TenantObject>& tenants, const PoolUse& use) {
  std::map<std::string, planner::FairShareClaim> claims;
  for (const auto& t : tenants) {
    planner::FairShareClaim& c = claims[t.spec.name];
    c.weight = static_cast<double>(t.spec.weight_milli) / 1000.0;
    if (auto used = use.used.find(t.spec.name); used != use.used.end())
      for (const auto& [pool, milli] : used->second) c.demand += milli;
    if (auto tasks = use.tasks.find(t.spec.name); tasks != use.tasks.end())
      for (const auto& task : tasks->second) c.demand += task.waiting ? task.wants_milli : 0;
  }
  int64_t capacity = 0;
  for (const auto& [pool, milli] : use.capacity) capacity += milli;
  return planner::fair_shares(capacity, claims);
}

}  // namespace valley::tenancy
