// The lifecycle's reactions: failures, disruptions, checkpoints, utilization, the end (decider.h).
#include "controllers/lifecycle/decider.h"

#include <algorithm>
#include <set>
#include <map>

#include "controllers/cost/engine.h"
#include "controllers/lifecycle/start_failure.h"
#include "controllers/planner/planner.h"
#include "controllers/planner/scaling.h"
#include "controllers/render/render.h"
#include "operator/kube/json_fields.h"
#include "operator/text.h"

namespace valley::lifecycle::detail {

using kube::format_time;
using kube::parse_time;

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

Decider::Decider(const Observed& o)
    : o_(o),
      status_(kube::object_at(o.task, "status")),
      before_(status_),
      now_(format_time(o.now)) {
  generation_ = kube::int_at(kube::object_at(o.task, "metadata"), "generation").value_or(0);
  phase_ = status_.value("phase", std::string(kPending));
  if (phase_.empty()) phase_ = kPending;
  deleting_ = !kube::string_at(kube::object_at(o.task, "metadata"), "deletionTimestamp").empty();
}

Decision Decider::run() {
  const std::string name = kube::string_at(kube::object_at(o_.task, "metadata"), "name");
  status_["selector"] = render::task_selector(name);
  status_["observedGeneration"] = generation_;
  if (!o_.parsed.spec) {
    invalid(join(o_.parsed.errors, "; "));
  } else if (auto why = render::launcher_too_large(*o_.parsed.spec)) {
    invalid(*why);
  } else {
    spec_ = &*o_.parsed.spec;
    run_epoch();
    record_outputs_not_kept();
    report_refusal();
  }
  status_["phase"] = phase_;
  record_history();
  d_.status_changed = status_ != before_;
  d_.status = std::move(status_);
  return std::move(d_);
}

// status.utilization from the latest reading of its GPUs, and the Idle condition its idlePolicy
// asks for: once its GPUs have been below the threshold for the policy's window, an Idle
// condition and Event (Report), the planner sizing it at replicas.min (Shrink, see idle_shrink),
// or a checkpoint and suspension until the spec changes (Suspend, see idle_suspended).
void Decider::observe_utilization() {
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
void Decider::report_refusal() {
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

// A node the pod is bound to that will never confirm its termination: deleted, or NotReady past
// the grace period.
bool Decider::node_lost(const PodView& p) const {
  if (!o_.nodes_known || p.node.empty()) return false;
  auto it = o_.nodes.find(p.node);
  if (it == o_.nodes.end()) return true;
  const NodeView& n = it->second;
  return planner::not_ready_past(n.ready, n.not_ready_since, o_.now, o_.disruption.node_not_ready_grace);
}

void Decider::delete_pod(const PodView& p) {
  const bool lost = node_lost(p);
  const bool stuck = p.deleting && p.deletion_deadline && o_.now - *p.deletion_deadline >= o_.disruption.stuck_termination;
  if (!p.deleting || lost || stuck) d_.delete_pods.push_back({p.name, p.uid, lost || stuck, p.node.empty() ? p.resource_version : ""});
}

void Decider::invalid(const std::string& message) {
  if (phase_ != kFailed || status_.value("reason", "") != "InvalidSpec")
    event("Warning", "InvalidSpec", "Validate", utf8_head(message, 1000));
  set_phase(kFailed, "InvalidSpec", message);
  set_condition(status_, "Failed", true, "InvalidSpec", message, now_, generation_);
  if (!status_.contains("completionTime")) status_["completionTime"] = now_;
  for (const auto& p : o_.pods)
    if (!pod_finished(p)) delete_pod(p);
  count_replicas();
}

void Decider::count_replicas() {
  int replicas = 0, ready = 0;
  for (const auto& p : o_.pods) {
    if (p.role != "worker" || p.deleting || pod_finished(p) || p.epoch != epoch_) continue;
    ++replicas;
    if (p.ready) ++ready;
  }
  status_["replicas"] = replicas;
  status_["readyReplicas"] = ready;
}

void Decider::after_end() {
  const auto policy = spec_->run_policy.clean_pod_policy;
  if (deleting_) {
    // Held by a finalizer (Valley's, for the outputs, or another's): the garbage collector takes
    // the pods only once the task is gone, and its outputs wait for them.
    stop_all_pods();
  } else {
    for (const auto& p : o_.pods)
      if (policy == api::CleanPodPolicy::All || (policy == api::CleanPodPolicy::Running && !pod_finished(p))) delete_pod(p);
  }
  record_outputs();
  if (auto ttl = spec_->run_policy.ttl_seconds_after_finished; ttl && !deleting_) {
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

// status.history: one entry each time the phase or the running size changes, the latest kHistory.
// The size is the epoch's (what was admitted), not the count of running pods: pods come up one by
// one, and an entry per pod would make every pod step a status write that cannot wait.
void Decider::record_history() {
  constexpr size_t kHistory = 100;
  const int workers = phase_ == kRunning ? static_cast<int>(status_.value("epochReplicas", 0)) : 0;
  json& h = status_["history"];
  if (!h.is_array()) h = json::array();
  if (!h.empty() && h.back().value("phase", "") == phase_ && h.back().value("workers", -1) == workers) return;
  json entry = {{"time", now_}, {"phase", phase_}, {"workers", workers}, {"reason", status_.value("reason", "")}};
  if (auto accrued = kube::int_at(kube::object_at(status_, "cost"), "accruedMicros")) entry["accruedMicros"] = *accrued;
  h.push_back(std::move(entry));
  if (h.size() > kHistory) h.erase(h.begin(), h.begin() + static_cast<std::ptrdiff_t>(h.size() - kHistory));
}

void Decider::record_outputs() {
  if (!spec_ || !spec_->outputs) return;
  if (o_.outputs && kube::object_at(status_, "outputs") != *o_.outputs) {
    status_["outputs"] = *o_.outputs;
    if (o_.outputs->contains("time"))
      event("Normal", "OutputsKept", "KeepOutputs",
            std::to_string(o_.outputs->value("files", 0)) + " files (" + std::to_string(o_.outputs->value("bytes", int64_t{0})) +
                " bytes) and Valley's report in " + o_.outputs->value("uri", ""));
  }
  const bool pods_done = std::all_of(o_.pods.begin(), o_.pods.end(), [](const PodView& p) { return pod_finished(p); });
  d_.collect_outputs = outputs_due(*spec_, status_, pods_done);
}

// Said before the pod's accounting finalizer lets it go (the controller holds it while the
// sidecar uploads), so a pod deleted mid-run still leaves its word.
void Decider::record_outputs_not_kept() {
  constexpr size_t kKept = 20;
  if (!spec_->outputs) return;
  for (const auto& p : o_.pods) {
    if (!p.outputs_exit || *p.outputs_exit == 0) continue;
    json& list = status_["outputsNotKept"];
    if (!list.is_array()) list = json::array();
    // By uid: a later epoch's pod has the same name.
    if (std::any_of(list.begin(), list.end(), [&](const json& e) { return kube::string_at(e, "uid") == p.uid; })) continue;
    // The termination message ends with the latest of valley-io's lines: those say why.
    const std::string& said = p.outputs_message;
    const std::string why = !said.empty() ? (said.size() > 500 ? "…" + utf8_tail(said, 500) : said)
                            : *p.outputs_exit == 137   ? "stopped before it finished uploading"
                                                       : "it left no message";
    list.push_back({{"pod", p.name}, {"uid", p.uid}, {"exitCode", *p.outputs_exit}, {"message", why}, {"time", now_}});
    if (list.size() > kKept) list.erase(list.begin(), list.begin() + static_cast<std::ptrdiff_t>(list.size() - kKept));
    event("Warning", "OutputsNotKept", "KeepOutputs",
          "pod " + p.name + " did not keep its outputs in " + spec_->outputs->uri + " (valley-io exit " + std::to_string(*p.outputs_exit) + "): " + why);
  }
}

void Decider::finish(bool success, const std::string& reason, const std::string& message) {
  set_phase(success ? kSucceeded : kFailed, reason, message);
  status_["completionTime"] = now_;
  set_condition(status_, success ? "Succeeded" : "Failed", true, reason, message, now_, generation_);
  set_condition(status_, "Running", false, reason, message, now_, generation_);
  event(success ? "Normal" : "Warning", reason, "Finish", message);
  after_end();
}

bool Decider::start_failed() {
  // Once the epoch runs, its pods have started (they never restart in place: restartPolicy Never).
  const PodView* failing = nullptr;
  for (const auto& p : o_.pods)
    if (phase_ != kRunning && p.epoch == epoch_ && !p.deleting && !p.start_failure.empty()) {
      failing = &p;
      break;
    }
  const json* before = find_condition(status_, "PodsStarted");
  const bool was_failing = before && before->value("status", "") == "False";
  if (!failing) {
    if (was_failing)
      set_condition(status_, "PodsStarted", true, "NoStartFailure", "no pod of epoch " + std::to_string(epoch_) + " reports a start failure",
                    now_, generation_);
    return false;
  }
  const std::string& reason = failing->start_failure;
  const std::string message = failing->name + ": " + failing->start_failure_message;
  if (was_failing && before->value("observedGeneration", int64_t{0}) != generation_) {
    // Changed since they failed (a fixed image): the epoch's pods go, the next one starts with it.
    epoch_ += 1;
    status_["epoch"] = epoch_;
    const std::string note = "the spec changed while its pods could not start (" + reason + "): starting epoch " + std::to_string(epoch_);
    set_phase(kRestarting, "SpecChanged", note);
    set_condition(status_, "PodsStarted", true, "SpecChanged", note, now_, generation_);
    event("Normal", "SpecChanged", "Restart", note);
    return false;
  }
  // Nodes being bought are expected to take a while: said, not warned about, until the timeout.
  const bool buying = reason == kAwaitingNodes;
  if (!was_failing || before->value("reason", "") != reason) event(buying ? "Normal" : "Warning", reason, "Start", message);
  set_condition(status_, "PodsStarted", false, reason, message, now_, generation_);
  set_phase(phase_, reason, message);
  const auto since = parse_time(condition_field(status_, "PodsStarted", "lastTransitionTime")).value_or(o_.now);
  const auto grace = buying ? o_.disruption.provisioning_timeout : start_grace(*spec_, o_.disruption.start_grace);
  if (o_.now - since < grace) {
    const auto left = std::chrono::duration_cast<std::chrono::seconds>(since + grace - o_.now) + std::chrono::seconds(1);
    d_.requeue_after = d_.requeue_after ? std::min(*d_.requeue_after, left) : left;
    return false;
  }
  bump(status_, "startFailures");
  const int64_t failed_starts = counter(status_, "startFailures");
  const std::string tries = std::to_string(failed_starts) + (failed_starts == 1 ? " start" : " starts") + " failed";
  // A launcher no node takes now, or nodes a cloud did not deliver, are the cluster's state, not the
  // task's fault: retried, never failed.
  if (reason != "Unschedulable" && !buying && failed_starts > spec_->run_policy.backoff_limit) {
    finish(false, reason, message + " (" + tries + "; runPolicy.backoffLimit is " + std::to_string(spec_->run_policy.backoff_limit) + ")");
    return true;
  }
  const std::string given_back = buying ? std::string(kNodesNotProvisioned) : reason;
  const auto backoff = start_backoff(failed_starts);
  const std::string retry_at = format_time(o_.now + backoff);
  status_["startFailure"] = {{"reason", given_back}, {"message", bounded_text(message, kStatusMessageBytes)}, {"retryAfter", retry_at}, {"generation", generation_}};
  const std::string note = message + " (for " + std::to_string(grace.count()) + "s): " +
                           (buying ? "no node came; the gang's pods" : "GPUs") + " given back; tried again at " + retry_at +
                           " or when the spec changes (" + tries + ", runPolicy.backoffLimit is " +
                           std::to_string(spec_->run_policy.backoff_limit) + (buying ? ", not counted against it" : "") + ")";
  set_phase(kPending, given_back, note);
  set_condition(status_, "Admitted", false, given_back, note, now_, generation_);
  set_condition(status_, "Running", false, given_back, note, now_, generation_);
  event("Warning", "StartFailed", "Stop", note);
  // Nothing of the workload ran (mpirun waits for every pod): no checkpoint to wait for.
  for (const auto& p : o_.pods) delete_pod(p);
  count_replicas();
  d_.requeue_after = backoff + std::chrono::seconds(1);
  return true;
}

// A pod of the current epoch that decides the task failed: retry in a new epoch or give up.
void Decider::failed(const PodView& p) {
  std::string who = p.role == "launcher" ? "the launcher" : p.name;
  if (!p.failed_init.empty()) who += "'s init container " + p.failed_init;
  if (p.exit_code && *p.exit_code >= 1 && *p.exit_code <= 127) {
    std::string said = p.failed_init_message;
    while (!said.empty() && std::isspace(static_cast<unsigned char>(said.back()))) said.pop_back();
    if (auto nl = said.rfind('\n'); nl != std::string::npos) said = said.substr(nl + 1);  // its last line
    finish(false, "ExitCode", who + " exited with code " + std::to_string(*p.exit_code) +
                                  " (1-127: a permanent error, not retried)" + (said.empty() ? "" : ": " + utf8_head(said, 300)));
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

// What outside the task's control is taking this pod of the current epoch away, if anything.
std::optional<Decider::Disruption> Decider::pod_disruption(const PodView& p, int size) const {
  // (An in-place replacement that finds no room becomes a shrink: the worker taken is then beyond
  // the size, and still no disruption.)
  if (taken_by_valley(p, size)) return std::nullopt;
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
  if (pod_finished(p) && p.phase != "Failed") return std::nullopt;
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
  // shrink), when it replaces it in place, or before it is bound (re-placement; before the epoch
  // runs, it may have been bound since, where the plan no longer has it).
  const bool ours = p.role == "worker" && (p.worker_index >= size || p.node.empty() || (phase_ != kRunning && replanned(p)));
  // (A kubelet marks a deleted pod Failed once its containers stopped: still a deletion.)
  if (p.deleting && !ours && p.phase != "Succeeded") return Disruption{"PodDeleted", p.node, who + " was deleted"};
  return std::nullopt;
}

std::optional<Decider::Disruption> Decider::find_disruption() const {
  const int size = static_cast<int>(status_.value("epochReplicas", 0));
  std::map<std::string, const PodView*> current;
  for (const auto& p : o_.pods) {
    if (p.epoch != epoch_) continue;
    current[p.name] = &p;
    if (auto d = pod_disruption(p, size)) return d;
  }
  // A pod of a running epoch vanished (force-deleted). Hot tasks add workers while running, so
  // only Restart ones can tell.
  if (phase_ == kRunning && !spec_->hot_elastic) {
    std::vector<std::string> expected;
    for (int i = 0; i < size; ++i) expected.push_back(render::worker_name(spec_->name, i));
    if (spec_->has_launcher()) expected.push_back(render::launcher_name(spec_->name));
    for (const auto& name : expected)
      if (!current.count(name)) return Disruption{"PodDeleted", "", "pod " + name + " disappeared"};
  }
  return std::nullopt;
}

bool Decider::taken_by_valley(const PodView& p, int size) const {
  return o_.deleted_by_valley.count(p.uid) > 0 || replacing(p) || (spec_->hot_elastic && p.role == "worker" && p.worker_index >= size);
}

bool Decider::replacing(const PodView& p) const {
  const json& last = kube::object_at(status_, "lastDisruption");
  for (const auto& r : last.value("pods", json::array()))
    if (kube::string_at(r, "uid") == p.uid) return true;
  return false;
}

bool Decider::replaced_in_place() {
  if (!spec_->hot_elastic || spec_->has_launcher() || phase_ != kRunning) return false;
  const int size = static_cast<int>(status_.value("epochReplicas", 0));
  std::vector<std::pair<const PodView*, Disruption>> taken;
  int staying = 0;
  for (const auto& p : o_.pods) {
    if (p.epoch != epoch_ || p.role != "worker" || p.worker_index >= size) continue;
    if (auto d = pod_disruption(p, size)) {
      // Worker 0 hosts the rendezvous (torchrun's c10d store): without it no one can go on.
      if (p.worker_index <= 0) return false;
      taken.emplace_back(&p, std::move(*d));
    } else if (!p.deleting && !pod_finished(p)) {
      ++staying;
    }
  }
  if (taken.empty() || staying < spec_->min_workers) return false;
  bool news = false;
  json pods = json::array();
  std::vector<std::string> names;
  for (const auto& [p, d] : taken) {
    delete_pod(*p);
    news = news || !replacing(*p);
    pods.push_back({{"name", p->name}, {"uid", p->uid}});
    names.push_back(p->name);
  }
  if (!news) return true;
  const Disruption& d = taken.back().second;
  bump(status_, "disruptions");
  json last = {{"time", now_}, {"cause", d.cause}, {"message", bounded_text(d.message, kStatusMessageBytes)}, {"epoch", epoch_},
               {"workers", size}, {"inPlace", true}, {"pods", pods}};
  if (!d.node.empty()) last["node"] = d.node;
  if (status_.contains("checkpoint") && status_["checkpoint"].is_object()) last["checkpointStep"] = status_["checkpoint"].value("step", 0);
  status_["lastDisruption"] = last;
  event("Warning", "Disrupted", "Replace",
        d.message + "; " + join(names, ", ") + " stop" + (names.size() == 1 ? "s" : "") + " (SIGTERM, up to " +
            std::to_string(spec_->checkpoint_grace_seconds) + "s to checkpoint) and the other " + std::to_string(staying) +
            " worker" + (staying == 1 ? "" : "s") + " go on at that world size (elasticity Hot) while " +
            (names.size() == 1 ? "a replacement is" : "replacements are") + " placed");
  return true;
}

void Decider::disrupted(const Disruption& d) {
  bump(status_, "disruptions");
  const int old_epoch = epoch_;
  epoch_ += 1;
  status_["epoch"] = epoch_;
  json last = {{"time", now_}, {"cause", d.cause}, {"message", bounded_text(d.message, kStatusMessageBytes)}, {"epoch", old_epoch},
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
            (spec_->has_launcher() ? std::string("launcher first") : std::string(spec_->type == api::TaskType::Single ? "pod" : "workers")) + ", up to " +
            std::to_string(grace) + "s to checkpoint");
}

// How many nodes the running epoch's workers are bound to (the placement shape its progress was
// measured on; a single task's pod counts as its worker).
int Decider::epoch_nodes() const {
  std::set<std::string> nodes;
  for (const auto& p : o_.pods)
    if (p.epoch == epoch_ && p.role != "launcher" && !p.node.empty() && !p.deleting && p.phase == "Running") nodes.insert(p.node);
  return static_cast<int>(nodes.size());
}

// The workload's latest.json (read by the controller from the store) or, for stores Valley
// cannot read, the checkpoint record a pod left as its termination message.
void Decider::record_checkpoint() {
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
        status_["scaling"] = planner::scaling_json(planner::observe(planner::scaling_from(status_.value("scaling", json::array())),
                                                                    status_.value("replicas", 0), *rate, epoch_nodes()));
    cur = c;
  }
}

// The epoch after a disruption is running: how long recovery took and what was lost.
void Decider::recovered() {
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
  const std::string again = last.value("inPlace", false) ? "back at " + std::to_string(status_.value("epochReplicas", 0)) + " workers "
                                                          : std::string("running again ");
  event("Normal", "Recovered", "Recover",
        again + std::to_string(seconds) + "s after the disruption (" + last.value("cause", "") + "); work lost: " + lost);
}

}  // namespace valley::lifecycle::detail
