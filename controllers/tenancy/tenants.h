// Tenants as the reconciler sees them, purely: which namespace belongs to which tenant, what the
// planner is told about each (quota, weight, decayed usage, whether its budget holds or stops its
// work), and the status Valley keeps on each Tenant (usage per pool, fair share, spend this period,
// conditions). The reconciler (controllers/task) feeds these from its caches and writes the results.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "controllers/api/pricing_policy.h"
#include "controllers/api/tenant.h"
#include "controllers/planner/planner.h"

namespace valley::tenancy {

struct TenantObject {
  api::TenantSpec spec;
  kube::SystemTime created{};
  nlohmann::json status = nlohmann::json::object();
};

// Each namespace to at most one tenant: the oldest that claims it (then by name). A namespace two
// tenants claim is a conflict, reported on both ("namespace x is also claimed by tenant y").
struct Ownership {
  std::map<std::string, std::string> owner;                    // namespace -> tenant
  std::map<std::string, std::vector<std::string>> conflicts;  // tenant -> messages
};
Ownership assign_namespaces(const std::vector<TenantObject>& tenants,
                            const std::map<std::string, std::map<std::string, std::string>>& namespace_labels);

// The budget period now, in the policy's time zone (UTC without one), and whether the tenant's
// spend recorded in its status has reached its budget in it.
struct BudgetState {
  bool spent = false;
  std::string reason;  // "TenantBudget: ..." when spent
};
// `spend`: the spend record in the Tenant's status.
BudgetState budget_state(const api::TenantSpec& t, const nlohmann::json& spend, const api::Policy* policy, kube::SystemTime now);

// What the planner is told about the tenant at `now`.
planner::Tenant planner_tenant(const TenantObject& t, const api::Policy* policy, kube::SystemTime now,
                               std::chrono::seconds half_life);

// A task of the tenant, as its status shows it: accrued cost and GPUs held by pool (thousandths).
struct TaskUse {
  std::string uid;
  api::Micros accrued = 0;
  std::map<std::string, int64_t> held_milli;
  bool waiting = false;  // not admitted (Pending)
  int64_t wants_milli = 0;  // while waiting: the GPU thousandths it asks for at its full size
};
// A task as the tenant usage counts it: its namespace, accrued cost, whether it waits, and the GPU
// thousandths each of its running pods holds on its node.
struct TaskPods {
  std::string ns;
  TaskUse use;  // held_milli left empty: pool_use fills it
  std::vector<std::pair<std::string, int64_t>> running;  // node, thousandths
};
// What every tenant's tasks hold per pool, the capacity of each pool, and each tenant's tasks.
struct PoolUse {
  std::map<std::string, std::map<std::string, int64_t>> used;  // tenant ("" for none) -> pool -> thousandths
  std::map<std::string, int64_t> capacity;                      // pool -> thousandths, of the GPU nodes
  std::map<std::string, std::vector<TaskUse>> tasks;            // tenant ("" for none) -> its tasks
};
PoolUse pool_use(const std::vector<planner::Node>& nodes, std::vector<TaskPods> tasks, const Ownership& ownership);

// Each tenant's fair share of all the pools now (planner/fair_share.h), thousandths of a GPU: by
// weight, over what it holds plus what its waiting tasks ask for at full size.
std::map<std::string, int64_t> fair_shares_now(const std::vector<TenantObject>& tenants, const PoolUse& use);

// What `tenant` lends now, per pool, in thousandths of a GPU. Others' use beyond their nominal is
// served first by capacity no tenant is guaranteed, then by the tenants' idle nominal (within their
// lending limits) in proportion to how much each has idle. `used`: tenant -> pool -> thousandths,
// every tenant's (work without a tenant under ""); `capacity`: pool -> thousandths.
std::map<std::string, int64_t> lent_milli(const std::string& tenant, const std::vector<TenantObject>& tenants,
                                          const std::map<std::string, std::map<std::string, int64_t>>& used,
                                          const std::map<std::string, int64_t>& capacity);

// The Tenant's next status: usage per pool against nominal, what it lends (`lent`, per pool), decayed usage brought to `now` (the GPUs
// held now taken as held since the last update), spend counted in the period, conditions.
// `fair_now`: its fair share now (fair_shares_now); the status keeps it decayed beside the GPUs held,
// and their ratio: the share it held of its fair share over about the last half-life.
nlohmann::json tenant_status(const TenantObject& t, const std::vector<TaskUse>& tasks, const std::map<std::string, int64_t>& lent,
                             const std::vector<std::string>& conflicts, const api::Policy* policy, kube::SystemTime now,
                             std::chrono::seconds half_life, int64_t fair_now = 0);

// The status of a Tenant whose spec Valley cannot use: Ready False, InvalidSpec, the errors (the
// condition's transition time kept while it stays so, so that rewriting it changes nothing).
nlohmann::json invalid_tenant_status(const nlohmann::json& old_status, const std::string& errors, int64_t generation,
                                     kube::SystemTime now);

// Ownership as published for the API server's admission policies (deploy/policies/): one entry per
// owned namespace, "<namespace>" -> its tenant, and "<namespace>.maxPriority" -> that tenant's maximum
// priority (namespace names have no dots, so the keys never collide). A ConfigMap's data: CEL
// looks a namespace up in it, with the same owner the planner uses (the oldest claimant).
std::map<std::string, std::string> published_ownership(const std::vector<TenantObject>& tenants, const Ownership& ownership);

// A task's effective priority under its tenant: its own if set (capped at the tenant's maximum),
// else the tenant's default, else 0. `capped` says the cap applied.
int effective_priority(std::optional<int> asked, const api::TenantSpec* tenant, bool* capped = nullptr);

}  // namespace valley::tenancy
