#include "controllers/task/accounting.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "controllers/cost/engine.h"
#include "controllers/inputs/snapshot.h"
#include "controllers/render/render.h"
#include "operator/kube/remote_clock.h"
#include "operator/kube/error.h"
#include "operator/kube/finalizers.h"
#include "operator/kube/json_fields.h"

namespace valley::task {

namespace res = kube::resources;

bool holds_accounting(const api::Pod& pod) {
  return std::find(pod.finalizers.begin(), pod.finalizers.end(), render::kAccountingFinalizer) != pod.finalizers.end();
}

Accounting::Accounting(kube::Api& client, ClusterCache& cache, const ControllerOptions& options, std::function<size_t()> admitted_tasks)
    : client_(client), cache_(cache), options_(options), admitted_tasks_(std::move(admitted_tasks)), records_(client, options.ownership_namespace) {}

std::chrono::seconds Accounting::accrual_interval() const {
  return cost::accrual_interval(options_.cost_interval, admitted_tasks_(), options_.progress_writes_per_second);
}

nlohmann::json Accounting::cost_status(const lifecycle::Observed& o, const std::vector<planner::PodPtr>& pods, bool finished, bool force,
                                 const std::set<std::string>& ended_now) {
  // status.cost is not declared in the CRD: read tolerantly.
  const nlohmann::json& stored = kube::object_at(kube::object_at(o.task, "status"), "cost");
  auto p = cache_.policy();
  if (!p || !o.parsed.spec) return stored;
  std::vector<cost::PodUse> uses;
  std::map<std::string, cost::NodeRate> rates;
  const bool pod_ended = priced_uses(*p, o.parsed.spec->ns + "/" + o.parsed.spec->name, stored, pods, ended_now, o.now, uses, rates);
  // Accrued (a copy of the whole ledger) only when it is to be written.
  const auto updated = kube::time_at(stored, "updated");
  const bool due = force || finished || pod_ended || !updated || o.now - *updated >= accrual_interval() ||
                   kube::string_at(stored, "policy") != p->name ||
                   cost::ledger_entries(stored, uses, rates) != kube::array_at(stored, "ledger").size();
  // Billed at the priority it is planned at (a tenant's default or cap applied, not the raw spec);
  // before this process has planned it, at the one its last accrual recorded.
  const int priority = o.admission && o.admission->priority >= 0 ? o.admission->priority
                                                                 : static_cast<int>(kube::int_at(stored, "priority").value_or(o.parsed.spec->priority));
  nlohmann::json out = due ? cost::accrue(*p, stored, uses, rates, priority, o.now, finished, options_.cost_settle) : stored;
  if (due) out["updated"] = kube::format_time(o.now);
  if (finished) return out;
  return with_estimate(std::move(out), stored, o, *p);
}

bool Accounting::priced_uses(const cost::Policy& p, const std::string& task_key, const nlohmann::json& stored,
                             const std::vector<planner::PodPtr>& pods, const std::set<std::string>& ended_now, kube::SystemTime now,
                             std::vector<cost::PodUse>& uses, std::map<std::string, cost::NodeRate>& rates) const {
  bool pod_ended = false;
  std::map<std::string, int64_t> until;
  for (const auto& e : kube::array_at(stored, "ledger")) until[kube::string_at(e, "uid")] = kube::int_at(e, "untilMs").value_or(0);
  for (const auto& pod : pods) {
    cost::PodUse u = cost::pod_use(*pod);
    if (!u.end && ended_now.count(u.uid)) u.end = now;
    if (auto n = u.node.empty() ? nullptr : cache_.node_as_last_seen(u.node)) {
      u.share_milli = planner::share_on_node(*pod, *n);  // by the node's split of its GPUs, not the pod's annotations
      if (!rates.count(u.node)) rates[u.node] = cost::rate_for(p, n->vendor, n->labels, n->dra_product);
    } else if (!u.node.empty() && !pod->priced_as.vendor.empty() && !rates.count(u.node)) {
      // Its node went before this process saw it: priced as its node was when Valley created it.
      rates[u.node] = cost::rate_for_class(p, pod->priced_as);
    }
    if (u.start && u.share_milli > 0 && !rates.count(u.node) && !until.count(u.uid))
      spdlog::warn("{}: pod {} ran on node {}, gone before this process saw it: its GPU time cannot be priced", task_key, u.name, u.node);
    if (u.end && until.count(u.uid) &&
        until[u.uid] < std::chrono::duration_cast<std::chrono::milliseconds>(u.end->time_since_epoch()).count())
      pod_ended = true;
    uses.push_back(std::move(u));
  }
  return pod_ended;
}

bool Accounting::keep_record(const nlohmann::json& task, const nlohmann::json& status) {
  const nlohmann::json& meta = kube::object_at(task, "metadata");
  api::CostRecord r;
  r.ns = kube::string_at(meta, "namespace");
  r.name = kube::string_at(meta, "name");
  r.uid = kube::string_at(meta, "uid");
  r.phase = kube::string_at(status, "phase");
  r.cost = kube::object_at(status, "cost");
  return records_.keep(r);
}

bool Accounting::settle_deleted(const std::string& ns, const std::string& name, const kube::ObjectPtr& last, const std::string& live_uid) {
  // The incarnations to settle: the one just deleted (its last status), those whose record is not
  // final (deleted while no operator ran), and those whose pods are still held for their cost.
  std::map<std::string, api::CostRecord> open;
  if (last) {
    const nlohmann::json& meta = kube::object_at(*last, "metadata");
    api::CostRecord r;
    r.ns = ns;
    r.name = name;
    r.uid = kube::string_at(meta, "uid");
    r.phase = kube::string_at(kube::object_at(*last, "status"), "phase");
    r.cost = kube::object_at(kube::object_at(*last, "status"), "cost");
    open[r.uid] = r;
  }
  const auto pods = cache_.pods_of_task(ns, name);
  const bool held = std::any_of(pods.begin(), pods.end(), [](const planner::PodPtr& p) { return holds_accounting(*p); });
  if (!last && held) {
    try {
      for (auto& r : records_.of_task(ns, name))
        if (!r.final()) open.emplace(r.uid, r);
    } catch (const kube::KubeError& e) {
      spdlog::warn("{}/{}: reading its cost records: {}", ns, name, e.what());
      return false;
    }
  }
  for (const auto& pod : pods)
    if (holds_accounting(*pod))
      for (const auto& uid : pod->owner_uids) open.try_emplace(uid, api::CostRecord{ns, name, uid, "", false, nlohmann::json::object()});
  open.erase(live_uid);  // a new task of the name: not deleted
  auto p = cache_.policy();
  const auto now = kube::cluster_clock().now();
  for (auto& [uid, record] : open) {
    if (record.final()) {
      record.deleted = true;
      if (!records_.keep(record)) return false;
      continue;
    }
    // Its pods: those naming it, and those detached from it (owner references gone with --cascade=orphan).
    std::vector<planner::PodPtr> its;
    for (const auto& pod : pods)
      if ((pod->owner_uids.empty() && live_uid.empty()) || std::count(pod->owner_uids.begin(), pod->owner_uids.end(), uid)) its.push_back(pod);
    std::set<std::string> ended_now;
    for (const auto& pod : its) {
      const cost::PodUse u = cost::pod_use(*pod);
      if (u.share_milli <= 0 || !u.start || u.end) continue;
      // Charged until it stops: its containers end when the garbage collector (or Valley) deletes
      // it; one whose node never reports that is closed now.
      const bool stuck = pod->deletion_timestamp && now - *pod->deletion_timestamp >= options_.disruption.stuck_termination;
      if (!stuck) return false;
      ended_now.insert(u.uid);
    }
    if (!p && record.cost.empty()) continue;  // nothing prices it: no cost to keep
    if (p) {
      std::vector<cost::PodUse> uses;
      std::map<std::string, cost::NodeRate> rates;
      priced_uses(*p, ns + "/" + name, record.cost, its, ended_now, now, uses, rates);
      const int priority = static_cast<int>(kube::int_at(record.cost, "priority").value_or(0));
      record.cost = cost::accrue(*p, record.cost, uses, rates, priority, now, true, std::chrono::seconds(0));
      record.cost["updated"] = kube::format_time(now);
    }
    record.deleted = true;
    if (record.phase.empty()) record.phase = "Deleted";
    if (!records_.keep(record)) return false;
    spdlog::info("{}/{}: deleted; its final cost {} is kept in {}/{}", ns, name, kube::string_at(record.cost, "final", "(not priced)"),
                 records_.ns(), api::cost_record_name(uid));
  }
  return true;
}

// The estimate: from the planner's decision (the pool it gets or waits for, when, at what size),
// refreshed when that changes.
nlohmann::json Accounting::with_estimate(nlohmann::json out, const nlohmann::json& stored, const lifecycle::Observed& o, const cost::Policy& p) const {
  const api::TaskSpec& spec = *o.parsed.spec;
  if (!spec.estimated_duration || !o.admission || !o.admission->estimate_basis) return out;
  cost::EstimateBasis basis = *o.admission->estimate_basis;
  basis.spread = cache_.duration_spread(spec.ns);
  auto e = cost::estimate(p, spec, basis);
  if (!e) return out;
  nlohmann::json j = cost::estimate_json(p, *e);
  j["placed"] = o.admission->admitted;
  j["generation"] = spec.generation;
  const nlohmann::json old = stored.value("estimate", nlohmann::json::object());
  // Time moves the start of a waiting task's estimate: only a new pool, size, price or a start
  // moved by more than a minute is news.
  auto start_of = [](const nlohmann::json& x) { return kube::parse_time(x.value("start", "")); };
  auto s_old = start_of(old), s_new = start_of(j);
  const bool moved = !s_old || !s_new || std::chrono::abs(*s_new - *s_old) > std::chrono::minutes(1);
  if (old.empty() || old.value("basis", "") != j.value("basis", "") || old.value("placed", false) != j.value("placed", false) ||
      old.value("generation", int64_t{-1}) != spec.generation || moved) {
    out["estimate"] = j;
    out["estimated"] = j["expected"];
    out["policy"] = p.name;
    out["currency"] = p.currency;
  }
  return out;
}

bool Accounting::release(const api::Pod& pod) {
  return kube::remove_finalizer(client_, res::kPods, pod.ns, pod.name, pod.finalizers, render::kAccountingFinalizer);
}

bool Accounting::delete_detached(const api::Pod& pod, bool task_live) {
  kube::DeleteOptions options;
  options.precondition_uid = pod.uid;
  try {
    client_.remove(res::kPods, pod.ns, pod.name, options);
    // Of a deleted task the garbage collector would delete it too, unless it was orphaned.
    if (task_live || pod.owner_uids.empty())
      spdlog::warn("{}: Valley's pod of task {} is owned by no live task of that name: deleted", pod.key(), pod.label(render::label::kTask));
    else
      spdlog::debug("{}: pod of deleted task {}: deleted", pod.key(), pod.label(render::label::kTask));
    return true;
  } catch (const kube::KubeError& e) {
    if (e.http_status() == 404 || e.http_status() == 409) return true;  // gone, or another pod of the name now
    spdlog::warn("{}: deleting a pod of no task: {}", pod.key(), e.what());
    return false;
  }
}

bool Accounting::release_foreign_pods(const std::string& ns, const std::string& task, const std::string& owner_uid, bool release_them) {
  bool ok = true;
  // By the task label's index: every reconcile asks, and walking every pod would grow with the cluster.
  for (const auto& pod : cache_.pods_of_task(ns, task)) {
    const bool owned = !owner_uid.empty() && std::count(pod->owner_uids.begin(), pod->owner_uids.end(), owner_uid) > 0;
    if (owned) continue;
    if (pod->made_by_valley() && !pod->deleting) ok &= delete_detached(*pod, !owner_uid.empty());
    if (release_them && holds_accounting(*pod)) ok &= release(*pod);
  }
  return ok;
}

}  // namespace valley::task
