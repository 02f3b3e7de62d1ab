#include "controllers/api/tenant.h"

#include <algorithm>
#include <set>

#include "controllers/api/field_reader.h"

namespace valley::api {
namespace {

// A GPU amount: an integer (16) or a decimal string ("16", "2.5"), thousandths kept.
std::optional<int64_t> gpus_milli(FieldReader& r, const json& o, const char* key, const std::string& path) {
  if (!o.contains(key)) return std::nullopt;
  const json& v = o[key];
  std::optional<int64_t> milli;
  if (v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() <= 1'000'000) milli = v.get<int64_t>() * 1000;
  if (v.is_string()) milli = parse_milli(v.get<std::string>());
  if (!milli || *milli < 0 || *milli > 1'000'000'000) {
    r.error(path + ": must be a number of GPUs like 8 or \"2.5\" (0 to 1000000)");
    return std::nullopt;
  }
  return milli;
}

std::optional<LabelSelector> selector(FieldReader& r, const json& o, const std::string& path) {
  if (!o.is_object()) {
    r.error(path + ": must be a label selector");
    return std::nullopt;
  }
  LabelSelector s;
  if (o.contains("matchLabels")) {
    if (!o["matchLabels"].is_object()) r.error(path + ".matchLabels: must be a map of strings");
    else
      for (const auto& [k, v] : o["matchLabels"].items()) {
        if (!v.is_string()) r.error(path + ".matchLabels." + k + ": must be a string");
        else s.match_labels[k] = v.get<std::string>();
      }
  }
  r.each(o, "matchExpressions", path + ".matchExpressions", [&](const json& e, const std::string& p) {
    SelectorRequirement q;
    q.key = r.str(e, "key", p + ".key");
    q.op = r.str(e, "operator", p + ".operator");
    if (q.key.empty()) r.error(p + ".key: required");
    static const std::set<std::string> kOps = {"In", "NotIn", "Exists", "DoesNotExist"};
    if (!kOps.count(q.op)) r.error(p + ".operator: must be In, NotIn, Exists or DoesNotExist");
    r.each(e, "values", p + ".values", [&](const json& v, const std::string& vp) {
      if (!v.is_string()) r.error(vp + ": must be a string");
      else q.values.push_back(v.get<std::string>());
    });
    if ((q.op == "In" || q.op == "NotIn") && q.values.empty()) r.error(p + ".values: required for " + q.op);
    s.match_expressions.push_back(q);
  });
  return s;
}

}  // namespace

const std::vector<std::string>& quota_pools() {
  static const std::vector<std::string> kPools = {"nvidia/on-demand", "nvidia/spot", "amd/on-demand", "amd/spot"};
  return kPools;
}

bool LabelSelector::matches(const std::map<std::string, std::string>& labels) const {
  for (const auto& [k, v] : match_labels) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  return kube::selects_labels(match_expressions, labels);
}

bool TenantSpec::owns(const std::string& ns, const std::map<std::string, std::string>& ns_labels) const {
  if (std::find(namespaces.begin(), namespaces.end(), ns) != namespaces.end()) return true;
  return namespace_selector && namespace_selector->matches(ns_labels);
}

const PoolQuota* TenantSpec::quota(const std::string& pool) const {
  for (const auto& q : quotas)
    if (q.pool == pool) return &q;
  return nullptr;
}

ParsedTenant parse_tenant(const json& object) {
  ParsedTenant out;
  FieldReader r{out.errors};
  TenantSpec t;
  if (object.is_object() && object.contains("metadata") && object["metadata"].is_object()) {
    const json& m = object["metadata"];
    t.name = r.str(m, "name", "metadata.name");
    t.uid = r.str(m, "uid", "metadata.uid");
    if (m.contains("generation") && m["generation"].is_number_integer()) t.generation = m["generation"].get<int64_t>();
  }
  if (!object.is_object() || !object.contains("spec") || !object["spec"].is_object()) {
    r.error("spec: required");
    return out;
  }
  const json& spec = object["spec"];
  r.each(spec, "namespaces", "spec.namespaces", [&](const json& n, const std::string& path) {
    if (!n.is_string() || n.get<std::string>().empty()) r.error(path + ": must be a namespace name");
    else t.namespaces.push_back(n.get<std::string>());
  });
  if (spec.contains("namespaceSelector")) t.namespace_selector = selector(r, spec["namespaceSelector"], "spec.namespaceSelector");
  if (t.namespaces.empty() && !t.namespace_selector) r.error("spec: namespaces or namespaceSelector is required");
  std::set<std::string> seen;
  r.each(spec, "quotas", "spec.quotas", [&](const json& q, const std::string& path) {
    PoolQuota pq;
    pq.pool = r.str(q, "pool", path + ".pool");
    const auto& pools = quota_pools();
    if (std::find(pools.begin(), pools.end(), pq.pool) == pools.end())
      r.error(path + ".pool: must be one of nvidia/on-demand, nvidia/spot, amd/on-demand, amd/spot");
    else if (!seen.insert(pq.pool).second)
      r.error(path + ".pool: " + pq.pool + " is listed twice");
    pq.nominal_milli = gpus_milli(r, q, "nominal", path + ".nominal").value_or(0);
    if (!q.contains("nominal")) r.error(path + ".nominal: required");
    pq.borrowing_limit_milli = gpus_milli(r, q, "borrowingLimit", path + ".borrowingLimit");
    pq.lending_limit_milli = gpus_milli(r, q, "lendingLimit", path + ".lendingLimit");
    if (pq.lending_limit_milli && *pq.lending_limit_milli > pq.nominal_milli)
      r.error(path + ".lendingLimit: cannot exceed nominal (it lends only what it is guaranteed)");
    t.quotas.push_back(pq);
  });
  t.weight_milli = r.milli(spec, "weight", "spec.weight", 1000);
  if (t.weight_milli <= 0 || t.weight_milli > 1'000'000) r.error("spec.weight: must be above 0 and at most 1000");
  if (spec.contains("budget")) {
    const json& b = spec["budget"];
    if (!b.is_object()) {
      r.error("spec.budget: must be an object");
    } else {
      Budget budget;
      budget.amount = r.money(b, "amount", "spec.budget.amount", true);
      const std::string period = r.str(b, "period", "spec.budget.period", "Month");
      if (period == "Day") budget.period = BudgetPeriod::Day;
      else if (period == "Week") budget.period = BudgetPeriod::Week;
      else if (period == "Month") budget.period = BudgetPeriod::Month;
      else r.error("spec.budget.period: must be Day, Week or Month");
      const std::string action = r.str(b, "action", "spec.budget.action", "Wait");
      if (action == "Wait") budget.action = BudgetAction::Wait;
      else if (action == "Suspend") budget.action = BudgetAction::Suspend;
      else r.error("spec.budget.action: must be Wait or Suspend");
      t.budget = budget;
    }
  }
  t.max_priority = r.integer(spec, "maxPriority", "spec.maxPriority", 100, 0, 100);
  if (spec.contains("defaultPriority")) {
    t.default_priority = r.integer(spec, "defaultPriority", "spec.defaultPriority", 0, 0, 100);
    if (*t.default_priority > t.max_priority) r.error("spec.defaultPriority: cannot exceed maxPriority");
  }
  if (spec.contains("idlePolicy")) {
    if (!spec["idlePolicy"].is_object()) r.error("spec.idlePolicy: must be an object");
    else if (auto p = parse_idle_policy(spec["idlePolicy"], "spec.idlePolicy", &out.errors)) t.idle_policy = *p;
  }
  if (out.errors.empty()) out.spec = std::move(t);
  return out;
}

const char* to_string(BudgetPeriod p) {
  switch (p) {
    case BudgetPeriod::Day: return "Day";
    case BudgetPeriod::Week: return "Week";
    case BudgetPeriod::Month: return "Month";
  }
  return "?";
}

const char* to_string(BudgetAction a) { return a == BudgetAction::Wait ? "Wait" : "Suspend"; }

}  // namespace valley::api
