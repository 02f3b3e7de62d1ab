#include "controllers/task/task_reconciler.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "controllers/api/task_status.h"
#include "controllers/cost/engine.h"
#include "controllers/render/network_policy.h"
#include "controllers/render/render.h"
#include "controllers/render/ssh_keys.h"
#include "controllers/task/metrics.h"
#include "controllers/task/status_writer.h"
#include "operator/kube/error.h"
#include "operator/kube/field_mask.h"
#include "operator/kube/json_fields.h"
#include "operator/kube/remote_clock.h"

namespace valley::task {

namespace res = kube::resources;

std::string expectation_id(const std::string& kind, const std::string& ns, const std::string& name) { return kind + " " + ns + "/" + name; }

TaskReconciler::TaskReconciler(kube::Api& client, kube::EventRecorder& events, ClusterCache& cache, AdmissionBoard& board,
                               Refusals& refusals, Accounting& accounting, const ControllerOptions& options, std::function<void()> replan)
    : client_(client),
      events_(events),
      cache_(cache),
      board_(board),
      refusals_(refusals),
      accounting_(accounting),
      options_(options),
      replan_(std::move(replan)),
      requests_(std::make_unique<kube::RequestPool>(options_.max_concurrent_creates)),
      checkpoints_(client_, options_.checkpoint_poll,
                   [this](const std::string& key, const std::string& error) {
                     {
                       std::lock_guard lock(checkpoint_errors_mu_);
                       checkpoint_errors_[key] = error;
                     }
                     enqueue(key);
                   },
                   options_.task_egress_except),
      transfers_(client_, options_.checkpoint_poll, [this](const std::string& key) { enqueue(key); }, options_.task_egress_except),
      loop_("trainingtask", "", options_.workers, [this](const std::string& key) { return reconcile(key); }) {}

void TaskReconciler::observed_owned(const std::string& kind, const std::string& ns, const std::string& name, const std::string& uid) {
  expectations_.observed(expectation_id(kind, ns, name), uid);
}

Result TaskReconciler::task_gone(const std::string& key) {
  checkpoints_.forget(key);
  transfers_.forget(key);
  written_.forget(key);
  forget_owned_objects(key);
  {
    std::lock_guard lock(held_mu_);
    held_since_.erase(key);
  }
  {
    std::lock_guard lock(deleted_mu_);
    deleted_by_valley_.erase(key);
  }
  // Deleted: owner references let the garbage collector remove the rest; its pods are charged
  // until they stop (Valley deletes those left behind), its final cost kept in its record, and then
  // they are released.
  const auto slash = key.find('/');
  const std::string ns = key.substr(0, slash), name = key.substr(slash + 1);
  if (!accounting_.release_foreign_pods(ns, name, "", false) || !settle_deleted(ns, name, "")) return Result::after(std::chrono::seconds(2));
  return accounting_.release_foreign_pods(ns, name, "") ? Result::done() : Result::retry();
}

void TaskReconciler::observe_gpus(lifecycle::Observed& o) {
  if (!cache_.gpu().enabled() || !o.parsed.spec) return;
  const std::string ns = o.parsed.spec->ns;
  // Its GPUs' utilization as of the latest poll, and the idlePolicy in force (its own, else its tenant's).
  std::vector<std::string> running;
  for (const auto& p : o.pods)
    if (p.phase == "Running") running.push_back(ns + "/" + p.name);
  // A new reading once per utilization interval: the status is not rewritten at every poll.
  const auto last = kube::time_at(kube::object_at(o.task["status"], "utilization"), "updated");
  if (auto r = cache_.gpu().reading(running); r && (!last || r->at - *last >= options_.utilization_interval)) o.gpu_reading = std::move(r);
  o.idle_policy = o.parsed.spec->idle_policy;
  if (o.idle_policy) return;
  const auto owner = cache_.owner_of_namespace(ns);
  if (auto t = owner ? cache_.tenants().store().get(*owner) : nullptr)
    if (auto parsed = api::parse_tenant(*t); parsed.spec) o.idle_policy = parsed.spec->idle_policy;
}

void TaskReconciler::observe_checkpoint(lifecycle::Observed& o, const std::string& key) {
  if (!o.parsed.spec) return;
  checkpoints_.watch(*o.parsed.spec);
  o.checkpoint = checkpoints_.latest(key);
  std::string error;
  {
    std::lock_guard lock(checkpoint_errors_mu_);
    if (auto it = checkpoint_errors_.find(key); it != checkpoint_errors_.end()) {
      error = it->second;
      checkpoint_errors_.erase(it);
    }
  }
  if (!error.empty()) events_.warning(o.task, "CheckpointUnreadable", "ReadCheckpoint", error);
}

lifecycle::Observed TaskReconciler::observe(const std::string& key, const kube::ObjectPtr& task, const std::vector<planner::PodPtr>& owned) {
  lifecycle::Observed o;
  // The status this process wrote last, while the informer still shows the task from before it.
  const kube::ObjectPtr seen = written_.latest(key, task);
  if (seen != task) spdlog::debug("{}: the cache shows the task from before our last status write: deciding on that write", key);
  // Every read of the status below (cost, phase, restarts) and in the lifecycle sees it as the CRD
  // declares it: fields of another type read as absent (controllers/api/task_status.h).
  o.task = api::readable_task(*seen);
  o.parsed = api::parse_task(o.task);
  if (o.parsed.spec && !o.parsed.spec->pod_security.level) o.parsed.spec->pod_security.level = options_.pod_security;
  if (o.parsed.spec) o.parsed.spec->io_image = options_.io_image;
  if (o.parsed.spec && o.parsed.spec->data) {
    auto& data = *o.parsed.spec->data;
    data.cache_class = options_.data_cache_class;
    const nlohmann::json& listed = kube::object_at(kube::object_at(o.task, "status"), "data");
    if (kube::string_at(listed, "uri") == data.uri) data.cache_bytes = static_cast<uint64_t>(std::max<int64_t>(0, kube::int_at(listed, "bytes").value_or(0)));
  }
  o.now = kube::cluster_clock().now();
  o.refusal = refusals_.of(key, o.task, [this](const std::string& ns) { return cache_.namespace_labels(ns); });
  const std::string ns = o.task["metadata"].value("namespace", "");
  const std::string name = o.task["metadata"].value("name", "");
  const std::string uid = o.task["metadata"].value("uid", "");
  // Reserved: a PodView is large, and each regrowth of the vector is an allocation big enough to
  // make glibc consolidate every small block the reconcile has freed so far.
  o.pods.reserve(owned.size());
  for (const auto& pod : owned) o.pods.push_back(lifecycle::view_pod(*pod));
  {
    // Kept while the pod is: a uid is never reused.
    std::lock_guard lock(deleted_mu_);
    auto it = deleted_by_valley_.find(key);
    if (it != deleted_by_valley_.end()) {
      for (const auto& p : o.pods)
        if (it->second.count(p.uid)) o.deleted_by_valley.insert(p.uid);
      if (o.deleted_by_valley.empty()) deleted_by_valley_.erase(it);
      else it->second = o.deleted_by_valley;
    }
  }
  observe_gpus(o);
  o.nodes_known = true;
  o.disruption = options_.disruption;
  o.spot_labels = cache_.node_facts().spot_labels;
  o.launcher_pool = options_.launcher_pool;
  o.planned_nodes = options_.node_requirements;
  for (const auto& level : options_.planner.topology) o.topology.push_back(level.name);
  for (const auto& p : o.pods) {
    if (p.node.empty() || o.nodes.count(p.node)) continue;
    if (auto n = cache_.node(p.node)) {
      lifecycle::NodeView v{n->ready, n->not_ready_since, n->notice, n->fault, {}};
      for (const auto& level : options_.planner.topology) {
        auto label = n->labels.find(level.label);
        v.domains.push_back(label == n->labels.end() ? "" : label->second);
      }
      o.nodes[p.node] = std::move(v);
    }
  }
  observe_checkpoint(o, key);
  // Listed (the whole set: its size sizes a node's cache) only while the task waits for it.
  if (o.parsed.spec && lifecycle::waits_for_data(*o.parsed.spec, kube::object_at(o.task, "status"))) {
    transfers_.check_data(*o.parsed.spec);
    o.data = transfers_.data(key);
  }
  o.outputs = transfers_.outputs(key);
  o.service_exists = cache_.services().store().get(ns + "/" + render::service_name(name)) != nullptr;
  // Asked only once the task was admitted at some point: the status records an epoch before anything
  // is created, so a task without one owns no Secret yet (a stale cache fails its status write first).
  const bool admitted_once = kube::int_at(kube::object_at(o.task, "status"), "epoch").value_or(0) > 0;
  o.secret_exists = admitted_once && owned_object_exists(kube::resources::kSecrets, ns, render::ssh_secret_name(name), uid);
  o.isolate = options_.task_network_policies;
  o.egress_except = options_.task_egress_except;
  o.network_policy_exists =
      o.isolate && admitted_once && owned_object_exists(kube::resources::kNetworkPolicies, ns, render::network_policy_name(name), uid);
  o.admission = board_.admission(key);
  return o;
}

TaskReconciler::Accounted TaskReconciler::accounted_pods(const lifecycle::Observed& o, const std::vector<planner::PodPtr>& owned) const {
  Accounted a;
  for (size_t k = 0; k < owned.size(); ++k) {
    if (!holds_accounting(*owned[k])) continue;
    const lifecycle::PodView& p = o.pods[k];
    auto n = o.nodes.find(p.node);
    const bool node_gone = !p.node.empty() && (n == o.nodes.end() || planner::not_ready_past(n->second.ready, n->second.not_ready_since, o.now,
                                                                                              o.disruption.node_not_ready_grace));
    const bool stuck = p.deleting && p.deletion_deadline && o.now - *p.deletion_deadline >= o.disruption.stuck_termination;
    const bool unreported = p.deleting && (p.node.empty() || node_gone || stuck);
    // Its outputs sidecar uploading still (the kubelet stops it after the workload): the pod is
    // kept until it has ended, so its exit reaches the status (outputsNotKept).
    const bool uploading = p.outputs_running && !unreported;
    if ((p.deleting || cost::pod_use(*owned[k]).end) && !uploading) a.pods.emplace_back(owned[k], unreported);
    if (unreported) a.ended_now.insert(p.uid);
  }
  return a;
}

lifecycle::Decision TaskReconciler::decide_and_price(lifecycle::Observed& o, const std::vector<planner::PodPtr>& owned, const Accounted& accounted) {
  // Cost first: the lifecycle decides on the budget with what has accrued until now.
  const bool ended_before = lifecycle::finished(kube::string_at(o.task["status"], "phase"));
  const nlohmann::json stored_cost = kube::object_at(o.task["status"], "cost");
  // The final cost is written once the task has ended and none of its pods holds a GPU any more:
  // workers still running after the end (until the cleanup deletes them) are still paid for.
  const bool pods_hold_gpus = std::any_of(owned.begin(), owned.end(), [&](const planner::PodPtr& pod) {
    const cost::PodUse use = cost::pod_use(*pod);
    return use.share_milli > 0 && !use.end && !accounted.ended_now.count(use.uid);
  });
  if (!ended_before || !stored_cost.contains("final")) {
    nlohmann::json cost = accounting_.cost_status(o, owned, ended_before && !pods_hold_gpus, !accounted.pods.empty(), accounted.ended_now);
    if (!cost.empty()) o.task["status"]["cost"] = cost;
  }
  lifecycle::Decision d = lifecycle::decide(o);
  const bool priced = cache_.policy() != nullptr;
  const bool ended_after = lifecycle::finished(d.status.value("phase", ""));
  if (ended_after && !ended_before && priced) {
    lifecycle::Observed final_view = o;
    final_view.task["status"] = d.status;
    d.status["cost"] = accounting_.cost_status(final_view, owned, !pods_hold_gpus, true, accounted.ended_now);
  } else if (!d.delete_pods.empty() && priced && !stored_cost.contains("final")) {
    // Pods about to be deleted are charged up to now, in the status written before they go: once
    // gone, the time since the last accrual could no longer be charged.
    lifecycle::Observed now_view = o;
    now_view.task["status"] = d.status;
    // (Pods without the accounting finalizer vanish unpriced: closed now.)
    std::set<std::string> closing = accounted.ended_now;
    for (const auto& del : d.delete_pods)
      if (auto pod = std::find_if(owned.begin(), owned.end(), [&](const planner::PodPtr& x) { return x->uid == del.uid; });
          pod != owned.end() && !holds_accounting(**pod))
        closing.insert(del.uid);
    d.status["cost"] = accounting_.cost_status(now_view, owned, false, true, closing);
  }
  if (kube::object_at(d.status, "cost") != stored_cost) d.status_changed = true;
  if (((!ended_before && !ended_after) || pods_hold_gpus) && !owned.empty() && priced) {
    if (const auto every = accounting_.accrual_interval(); !d.requeue_after || *d.requeue_after > every) d.requeue_after = every;
  }
  // Utilization is read while its pods run.
  if (cache_.gpu().enabled() && !ended_after && !owned.empty() && (!d.requeue_after || *d.requeue_after > options_.utilization_interval))
    d.requeue_after = options_.utilization_interval;
  return d;
}

std::chrono::milliseconds TaskReconciler::hold_left(const std::string& key) {
  const auto now = std::chrono::steady_clock::now();
  // A progress-only change may be held status_hold_window, or the tasks' share of the progress write
  // rate when that is longer: at a thousand tasks starting at once, most reach Running before their
  // counts would be written (one write from admission to Running instead of two).
  const auto window = lifecycle::status_hold(options_.status_hold_window, board_.admitted_count(), options_.progress_writes_per_second);
  std::lock_guard lock(held_mu_);
  const auto first = held_since_.try_emplace(key, now).first->second;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(first + window - now);
  return std::max(left, std::chrono::milliseconds(0));
}

void TaskReconciler::hold_progress(const std::string& key, const lifecycle::Observed& o, const nlohmann::json& stored_status, const Accounted& accounted,
                              lifecycle::Decision& d) {
  // A change that only brings counts, the accrued cost or utilization up to date waits (up to the
  // hold after the first such change) for the next change worth writing at once (a phase, a
  // condition, an epoch) and goes out with it; so does a new task's "waiting for the capacity
  // planner" until the plan's first word on it. Not when pods are deleted or released: their cost
  // must be in the status before they go. What else the decision says is carried out.
  if (!d.status_changed || options_.status_hold_window.count() <= 0 || !accounted.pods.empty() ||
      !lifecycle::status_may_wait(stored_status, d, o.admission.has_value()))
    return;
  if (const auto wait = hold_left(key); wait.count() > 0) {
    d.status_changed = false;
    const auto again = std::chrono::duration_cast<std::chrono::seconds>(wait + std::chrono::milliseconds(999));
    if (!d.requeue_after || *d.requeue_after > again) d.requeue_after = again;
  }
}

std::optional<Result> TaskReconciler::write_status(const std::string& key, const lifecycle::Observed& o, const lifecycle::Decision& d) {
  if (!d.status_changed) return std::nullopt;
  {
    std::lock_guard lock(held_mu_);
    held_since_.erase(key);
  }
  nlohmann::json updated = kube::all_but(o.task, "status");
  updated["status"] = d.status;
  StatusWrite w = task::write_status(client_, res::kTrainingTasks, updated);
  if (w.outcome == StatusWrite::Gone) return Result::done();
  if (!w.done()) {
    // 409: our cache was behind; the informer brings the fresh object and we decide again.
    if (w.outcome == StatusWrite::Conflict) controller_metrics().status_conflicts.inc({});
    spdlog::debug("{}: status update: {}", key, w.error);
    return Result::retry();
  }
  written_.wrote(key, o.task, std::move(w.answer));
  const std::string phase_before = kube::string_at(o.task["status"], "phase"), phase_after = d.status.value("phase", "");
  // A new epoch is news even in the same phase (a disruption while restarting): the log says why.
  const int64_t epoch_before = kube::int_at(o.task["status"], "epoch").value_or(0), epoch_after = d.status.value("epoch", int64_t{0});
  if (phase_after != phase_before || epoch_after != epoch_before)
    spdlog::info("{} -> {}: {}", phase_before.empty() ? "new" : phase_before, phase_after, d.status.value("message", ""));
  count_restarts(o, d);
  return std::nullopt;
}

void TaskReconciler::count_restarts(const lifecycle::Observed& o, const lifecycle::Decision& d) {
  auto& m = controller_metrics();
  // Restarts this process decided (the write succeeded, so each is counted once).
  const auto& before = kube::object_at(kube::object_at(o.task, "status"), "restarts");
  const auto& after = kube::object_at(d.status, "restarts");
  // Disruptions this process handled, and the work they cost once the task runs again.
  const auto& last_before = kube::object_at(kube::object_at(o.task, "status"), "lastDisruption");
  const auto& last_after = kube::object_at(d.status, "lastDisruption");
  const std::string disruption = kube::string_at(last_after, "cause");
  if (!disruption.empty() && kube::string_at(last_after, "time") != kube::string_at(last_before, "time")) m.disruptions.inc({disruption});
  if (!disruption.empty() && last_after.contains("workLostSeconds") && !last_before.contains("workLostSeconds") && o.parsed.spec) {
    const double gpus = static_cast<double>(kube::int_at(last_after, "workers").value_or(0)) * (o.parsed.spec->gpus.milli / 1000.0);
    m.gpu_hours_lost.inc({disruption}, static_cast<double>(kube::int_at(last_after, "workLostSeconds").value_or(0)) * gpus / 3600.0);
  }
  for (const char* cause : {"failures", "resizes", "moves", "preemptions", "disruptions"}) {
    int64_t delta = after.value(cause, int64_t{0}) - before.value(cause, int64_t{0});
    if (delta > 0) m.restarts.inc({std::string(cause).substr(0, std::string(cause).size() - 1)}, static_cast<double>(delta));
  }
}

bool TaskReconciler::settle_deleted(const std::string& ns, const std::string& name, const std::string& live_uid) {
  const std::string key = ns + "/" + name;
  kube::ObjectPtr last;
  {
    std::lock_guard lock(deleted_mu_);
    if (auto it = last_seen_.find(key); it != last_seen_.end()) last = it->second;
  }
  if (!last && !live_uid.empty()) return true;  // a live task with no deleted one seen before it
  if (!accounting_.settle_deleted(ns, name, last, live_uid)) return false;
  std::lock_guard lock(deleted_mu_);
  last_seen_.erase(key);
  return true;
}

void TaskReconciler::task_deleted(const kube::ObjectPtr& last) {
  std::lock_guard lock(deleted_mu_);
  last_seen_[kube::object_key(*last)] = last;
}

bool TaskReconciler::keep_cost_record(const lifecycle::Observed& o, const lifecycle::Decision& d, const Accounted& accounted,
                                      const nlohmann::json& stored_status) {
  const nlohmann::json& cost = kube::object_at(d.status, "cost");
  if (cost.empty()) return true;  // not priced
  const bool final_now = cost.contains("final") && !kube::object_at(stored_status, "cost").contains("final");
  if (accounted.pods.empty() && !final_now) return true;
  return accounting_.keep_record(o.task, d.status);
}

bool TaskReconciler::release_accounted(const lifecycle::Observed& o, const lifecycle::Decision& d, const Accounted& accounted) {
  const auto& meta = kube::object_at(o.task, "metadata");
  const std::string ns = kube::string_at(meta, "namespace"), name = kube::string_at(meta, "name"), uid = kube::string_at(meta, "uid");
  // An earlier task of this name, deleted and replaced before it was settled: its pods first.
  const bool settled = settle_deleted(ns, name, uid);
  // The status now holds every accounted pod's cost (or nothing is priced): release them.
  bool released = true;
  const nlohmann::json& written = kube::object_at(d.status, "cost");
  const bool priced = cache_.policy() && o.parsed.spec && !written.contains("final");
  for (const auto& [pod, unreported] : accounted.pods)
    if (!priced || unreported || cost::charged_to_end(cost::pod_use(*pod), written)) released &= accounting_.release(*pod);
  released &= accounting_.release_foreign_pods(ns, name, uid, settled);
  return released && settled;
}

bool TaskReconciler::delete_pods(const std::string& key, const lifecycle::Observed& o, const lifecycle::Decision& d) {
  bool ok = true;
  const std::string ns = o.task["metadata"].value("namespace", "");
  for (const auto& del : d.delete_pods) {
    kube::DeleteOptions opts;
    opts.precondition_uid = del.uid;  // never delete a newer pod that took the name meanwhile
    opts.precondition_resource_version = del.resource_version;
    if (del.force) opts.grace_period_seconds = 0;
    try {
      client_.remove(res::kPods, ns, del.name, opts);
      {
        std::lock_guard lock(deleted_mu_);
        deleted_by_valley_[key].insert(del.uid);
      }
      spdlog::debug("{}: deleted pod {} (uid {}, status epoch {})", key, del.name, del.uid, d.status.value("epoch", 0));
      if (del.force) spdlog::info("{}: force-deleted pod {} (its node is lost or it outlived its grace period)", key, del.name);
    } catch (const kube::KubeError& e) {
      if (e.http_status() != 409 && e.http_status() != 404) {
        spdlog::warn("{}: delete pod {}: {}", key, del.name, e.what());
        ok = false;
      }
    }
  }
  return ok;
}

bool TaskReconciler::patch_hostfile(const std::string& key, const lifecycle::Observed& o, const lifecycle::Decision& d) {
  if (!d.launcher_hostfile) return true;
  try {
    client_.patch(res::kPods, o.task["metadata"].value("namespace", ""), render::launcher_name(o.task["metadata"].value("name", "")),
                  kube::PatchType::Merge, {{"metadata", {{"annotations", {{api::kHostfileAnnotation, *d.launcher_hostfile}}}}}});
  } catch (const kube::KubeError& e) {
    if (e.http_status() != 404) {  // gone meanwhile: the next reconcile makes another
      spdlog::warn("{}: update the launcher's hostfile: {}", key, e.what());
      return false;
    }
  }
  return true;
}

Result TaskReconciler::reconcile(const std::string& key) {
  kube::ObjectPtr task = cache_.task(key);
  if (!task) return task_gone(key);
  const auto& meta = kube::object_at(*task, "metadata");
  const std::string ns = kube::string_at(meta, "namespace"), name = kube::string_at(meta, "name");
  if (cache_.namespace_going(ns)) {
    // Its namespace's deletion takes the task too, and the namespace controller deletes the pods
    // first: that is no disruption to recover from; only the pods' accounting is let go. (The cost
    // in its status goes with the task; so do its outputs: the store's Secret goes with the namespace.)
    std::optional<std::chrono::seconds> unused;
    const bool finalized = keep_outputs_finalizer(key, *task, nullptr, kube::object_at(*task, "status"), &unused);
    return accounting_.release_foreign_pods(ns, name, "") && finalized ? Result::done() : Result::retry();
  }
  const auto owned = cache_.pods_owned_by(ns, kube::string_at(meta, "uid"));
  lifecycle::Observed o = observe(key, task, owned);
  // Pods that hold the accounting finalizer and are done: their cost is brought up to date in this
  // reconcile's status write, and then they are released.
  const Accounted accounted = accounted_pods(o, owned);
  const nlohmann::json stored_status = o.task["status"];
  lifecycle::Decision d = decide_and_price(o, owned, accounted);
  hold_progress(key, o, stored_status, accounted, d);
  if (auto stop = write_status(key, o, d)) return *stop;
  const bool finalized = keep_outputs_finalizer(key, *task, o.parsed.spec ? &*o.parsed.spec : nullptr, d.status, &d.requeue_after);
  // Every charge of a pod about to be released goes to the task's durable record first.
  const bool recorded = keep_cost_record(o, d, accounted, stored_status);
  const bool released = recorded && release_accounted(o, d, accounted);
  if (d.collect_outputs && o.parsed.spec) {
    nlohmann::json ended = o.task;
    ended["status"] = d.status;
    transfers_.keep_outputs(key, *o.parsed.spec, std::move(ended));
  }
  for (const auto& ev : d.events) events_.record(o.task, ev.type, ev.reason, ev.action, ev.note);
  if (d.delete_task) {
    kube::DeleteOptions opts;
    opts.precondition_uid = kube::string_at(meta, "uid");
    client_.remove(res::kTrainingTasks, ns, name, opts);
    spdlog::info("{}: deleted {}s after finishing (ttlSecondsAfterFinished)", key,
                 o.parsed.spec ? o.parsed.spec->run_policy.ttl_seconds_after_finished.value_or(0) : 0);
    return Result::done();
  }
  bool ok = delete_pods(key, o, d);
  if (d.status.value("phase", "") == "Restarting" && kube::string_at(o.task["status"], "phase") != "Restarting") checkpoints_.poke(key);
  auto creations = seat_workers(o, d, owned);
  for (auto& c : creations_of(o, d)) creations.push_back(std::move(c));
  bool namespace_going = false;
  ok &= create(key, o, creations, &namespace_going);
  ok &= patch_hostfile(key, o, d);
  ok &= release_data_caches(key, o, d);
  if (namespace_going) {
    spdlog::info("{}: namespace {} is being deleted; not creating anything more", key, ns);
    return Result::done();
  }
  return {ok && released && finalized, d.requeue_after};
}

}  // namespace valley::task
