// The fixture of the TrainingTask end-to-end tests: a namespace with its own operator process, and
// helpers to apply tasks and read their state.
#pragma once

#include <signal.h>

#include <set>

#include "controllers/api/pod.h"
#include "operator/kube/config.h"
#include "operator/kube/finalizers.h"
#include "operator/yaml_json.h"
#include "tests/e2e/support.h"

namespace valley::e2e {

using kube::resources::kPods;
using kube::resources::kTrainingTasks;
inline const kube::Resource kAdmissionPolicies{"admissionregistration.k8s.io", "v1", "validatingadmissionpolicies",
                                               "ValidatingAdmissionPolicy", false};
inline const kube::Resource kAdmissionBindings{"admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings",
                                               "ValidatingAdmissionPolicyBinding", false};

class TaskTest : public ClusterTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    start_operator();
  }
  void TearDown() override {
    stop_operator();
    release_tasks();
    for (const auto& name : installed_policies_) {
      try {
        admin->remove(kAdmissionBindings, "", name);
        admin->remove(kAdmissionPolicies, "", name);
      } catch (const kube::KubeError&) {
      }
    }
    for (auto it = owned_.rbegin(); it != owned_.rend(); ++it) {
      try {
        admin->remove(*it->first, "", it->second);
      } catch (const kube::KubeError&) {
      }
    }
    // Every plan was also made from rebuilt inputs (--debug-verify-plan-inputs): the inputs kept
    // from plan to plan decided the same, through whatever this test's events were.
    for (const auto& [file, log] : logs_) EXPECT_EQ(log.find("plan inputs differ"), std::string::npos) << file;
    // A failed test shows what the operator did: what CI keeps of a run is its output.
    if (HasFailure())
      for (const auto& [file, log] : logs_) {
        const size_t from = log.size() > 60000 ? log.find('\n', log.size() - 60000) + 1 : 0;
        std::cerr << "---- " << file << (from ? " (its end)" : "") << " ----\n" << log.substr(from) << "---- end of " << file << " ----\n";
      }
    ClusterTest::TearDown();
  }
  // What scripts/operator.sh release does for a namespace torn down with no operator running: a
  // task that ran with outputs holds Valley's valley.dev/outputs finalizer and a pod Valley charges
  // for its valley.dev/accounting, which only an operator removes (and only one of the namespace:
  // the next test's operator runs another), so they would keep the namespace Terminating and the
  // pods on the fleet's GPUs.
  void release_tasks() {
    auto release = [&](const kube::Resource& kind, const char* finalizer) {
      try {
        for (const auto& o : admin->list(kind, ns).items)
          kube::remove_finalizer(*admin, kind, ns, o["metadata"].value("name", ""),
                                 o["metadata"].value("finalizers", std::vector<std::string>{}), finalizer);
      } catch (const kube::KubeError&) {
      }
    };
    release(kTrainingTasks, "valley.dev/outputs");
    release(kPods, "valley.dev/accounting");
  }
  void start_operator() {
    auto flags = operator_flags();
    flags.push_back("--debug-verify-plan-inputs");
    if (!scope_.empty()) flags.push_back("--namespace=" + scope_);
    op_ = std::make_unique<ChildProcess>(
        operator_argv(ns, flags),
        ::testing::TempDir() + "/operator-" + ns + "-" + std::to_string(++starts_) + ".log");
  }
  virtual std::vector<std::string> operator_flags() const {
    // A PricingPolicy of the test's own name (absent unless the test makes it): a `default` policy
    // left in the cluster (by the demo) must not change what these tests see.
    return {"--planner-min-resize-interval=2s", "--unschedulable-timeout=3s", "--pricing-policy=" + ns};
  }
  // The operator again, running the tasks of `where` instead of the test's own namespace (its
  // Lease stays there): a test of another namespace's task still runs beside other tests.
  void restart_operator_for(const std::string& where) {
    stop_operator();
    scope_ = where;
    start_operator();
  }
  void stop_operator(int sig = SIGTERM) {
    if (!op_) return;
    op_->signal(sig);
    op_->wait(15s);
    logs_.emplace_back("operator log " + std::to_string(starts_), op_->output());
    op_.reset();
  }

  // A cluster-scoped object of the test's own (a kwok node, a ResourceSlice, a PricingPolicy):
  // created now, removed when the test ends whatever happened.
  json own(const kube::Resource& r, const json& object) {
    owned_.emplace_back(&r, object["metadata"].value("name", ""));
    return admin->create(r, "", object);
  }

  // A local PersistentVolume of the test's own on `node` at `path` (a directory the node has),
  // meant for the claim `claim` of the test's namespace only, of kLocalStorageClass (made here when
  // absent, and left: tests beside this one may use it): what a node-local provisioner would provide,
  // for --data-cache-class.
  static constexpr const char* kLocalStorageClass = "valley-e2e-local";
  void own_local_volume(const std::string& node, const std::string& claim, const std::string& path) {
    try {
      admin->create(kube::resources::kStorageClasses, "", {{"apiVersion", "storage.k8s.io/v1"},
                                             {"kind", "StorageClass"},
                                             {"metadata", {{"name", kLocalStorageClass}}},
                                             {"provisioner", "kubernetes.io/no-provisioner"},
                                             {"volumeBindingMode", "WaitForFirstConsumer"}});
    } catch (const kube::KubeError& e) {
      ASSERT_EQ(e.http_status(), 409) << e.what();
    }
    const json term = {{"matchExpressions", json::array({{{"key", "kubernetes.io/hostname"}, {"operator", "In"}, {"values", {node}}}})}};
    own(kube::resources::kPersistentVolumes,
        {{"apiVersion", "v1"},
         {"kind", "PersistentVolume"},
         {"metadata", {{"name", "e2e-" + ns + "-" + std::to_string(owned_.size())}}},
         {"spec",
          {{"capacity", {{"storage", "10Gi"}}},
           {"accessModes", {"ReadWriteOnce"}},
           {"persistentVolumeReclaimPolicy", "Retain"},
           {"storageClassName", kLocalStorageClass},
           {"local", {{"path", path}}},
           {"claimRef", {{"namespace", ns}, {"name", claim}}},
           {"nodeAffinity", {{"required", {{"nodeSelectorTerms", json::array({term})}}}}}}}});
  }

  // A policy file of deploy/policies as shipped, its objects renamed for this test (removed when it
  // ends), its binding matching only `namespaces` (the test's own by default) and reading its
  // parameters, if it has any, from `param_namespace`.
  void install_policy(const std::string& file, std::vector<std::string> namespaces = {}, const std::string& param_namespace = "") {
    if (namespaces.empty()) namespaces = {ns};
    std::string error;
    auto docs = parse_yaml(kube::read_file(std::string(VALLEY_SOURCE_DIR) + "/deploy/policies/" + file, "policy"), &error);
    ASSERT_TRUE(docs) << error;
    for (auto d : *docs) {
      json& o = d.value;
      const std::string name = o["metadata"]["name"].get<std::string>() + "-" + ns;
      o["metadata"]["name"] = name;
      if (o["kind"] == "ValidatingAdmissionPolicyBinding") {
        o["spec"]["policyName"] = name;
        if (!param_namespace.empty() && o["spec"].contains("paramRef")) o["spec"]["paramRef"]["namespace"] = param_namespace;
        o["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"] = {
            {{"key", "kubernetes.io/metadata.name"}, {"operator", "In"}, {"values", namespaces}}};
        admin->create(kAdmissionBindings, "", o);
        installed_policies_.push_back(name);
      } else {
        admin->create(kAdmissionPolicies, "", o);
      }
    }
  }

  // The PricingPolicy of the test's own name (the one operator_flags names), with this spec.
  void own_policy(const json& spec) {
    own(kube::resources::kPricingPolicies,
        {{"apiVersion", "valley.dev/v1beta1"}, {"kind", "PricingPolicy"}, {"metadata", {{"name", ns}}}, {"spec", spec}});
  }
  // A valley.dev/pool label value of the test's own: its kwok nodes carry it, its tasks select it.
  std::string own_pool() const { return "e2e-" + ns.substr(ns.size() - 6); }

  json apply(const json& spec, const std::string& name = "job") { return apply_in(ns, spec, name); }
  json apply_in(const std::string& where, const json& spec, const std::string& name) {
    return admin->create(kTrainingTasks, where,
                         {{"apiVersion", "valley.dev/v1beta1"}, {"kind", "TrainingTask"}, {"metadata", {{"name", name}}}, {"spec", spec}});
  }
  // Creating the task in `where` (the test's namespace by default) fails: the API server's message;
  // "" when it was taken (and deleted again).
  std::string refused(const json& spec, const std::string& name, std::string where = "") {
    if (where.empty()) where = ns;
    try {
      apply_in(where, spec, name);
      admin->remove(kTrainingTasks, where, name);
      return "";
    } catch (const kube::KubeError& e) {
      return e.what();
    }
  }
  // Without managedFields: a failed assertion prints the task, and they would bury its status.
  json task(const std::string& name = "job") {
    json t = admin->get(kTrainingTasks, ns, name);
    if (t.contains("metadata")) t["metadata"].erase("managedFields");
    return t;
  }
  std::string phase(const std::string& name = "job") {
    return task(name).value("status", json::object()).value("phase", "");
  }
  bool wait_phase(const std::string& want, std::chrono::seconds timeout = 60s, const std::string& name = "job") {
    return eventually([&] { return phase(name) == want; }, timeout);
  }
  std::vector<json> pods(const std::string& name = "job") {
    kube::ListOptions lo;
    lo.label_selector = "valley.dev/task=" + name;
    return admin->list(kPods, ns, lo).items;
  }
  std::vector<json> workers(const std::string& name = "job") {
    std::vector<json> out;
    for (const auto& p : pods(name))
      if (p["metadata"]["labels"].value("valley.dev/role", "") == "worker") out.push_back(p);
    return out;
  }
  json cost(const std::string& name = "job") { return task(name).value("status", json::object()).value("cost", json::object()); }
  std::string operator_log() const { return op_ ? op_->output() : ""; }
  // The namespace's Events, "Reason: note" a line.
  std::string events_text() {
    std::string out;
    for (const auto& e : admin->list(kube::resources::kEvents, ns).items) out += e.value("reason", "") + ": " + e.value("note", "") + "\n";
    return out;
  }
  // Events are written after the status that caused them (and may be batched by the recorder),
  // so a test that saw the status waits briefly for the Event rather than reading it once. Every
  // line starts with "\n" for the search: "\nReason: " finds a reason exactly.
  bool has_event(const std::string& words) {
    return eventually([&] { return ("\n" + events_text()).find(words) != std::string::npos; }, 15s);
  }

  std::unique_ptr<ChildProcess> op_;
  std::string scope_;  // restart_operator_for(): the namespace its operators run instead of ns
  int starts_ = 0;
  std::vector<std::pair<std::string, std::string>> logs_;  // of the operators stopped so far
  std::vector<std::pair<const kube::Resource*, std::string>> owned_;  // own(): removed at the end
  std::vector<std::string> installed_policies_;                       // install_policy(): removed at the end
};

// What Valley still has to run on the test's fleet: its pods not ended that are bound or pinned to
// a node of the fleet, "namespace/name" each; outside a fleet also TrainingTasks not finished, in
// any namespace (an operator of every namespace, as the tests that run alone start, would run
// them). A finished task and its ended pods hold no capacity, so what earlier tests, the demo or a
// user left finished does not count, nor what runs on other fleets beside this test.
inline std::vector<std::string> active_valley_work(kube::Client& client) {
  std::vector<std::string> out;
  auto ended = [](const json& o, const std::set<std::string>& phases) {
    return phases.count(o.value("status", json::object()).value("phase", "")) > 0;
  };
  auto id = [](const std::string& kind, const json& o) {
    return kind + " " + o["metadata"].value("namespace", "") + "/" + o["metadata"].value("name", "");
  };
  const bool in_fleet = !e2e_fleet().empty();
  if (!in_fleet)
    for (const auto& t : client.list(kTrainingTasks, "").items)
      if (!ended(t, {"Succeeded", "Failed"}) || t["metadata"].contains("deletionTimestamp")) out.push_back(id("task", t));
  std::set<std::string> fleet;
  kube::ListOptions on_fleet;
  on_fleet.label_selector = fleet_node_selector();
  for (const auto& n : client.list(kube::resources::kNodes, "", on_fleet).items) fleet.insert(n["metadata"].value("name", ""));
  kube::ListOptions lo;
  lo.label_selector = "app.kubernetes.io/managed-by=valley";
  for (const auto& p : client.list(kPods, "", lo).items) {
    if (ended(p, {"Succeeded", "Failed"})) continue;
    const std::string bound = p["spec"].value("nodeName", ""), node = bound.empty() ? api::pinned_node(p) : bound;
    if (!in_fleet || fleet.count(node)) out.push_back(id("pod", p));
  }
  return out;
}

// Capacity tests need the GPUs that earlier tests' tasks and pods (still being deleted with their
// namespaces) hold on the test's fleet.
inline void wait_until_no_active_valley_work(kube::Client& client) {
  std::vector<std::string> active;
  ASSERT_TRUE(eventually([&] { return (active = active_valley_work(client)).empty(); }, 120s))
      << "tasks or pods of earlier tests (or of a demo, or left by hand) still run; what holds capacity: "
      << ::testing::PrintToString(active) << " (make demo-clean removes what the demo left)";
}

// A kwok node (simulated: no kubelet) with `gpus` of `resource` (NVIDIA A100s by default) and the
// given labels besides its hostname's, type=kwok and the test's fleet's (so its operators see it).
inline json kwok_gpu_node(const std::string& name, json labels, int gpus, const std::string& resource = "nvidia.com/gpu") {
  labels["kubernetes.io/hostname"] = name;
  labels["type"] = "kwok";
  if (const std::string fleet = e2e_fleet(); !fleet.empty()) labels["valley.dev/fleet"] = fleet;
  if (resource == "nvidia.com/gpu") labels["nvidia.com/gpu.product"] = "NVIDIA-A100-SXM4-80GB";
  const json resources = {{"cpu", "96"}, {"memory", "1152Gi"}, {"pods", "110"}, {resource, std::to_string(gpus)}};
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}, {"labels", labels}, {"annotations", {{"kwok.x-k8s.io/node", "fake"}}}}},
          {"status", {{"capacity", resources}, {"allocatable", resources}}}};
}

inline json mpi_spec(int min, int max, json launcher_annotations = json::object()) {
  json spec = {{"taskType", "MPI"},
               {"replicas", {{"min", min}, {"max", max}}},
               {"master", {{"image", "valley.dev/examples/launcher:1"}, {"command", {"mpirun", "python", "train.py"}}}},
               {"worker", {{"image", "valley.dev/examples/worker:1"}, {"gpus", "1"}, {"slotsPerWorker", 2}}}};
  if (!launcher_annotations.empty()) spec["master"]["template"] = {{"metadata", {{"annotations", launcher_annotations}}}};
  return spec;
}

}  // namespace valley::e2e
