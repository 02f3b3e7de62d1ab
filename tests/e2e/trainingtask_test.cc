// TrainingTasks end to end: the CRD in the real API server, the operator binary reconciling, kwok
// running (and, through annotations on the pod templates, finishing or failing) the pods.
#include <signal.h>

#include <set>
#include <thread>
#include <sstream>

#include "controllers/api/pod.h"
#include "controllers/render/render.h"
#include "operator/kube/error.h"
#include "tests/e2e/support.h"
#include "tests/e2e/task_fixture.h"

namespace valley::e2e {
namespace {

using kube::resources::kConfigMaps;
using kube::resources::kPods;
using kube::resources::kSecrets;
using kube::resources::kServices;
using kube::resources::kTrainingTasks;

int workers_of(const json& t) { return t.value("status", json::object()).value("replicas", 0); }

// Someone else's pod bound to `node`, which a worker that avoids such pods (avoids_hogs: a required
// pod anti-affinity) may not sit beside: kube-scheduler then refuses the worker there, a refusal the
// planner does not foresee (it does not model inter-pod affinity).
json hog(const std::string& node) {
  json container = {{"name", "hog"}, {"image", "busybox"}};
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", "hog-" + node}, {"labels", {{"e2e-hog", "true"}}}}},
          {"spec", {{"nodeName", node}, {"containers", json::array({container})}}}};
}
json avoids_hogs() {
  const json term = {{"labelSelector", {{"matchLabels", {{"e2e-hog", "true"}}}}}, {"topologyKey", "kubernetes.io/hostname"}};
  return {{"spec", {{"affinity", {{"podAntiAffinity", {{"requiredDuringSchedulingIgnoredDuringExecution", json::array({term})}}}}}}}};
}

std::string ready_time(const json& pod) {
  for (const auto& c : pod["status"].value("conditions", json::array()))
    if (c["type"] == "Ready" && c["status"] == "True") return c.value("lastTransitionTime", "");
  return "";
}

TEST_F(TaskTest, ApplyExpandsIntoLauncherWorkersServiceHostfileAndKeys) {
  json created = apply(mpi_spec(3, 3));
  ASSERT_TRUE(wait_phase("Running")) << task().dump(2) << operator_log();
  const std::string uid = created["metadata"]["uid"];
  auto all = pods();
  ASSERT_EQ(all.size(), 4u);
  std::set<std::string> names;
  std::string last_worker_ready;
  // What the NVIDIA runtime would hand a container (CUDA images say "all"): none to the launcher.
  auto visible_gpus = [](const json& c) {
    for (const auto& e : c.value("env", json::array()))
      if (e.value("name", "") == "NVIDIA_VISIBLE_DEVICES") return e.value("value", "");
    return std::string("(unset)");
  };
  for (const auto& p : all) {
    names.insert(p["metadata"]["name"]);
    EXPECT_EQ(p["metadata"]["ownerReferences"][0]["uid"], uid);
    EXPECT_EQ(p["metadata"]["labels"]["app.kubernetes.io/managed-by"], "valley");
    EXPECT_EQ(p["metadata"]["labels"]["valley.dev/epoch"], "1");
    if (p["metadata"]["labels"]["valley.dev/role"] == "launcher") {
      // It went out with the workers; its last init container holds mpirun until they answer.
      ASSERT_TRUE(p["spec"].contains("initContainers")) << p["spec"].dump(2);
      EXPECT_EQ(p["spec"]["initContainers"].back()["name"], "valley-wait-for-workers");
      for (const char* list : {"containers", "initContainers"})
        for (const auto& c : p["spec"][list]) EXPECT_EQ(visible_gpus(c), "void") << c.dump();
    } else {
      last_worker_ready = std::max(last_worker_ready, ready_time(p));
      EXPECT_EQ(p["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"], "1");
      EXPECT_EQ(visible_gpus(p["spec"]["containers"][0]), "(unset)") << "the device plugin names the worker's GPUs";
    }
  }
  EXPECT_EQ(names, (std::set<std::string>{"job-launcher", "job-worker-0", "job-worker-1", "job-worker-2"}));
  // The task was Running only once every worker was Ready (second precision on both).
  std::string running_since;
  for (const auto& c : task()["status"].value("conditions", json::array()))
    if (c["type"] == "Running" && c["status"] == "True") running_since = c.value("lastTransitionTime", "");
  EXPECT_GE(running_since, last_worker_ready);

  json svc = admin->get(kServices, ns, "job-workers");
  EXPECT_EQ(svc["spec"]["clusterIP"], "None");
  EXPECT_EQ(svc["metadata"]["ownerReferences"][0]["uid"], uid);
  // No ConfigMap: the launcher carries the hostfile it mounts.
  EXPECT_THROW(admin->get(kConfigMaps, ns, "job-mpi"), kube::KubeError);
  json launcher = admin->get(kPods, ns, "job-launcher");
  std::istringstream hostfile(launcher["metadata"]["annotations"].value("valley.dev/hostfile", ""));
  int lines = 0;
  for (std::string line; std::getline(hostfile, line); ++lines) {
    EXPECT_EQ(line, "job-worker-" + std::to_string(lines) + ".job-workers." + ns + ".svc slots=2");
  }
  EXPECT_EQ(lines, 3);  // workers; 3 x 2 slots = 6 ranks
  json secret = admin->get(kSecrets, ns, "job-ssh");
  EXPECT_EQ(secret["type"], "kubernetes.io/ssh-auth");
  EXPECT_TRUE(secret["data"].contains("ssh-privatekey") && secret["data"].contains("ssh-publickey"));

  json st = task()["status"];
  EXPECT_EQ(st["replicas"], 3);
  EXPECT_EQ(st["selector"], "valley.dev/task=job");
  EXPECT_EQ(st["observedGeneration"], created["metadata"]["generation"]);

  // `kubectl get tt` shows the printer columns.
  ChildProcess get({VALLEY_SOURCE_DIR "/.valley/bin/kubectl", "--kubeconfig=" + admin_kubeconfig_path(), "-n", ns, "get", "tt"},
                   ::testing::TempDir() + "/kubectl-get-tt.log");
  ASSERT_EQ(get.wait(20s), 0) << get.output();
  for (const char* column : {"PHASE", "REASON", "WORKERS", "MIN", "MAX", "PRIORITY", "COST", "AGE"})
    EXPECT_NE(get.output().find(column), std::string::npos) << get.output();
  EXPECT_NE(get.output().find("Running"), std::string::npos) << get.output();

  // Deleting the task deletes everything it owns (kube-controller-manager's garbage collector).
  admin->remove(kTrainingTasks, ns, "job");
  EXPECT_TRUE(eventually([&] { return pods().empty(); }, 60s));
}

TEST_F(TaskTest, LauncherSuccessMeansTaskSuccessAndRunningWorkersAreCleanedUp) {
  apply(mpi_spec(2, 2, {{"sim.valley.dev/run-time", "2s"}}));
  ASSERT_TRUE(wait_phase("Succeeded")) << task().dump(2);
  json st = task()["status"];
  EXPECT_TRUE(st.contains("completionTime"));
  EXPECT_TRUE(eventually([&] {
    auto left = pods();
    return left.size() == 1 && left[0]["metadata"]["name"] == "job-launcher";  // cleanPodPolicy Running
  }, 30s));
  for (const char* r : {"Admitted", "Running", "Succeeded"}) EXPECT_TRUE(has_event("\n" + std::string(r) + ": ")) << r << "\n" << events_text();
}

// Deleting a namespace takes its tasks with it. The namespace controller deletes the pods first: the
// task must not take that for a disruption and restart (status writes, creates the terminating
// namespace refuses; minutes of it per namespace at 200 tasks), only let its pods go.
TEST_F(TaskTest, DeletingTheNamespaceOfARunningTaskLetsItsPodsGoWithoutRestartingIt) {
  // Another namespace: this one holds the operator's Lease and its RBAC.
  const std::string gone = ns.substr(0, 50) + "-gone";
  admin->create("/api/v1/namespaces", {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", gone}}}});
  restart_operator_for(gone);
  admin->create(kTrainingTasks, gone,
                {{"apiVersion", "valley.dev/v1beta1"}, {"kind", "TrainingTask"}, {"metadata", {{"name", "job"}}}, {"spec", mpi_spec(2, 2)}});
  ASSERT_TRUE(eventually([&] {
    return admin->get(kTrainingTasks, gone, "job").value("status", json::object()).value("phase", "") == "Running";
  }, 60s)) << operator_log();
  admin->remove("/api/v1/namespaces/" + gone);
  ASSERT_TRUE(eventually([&] {
    try {
      admin->get("/api/v1/namespaces/" + gone);
      return false;
    } catch (const kube::KubeError& e) {
      return e.http_status() == 404;
    }
  }, 60s)) << "namespace " << gone << " is still there\n" << operator_log();
  // The operator's log lines about the task: none says it restarts or creates anything.
  std::istringstream log(operator_log());
  int lines = 0;
  for (std::string line; std::getline(log, line);) {
    if (line.find(gone + "/job") == std::string::npos) continue;
    ++lines;
    EXPECT_EQ(line.find("-> Restarting"), std::string::npos) << line;
    EXPECT_EQ(line.find(": create "), std::string::npos) << line;
  }
  EXPECT_GT(lines, 0) << "the log says nothing of the task:\n" << operator_log();
}

TEST_F(TaskTest, RetryableFailuresAreRetriedUpToTheBackoffLimit) {
  json spec = mpi_spec(2, 2, {{"sim.valley.dev/run-time", "1s"}, {"sim.valley.dev/exit-code", "137"}});
  spec["runPolicy"] = {{"backoffLimit", 2}};
  apply(spec);
  ASSERT_TRUE(wait_phase("Failed", 90s)) << task().dump(2);
  json st = task()["status"];
  EXPECT_EQ(st["reason"], "BackoffLimitExceeded");
  EXPECT_EQ(st["restarts"]["failures"], 2);
  // Seen once in CI (0e8fdb9): epoch 4 with failures 2, another restart of no recorded cause; the
  // status (restarts, lastDisruption, conditions) says which path made it.
  EXPECT_EQ(st["epoch"], 3) << st.dump(2);
}

TEST_F(TaskTest, PermanentFailureFailsAtOnce) {
  apply(mpi_spec(1, 1, {{"sim.valley.dev/run-time", "1s"}, {"sim.valley.dev/exit-code", "2"}}));
  ASSERT_TRUE(wait_phase("Failed")) << task().dump(2);
  json st = task()["status"];
  EXPECT_EQ(st["reason"], "ExitCode");
  EXPECT_EQ(st["epoch"], 1);
  EXPECT_FALSE(st.contains("restarts"));
}

TEST_F(TaskTest, WorkerDeletedByHandRestartsTheEpochFromItsCheckpoint) {
  apply(mpi_spec(2, 2));
  ASSERT_TRUE(wait_phase("Running"));
  std::string old_uid = admin->get(kPods, ns, "job-worker-1")["metadata"]["uid"];
  admin->remove(kPods, ns, "job-worker-1");
  // mpirun has lost a rank: the whole epoch restarts (a disruption, not a failure).
  EXPECT_TRUE(eventually([&] {
    try {
      json p = admin->get(kPods, ns, "job-worker-1");
      json st = task()["status"];
      return p["metadata"]["uid"] != old_uid && p["status"].value("phase", "") == "Running" && st.value("phase", "") == "Running" &&
             st.value("epoch", 0) == 2;
    } catch (const kube::KubeError&) {
      return false;
    }
  }, 30s)) << task().dump(2);
  json st = task()["status"];
  EXPECT_EQ(st["restarts"].value("disruptions", 0), 1);
  EXPECT_EQ(st["restarts"].value("failures", 0), 0);
  EXPECT_EQ(st["lastDisruption"].value("cause", ""), "PodDeleted");
}

TEST_F(TaskTest, SuspendStopsPodsAndResumeRestartsThemInANewEpoch) {
  apply(mpi_spec(2, 2));
  ASSERT_TRUE(wait_phase("Running"));
  admin->patch(kTrainingTasks, ns, "job", kube::PatchType::Merge, {{"spec", {{"runPolicy", {{"suspend", true}}}}}});
  ASSERT_TRUE(wait_phase("Suspended"));
  EXPECT_TRUE(eventually([&] { return pods().empty(); }, 30s));
  admin->patch(kTrainingTasks, ns, "job", kube::PatchType::Merge, {{"spec", {{"runPolicy", {{"suspend", false}}}}}});
  ASSERT_TRUE(wait_phase("Running"));
  EXPECT_EQ(task()["status"]["epoch"], 2);
  for (const auto& p : pods()) EXPECT_EQ(p["metadata"]["labels"]["valley.dev/epoch"], "2");
}

TEST_F(TaskTest, ScaleIsACheckpointRestartAtTheNewWorldSize) {
  apply(mpi_spec(2, 8));
  // Admitted straight at max: the GPUs are free.
  ASSERT_TRUE(eventually([&] { return phase() == "Running" && task()["status"].value("replicas", 0) == 8; }, 60s))
      << task()["status"].dump(2);
  admin->patch(kTrainingTasks, ns, "job", kube::PatchType::Merge, {{"spec", {{"replicas", 4}}}}, "scale");
  EXPECT_TRUE(eventually([&] {
    json st = task()["status"];
    return st.value("phase", "") == "Running" && st.value("replicas", 0) == 4 && st.value("epoch", 0) == 2;
  }, 60s)) << task()["status"].dump(2);
  EXPECT_EQ(task()["status"]["restarts"]["resizes"], 1);
  for (const auto& p : pods()) {
    EXPECT_EQ(p["metadata"]["labels"]["valley.dev/epoch"], "2");
    for (const auto& e : p["spec"]["containers"][0]["env"]) {
      if (e["name"] == "VALLEY_WORLD_SIZE") {
        EXPECT_EQ(e["value"], "8");
      }
      if (e["name"] == "VALLEY_RESUME") {
        EXPECT_EQ(e["value"], "1");
      }
    }
  }
}

TEST_F(TaskTest, HotElasticTaskResizesWithoutRestartingTheLauncher) {
  json spec = mpi_spec(2, 4);
  spec["elasticity"] = "Hot";
  apply(spec);
  ASSERT_TRUE(eventually([&] { return phase() == "Running" && workers_of(task()) == 4; }, 60s)) << task().dump(2);
  std::string launcher_uid = admin->get(kPods, ns, "job-launcher")["metadata"]["uid"];
  admin->patch(kTrainingTasks, ns, "job", kube::PatchType::Merge, {{"spec", {{"replicas", 2}}}}, "scale");
  EXPECT_TRUE(eventually([&] { return workers_of(task()) == 2 && pods().size() == 3; }, 60s)) << task()["status"].dump(2);
  json st = task()["status"];
  EXPECT_EQ(st["epoch"], 1);
  EXPECT_EQ(st["phase"], "Running");
  EXPECT_EQ(st["restarts"]["resizes"], 1);
  EXPECT_EQ(admin->get(kPods, ns, "job-launcher")["metadata"]["uid"], launcher_uid);
  // Its hostfile (which discover_hosts.sh reads) lists the two workers left.
  auto hosts = [&] { return admin->get(kPods, ns, "job-launcher")["metadata"]["annotations"].value("valley.dev/hostfile", ""); };
  EXPECT_TRUE(eventually([&] { return hosts() == "job-worker-0.job-workers." + ns + ".svc slots=2\njob-worker-1.job-workers." + ns + ".svc slots=2\n"; }, 30s))
      << hosts();
}

TEST_F(TaskTest, FinishedTaskIsDeletedAfterItsTtl) {
  json spec = mpi_spec(1, 1, {{"sim.valley.dev/run-time", "1s"}});
  spec["runPolicy"] = {{"ttlSecondsAfterFinished", 2}};
  apply(spec);
  ASSERT_TRUE(wait_phase("Succeeded"));
  EXPECT_TRUE(eventually([&] {
    try {
      task();
      return false;
    } catch (const kube::KubeError& e) {
      return e.http_status() == 404;
    }
  }, 30s));
}

TEST_F(TaskTest, SingleTaskRunsOnePod) {
  apply({{"taskType", "Single"}, {"image", "valley.dev/examples/train:1"}, {"worker", {{"gpus", "0.1"}}}});
  ASSERT_TRUE(wait_phase("Running"));
  auto all = pods();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0]["metadata"]["name"], "job-worker-0");
  // A tenth of a GPU is a MIG slice, so it lands on the MIG node.
  EXPECT_EQ(all[0]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/mig-1g.10gb"], "1");
}

TEST_F(TaskTest, HalfAGpuSharesATimeSlicedGpu) {
  json spec = mpi_spec(2, 2);
  spec["worker"]["gpus"] = "0.5";
  apply(spec);
  ASSERT_TRUE(wait_phase("Running")) << task().dump(2);
  int workers = 0;
  for (const auto& p : pods()) {
    if (p["metadata"]["labels"]["valley.dev/role"] != "worker") continue;
    ++workers;
    EXPECT_EQ(p["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu.shared"], "1");
    EXPECT_EQ(p["spec"]["nodeName"], fleet_node("t4-shared-0"));
  }
  EXPECT_EQ(workers, 2) << "both workers of the minimum gang run on the time-sliced GPU";
}

TEST_F(TaskTest, OperatorKilledMidExpansionConvergesWithoutDuplicatesOrOrphans) {
  apply(mpi_spec(8, 8));
  // Kill -9 as soon as the expansion has begun, three times, at different points.
  for (int round = 0; round < 3; ++round) {
    size_t before = pods().size();
    eventually([&] { return pods().size() > before || phase() == "Running"; }, 20s);
    stop_operator(SIGKILL);
    start_operator();
  }
  ASSERT_TRUE(wait_phase("Running", 60s)) << task().dump(2);
  auto all = pods();
  std::set<std::string> names;
  const std::string uid = task()["metadata"]["uid"];
  for (const auto& p : all) {
    names.insert(p["metadata"]["name"]);
    EXPECT_EQ(p["metadata"]["ownerReferences"][0]["uid"], uid);
  }
  EXPECT_EQ(all.size(), 9u);
  EXPECT_EQ(names.size(), 9u);
  EXPECT_EQ(task()["status"]["epoch"], 1) << "a restart of the operator restarted the job";
  EXPECT_FALSE(task()["status"].contains("restarts"));
}

TEST_F(TaskTest, PodsTheApiServerRefusesAreReportedAsEventsNotACrash) {
  // The schema keeps `resources` free-form, so a nonsense quantity passes it; the pod does not.
  json spec = mpi_spec(1, 1);
  spec["worker"]["resources"] = {{"requests", {{"cpu", "lots"}}}};
  apply(spec);
  // The API server refuses the pod: the task reports it through an Event, and the operator lives.
  EXPECT_TRUE(eventually([&] {
    for (const auto& e : admin->list(kube::resources::kEvents, ns).items)
      if (e.value("reason", "") == "CreateFailed") return true;
    return false;
  }, 30s));
  EXPECT_EQ(op_->wait(1s), -1) << "the operator exited:\n" << operator_log();
}

// A namespace that enforces Pod Security "restricted" refuses Valley's default (Baseline) pods: the
// task says so in PodsCreated and creates nothing more (no retry storm); asking for Restricted pods
// gets them admitted and running, and the condition turns True.
TEST_F(TaskTest, ANamespaceThatEnforcesRestrictedGetsRestrictedPodsWhenTheTaskAsks) {
  admin->patch(kube::resources::kNamespaces, "", ns, kube::PatchType::Merge,
               {{"metadata", {{"labels", {{"pod-security.kubernetes.io/enforce", "restricted"}}}}}});
  apply(mpi_spec(2, 2));
  auto pods_created = [&]() -> json {
    for (const auto& c : task().value("status", json::object()).value("conditions", json::array()))
      if (c["type"] == "PodsCreated") return c;
    return json::object();
  };
  ASSERT_TRUE(eventually([&] { return pods_created().value("status", "") == "False"; }, 30s)) << task().dump(2) << operator_log();
  EXPECT_EQ(pods_created()["reason"], "PodSecurity");
  EXPECT_NE(pods_created()["message"].get<std::string>().find("spec.podSecurity.level: Restricted"), std::string::npos);
  EXPECT_TRUE(pods().empty());
  // Not retried blindly: the refusal is not repeated while nothing changes.
  auto refusals = [&] {
    int n = 0;
    for (const auto& e : admin->list(kube::resources::kEvents, ns).items)
      if (e.value("reason", "") == "CreateFailed") n += std::max<int>(1, e.value("series", json::object()).value("count", 1));
    return n;
  };
  std::this_thread::sleep_for(5s);
  const int before = refusals();
  std::this_thread::sleep_for(10s);
  EXPECT_EQ(refusals(), before) << "pods are created again and again";
  // The task asks for Restricted pods: they pass, run, and the task starts.
  admin->patch(kTrainingTasks, ns, "job", kube::PatchType::Merge, {{"spec", {{"podSecurity", {{"level", "Restricted"}}}}}});
  ASSERT_TRUE(wait_phase("Running", 60s)) << task().dump(2) << operator_log();
  EXPECT_EQ(pods_created()["status"], "True");
  for (const auto& p : pods()) {
    EXPECT_EQ(p["spec"]["securityContext"]["runAsNonRoot"], true) << p.dump(2);
    EXPECT_EQ(p["spec"]["securityContext"]["runAsUser"], 1000);
  }
}

// --- capacity-aware admission and elastic resizing (default profile: 37 whole NVIDIA GPUs, 16 AMD) ---

// What a demo or a user leaves behind, a finished task and its ended pods in a namespace of its
// own, holds no capacity: the suite's waits for a quiet cluster pass beside it.
TEST_F(TaskTest, AFinishedTaskLeftInAnotherNamespaceDoesNotHoldTheSuite) {
  const std::string elsewhere = ns + "-left";
  ASSERT_NO_THROW(create_namespace_for_operators(*admin, elsewhere));
  restart_operator_for(elsewhere);
  apply_in(elsewhere, mpi_spec(2, 2, {{"sim.valley.dev/run-time", "1s"}}), "left");
  auto left_phase = [&] { return admin->get(kTrainingTasks, elsewhere, "left").value("status", json::object()).value("phase", ""); };
  EXPECT_TRUE(eventually([&] { return left_phase() == "Succeeded"; }, 60s)) << admin->get(kTrainingTasks, elsewhere, "left").dump(2);
  wait_until_no_active_valley_work(*admin);
  EXPECT_EQ(left_phase(), "Succeeded") << "the leftover is still there, finished";
  admin->remove(kube::resources::kNamespaces, "", elsewhere);
  EXPECT_TRUE(eventually([&] {
    try {
      admin->get(kube::resources::kNamespaces, "", elsewhere);
      return false;
    } catch (const kube::KubeError& e) {
      return e.http_status() == 404;
    }
  }, 90s)) << "the leftover's namespace is not gone";
}

TEST_F(TaskTest, TwoGangsThatDoNotFitTogetherRunOneAtATimeWithNoPodsForTheWaitingOne) {
  wait_until_no_active_valley_work(*admin);
  apply(mpi_spec(20, 20), "first");
  ASSERT_TRUE(wait_phase("Running", 60s, "first")) << task("first").dump(2);
  apply(mpi_spec(20, 20), "second");
  EXPECT_TRUE(eventually([&] { return task("second").value("status", json::object()).value("reason", "") == "Waiting"; }, 30s));
  std::this_thread::sleep_for(2s);
  json waiting = task("second");
  EXPECT_EQ(waiting["status"]["phase"], "Pending");
  EXPECT_NE(waiting["status"]["message"].get<std::string>().find("InsufficientCapacity: needs 20 GPUs"), std::string::npos)
      << waiting["status"].dump(2);
  EXPECT_TRUE(pods("second").empty()) << "a waiting gang must not hold any pod";
  // When the first ends, the second is admitted.
  admin->remove(kTrainingTasks, ns, "first");
  EXPECT_TRUE(wait_phase("Running", 90s, "second")) << task("second").dump(2);
}

TEST_F(TaskTest, ElasticTaskGrowsShrinksForHigherPriorityAndGrowsBack) {
  wait_until_no_active_valley_work(*admin);
  apply(mpi_spec(2, 16), "elastic");
  ASSERT_TRUE(eventually([&] { return phase("elastic") == "Running" && workers_of(task("elastic")) == 16; }, 60s))
      << task("elastic").dump(2);
  json vip = mpi_spec(28, 28);
  vip["priority"] = 80;
  apply(vip, "vip");
  ASSERT_TRUE(wait_phase("Running", 90s, "vip")) << task("vip").dump(2) << task("elastic").dump(2);
  // The elastic task restarts smaller (a new epoch) and runs again next to it.
  ASSERT_TRUE(eventually([&] {
    json t = task("elastic");
    return t["status"].value("phase", "") == "Running" && workers_of(t) < 16;
  }, 60s)) << task("elastic").dump(2);
  json shrunk = task("elastic");
  EXPECT_GE(workers_of(shrunk), 2);
  EXPECT_EQ(shrunk["status"]["restarts"].value("resizes", 0), 1) << shrunk["status"].dump(2);
  EXPECT_EQ(shrunk["status"]["restarts"].value("preemptions", 0), 0) << "shrinking was enough; no preemption";
  admin->remove(kTrainingTasks, ns, "vip");
  EXPECT_TRUE(eventually([&] { return phase("elastic") == "Running" && workers_of(task("elastic")) == 16; }, 90s))
      << task("elastic").dump(2);
}

TEST_F(TaskTest, AmdCapableTaskLandsOnAmdWhenNvidiaIsFull) {
  wait_until_no_active_valley_work(*admin);
  apply(mpi_spec(37, 37), "fill");
  ASSERT_TRUE(wait_phase("Running", 90s, "fill")) << task("fill").dump(2);
  json amd = mpi_spec(4, 4);
  amd["amdSupport"] = true;
  amd["worker"]["amdImage"] = "valley.dev/examples/worker-rocm:1";
  apply(amd, "rocm");
  ASSERT_TRUE(wait_phase("Running", 60s, "rocm")) << task("rocm").dump(2);
  for (const auto& p : pods("rocm")) {
    if (p["metadata"]["labels"]["valley.dev/role"] != "worker") continue;
    EXPECT_EQ(p["spec"]["containers"][0]["image"], "valley.dev/examples/worker-rocm:1");
    EXPECT_EQ(p["spec"]["containers"][0]["resources"]["limits"]["amd.com/gpu"], "1");
    EXPECT_EQ(p["spec"]["nodeName"].get<std::string>().rfind(fleet_node("mi250"), 0), 0u);
  }
}

TEST_F(TaskTest, WorkersTheirPlannedNodeCannotBindAreReplannedNotStuck) {
  wait_until_no_active_valley_work(*admin);
  // Every NVIDIA node holds a pod the task's workers avoid (the planner does not model inter-pod
  // affinity); the AMD nodes hold none. kube-scheduler refuses each NVIDIA node in turn; Valley
  // plans around them.
  std::vector<std::string> hogs;
  kube::ListOptions fleet;
  fleet.label_selector = fleet_node_selector();
  for (const auto& n : admin->list(kube::resources::kNodes, "", fleet).items) {
    const json& allocatable = n["status"].value("allocatable", json::object());
    const json annotations = n["metadata"].value("annotations", json::object());
    if (allocatable.contains("amd.com/gpu") || annotations.value("kwok.x-k8s.io/node", "") != "fake") continue;
    hogs.push_back(n["metadata"]["name"].get<std::string>());
    admin->create(kPods, ns, hog(hogs.back()));
  }
  json spec = mpi_spec(1, 1);
  spec["amdSupport"] = true;
  spec["worker"]["template"] = avoids_hogs();
  apply(spec);
  ASSERT_TRUE(wait_phase("Running", 120s)) << task().dump(2) << operator_log();
  json worker = admin->get(kPods, ns, "job-worker-0");
  EXPECT_EQ(worker["spec"]["nodeName"].get<std::string>().rfind(fleet_node("mi250"), 0), 0u);
  EXPECT_NE(operator_log().find("planning around it"), std::string::npos);
  for (const auto& node : hogs) admin->remove(kPods, ns, "hog-" + node);
}

// A gang not started yet whose first worker a node will not take (kube-scheduler refuses it for a
// pod it avoids there, which the planner does not model) re-creates that worker alone elsewhere: the worker after it
// keeps its pod and its index, no GPU is counted twice, and nothing restarts. (At 1,000 tasks the
// planner put the replacement last, so every worker after the lost one moved: their pods were
// re-created, and bound ones stayed where the plan no longer counted them.)
TEST_F(TaskTest, OnlyTheWorkerANodeRefusesIsReplacedTheRestOfTheGangKeepsItsPods) {
  wait_until_no_active_valley_work(*admin);
  json spec = mpi_spec(2, 2);
  spec["worker"]["gpus"] = "5";  // one worker a node: a100-od-0, a100-od-1 or a100-mig-0's 5
  spec["worker"]["template"] = avoids_hogs();
  auto pinned = [&](const std::string& task, int index) -> std::string {
    for (const auto& p : pods(task))
      if (p["metadata"]["name"] == task + "-worker-" + std::to_string(index)) return api::pinned_node(p);
    return "";
  };
  // Where the plan puts worker-0 of such a gang (it is deterministic), learnt from a probe.
  apply(spec, "probe");
  ASSERT_TRUE(eventually([&] { return !pinned("probe", 0).empty() && !pinned("probe", 1).empty(); }, 60s)) << operator_log();
  const std::string refusing = pinned("probe", 0), keeping = pinned("probe", 1);
  ASSERT_NE(refusing, keeping);
  admin->remove(kTrainingTasks, ns, "probe");
  ASSERT_TRUE(eventually([&] { return pods("probe").empty(); }, 60s));
  // A pod of someone else's the workers avoid is bound to that node directly.
  admin->create(kPods, ns, hog(refusing));
  // The operator's cache may still show the probe's pods holding GPUs a moment after the API server
  // dropped them (a loaded machine): a gang planned then goes elsewhere. Placed again once it has
  // caught up.
  bool placed_as_probed = false;
  for (int attempt = 1; attempt <= 3 && !placed_as_probed; ++attempt) {
    apply(spec);
    placed_as_probed = eventually([&] { return pinned("job", 1) == keeping; }, 30s);
    if (placed_as_probed) break;
    admin->remove(kTrainingTasks, ns, "job");
    ASSERT_TRUE(eventually([&] {
      try {
        task();
        return false;
      } catch (const kube::KubeError& e) {
        return e.http_status() == 404 && pods().empty();
      }
    }, 60s));
  }
  ASSERT_TRUE(placed_as_probed) << operator_log();
  std::string kept_uid;
  ASSERT_TRUE(eventually([&] {
    for (const auto& p : pods())
      if (p["metadata"]["name"] == "job-worker-1" && !p["spec"].value("nodeName", "").empty()) kept_uid = p["metadata"]["uid"];
    return !kept_uid.empty();
  }, 60s));
  ASSERT_TRUE(wait_phase("Running", 120s)) << task().dump(2) << operator_log();
  EXPECT_NE(operator_log().find("node " + refusing + " did not take its worker"), std::string::npos) << operator_log();
  json moved, kept;
  for (const auto& p : pods()) {
    if (p["metadata"]["name"] == "job-worker-0") moved = p;
    if (p["metadata"]["name"] == "job-worker-1") kept = p;
  }
  ASSERT_TRUE(moved.is_object() && kept.is_object());
  EXPECT_EQ(kept["metadata"]["uid"], kept_uid) << "worker-1 was re-created";
  EXPECT_EQ(kept["spec"]["nodeName"], keeping);
  const std::string moved_to = moved["spec"].value("nodeName", "");
  EXPECT_NE(moved_to, refusing);
  EXPECT_NE(moved_to, keeping) << "two 5-GPU workers on one 8-GPU node";
  json st = task()["status"];
  EXPECT_EQ(st.value("epoch", 0), 1);
  EXPECT_EQ(st.value("restarts", json::object()).value("total", 0), 0) << st.dump(2);
  admin->remove(kPods, ns, "hog-" + refusing);
}

// The API server refuses bad specs with a clear message, before Valley sees them.
struct BadSpec {
  const char* what;
  json spec;
  const char* message;
};

TEST_F(TaskTest, InvalidSpecsAreRejectedByTheApiServer) {
  json mpi = mpi_spec(1, 2);
  auto with = [&](const json& patch) {
    json s = mpi;
    s.merge_patch(patch);
    return s;
  };
  std::vector<BadSpec> cases = {
      {"min > max", with({{"replicas", {{"min", 4}, {"max", 2}}}}), "replicas.min must not exceed replicas.max"},
      {"no worker image", with({{"worker", {{"image", nullptr}}}}), "an MPI task needs master.image and worker.image"},
      {"no launcher", with({{"master", nullptr}}), "an MPI task needs master.image and worker.image"},
      {"priority 150", with({{"priority", 150}}), "should be less than or equal to 100"},
      {"gpus 1.5", with({{"worker", {{"gpus", "1.5"}}}}), "spec.worker.gpus"},
      {"unknown type", with({{"taskType", "Horovod"}}), "Unsupported value: \"Horovod\""},
      {"scale outside range", with({{"replicas", {{"target", 5}}}}), "must lie within replicas.min..replicas.max"},
      {"single with 2", {{"taskType", "Single"}, {"image", "i"}, {"replicas", {{"min", 1}, {"max", 2}}}}, "a Single task runs one pod"},
      {"amdImage without amdSupport", with({{"worker", {{"amdImage", "rocm"}}}}), "only used with amdSupport true"},
      {"bad checkpoint", with({{"checkpoint", {{"uri", "ftp://x"}}}}), "spec.checkpoint.uri"},
      {"bad maxCost", with({{"maxCost", "lots"}}), "spec.maxCost"},
      {"bad duration", with({{"estimatedDuration", "soon"}}), "spec.estimatedDuration"},
      {"negative backoff", with({{"runPolicy", {{"backoffLimit", -1}}}}), "should be greater than or equal to 0"},
      {"bad cleanPodPolicy", with({{"runPolicy", {{"cleanPodPolicy", "Sometimes"}}}}), "Unsupported value"},
  };
  int i = 0;
  for (const auto& c : cases) {
    try {
      apply(c.spec, "bad-" + std::to_string(i++));
      ADD_FAILURE() << c.what << ": accepted";
    } catch (const kube::KubeError& e) {
      EXPECT_EQ(e.http_status(), 422) << c.what;
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << c.what << ": " << e.what();
    }
  }
  try {
    apply(mpi, std::string(51, 'x'));
    ADD_FAILURE() << "a 51-character name was accepted";
  } catch (const kube::KubeError& e) {
    EXPECT_NE(std::string(e.what()).find("at most 50 characters"), std::string::npos) << e.what();
  }

  // Once admitted, images and taskType are fixed.
  apply(mpi);
  ASSERT_TRUE(wait_phase("Running"));
  for (const json& patch : {json{{"spec", {{"worker", {{"image", "other:2"}}}}}}, json{{"spec", {{"taskType", "Single"}}}}}) {
    try {
      admin->patch(kTrainingTasks, ns, "job", kube::PatchType::Merge, patch);
      ADD_FAILURE() << "changed after admission: " << patch.dump();
    } catch (const kube::KubeError& e) {
      EXPECT_EQ(e.http_status(), 422) << e.what();
    }
  }
  // The elastic range may change.
  EXPECT_NO_THROW(admin->patch(kTrainingTasks, ns, "job", kube::PatchType::Merge, {{"spec", {{"replicas", {{"max", 3}}}}}}));
}

}  // namespace
}  // namespace valley::e2e
