// The epoch a task runs: admission or waiting, resizes, its pods (decider.h).
#include "controllers/lifecycle/decider.h"
#include "controllers/lifecycle/topology_status.h"

#include <algorithm>
#include <set>
#include <map>

#include "controllers/api/task_status.h"
#include "controllers/cost/engine.h"
#include "controllers/lifecycle/start_failure.h"
#include "controllers/planner/planner.h"
#include "controllers/planner/scaling.h"
#include "controllers/render/network_policy.h"
#include "controllers/render/render.h"
#include "controllers/render/transfers.h"
#include "operator/kube/json_fields.h"

namespace valley::lifecycle::detail {

using kube::format_time;
using kube::parse_time;

// The epoch the task runs, or why it does not: stopped (deadline, suspension, idle, budget),
// waiting for or given its admission, resized, decided by its pods, its objects made.
void Decider::run_epoch() {
  epoch_ = static_cast<int>(status_.value("epoch", 0));
  if (finished(phase_)) {
    after_end();
    return;
  }
  if (stopped()) return;
  resume_if_suspended();
  record_checkpoint();
  if (data_pending()) return;
  const lifecycle::Admission* adm = o_.admission ? &*o_.admission : nullptr;
  if (!admitted(adm)) return;
  const int workers = adm ? adm->workers : static_cast<int>(status_.value("epochReplicas", desired_workers(*spec_)));
  status_["desiredReplicas"] = workers;
  resize(workers, adm);
  status_["epochReplicas"] = workers;
  if (decided_by_pods()) return;
  if (start_failed()) return;
  ensure_objects(workers);
}

// spec.data before the first admission: DataReady from what the controller read of the store; the
// task waits (holding nothing) until its data lists. True while it waits.
bool Decider::data_pending() {
  if (!spec_->data || epoch_ > 0) return false;
  if (!o_.data) {
    if (!find_condition(status_, kDataReady))
      set_condition(status_, kDataReady, false, "Checking", "listing " + spec_->data->uri, now_, generation_);
    return waits_for_data(*spec_, status_);
  }
  const json* before = find_condition(status_, kDataReady);
  const bool was_ready = before && before->value("status", "") == "True";
  set_condition(status_, kDataReady, o_.data->ready, o_.data->ready ? "DataReadable" : kDataUnavailable, o_.data->message, now_, generation_);
  if (o_.data->ready) {
    status_["data"] = data_status(*spec_, *o_.data);
    return false;
  }
  if (status_.value("reason", "") != kDataUnavailable || status_.value("message", "") != o_.data->message || was_ready)
    event("Warning", kDataUnavailable, "CheckData", o_.data->message);
  set_phase(kPending, kDataUnavailable, o_.data->message);
  return true;
}

// Deleted, the deadline passed, or the task is suspended (by its spec, while idle, over its budget): true
// when nothing more runs in this reconcile.
bool Decider::stopped() {
  if (deleting_) {
    finish(false, kDeleted,
           spec_->outputs ? "deleted before it ended: its pods stop, what they keep is uploaded (partial) with Valley's report"
                          : "deleted before it ended: its pods stop");
    return true;
  }
  // Deadline, measured from the first admission.
  if (auto deadline = spec_->run_policy.active_deadline_seconds) {
    if (auto start = parse_time(status_.value("startTime", ""))) {
      auto end = *start + std::chrono::seconds(*deadline);
      if (o_.now >= end) {
        finish(false, "DeadlineExceeded", "ran longer than activeDeadlineSeconds (" + std::to_string(*deadline) + "s)");
        return true;
      }
      d_.requeue_after = std::chrono::duration_cast<std::chrono::seconds>(end - o_.now) + std::chrono::seconds(1);
    }
  }
  observe_utilization();
  if (spec_->run_policy.suspend) {
    suspend("Suspended", "runPolicy.suspend is true: pods stopped", "pods stopped; resume by setting runPolicy.suspend to false");
    return true;
  }
  if (idle_suspended(*spec_, status_)) {
    suspend("Idle", condition_field(status_, "Idle", "message"), condition_field(status_, "Idle", "message"));
    return true;
  }
  if (condition_true(status_, "Idle") && condition_field(status_, "Idle", "reason") == kIdleSuspend)
    // Suspended while idle, and the spec changed since: it runs again and is watched afresh.
    set_condition(status_, "Idle", false, "SpecChanged", "the spec changed: resumed, utilization watched again", now_, generation_);
  if (over_budget(*spec_, status_)) {
    const json& cost = status_["cost"];
    std::string message = "accrued " + cost.value("accrued", std::string("?")) + " " + cost.value("currency", std::string("")) +
                          " reached spec.maxCost " + api::format_money(*spec_->max_cost_micros) +
                          ": checkpointed and suspended; raise spec.maxCost to resume";
    set_condition(status_, "BudgetExceeded", true, "BudgetExceeded", message, now_, generation_);
    suspend("BudgetExceeded", message, message);
    return true;
  }
  if (condition_true(status_, "BudgetExceeded"))
    set_condition(status_, "BudgetExceeded", false, "BudgetRaised", "accrued cost is below spec.maxCost", now_, generation_);
  return false;
}

// Suspended before and no longer: resumes from the last checkpoint in a new epoch.
void Decider::resume_if_suspended() {
  if (phase_ != kSuspended) return;
  epoch_ += 1;
  status_["epoch"] = epoch_;
  set_phase(kAdmitted, "Resumed", "resumed as epoch " + std::to_string(epoch_));
  set_condition(status_, "Suspended", false, "Resumed", "no longer suspended", now_, generation_);
  event("Normal", "Resumed", "Resume", "resumed as epoch " + std::to_string(epoch_));
}

// Disruptions of a running epoch; a waiting task's admission (a new epoch) or its reason to wait; a
// running one the plan no longer admits is preempted. False when it does not run now.
bool Decider::admitted(const lifecycle::Admission* adm) {
  const bool waiting = phase_ == kPending || epoch_ == 0;
  if (!waiting) {
    if (!replaced_in_place())
      if (auto d = find_disruption()) disrupted(*d);
  }
  if (waiting) {
    // (A plan made before its start failed may still admit it: its backoff holds it back.)
    if (!adm || !adm->admitted || backing_off()) {
      wait(adm);
      return false;
    }
    if (epoch_ == 0) {
      epoch_ = 1;
    } else {
      epoch_ += 1;  // re-admitted after a preemption: resume from the checkpoint
    }
    status_["epoch"] = epoch_;
    status_["epochReplicas"] = adm->workers;
    if (!status_.contains("startTime")) status_["startTime"] = now_;
    std::string message = std::to_string(adm->workers) + (adm->workers == 1 ? " worker" : " workers") + " placed" + (adm->reason.empty() ? "" : ": " + adm->reason);
    set_phase(kAdmitted, "Admitted", message);
    set_condition(status_, "Admitted", true, "Admitted", message, now_, generation_);
    event("Normal", "Admitted", "Admit", message);
  } else if (adm && !adm->admitted) {
    // Between epochs (restarting after a disruption or failure) nothing runs to preempt: the
    // task just waits for capacity again.
    if (epoch_has_pods() && std::any_of(o_.pods.begin(), o_.pods.end(), [&](const PodView& p) { return p.epoch == epoch_ && !p.deleting; }))
      preempted(*adm);
    else
      wait(adm);
    return false;
  }
  return true;
}

// An MPI job's world size is fixed when mpirun starts: a new size is a new epoch, which resumes
// from the last checkpoint (VALLEY_RESUME=1), unless the task resizes hot.
void Decider::resize(int workers, const lifecycle::Admission* adm) {
  const int epoch_workers = static_cast<int>(status_.value("epochReplicas", workers));
  // No pod of this epoch exists yet (it is waiting for the last one to stop): a new size only
  // reshapes it, no restart.
  if (epoch_workers != workers && epoch_has_pods()) {
    bump(status_, "resizes");
    status_["lastResizeTime"] = now_;
    status_["lastResizeReason"] = adm ? adm->reason : std::string("replicas.target changed");
    const std::string why = " (" + status_["lastResizeReason"].get<std::string>() + ")";
    if (spec_->hot_elastic) {
      // The launcher keeps running; discover_hosts.sh and the worker set change under it.
      status_["epochReplicas"] = workers;
      event("Normal", "Resized", "Resize", "resized from " + std::to_string(epoch_workers) + " to " +
                                               std::to_string(workers) + " workers in place (elasticity Hot)" + why);
    } else {
      status_["epochReplicas"] = workers;
      next_epoch("Resizing", "Resize", "resizing from " + std::to_string(epoch_workers) + " to " + std::to_string(workers) +
                                           " workers as epoch " + std::to_string(epoch_ + 1) + why);
    }
    return;
  }
  if (adm && adm->moving && !spec_->hot_elastic && runs_off_plan()) {
    bump(status_, "moves");
    status_["lastResizeTime"] = now_;  // a move is a checkpoint-restart too: no resize right after it
    next_epoch("Moving", "Move", "moving " + std::to_string(workers) + " workers as epoch " + std::to_string(epoch_ + 1) + " (" + adm->reason + ")");
  }
}

void Decider::next_epoch(const std::string& reason, const std::string& action, const std::string& message) {
  epoch_ += 1;
  status_["epoch"] = epoch_;
  set_phase(kRestarting, reason, message);
  set_condition(status_, "Restarting", true, reason, message, now_, generation_);
  set_condition(status_, "Running", false, reason, message, now_, generation_);
  event("Normal", reason, action, message);
}

bool Decider::runs_off_plan() const {
  return std::any_of(o_.pods.begin(), o_.pods.end(),
                     [&](const PodView& p) { return p.epoch == epoch_ && !p.deleting && !p.node.empty() && replanned(p); });
}

// The epoch's deciding pod (the launcher, else worker 0: a Single task's pod, a PyTorch task's
// rendezvous host, whose torchrun ends when the training does) succeeded, or a pod of the epoch
// failed: true when that ended the task or the epoch's handling in this reconcile.
bool Decider::decided_by_pods() {
  const bool launcher = spec_->has_launcher();
  const std::string decider = launcher ? render::launcher_name(spec_->name) : render::worker_name(spec_->name, 0);
  for (const auto& p : o_.pods) {
    if (p.epoch != epoch_ || p.deleting || replacing(p)) continue;
    if (p.name == decider && p.phase == "Succeeded") {
      const char* who = launcher ? "the launcher" : spec_->type == api::TaskType::Single ? "the pod" : "worker 0 (torchrun's rendezvous host)";
      finish(true, "Succeeded", who + std::string(" completed successfully"));
      return true;
    }
    // Any pod of the epoch that fails ends the epoch: an MPI job cannot go on without a rank.
    if (p.phase == "Failed") {
      // A permanent-looking exit may be mpirun reporting a rank lost to a disruption whose
      // signal (node deleted, taint) has not reached us yet: give it a moment.
      const bool permanent = p.exit_code && *p.exit_code >= 1 && *p.exit_code <= 127;
      if (permanent && p.finished_at && o_.now - *p.finished_at < o_.disruption.failure_settle) {
        d_.requeue_after = std::chrono::duration_cast<std::chrono::seconds>(*p.finished_at + o_.disruption.failure_settle - o_.now) +
                           std::chrono::seconds(1);
        settling_ = true;
        continue;
      }
      int before = epoch_;
      failed(p);
      if (finished(phase_)) return true;
      if (epoch_ != before) break;
    }
  }
  return false;
}

// Not admitted (yet): no pods; the planner's reason and queue position in the status.
void Decider::wait(const Admission* adm) {
  // Its pods could not start: it says why until its backoff is over (the planner passes it over
  // meanwhile), unless the spec changes first.
  if (backing_off()) {
    phase_ = kPending;
    stop_all_pods();
    count_replicas();
    d_.requeue_after = std::chrono::duration_cast<std::chrono::seconds>(*start_backoff_until(*spec_, status_) - o_.now) + std::chrono::seconds(1);
    return;
  }
  std::string reason = adm ? adm->reason : "waiting for the capacity planner";
  std::string message = reason + (adm && adm->queue_position > 0 ? " (queue position " + std::to_string(adm->queue_position) + ")" : "");
  // When it expects to start, and (reduceCost) until when it waits for cheaper capacity: the
  // slack its deadline or patience leaves.
  if (adm && adm->expected_start) status_["expectedStart"] = kube::format_time(*adm->expected_start);
  else status_.erase("expectedStart");
  if (adm && adm->cheap_until) {
    status_["cheapCapacityUntil"] = kube::format_time(*adm->cheap_until);
    status_["slackSeconds"] = std::chrono::duration_cast<std::chrono::seconds>(*adm->cheap_until - o_.now).count();
  }
  if (status_.value("message", "") != message) {
    // A gang no node could hold says so in its reason (kubectl get's REASON column): waiting will
    // not help until the spec or the cluster changes.
    const bool unplaceable = reason.rfind("Unplaceable:", 0) == 0;
    const std::string word = unplaceable ? "Unplaceable" : "Waiting";
    // Before the first plan there is nothing to tell the user yet.
    if (adm && (phase_ != kPending || status_.value("reason", "") != word)) event(unplaceable ? "Warning" : "Normal", word, "Admit", message);
    set_phase(kPending, word, message);
    set_condition(status_, "Admitted", false, word, message, now_, generation_);
  }
  phase_ = kPending;
  stop_all_pods();
  count_replicas();
}

// Higher-priority work took this task's GPUs: stop its pods, count it, wait to be re-admitted.
void Decider::preempted(const Admission& adm) {
  bump(status_, "preemptions");
  std::string message = "preempted: " + adm.reason;
  set_phase(kPending, "Preempted", message);
  set_condition(status_, "Admitted", false, "Preempted", message, now_, generation_);
  set_condition(status_, "Running", false, "Preempted", message, now_, generation_);
  event("Warning", "Preempted", "Preempt", message);
  stop_all_pods();
  count_replicas();
}

void Decider::suspend(const std::string& reason, const std::string& message, const std::string& note) {
  if (phase_ != kSuspended || status_.value("reason", "") != reason) {
    set_phase(kSuspended, reason, message);
    set_condition(status_, "Suspended", true, reason, message, now_, generation_);
    set_condition(status_, "Running", false, reason, "suspended", now_, generation_);
    event(reason == "Suspended" ? "Normal" : "Warning", reason, "Suspend", note);
  }
  stop_all_pods();
  count_replicas();
}

std::string Decider::launcher_on_spot_warning(int workers) const {
  std::string cost = "everything its " + std::to_string(workers) + " workers ran until then is lost and run (and paid for) again";
  if (spec_->estimated_duration)
    cost += ", up to " + std::to_string(spec_->estimated_duration->count() / 60'000) + " minutes of work (spec.estimatedDuration)";
  return "the master template allows only spot nodes, so the launcher goes there although the task writes no checkpoint: "
         "a spot notice on the launcher's node restarts the task from its start, and " + cost +
         "; set spec.checkpoint to resume instead, or let the launcher run on on-demand nodes";
}

// A worker pinned to a node other than the one the plan now has for its index.
bool Decider::replanned(const PodView& p) const {
  return p.role == "worker" && !p.pinned.empty() && o_.admission && p.worker_index >= 0 &&
         p.worker_index < static_cast<int>(o_.admission->placement.size()) &&
         !o_.admission->placement[p.worker_index].node.empty() && o_.admission->placement[p.worker_index].node != p.pinned;
}

void Decider::ensure_objects(int workers) {
  const bool has_launcher = spec_->has_launcher();
  render::Shape shape{workers, epoch_};
  if (spec_->has_worker_service() && !o_.service_exists) d_.create.push_back(render::headless_service(*spec_));
  if (has_launcher && !o_.secret_exists) d_.create_ssh_secret = true;
  if (o_.isolate && !o_.network_policy_exists) d_.create.push_back(render::task_network_policy(*spec_, o_.egress_except));

  // Pods by name; stale ones (older epoch, index beyond the size, wrong role) go.
  std::map<std::string, const PodView*> by_name;
  auto stale = [&](const PodView& p) {
    if (p.epoch != epoch_ || (p.role == "worker" && p.worker_index >= workers) || (p.role == "launcher" && !has_launcher)) return true;
    // Not bound yet and the plan moved it (its node would not take it): start it where planned.
    return p.node.empty() && replanned(p);
  };
  stop_pods(stale);
  bool older_epoch_alive = false;
  for (const auto& p : o_.pods) {
    by_name[p.name] = &p;
    if (p.epoch != epoch_) older_epoch_alive = true;
  }
  int ready = 0;
  std::set<std::string> cache_claims;  // nodes
  for (int i = 0; i < workers; ++i) {
    std::string name = render::worker_name(spec_->name, i);
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      if (older_epoch_alive) continue;  // the last epoch is still stopping (checkpointing)
      // Only where the plan put it: unpinned, the scheduler could bind it to any node (one the plan
      // gave another task, or one outside --node-selector). After an operator restart the plan
      // comes within a round, and its publication wakes the task.
      if (!o_.admission || i >= static_cast<int>(o_.admission->placement.size())) continue;
      const render::WorkerPlacement& placement = o_.admission->placement[i];
      // Its node's data cache goes out before it (the creations skip one made already).
      if (render::uses_data_cache(*spec_, placement.node) && cache_claims.insert(placement.node).second)
        d_.create.push_back(render::data_cache_claim(*spec_, placement.node));
      d_.create.push_back(render::worker_pod(*spec_, i, shape, placement));
    } else if (it->second->epoch == epoch_ && !it->second->deleting && !replacing(*it->second) && it->second->phase == "Running" &&
               it->second->ready) {
      ++ready;
    }
  }
  count_replicas();
  // Replaced in place: recovered once the epoch is back at its size.
  if (phase_ == kRunning && ready == workers && kube::object_at(status_, "lastDisruption").value("inPlace", false)) recovered();

  bool running = false;
  if (has_launcher) {
    auto it = by_name.find(render::launcher_name(spec_->name));
    if (it == by_name.end()) {
      // The launcher goes out with its workers (one wave through the scheduler and the kubelets):
      // its init container holds mpirun until it can reach every worker (render::launcher_pod).
      // Without checkpoints, a launcher lost to a spot notice would cost the whole run: kept off spot.
      // Unless its template allows only spot nodes (the plan says so): the user's pin is honoured.
      static const std::vector<std::pair<std::string, std::string>> kNone;
      const bool uncheckpointed = spec_->checkpoint_uri.empty();
      const bool pinned_to_spot = uncheckpointed && o_.admission && o_.admission->launcher_on_spot;
      if (!older_epoch_alive) {
        d_.create.push_back(
            render::launcher_pod(*spec_, shape, {uncheckpointed && !pinned_to_spot ? o_.spot_labels : kNone, o_.launcher_pool, o_.planned_nodes}));
        if (pinned_to_spot) event("Warning", "LauncherOnSpot", "Launch", launcher_on_spot_warning(workers));
      }
    } else {
      // A launcher of this epoch lists the workers of this size (a resize in place changes it).
      const PodView& launcher = *it->second;
      if (std::string hosts = render::hostfile(*spec_, workers); launcher.epoch == epoch_ && !launcher.deleting && launcher.hostfile != hosts)
        d_.launcher_hostfile = std::move(hosts);
      // Running: the launcher runs and, to get there, every worker is Ready. (On a kubelet the
      // launcher's wait implies it; a simulated node runs the launcher at once. Once Running, a
      // worker briefly not Ready does not take the task back.)
      running = it->second->epoch == epoch_ && it->second->phase == "Running" && (phase_ == kRunning || ready == workers);
    }
  } else {
    // Every worker Ready; once Running, workers a resize in place adds do not take it back.
    running = ready == workers || (phase_ == kRunning && ready > 0);
  }

  const bool starts_running = running && phase_ != kRunning;
  if (starts_running) {
    std::string message = std::to_string(workers) + (workers == 1 ? " worker" : " workers") + " running (epoch " +
                          std::to_string(epoch_) + ")";
    set_phase(kRunning, "Running", message);
    set_condition(status_, "Running", true, "Running", message, now_, generation_);
    recovered();
    if (condition_true(status_, "Restarting"))
      set_condition(status_, "Restarting", false, "Running", "epoch " + std::to_string(epoch_) + " is running", now_, generation_);
    event("Normal", "Running", "Run", message);
  } else if (!running && phase_ == kRunning && !settling_) {
    // The launcher is gone or not running although the task did not end (deleted by hand); a task
    // without one has no worker Ready (its workers are ending, or were all taken).
    const std::string epoch = std::to_string(epoch_);
    set_phase(kAdmitted, "PodsStarting", has_launcher ? "waiting for the launcher of epoch " + epoch : "waiting for a worker of epoch " + epoch + " to be Ready");
    set_condition(status_, "Running", false, "PodsStarting", has_launcher ? "launcher not running" : "no worker Ready", now_, generation_);
  }
  report_topology(workers, starts_running);
}

// status.topology from the workers of this epoch that are bound; an Event when they run spread wider
// than spec.topology prefers (told as the epoch starts running, and when the spread changes).
void Decider::report_topology(int workers, bool starts_running) {
  if (o_.topology.empty()) return;
  std::vector<std::vector<std::string>> rows;
  for (const auto& p : o_.pods) {
    if (p.role != "worker" || p.epoch != epoch_ || p.node.empty() || p.deleting || p.worker_index >= workers) continue;
    auto it = o_.nodes.find(p.node);
    rows.push_back(it == o_.nodes.end() ? std::vector<std::string>{} : it->second.domains);
  }
  json now = topology_status(o_.topology, spec_->topology, rows);
  if (now.is_null()) return;  // nothing bound: it keeps saying where it ran last
  const json before = status_.value("topology", json());
  status_["topology"] = now;
  if (phase_ != kRunning) return;
  const int n = static_cast<int>(rows.size());
  if (std::string note = spread_wider(now, spec_->topology, n); !note.empty() && (starts_running || note != spread_wider(before, spec_->topology, n)))
    event("Warning", "SpreadWider", "Place", note);
}

}  // namespace valley::lifecycle::detail
