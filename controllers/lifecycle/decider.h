// The lifecycle's decision-maker (lifecycle.h's decide()): one Decider per reconcile, from what
// was observed to the next status, pod deletions and creations, Events. Internal to
// controllers/lifecycle: decider.cc holds the conditions it reacts to (failures, disruptions,
// checkpoints, the end), decider_epoch.cc the epoch it runs (admission, resizes, its pods).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "controllers/api/conditions.h"
#include "controllers/lifecycle/lifecycle.h"
#include "controllers/lifecycle/start_failure.h"
#include "operator/text.h"

namespace valley::lifecycle::detail {

using api::condition_true;
using api::find_condition;
using api::set_condition;

inline constexpr const char* kPending = "Pending";
inline constexpr const char* kAdmitted = "Admitted";
inline constexpr const char* kRunning = "Running";
inline constexpr const char* kRestarting = "Restarting";
inline constexpr const char* kSuspended = "Suspended";
inline constexpr const char* kSucceeded = "Succeeded";
inline constexpr const char* kFailed = "Failed";
inline constexpr const char* kIdleSuspend = "IdleSuspend";  // the Idle condition's reason under idlePolicy Suspend

// A status message carries a kubelet's, a store's or a user's words: bounded, so that no text can
// grow the object toward etcd's limit.
inline constexpr size_t kStatusMessageBytes = 4096;

inline bool pod_finished(const PodView& p) { return p.phase == "Succeeded" || p.phase == "Failed"; }
// A field (reason, message) of the condition of `type`, "" when there is none.
std::string condition_field(const json& status, const std::string& type, const char* field);
int64_t counter(const json& status, const char* name);
void bump(json& status, const char* name);
std::string join(const std::vector<std::string>& items, const std::string& sep);

class Decider {
 public:
  explicit Decider(const Observed& o);
  Decision run();

 private:
  struct Disruption {
    std::string cause, node, message;
  };
  // status.utilization from the latest reading of its GPUs, and the Idle condition its idlePolicy
  // asks for: once its GPUs have been below the threshold for the policy's window, an Idle
  // condition and Event (Report), the planner sizing it at replicas.min (Shrink, see idle_shrink),
  // or a checkpoint and suspension until the spec changes (Suspend, see idle_suspended).
  void observe_utilization();
  // PodsCreated: False with the API server's words while it refuses the task's objects; True again
  // once it takes them (only after a refusal: a task never refused carries no such condition).
  void report_refusal();
  void event(const std::string& type, const std::string& reason, const std::string& action, const std::string& note) {
    d_.events.push_back({type, reason, action, note});
  }
  void set_phase(const std::string& phase, const std::string& reason, const std::string& message) {
    phase_ = phase;
    status_["reason"] = bounded_text(reason, 1024);
    status_["message"] = bounded_text(message, kStatusMessageBytes);
  }
  // A node the pod is bound to that will never confirm its termination: deleted, or NotReady past
  // the grace period.
  bool node_lost(const PodView& p) const;
  void delete_pod(const PodView& p);
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
  void invalid(const std::string& message);
  void count_replicas();
  // After the end: cleanPodPolicy (every pod once the task is being deleted), then
  // ttlSecondsAfterFinished.
  void after_end();
  void finish(bool success, const std::string& reason, const std::string& message);
  // A pod of the current epoch that decides the task failed: retry in a new epoch or give up.
  void failed(const PodView& p);
  // Pods of the epoch that cannot start (start_failure.h): the PodsStarted condition and one Event
  // say why at once; past the start grace the epoch stops and its GPUs go back, the task waits a
  // backoff (status.startFailure) before it is planned again, and fails once more starts than
  // runPolicy.backoffLimit have failed (not for an unschedulable launcher: that is the cluster's
  // state). A spec changed while they fail (a fixed image) starts a new epoch at once. True when
  // nothing more runs in this reconcile.
  bool start_failed();
  // Its pods could not start and its backoff (status.startFailure) is not over.
  bool backing_off() const {
    const auto until = start_backoff_until(*spec_, status_);
    return until && o_.now < *until;
  }
  // Something outside the task's control is taking a pod of the current epoch away.
  std::optional<Disruption> find_disruption() const;
  std::optional<Disruption> pod_disruption(const PodView& p, int size) const;
  // A Hot task without a launcher (PyTorch) whose disrupted workers do not include worker 0 (the
  // rendezvous host) and leave at least replicas.min running: those workers stop (SIGTERM, their
  // checkpoint), the rest re-rendezvous at the smaller world size in the same epoch, and each
  // lost index is re-created where the plan puts it once its pod is gone. lastDisruption names
  // the pods (recorded once across reconciles and operator restarts). True when it handled every
  // disruption there is.
  bool replaced_in_place();
  // The pod is one the last disruption replaces in place.
  bool replacing(const PodView& p) const;
  // Valley itself is taking this pod of the current epoch away: this process deleted it, it is
  // replaced in place, or it is a Hot task's worker beyond the size (its shrink). Such a pod is no
  // disruption of the rest, whatever its node shows.
  bool taken_by_valley(const PodView& p, int size) const;
  void disrupted(const Disruption& d);
  // The workload's latest.json (read by the controller from the store) or, for stores Valley
  // cannot read, the checkpoint record a pod left as its termination message.
  void record_checkpoint();
  // How many nodes the running epoch's workers are bound to (the shape its progress is measured on).
  int epoch_nodes() const;
  // The epoch after a disruption is running: how long recovery took and what was lost.
  void recovered();
  bool epoch_has_pods() const {
    return std::any_of(o_.pods.begin(), o_.pods.end(), [&](const PodView& p) { return p.epoch == epoch_; });
  }
  void run_epoch();
  bool stopped();
  void resume_if_suspended();
  bool data_pending();
  void record_history();
  // Ended: status.outputs once the controller has listed them (asked for once its pods are done).
  void record_outputs();
  // Pods whose outputs sidecar failed: status.outputsNotKept and a Warning Event, once per pod.
  void record_outputs_not_kept();
  bool admitted(const lifecycle::Admission* adm);
  void resize(int workers, const lifecycle::Admission* adm);
  bool decided_by_pods();
  // Not admitted (yet): no pods; the planner's reason and queue position in the status.
  void wait(const Admission* adm);
  // Higher-priority work took this task's GPUs: stop its pods, count it, wait to be re-admitted.
  void preempted(const Admission& adm);
  void suspend(const std::string& reason, const std::string& message, const std::string& note);
  // A worker pinned to a node other than the one the plan now has for its index.
  bool replanned(const PodView& p) const;
  // What a spot notice costs a task without checkpoints whose launcher its template pins to spot.
  std::string launcher_on_spot_warning(int workers) const;
  // The running epoch ends (its pods checkpoint and go) and the next starts: Restarting with `reason`.
  void next_epoch(const std::string& reason, const std::string& action, const std::string& message);
  // A bound worker pod of the current epoch sits on a node the plan no longer has for its index.
  bool runs_off_plan() const;
  void report_topology(int workers, bool starts_running);
  void ensure_objects(int workers);

  const Observed& o_;
  json status_;
  const json before_;
  std::string now_;
  int64_t generation_ = 0;
  std::string phase_;
  const api::TaskSpec* spec_ = nullptr;
  int epoch_ = 0;
  bool settling_ = false;  // a failure is waiting for failure_settle
  bool deleting_ = false;  // metadata.deletionTimestamp is set: the task ends, its pods stop
  Decision d_;
};

}  // namespace valley::lifecycle::detail
