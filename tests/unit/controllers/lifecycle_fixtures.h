// Shared by the lifecycle's unit tests: a task object, its pods and what a reconcile observes.
#pragma once

#include <gtest/gtest.h>

#include "controllers/api/pod.h"
#include "controllers/api/task_status.h"
#include "controllers/lifecycle/lifecycle.h"
#include "operator/kube/json_fields.h"

namespace valley::lifecycle::fixtures {
using namespace std::chrono_literals;


inline const kube::SystemTime kNow = kube::SystemTime(std::chrono::seconds(1795316645));

inline json task_object(json spec_patch = json::object(), json status = json::object()) {
  json t = json::parse(R"({"apiVersion":"valley.dev/v1beta1","kind":"TrainingTask",
    "metadata":{"name":"t","namespace":"ns","uid":"u-1","generation":1},
    "spec":{"taskType":"MPI","replicas":{"min":2,"max":4},"master":{"image":"l"},"worker":{"image":"w"},
            "runPolicy":{"backoffLimit":2}}})");
  if (spec_patch.is_object()) t["spec"].merge_patch(spec_patch);
  if (status.is_object() && !status.empty()) t["status"] = status;
  return t;
}

inline PodView pod(const std::string& name, const std::string& role, int epoch, const std::string& phase, bool ready = true,
            std::optional<int> exit = std::nullopt, int index = -1) {
  PodView p;
  p.name = name;
  p.uid = "uid-" + name;
  p.role = role;
  p.epoch = epoch;
  p.phase = phase;
  p.ready = ready && phase == "Running";
  p.exit_code = exit;
  p.worker_index = index;
  return p;
}

inline Observed observe(const json& task, std::vector<PodView> pods = {}, bool objects = true) {
  Observed o;
  o.task = api::readable_task(task);  // as the reconciler reads it
  o.parsed = api::parse_task(task);
  o.pods = std::move(pods);
  o.service_exists = o.secret_exists = objects;
  if (objects) {  // the launcher lists the workers of the status's size
    int workers = task.contains("status") ? task["status"].value("epochReplicas", 2) : 2;
    std::string h;
    for (int i = 0; i < workers; ++i) h += "t-worker-" + std::to_string(i) + ".t-workers.ns.svc slots=1\n";
    for (auto& p : o.pods)
      if (p.role == "launcher") p.hostfile = h;
  }
  o.now = kNow;
  if (o.parsed.spec) {  // the planner admits the task at its pinned size or its minimum
    Admission a;
    a.admitted = true;
    a.workers = desired_workers(*o.parsed.spec);
    a.placement.assign(a.workers, render::default_placement(*o.parsed.spec));
    a.reason = "minimum gang fits";
    o.admission = a;
  }
  return o;
}

inline json running_status(int epoch = 1, int workers = 2) {
  return {{"phase", "Running"}, {"epoch", epoch}, {"epochReplicas", workers}, {"startTime", "2026-11-22T03:00:00Z"}};
}

inline std::vector<PodView> running_pods(int epoch = 1, int workers = 2, bool launcher = true) {
  std::vector<PodView> pods;
  for (int i = 0; i < workers; ++i) pods.push_back(pod("t-worker-" + std::to_string(i), "worker", epoch, "Running", true, {}, i));
  if (launcher) pods.push_back(pod("t-launcher", "launcher", epoch, "Running"));
  return pods;
}

// The planner says no: `reason`, no workers.
inline void refuse(Observed& o, const std::string& reason) {
  o.admission->admitted = false;
  o.admission->workers = 0;
  o.admission->reason = reason;
}

inline std::vector<std::string> created_names(const Decision& d) {
  std::vector<std::string> names;
  for (const auto& o : d.create) names.push_back(o["metadata"]["name"]);
  return names;
}


inline json condition_of(const json& status, const std::string& type) {
  for (const auto& c : status.value("conditions", json::array()))
    if (c["type"] == type) return c;
  return nullptr;
}

}  // namespace valley::lifecycle::fixtures
