// The TrainingTask lifecycle as one pure function: given what is observed (the task, its parsed
// spec, the pods and objects it owns, the time), decide the task's status and what to create,
// update or delete. Level-triggered and idempotent: deciding again on the same observation gives
// the same answer, and an answer carried out halfway is finished by the next decision.
//
// Phases: Pending (waiting for the planner to admit the minimum gang) -> Admitted -> Running ->
// Succeeded | Failed, with Restarting (a new epoch after a retryable failure or a resize) and
// Suspended; a preempted task goes back to Pending and resumes in a new epoch when re-admitted. The launcher's exit decides the task (the only pod of a
// Single task decides it): 0 = Succeeded; 1-127 = permanent failure; 128-255 (signals) or no exit
// code (evicted) = retried in a new epoch up to runPolicy.backoffLimit. Pods of an older epoch are
// deleted; the launcher starts only when every worker of the epoch is Running and Ready.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "controllers/render/render.h"
#include "controllers/task/spec.h"
#include "operator/kube/timefmt.h"

namespace valley::task {

struct PodView {
  std::string name, uid, role;  // role: launcher | worker
  int epoch = 0;
  int worker_index = -1;
  std::string phase;  // Pending, Running, Succeeded, Failed
  bool ready = false;
  bool deleting = false;
  std::optional<int> exit_code;
  std::string node;    // spec.nodeName once bound
  std::string pinned;  // the node its affinity requires ("" if none)
};
PodView view_pod(const json& pod);

// What the capacity planner decided for this task (controllers/planner): admitted with `workers`
// placed as `placement` (one entry per worker index), or waiting with a reason.
struct Admission {
  bool admitted = false;
  int workers = 0;
  std::vector<render::WorkerPlacement> placement;
  std::string reason;
  int queue_position = 0;
};

struct Observed {
  json task;  // the TrainingTask as cached (metadata, spec, status)
  ParsedTask parsed;
  std::vector<PodView> pods;  // owned by the task
  bool service_exists = false;
  bool config_exists = false;
  std::string config_hostfile;  // data.hostfile of <task>-mpi
  bool secret_exists = false;
  // nullopt: no plan yet (the planner has not run). A waiting task then stays Pending and an
  // admitted one keeps its size.
  std::optional<Admission> admission;
  kube::SystemTime now;
};

struct EventSpec {
  std::string type, reason, action, note;
};

struct Decision {
  json status;  // the whole desired status
  bool status_changed = false;
  std::vector<json> create;               // pods, Service, ConfigMap
  bool create_ssh_secret = false;          // keys are made by the caller (randomness is not pure)
  std::optional<json> replace_config;      // the <task>-mpi ConfigMap, when its content is outdated
  std::vector<std::pair<std::string, std::string>> delete_pods;  // name, uid
  std::vector<EventSpec> events;
  std::optional<std::chrono::seconds> requeue_after;
  bool delete_task = false;  // ttlSecondsAfterFinished has passed
};

Decision decide(const Observed& observed);

// Without a planner (tests, or a cluster without GPUs): replicas.target if pinned, else min.
int desired_workers(const TaskSpec& spec);

}  // namespace valley::task
