#include "controllers/task/lifecycle.h"

#include <algorithm>
#include <map>

#include "controllers/render/render.h"

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

bool finished(const std::string& phase) { return phase == kSucceeded || phase == kFailed; }
bool pod_finished(const PodView& p) { return p.phase == "Succeeded" || p.phase == "Failed"; }

// Sets a condition, keeping lastTransitionTime when its status does not change.
void set_condition(json& status, const std::string& type, bool value, const std::string& reason,
                   const std::string& message, const std::string& now, int64_t generation) {
  json& conditions = status["conditions"];
  if (!conditions.is_array()) conditions = json::array();
  std::string s = value ? "True" : "False";
  for (auto& c : conditions) {
    if (c.value("type", "") != type) continue;
    if (c.value("status", "") != s) c["lastTransitionTime"] = now;
    c["status"] = s;
    c["reason"] = reason;
    c["message"] = message;
    c["observedGeneration"] = generation;
    return;
  }
  conditions.push_back({{"type", type}, {"status", s}, {"reason", reason}, {"message", message},
                        {"lastTransitionTime", now}, {"observedGeneration", generation}});
}

bool condition_true(const json& status, const std::string& type) {
  if (!status.contains("conditions") || !status["conditions"].is_array()) return false;
  for (const auto& c : status["conditions"])
    if (c.value("type", "") == type) return c.value("status", "") == "True";
  return false;
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
        status_(o.task.contains("status") && o.task["status"].is_object() ? o.task["status"] : json::object()),
        before_(status_),
        now_(format_time(o.now)) {
    generation_ = o.task.contains("metadata") ? o.task["metadata"].value("generation", int64_t{0}) : 0;
    phase_ = status_.value("phase", std::string(kPending));
    if (phase_.empty()) phase_ = kPending;
  }

  Decision run() {
    const std::string name = o_.task.contains("metadata") ? o_.task["metadata"].value("name", "") : "";
    status_["selector"] = render::task_selector(name);
    status_["observedGeneration"] = generation_;
    if (!o_.parsed.spec) {
      invalid();
    } else {
      spec_ = &*o_.parsed.spec;
      live();
    }
    status_["phase"] = phase_;
    d_.status_changed = status_ != before_;
    d_.status = std::move(status_);
    return std::move(d_);
  }

 private:
  void event(const std::string& type, const std::string& reason, const std::string& action, const std::string& note) {
    d_.events.push_back({type, reason, action, note});
  }
  void set_phase(const std::string& phase, const std::string& reason, const std::string& message) {
    phase_ = phase;
    status_["reason"] = reason;
    status_["message"] = message;
  }
  void delete_pod(const PodView& p) {
    if (!p.deleting) d_.delete_pods.push_back({p.name, p.uid});
  }

  void invalid() {
    std::string message = join(o_.parsed.errors, "; ");
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
      if (policy == CleanPodPolicy::All || (policy == CleanPodPolicy::Running && !pod_finished(p))) delete_pod(p);
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
    if (p.exit_code && *p.exit_code >= 1 && *p.exit_code <= 127) {
      finish(false, "ExitCode", who + " exited with code " + std::to_string(*p.exit_code) +
                                    " (1-127: a permanent error, not retried)");
      return;
    }
    std::string cause = p.exit_code ? "exit code " + std::to_string(*p.exit_code) : "no exit code (evicted or lost)";
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
    if (spec_->run_policy.suspend) {
      suspend();
      return;
    }
    if (phase_ == kSuspended) {
      // Resume from the last checkpoint in a new epoch.
      epoch_ += 1;
      status_["epoch"] = epoch_;
      set_phase(kAdmitted, "Resumed", "resumed as epoch " + std::to_string(epoch_));
      set_condition(status_, "Suspended", false, "Resumed", "runPolicy.suspend is false", now_, generation_);
      event("Normal", "Resumed", "Resume", "resumed as epoch " + std::to_string(epoch_));
    }
    const bool waiting = phase_ == kPending || epoch_ == 0;
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
      std::string message = std::to_string(adm->workers) + (adm->workers == 1 ? " worker" : " workers") + " placed: " + adm->reason;
      set_phase(kAdmitted, "Admitted", message);
      set_condition(status_, "Admitted", true, "Admitted", message, now_, generation_);
      event("Normal", "Admitted", "Admit", message);
    } else if (adm && !adm->admitted) {
      preempted(*adm);
      return;
    }
    const int workers = adm ? adm->workers : static_cast<int>(status_.value("epochReplicas", desired_workers(*spec_)));
    status_["desiredReplicas"] = workers;

    // An MPI job's world size is fixed when mpirun starts: a new size is a new epoch, which resumes
    // from the last checkpoint (VALLEY_RESUME=1).
    const int epoch_workers = static_cast<int>(status_.value("epochReplicas", workers));
    if (epoch_workers != workers) {
      bump(status_, "resizes");
      status_["lastResizeTime"] = now_;
      status_["lastResizeReason"] = adm ? adm->reason : std::string("replicas.target changed");
      if (spec_->hot_elastic) {
        // The launcher keeps running; discover_hosts.sh and the worker set change under it.
        status_["epochReplicas"] = workers;
        event("Normal", "Resized", "Resize", "resized from " + std::to_string(epoch_workers) + " to " +
                                                 std::to_string(workers) + " workers in place (elasticity Hot)");
      } else {
        epoch_ += 1;
        status_["epoch"] = epoch_;
        status_["epochReplicas"] = workers;
        std::string message = "resizing from " + std::to_string(epoch_workers) + " to " + std::to_string(workers) +
                              " workers as epoch " + std::to_string(epoch_);
        set_phase(kRestarting, "Resizing", message);
        set_condition(status_, "Restarting", true, "Resizing", message, now_, generation_);
        set_condition(status_, "Running", false, "Resizing", message, now_, generation_);
        event("Normal", "Resizing", "Resize", message);
      }
    }
    status_["epochReplicas"] = workers;

    // The deciding pod of this epoch.
    const bool mpi = spec_->type == TaskType::MPI;
    const std::string decider = mpi ? render::launcher_name(spec_->name) : render::worker_name(spec_->name, 0);
    for (const auto& p : o_.pods) {
      if (p.epoch != epoch_ || p.deleting) continue;
      if (p.name == decider && p.phase == "Succeeded") {
        finish(true, "Succeeded", (mpi ? "the launcher" : "the pod") + std::string(" completed successfully"));
        return;
      }
      // Any pod of the epoch that fails ends the epoch: an MPI job cannot go on without a rank.
      if (p.phase == "Failed") {
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
    if (status_.value("message", "") != message) {
      // Before the first plan there is nothing to tell the user yet.
      if (adm && (phase_ != kPending || status_.value("reason", "") != "Waiting")) event("Normal", "Waiting", "Admit", message);
      set_phase(kPending, "Waiting", message);
      set_condition(status_, "Admitted", false, "Waiting", message, now_, generation_);
    }
    phase_ = kPending;
    for (const auto& p : o_.pods) delete_pod(p);
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
    for (const auto& p : o_.pods) delete_pod(p);
    count_replicas();
  }

  void suspend() {
    if (phase_ != kSuspended) {
      set_phase(kSuspended, "Suspended", "runPolicy.suspend is true: pods stopped");
      set_condition(status_, "Suspended", true, "Suspended", "runPolicy.suspend is true", now_, generation_);
      set_condition(status_, "Running", false, "Suspended", "suspended", now_, generation_);
      event("Normal", "Suspended", "Suspend", "pods stopped; resume by setting runPolicy.suspend to false");
    }
    for (const auto& p : o_.pods) delete_pod(p);
    count_replicas();
  }

  void ensure_objects(int workers, bool mpi) {
    render::Shape shape{workers, epoch_};
    if (mpi) {
      if (!o_.service_exists) d_.create.push_back(render::headless_service(*spec_));
      json config = render::mpi_config(*spec_, shape);
      if (!o_.config_exists) {
        d_.create.push_back(config);
      } else if (o_.config_hostfile != config["data"]["hostfile"].get<std::string>()) {
        d_.replace_config = config;
      }
      if (!o_.secret_exists) d_.create_ssh_secret = true;
    }

    // Pods by name; stale ones (older epoch, index beyond the size, wrong role) go.
    std::map<std::string, const PodView*> by_name;
    for (const auto& p : o_.pods) {
      bool stale = p.epoch != epoch_ || (p.role == "worker" && p.worker_index >= workers) ||
                   (p.role == "launcher" && !mpi);
      // Not bound yet and the plan moved it (its node would not take it): start it where planned.
      if (!stale && p.role == "worker" && p.node.empty() && !p.pinned.empty() && o_.admission &&
          p.worker_index >= 0 && p.worker_index < static_cast<int>(o_.admission->placement.size()) &&
          !o_.admission->placement[p.worker_index].node.empty() && o_.admission->placement[p.worker_index].node != p.pinned)
        stale = true;
      if (stale) {
        delete_pod(p);
      }
      by_name[p.name] = &p;
    }
    int ready = 0;
    for (int i = 0; i < workers; ++i) {
      std::string name = render::worker_name(spec_->name, i);
      auto it = by_name.find(name);
      if (it == by_name.end()) {
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
        // mpirun resolves and reaches every worker at start: only when all of them are up.
        if (ready == workers) d_.create.push_back(render::launcher_pod(*spec_, shape));
      } else {
        running = it->second->epoch == epoch_ && it->second->phase == "Running";
      }
    } else {
      running = ready == 1;
    }

    if (running && phase_ != kRunning) {
      std::string message = std::to_string(workers) + (workers == 1 ? " worker" : " workers") + " running (epoch " +
                            std::to_string(epoch_) + ")";
      set_phase(kRunning, "Running", message);
      set_condition(status_, "Running", true, "Running", message, now_, generation_);
      if (condition_true(status_, "Restarting"))
        set_condition(status_, "Restarting", false, "Running", "epoch " + std::to_string(epoch_) + " is running", now_, generation_);
      event("Normal", "Running", "Run", message);
    } else if (!running && phase_ == kRunning) {
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
  const TaskSpec* spec_ = nullptr;
  int epoch_ = 0;
  Decision d_;
};

}  // namespace

int desired_workers(const TaskSpec& spec) {
  if (spec.type == TaskType::Single) return 1;
  return std::clamp(spec.target_workers.value_or(spec.min_workers), spec.min_workers, spec.max_workers);
}

PodView view_pod(const json& pod) {
  PodView v;
  const json meta = pod.value("metadata", json::object());
  v.name = meta.value("name", "");
  v.uid = meta.value("uid", "");
  v.deleting = meta.contains("deletionTimestamp") && !meta["deletionTimestamp"].is_null();
  const json labels = meta.value("labels", json::object());
  v.role = labels.value(render::label::kRole, "");
  try {
    v.epoch = std::stoi(labels.value(render::label::kEpoch, "0"));
    v.worker_index = std::stoi(labels.value(render::label::kWorkerIndex, "-1"));
  } catch (const std::exception&) {
    v.epoch = 0;  // a mangled label makes the pod stale: it is replaced
  }
  const json spec = pod.value("spec", json::object());
  v.node = spec.value("nodeName", "");
  v.pinned = render::pinned_node(pod);
  const json status = pod.value("status", json::object());
  v.phase = status.value("phase", "Pending");
  for (const auto& c : status.value("conditions", json::array()))
    if (c.value("type", "") == "Ready") v.ready = c.value("status", "") == "True";
  for (const auto& cs : status.value("containerStatuses", json::array())) {
    const json state = cs.value("state", json::object());
    if (state.contains("terminated") && state["terminated"].contains("exitCode")) {
      int code = state["terminated"].value("exitCode", 0);
      // The first non-zero exit among the containers explains the pod's failure.
      if (!v.exit_code || (*v.exit_code == 0 && code != 0)) v.exit_code = code;
    }
  }
  return v;
}

Decision decide(const Observed& observed) { return Decider(observed).run(); }

}  // namespace valley::task
