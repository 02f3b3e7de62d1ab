#include "controllers/task/lifecycle.h"

#include "controllers/planner/planner.h"
#include "controllers/planner/scaling.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <map>

#include "controllers/api/conditions.h"
#include "controllers/api/task_status.h"
#include "controllers/cost/engine.h"
#include "controllers/render/render.h"
#include "operator/kube/json_fields.h"

namespace valley::task {
namespace {

using kube::format_time;
using kube::parse_time;

constexpr const char* kPending = "Pending";
constexpr const char* kAdmitted = "Admitted";
constexpr const char* kRunning = "Running";
constexpr const char* kRestarting = "Restarting";
constexpr const char* kSuspended = "Suspended";
constexpr const char* kSucceeded = "Succeeded";
constexpr const char* kFailed = "Failed";
constexpr const char* kIdleSuspend = "IdleSuspend";  // the Idle condition's reason under idlePolicy Suspend

bool finished(const std::string& phase) { return phase == kSucceeded || phase == kFailed; }
bool pod_finished(const PodView& p) { return p.phase == "Succeeded" || p.phase == "Failed"; }

using api::condition_true;
using api::find_condition;
using api::set_condition;

// A field (reason, message) of the condition of `type`, "" when there is none.
std::string condition_field(const json& status, const std::string& type, const char* field) {
  const json* c = find_condition(status, type);
  return c ? c->value(field, "") : "";
}

int64_t counter(const json& status, const char* name) {
  if (!status.contains("restarts") || !status["restarts"].is_object()) return 0;
  return status["restarts"].value(name, int64_t{0});
}

void bump(json& status, const char* name) {
  if (!status.contains("restarts") || !status["restarts"].is_object()) status["restarts"] = json::object();
  status["restarts"][name] = counter(status, name) + 1;
  if (std::string(name) != "total") status["restarts"]["total"] = counter(status, "total") + 1;
}

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : sep) + i;
  return out;
}

class Decider {
 public:
  explicit Decider(const Observed& o)
      : o_(o),
        status_(api::readable_status(o.task.is_object() ? o.task.value("status", json::object()) : json::object())),
        before_(status_),
        now_(format_time(o.now)) {
    generation_ = kube::int_at(kube::object_at(o.task, "metadata"), "generation").value_or(0);
    phase_ = status_.value("phase", std::string(kPending));
    if (phase_.empty()) phase_ = kPending;
  }

  Decision run() {
    const std::string name = kube::string_at(kube::object_at(o_.task, "metadata"), "name");
    status_["selector"] = render::task_selector(name);
    status_["observedGeneration"] = generation_;
    if (!o_.parsed.spec) {
      invalid(join(o_.parsed.errors, "; "));
    } else if (auto why = render::launcher_too_large(*o_.parsed.spec)) {
      invalid(*why);
    } else {
      spec_ = &*o_.parsed.spec;
      live();
      report_refusal();
    }
    status_["phase"] = phase_;
    d_.status_changed = status_ != before_;
    d_.status = std::move(status_);
    return std::move(d_);
  }

 private:
  // status.utilization from the latest reading of its GPUs, and the Idle condition its idlePolicy
  // asks for: once its GPUs have been below the threshold for the policy's window, an Idle
  // condition and Event (Report), the planner sizing it at replicas.min (Shrink, see idle_shrink),
  // or a checkpoint and suspension until the spec changes (Suspend, see idle_suspended).
  void observe_utilization() {
    if (!o_.gpu_reading) return;
    const api::IdlePolicy p = o_.idle_policy.value_or(api::IdlePolicy{});
    status_["utilization"] = gpu::accrue(status_.value("utilization", json::object()), *o_.gpu_reading, p);
    if (o_.gpu_reading->gpus.empty()) return;  // no data says neither idle nor busy
    const json& u = status_["utilization"];
    if (gpu::idle_for(u, o_.now, p)) {
      if (condition_true(status_, "Idle")) return;  // said once per idle stretch
      const std::string message = "GPU utilization below " + std::to_string(p.below_percent) + "% since " + u.value("idleSince", "") +
                                  " (" + std::to_string(u.value("gpuPercent", 0)) + "% now; " + u.value("idleGpuHours", std::string("0.00")) +
                                  " idle GPU-hours so far)";
      const std::string reason = p.action == api::IdleAction::Report   ? "IdleGpus"
                                 : p.action == api::IdleAction::Shrink ? "IdleShrink"
                                                                       : kIdleSuspend;
      const std::string what = p.action == api::IdleAction::Report   ? "reported (idlePolicy Report)"
                               : p.action == api::IdleAction::Shrink ? "shrinking to replicas.min (idlePolicy Shrink)"
                                                                     : "checkpointing and suspending until the spec changes (idlePolicy Suspend)";
      set_condition(status_, "Idle", true, reason, message + ": " + what, now_, generation_);
      event("Warning", "Idle", p.action == api::IdleAction::Report ? "Report" : p.action == api::IdleAction::Shrink ? "Shrink" : "Suspend",
            message + ": " + what);
    } else if (condition_true(status_, "Idle") && condition_field(status_, "Idle", "reason") != kIdleSuspend) {
      set_condition(status_, "Idle", false, "Busy", "GPU utilization " + std::to_string(u.value("gpuPercent", 0)) + "%", now_, generation_);
    }
  }

  // PodsCreated: False with the API server's words while it refuses the task's objects; True again
  // once it takes them (only after a refusal: a task never refused carries no such condition).
  void report_refusal() {
    if (finished(phase_)) return;
    if (o_.refusal) {
      set_condition(status_, "PodsCreated", false, o_.refusal->reason, o_.refusal->message, now_, generation_);
      if (o_.refusal->blocking) {
        d_.create.clear();
        d_.create_ssh_secret = false;
        if (o_.refusal->retry_in) d_.requeue_after = *o_.refusal->retry_in;
      }
    } else if (find_condition(status_, "PodsCreated") != nullptr && !condition_true(status_, "PodsCreated")) {
      set_condition(status_, "PodsCreated", true, "Created", "the API server accepts the task's pods", now_, generation_);
    }
  }
  void event(const std::string& type, const std::string& reason, const std::string& action, const std::string& note) {
    d_.events.push_back({type, reason, action, note});
  }
  void set_phase(const std::string& phase, const std::string& reason, const std::string& message) {
    phase_ = phase;
    status_["reason"] = reason;
    status_["message"] = message;
  }
  // A node the pod is bound to that will never confirm its termination: deleted, or NotReady past
  // the grace period.
  bool node_lost(const PodView& p) const {
    if (!o_.nodes_known || p.node.empty()) return false;
    auto it = o_.nodes.find(p.node);
    if (it == o_.nodes.end()) return true;
    const NodeView& n = it->second;
    return planner::not_ready_past(n.ready, n.not_ready_since, o_.now, o_.disruption.node_not_ready_grace);
  }

  void delete_pod(const PodView& p) {
    const bool lost = node_lost(p);
    const bool stuck = p.deleting && p.deletion_deadline && o_.now - *p.deletion_deadline >= o_.disruption.stuck_termination;
    if (!p.deleting || lost || stuck) d_.delete_pods.push_back({p.name, p.uid, lost || stuck, p.node.empty() ? p.resource_version : ""});
  }

  // Stops pods so the workload can checkpoint: the launcher first (mpirun passes its SIGTERM to
  // every rank), the workers once it has finished, is gone, or its grace period is over. Pods on
  // lost nodes go at once, forcibly.
  template <typename Pred>
  void stop_pods(Pred which) {
    bool launcher_stopping = false;
    for (const auto& p : o_.pods) {
      if (!which(p) || p.role != "launcher" || pod_finished(p) || node_lost(p)) continue;
      const bool grace_over = p.deleting && p.deletion_deadline && o_.now >= *p.deletion_deadline;
      if (!grace_over) launcher_stopping = true;
      if (p.deleting && p.deletion_deadline && !grace_over)
        d_.requeue_after = std::chrono::duration_cast<std::chrono::seconds>(*p.deletion_deadline - o_.now) + std::chrono::seconds(1);
    }
    for (const auto& p : o_.pods) {
      if (!which(p)) continue;
      if (p.role == "launcher" || !launcher_stopping || pod_finished(p) || node_lost(p)) delete_pod(p);
    }
  }
  void stop_all_pods() {
    stop_pods([](const PodView&) { return true; });
  }

  void invalid(const std::string& message) {
    if (phase_ != kFailed || status_.value("reason", "") != "InvalidSpec")
      event("Warning", "InvalidSpec", "Validate", message.substr(0, 1000));
    set_phase(kFailed, "InvalidSpec", message);
    set_condition(status_, "Failed", true, "InvalidSpec", message, now_, generation_);
    if (!status_.contains("completionTime")) status_["completionTime"] = now_;
    for (const auto& p : o_.pods)
      if (!pod_finished(p)) delete_pod(p);
    count_replicas();
  }

  void count_replicas() {
    int replicas = 0, ready = 0;
    for (const auto& p : o_.pods) {
      if (p.role != "worker" || p.deleting || pod_finished(p) || p.epoch != epoch_) continue;
      ++replicas;
      if (p.ready) ++ready;
    }
    status_["replicas"] = replicas;
    status_["readyReplicas"] = ready;
  }

  // After the end: cleanPodPolicy, then ttlSecondsAfterFinished.
  void after_end() {
    const auto policy = spec_->run_policy.clean_pod_policy;
    for (const auto& p : o_.pods) {
      if (policy == api::CleanPodPolicy::All || (policy == api::CleanPodPolicy::Running && !pod_finished(p))) delete_pod(p);
    }
    if (auto ttl = spec_->run_policy.ttl_seconds_after_finished) {
      auto done = parse_time(status_.value("completionTime", ""));
      if (done) {
        auto expires = *done + std::chrono::seconds(*ttl);
        if (o_.now >= expires) {
          d_.delete_task = true;
        } else {
          d_.requeue_after = std::chrono::duration_cast<std::chrono::seconds>(expires - o_.now) + std::chrono::seconds(1);
        }
      }
    }
    count_replicas();
  }

  void finish(bool success, const std::string& reason, const std::string& message) {
    set_phase(success ? kSucceeded : kFailed, reason, message);
    status_["completionTime"] = now_;
    set_condition(status_, success ? "Succeeded" : "Failed", true, reason, message, now_, generation_);
    set_condition(status_, "Running", false, reason, message, now_, generation_);
    event(success ? "Normal" : "Warning", reason, "Finish", message);
    after_end();
  }

  // A pod of the current epoch that decides the task failed: retry in a new epoch or give up.
  void failed(const PodView& p) {
    std::string who = p.role == "launcher" ? "the launcher" : p.name;
    if (!p.failed_init.empty()) who += "'s init container " + p.failed_init;
    if (p.exit_code && *p.exit_code >= 1 && *p.exit_code <= 127) {
      std::string said = p.failed_init_message;
      while (!said.empty() && std::isspace(static_cast<unsigned char>(said.back()))) said.pop_back();
      if (auto nl = said.rfind('\n'); nl != std::string::npos) said = said.substr(nl + 1);  // its last line
      finish(false, "ExitCode", who + " exited with code " + std::to_string(*p.exit_code) +
                                    " (1-127: a permanent error, not retried)" + (said.empty() ? "" : ": " + said.substr(0, 300)));
      return;
    }
    std::string cause = p.exit_code ? "exit code " + std::to_string(*p.exit_code) : "no exit code (evicted or lost)";
    if (!p.exit_reason.empty()) cause += " (" + p.exit_reason + ")";
    int64_t used = counter(status_, "failures");
    if (used >= spec_->run_policy.backoff_limit) {
      finish(false, "BackoffLimitExceeded", who + " failed with " + cause + " after " + std::to_string(used) +
                                                " retries (backoffLimit " + std::to_string(spec_->run_policy.backoff_limit) + ")");
      return;
    }
    bump(status_, "failures");
    epoch_ += 1;
    status_["epoch"] = epoch_;
    std::string message = who + " failed with " + cause + "; retry " + std::to_string(used + 1) + " of " +
                          std::to_string(spec_->run_policy.backoff_limit) + " as epoch " + std::to_string(epoch_);
    set_phase(kRestarting, "RetryableFailure", message);
    set_condition(status_, "Restarting", true, "RetryableFailure", message, now_, generation_);
    set_condition(status_, "Running", false, "RetryableFailure", message, now_, generation_);
    event("Warning", "Restarting", "Restart", message);
  }

  struct Disruption {
    std::string cause, node, message;
  };

  // Something outside the task's control is taking a pod of the current epoch away.
  std::optional<Disruption> find_disruption() const {
    const bool mpi = spec_->type == api::TaskType::MPI;
    const int size = static_cast<int>(status_.value("epochReplicas", 0));
    std::map<std::string, const PodView*> current;
    for (const auto& p : o_.pods) {
      if (p.epoch != epoch_) continue;
      current[p.name] = &p;
      const std::string who = "pod " + p.name + (p.node.empty() ? "" : " on node " + p.node);
      if (!p.disruption.empty()) {
        std::string cause = p.disruption == "PreemptionByScheduler" ? "PreemptedByScheduler"
                            : p.disruption == "DeletionByTaintManager" ? "NodeTaint"
                            : p.disruption == "TerminationByKubelet" || p.disruption == "Shutdown" ||
                                      p.disruption == "NodeShutdown" || p.disruption == "Terminated"
                                ? "NodeShutdown"
                                : "Evicted";
        return Disruption{cause, p.node, who + " is being taken away (" + p.disruption + ")"};
      }
      if (pod_finished(p) && p.phase != "Failed") continue;
      if (o_.nodes_known && !p.node.empty()) {
        auto it = o_.nodes.find(p.node);
        if (it == o_.nodes.end()) return Disruption{"NodeLost", p.node, who + ": the node was deleted"};
        if (!it->second.notice.empty())
          return Disruption{"NodeNotice", p.node, who + ": the node has the termination notice " + it->second.notice};
        // A platform fault, never the task's: it checkpoints and moves, and no failure is counted.
        // (The launcher holds no GPU: a GPU fault on its node is not its concern.)
        if (!it->second.fault.empty() && p.role != "launcher")
          return Disruption{"GpuFault", p.node, who + ": the node reports a GPU fault (" + it->second.fault + ")"};
        if (node_lost(p)) return Disruption{"NodeNotReady", p.node, who + ": the node has not been Ready for " +
                                                                        std::to_string(o_.disruption.node_not_ready_grace.count()) + "s"};
      }
      // Deleted, but not by Valley: Valley deletes a current-epoch pod only beyond the size (Hot
      // shrink) or before it is bound (re-placement; before the epoch runs, it may have been bound
      // since, where the plan no longer has it).
      const bool ours = p.role == "worker" && (p.worker_index >= size || p.node.empty() || (phase_ != kRunning && replanned(p)));
      // (A kubelet marks a deleted pod Failed once its containers stopped: still a deletion.)
      if (p.deleting && !ours && p.phase != "Succeeded") return Disruption{"PodDeleted", p.node, who + " was deleted"};
    }
    // A pod of a running epoch vanished (force-deleted). Hot tasks add workers while running, so
    // only Restart ones can tell.
    if (phase_ == kRunning && !spec_->hot_elastic) {
      std::vector<std::string> expected;
      for (int i = 0; i < size; ++i) expected.push_back(render::worker_name(spec_->name, i));
      if (mpi) expected.push_back(render::launcher_name(spec_->name));
      for (const auto& name : expected)
        if (!current.count(name)) return Disruption{"PodDeleted", "", "pod " + name + " disappeared"};
    }
    return std::nullopt;
  }

  void disrupted(const Disruption& d) {
    bump(status_, "disruptions");
    const int old_epoch = epoch_;
    epoch_ += 1;
    status_["epoch"] = epoch_;
    json last = {{"time", now_}, {"cause", d.cause}, {"message", d.message}, {"epoch", old_epoch},
                 {"workers", status_.value("epochReplicas", 0)}};
    if (!d.node.empty()) last["node"] = d.node;
    if (status_.contains("checkpoint") && status_["checkpoint"].is_object()) last["checkpointStep"] = status_["checkpoint"].value("step", 0);
    status_["lastDisruption"] = last;
    std::string message = d.message + "; restarting from the last checkpoint as epoch " + std::to_string(epoch_);
    set_phase(kRestarting, d.cause, message);
    set_condition(status_, "Restarting", true, d.cause, message, now_, generation_);
    set_condition(status_, "Running", false, d.cause, message, now_, generation_);
    event("Warning", "Disrupted", "Restart", message);
    int grace = spec_->checkpoint_grace_seconds;
    event("Normal", "Checkpointing", "Stop",
          "stopping epoch " + std::to_string(old_epoch) + ": SIGTERM to the " +
              (spec_->type == api::TaskType::MPI ? std::string("launcher first") : std::string("pod")) + ", up to " +
              std::to_string(grace) + "s to checkpoint");
  }

  // The workload's latest.json (read by the controller from the store) or, for stores Valley
  // cannot read, the checkpoint record a pod left as its termination message.
  void record_checkpoint() {
    std::optional<storage::CheckpointRecord> best = o_.checkpoint;
    for (const auto& p : o_.pods) {
      if (p.termination_message.empty()) continue;
      if (auto r = storage::parse_checkpoint_record(p.termination_message, nullptr); r && (!best || r->step > best->step)) best = r;
    }
    if (!best) return;
    json c = {{"step", best->step}, {"time", best->time}, {"uri", spec_->checkpoint_uri}};
    if (best->epoch > 0) c["epoch"] = best->epoch;
    if (best->world_size > 0) c["worldSize"] = best->world_size;
    json& cur = status_["checkpoint"];
    // A store reset (new run, same prefix) may go backwards in step but never in time.
    if (!cur.is_object() || cur.value("time", "") < best->time || (cur.value("time", "") == best->time && cur.value("step", 0) != best->step)) {
      // Two records of the running epoch: its progress rate at this size (status.scaling).
      if (cur.is_object() && best->epoch > 0 && cur.value("epoch", 0) == best->epoch && best->epoch == epoch_ &&
          status_.value("replicas", 0) > 0)
        if (auto rate = planner::progress_rate(cur.value("step", int64_t{0}), cur.value("time", ""), best->step, best->time))
          status_["scaling"] = planner::scaling_json(
              planner::observe(planner::scaling_from(status_.value("scaling", json::array())), status_.value("replicas", 0), *rate));
      cur = c;
    }
  }

  // The epoch after a disruption is running: how long recovery took and what was lost.
  void recovered() {
    if (!status_.contains("lastDisruption") || !status_["lastDisruption"].is_object()) return;
    json& last = status_["lastDisruption"];
    if (last.contains("recoveredTime")) return;
    auto at = parse_time(last.value("time", ""));
    if (!at) return;
    last["recoveredTime"] = now_;
    int64_t seconds = std::chrono::duration_cast<std::chrono::seconds>(o_.now - *at).count();
    last["recoverySeconds"] = seconds;
    std::string lost = "unknown (no checkpoint reported)";
    if (status_.contains("checkpoint") && status_["checkpoint"].is_object()) {
      if (auto ct = parse_time(status_["checkpoint"].value("time", ""))) {
        int64_t w = std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::seconds>(*at - *ct).count());
        last["workLostSeconds"] = w;
        last["resumedFromStep"] = status_["checkpoint"].value("step", 0);
        lost = std::to_string(w) + "s (resumed from step " + std::to_string(status_["checkpoint"].value("step", 0)) + ")";
      }
    }
    event("Normal", "Recovered", "Recover",
          "running again " + std::to_string(seconds) + "s after the disruption (" + last.value("cause", "") + "); work lost: " + lost);
  }

  bool epoch_has_pods() const {
    return std::any_of(o_.pods.begin(), o_.pods.end(), [&](const PodView& p) { return p.epoch == epoch_; });
  }

  void live() {
    epoch_ = static_cast<int>(status_.value("epoch", 0));
    if (finished(phase_)) {
      after_end();
      return;
    }
    // Deadline, measured from the first admission.
    if (auto deadline = spec_->run_policy.active_deadline_seconds) {
      if (auto start = parse_time(status_.value("startTime", ""))) {
        auto end = *start + std::chrono::seconds(*deadline);
        if (o_.now >= end) {
          finish(false, "DeadlineExceeded", "ran longer than activeDeadlineSeconds (" + std::to_string(*deadline) + "s)");
          return;
        }
        d_.requeue_after = std::chrono::duration_cast<std::chrono::seconds>(end - o_.now) + std::chrono::seconds(1);
      }
    }
    observe_utilization();
    if (spec_->run_policy.suspend) {
      suspend("Suspended", "runPolicy.suspend is true: pods stopped", "pods stopped; resume by setting runPolicy.suspend to false");
      return;
    }
    if (idle_suspended(*spec_, status_)) {
      suspend("Idle", condition_field(status_, "Idle", "message"), condition_field(status_, "Idle", "message"));
      return;
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
      return;
    }
    if (condition_true(status_, "BudgetExceeded"))
      set_condition(status_, "BudgetExceeded", false, "BudgetRaised", "accrued cost is below spec.maxCost", now_, generation_);
    if (phase_ == kSuspended) {
      // Resume from the last checkpoint in a new epoch.
      epoch_ += 1;
      status_["epoch"] = epoch_;
      set_phase(kAdmitted, "Resumed", "resumed as epoch " + std::to_string(epoch_));
      set_condition(status_, "Suspended", false, "Resumed", "no longer suspended", now_, generation_);
      event("Normal", "Resumed", "Resume", "resumed as epoch " + std::to_string(epoch_));
    }
    record_checkpoint();
    const bool waiting = phase_ == kPending || epoch_ == 0;
    if (!waiting) {
      if (auto d = find_disruption()) disrupted(*d);
    }
    const Admission* adm = o_.admission ? &*o_.admission : nullptr;
    if (waiting) {
      if (!adm || !adm->admitted) {
        wait(adm);
        return;
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
      return;
    }
    const int workers = adm ? adm->workers : static_cast<int>(status_.value("epochReplicas", desired_workers(*spec_)));
    status_["desiredReplicas"] = workers;

    // An MPI job's world size is fixed when mpirun starts: a new size is a new epoch, which resumes
    // from the last checkpoint (VALLEY_RESUME=1).
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
        epoch_ += 1;
        status_["epoch"] = epoch_;
        status_["epochReplicas"] = workers;
        std::string message = "resizing from " + std::to_string(epoch_workers) + " to " + std::to_string(workers) +
                              " workers as epoch " + std::to_string(epoch_) + why;
        set_phase(kRestarting, "Resizing", message);
        set_condition(status_, "Restarting", true, "Resizing", message, now_, generation_);
        set_condition(status_, "Running", false, "Resizing", message, now_, generation_);
        event("Normal", "Resizing", "Resize", message);
      }
    }
    status_["epochReplicas"] = workers;

    // The deciding pod of this epoch.
    const bool mpi = spec_->type == api::TaskType::MPI;
    const std::string decider = mpi ? render::launcher_name(spec_->name) : render::worker_name(spec_->name, 0);
    for (const auto& p : o_.pods) {
      if (p.epoch != epoch_ || p.deleting) continue;
      if (p.name == decider && p.phase == "Succeeded") {
        finish(true, "Succeeded", (mpi ? "the launcher" : "the pod") + std::string(" completed successfully"));
        return;
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
        if (finished(phase_)) return;
        if (epoch_ != before) break;
      }
    }
    ensure_objects(workers, mpi);
  }

  // Not admitted (yet): no pods; the planner's reason and queue position in the status.
  void wait(const Admission* adm) {
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
      // Before the first plan there is nothing to tell the user yet.
      if (adm && (phase_ != kPending || status_.value("reason", "") != "Waiting")) event("Normal", "Waiting", "Admit", message);
      set_phase(kPending, "Waiting", message);
      set_condition(status_, "Admitted", false, "Waiting", message, now_, generation_);
    }
    phase_ = kPending;
    stop_all_pods();
    count_replicas();
  }

  // Higher-priority work took this task's GPUs: stop its pods, count it, wait to be re-admitted.
  void preempted(const Admission& adm) {
    bump(status_, "preemptions");
    std::string message = "preempted: " + adm.reason;
    set_phase(kPending, "Preempted", message);
    set_condition(status_, "Admitted", false, "Preempted", message, now_, generation_);
    set_condition(status_, "Running", false, "Preempted", message, now_, generation_);
    event("Warning", "Preempted", "Preempt", message);
    stop_all_pods();
    count_replicas();
  }

  void suspend(const std::string& reason, const std::string& message, const std::string& note) {
    if (phase_ != kSuspended || status_.value("reason", "") != reason) {
      set_phase(kSuspended, reason, message);
      set_condition(status_, "Suspended", true, reason, message, now_, generation_);
      set_condition(status_, "Running", false, reason, "suspended", now_, generation_);
      event(reason == "Suspended" ? "Normal" : "Warning", reason, "Suspend", note);
    }
    stop_all_pods();
    count_replicas();
  }

  // A worker pinned to a node other than the one the plan now has for its index.
  bool replanned(const PodView& p) const {
    return p.role == "worker" && !p.pinned.empty() && o_.admission && p.worker_index >= 0 &&
           p.worker_index < static_cast<int>(o_.admission->placement.size()) &&
           !o_.admission->placement[p.worker_index].node.empty() && o_.admission->placement[p.worker_index].node != p.pinned;
  }

  void ensure_objects(int workers, bool mpi) {
    render::Shape shape{workers, epoch_};
    if (mpi) {
      if (!o_.service_exists) d_.create.push_back(render::headless_service(*spec_));
      if (!o_.secret_exists) d_.create_ssh_secret = true;
    }

    // Pods by name; stale ones (older epoch, index beyond the size, wrong role) go.
    std::map<std::string, const PodView*> by_name;
    auto stale = [&](const PodView& p) {
      if (p.epoch != epoch_ || (p.role == "worker" && p.worker_index >= workers) || (p.role == "launcher" && !mpi)) return true;
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
    for (int i = 0; i < workers; ++i) {
      std::string name = render::worker_name(spec_->name, i);
      auto it = by_name.find(name);
      if (it == by_name.end()) {
        if (older_epoch_alive) continue;  // the last epoch is still stopping (checkpointing)
        const bool planned = o_.admission && i < static_cast<int>(o_.admission->placement.size());
        d_.create.push_back(render::worker_pod(*spec_, i, shape,
                                               planned ? o_.admission->placement[i] : render::default_placement(*spec_)));
      } else if (it->second->epoch == epoch_ && !it->second->deleting && it->second->phase == "Running" &&
                 it->second->ready) {
        ++ready;
      }
    }
    count_replicas();

    bool running = false;
    if (mpi) {
      auto it = by_name.find(render::launcher_name(spec_->name));
      if (it == by_name.end()) {
        // The launcher goes out with its workers (one wave through the scheduler and the kubelets):
        // its init container holds mpirun until it can reach every worker (render::launcher_pod).
        if (!older_epoch_alive) d_.create.push_back(render::launcher_pod(*spec_, shape));
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
      running = ready == 1;
    }

    if (running && phase_ != kRunning) {
      std::string message = std::to_string(workers) + (workers == 1 ? " worker" : " workers") + " running (epoch " +
                            std::to_string(epoch_) + ")";
      set_phase(kRunning, "Running", message);
      set_condition(status_, "Running", true, "Running", message, now_, generation_);
      recovered();
      if (condition_true(status_, "Restarting"))
        set_condition(status_, "Restarting", false, "Running", "epoch " + std::to_string(epoch_) + " is running", now_, generation_);
      event("Normal", "Running", "Run", message);
    } else if (!running && phase_ == kRunning && !settling_) {
      // The launcher is gone or not running although the task did not end (deleted by hand).
      set_phase(kAdmitted, "PodsStarting", "waiting for the launcher of epoch " + std::to_string(epoch_));
      set_condition(status_, "Running", false, "PodsStarting", "launcher not running", now_, generation_);
    }
  }

  const Observed& o_;
  json status_;
  const json before_;
  std::string now_;
  int64_t generation_ = 0;
  std::string phase_;
  const api::TaskSpec* spec_ = nullptr;
  int epoch_ = 0;
  bool settling_ = false;  // a failure is waiting for failure_settle
  Decision d_;
};

}  // namespace

bool idle_suspended(const api::TaskSpec& spec, const json& status) {
  const json* c = find_condition(status, "Idle");
  return c && c->value("status", "") == "True" && c->value("reason", "") == kIdleSuspend &&
         c->value("observedGeneration", int64_t{-1}) == spec.generation;
}

std::string idle_shrink(const json& status) {
  if (!condition_true(status, "Idle") || condition_field(status, "Idle", "reason") != "IdleShrink") return "";
  return condition_field(status, "Idle", "message");
}

bool over_budget(const api::TaskSpec& spec, const json& status) {
  if (!spec.max_cost_micros || !status.is_object() || !status.contains("cost")) return false;
  return cost::accrued_micros(status["cost"]) >= *spec.max_cost_micros;
}

int desired_workers(const api::TaskSpec& spec) {
  if (spec.type == api::TaskType::Single) return 1;
  return std::clamp(spec.target_workers.value_or(spec.min_workers), spec.min_workers, spec.max_workers);
}

PodView view_pod(const api::Pod& pod) {
  PodView v;
  v.name = pod.name;
  v.uid = pod.uid;
  v.resource_version = pod.resource_version;
  v.deleting = pod.deleting;
  v.role = pod.label(render::label::kRole);
  try {
    const std::string& epoch = pod.label(render::label::kEpoch);
    const std::string& index = pod.label(render::label::kWorkerIndex);
    v.epoch = std::stoi(epoch.empty() ? "0" : epoch);
    v.worker_index = std::stoi(index.empty() ? "-1" : index);
  } catch (const std::exception&) {
    v.epoch = 0;  // a mangled label makes the pod stale: it is replaced
  }
  v.node = pod.node_name;
  v.pinned = pod.pinned;
  v.hostfile = pod.hostfile;
  if (v.deleting) v.deletion_deadline = pod.deletion_timestamp;
  v.phase = pod.phase.empty() ? "Pending" : pod.phase;
  for (const auto& c : pod.conditions) {
    if (c.type == "Ready") v.ready = c.status == "True";
    if (c.type == "DisruptionTarget" && c.status == "True") v.disruption = c.reason.empty() ? "Disrupted" : c.reason;
  }
  static const char* kEvictionReasons[] = {"Evicted", "Shutdown", "NodeShutdown", "Terminated", "NodeLost"};
  if (v.disruption.empty())
    for (const char* r : kEvictionReasons)
      if (pod.reason == r) v.disruption = pod.reason;
  // An init container that failed ends the pod before its containers start.
  for (const auto& cs : pod.init_container_statuses) {
    if (!cs.exit_code || *cs.exit_code == 0) continue;
    v.exit_code = static_cast<int>(std::clamp<int64_t>(*cs.exit_code, INT32_MIN, INT32_MAX));
    v.failed_init = cs.name;
    v.failed_init_message = cs.message;
    break;
  }
  for (const auto& cs : pod.container_statuses) {
    if (!cs.exit_code) continue;  // not terminated (or no exit code to go by)
    const int code = static_cast<int>(std::clamp<int64_t>(*cs.exit_code, INT32_MIN, INT32_MAX));
    // The first non-zero exit among the containers explains the pod's failure.
    if (!v.exit_code || (*v.exit_code == 0 && code != 0)) {
      v.exit_code = code;
      v.exit_reason = cs.reason == "Error" || cs.reason == "Completed" ? "" : cs.reason;
    }
    if (cs.finished && (!v.finished_at || *cs.finished > *v.finished_at)) v.finished_at = cs.finished;
    if (v.termination_message.empty()) v.termination_message = cs.message;
  }
  return v;
}

Decision decide(const Observed& observed) { return Decider(observed).run(); }

bool status_may_wait(const json& stored, const Decision& d, bool planned) {
  if (!d.delete_pods.empty() || d.delete_task) return false;
  const std::string phase_before = kube::string_at(stored, "phase"), phase_after = kube::string_at(d.status, "phase");
  if (!planned && phase_before.empty() && phase_after == "Pending") return true;
  if (kube::object_at(d.status, "cost").contains("final") && !kube::object_at(stored, "cost").contains("final")) return false;
  static const std::set<std::string> progress = {"replicas", "readyReplicas", "cost", "utilization"};
  for (const json* side : {&stored, &d.status})
    for (const auto& [k, v] : side->items())
      if (!progress.count(k) && stored.value(k, json()) != d.status.value(k, json())) return false;
  return true;
}

std::chrono::milliseconds status_hold(std::chrono::milliseconds window, size_t admitted_tasks, double progress_writes_per_second) {
  if (window.count() <= 0) return std::chrono::milliseconds(0);  // coalescing off
  return std::max<std::chrono::milliseconds>(window, cost::accrual_interval(std::chrono::seconds(0), admitted_tasks, progress_writes_per_second));
}

}  // namespace valley::task
