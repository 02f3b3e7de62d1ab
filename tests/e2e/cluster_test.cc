// The local control plane is real and behaves as later tests rely on: pinned version, GPU nodes
// from the default profile, pods scheduled by kube-scheduler onto kwok nodes and driven through their
// life by annotations, RBAC enforced for service-account tokens, and our operator binary connecting.
#include <signal.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <thread>

#include "controllers/inputs/snapshot.h"
#include "operator/kube/error.h"
#include "operator/kube/finalizers.h"
#include "tests/e2e/support.h"

namespace valley::e2e {
namespace {

json gpu_pod(const std::string& name, const std::string& resource, const std::string& count,
             const json& annotations = json::object()) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"annotations", annotations}}},
          {"spec",
           {{"restartPolicy", "Never"},
            {"terminationGracePeriodSeconds", 5},
            {"containers",
             {{{"name", "train"}, {"image", "valley.dev/test:1"}, {"resources", {{"limits", {{resource, count}}}}}}}}}}};
}

// Watches one pod from the given resourceVersion until `done` holds for it; returns the last object.
json watch_pod_until(kube::Client& client, const std::string& ns, const std::string& name, const std::string& rv,
                     const std::function<bool(const json&)>& done, std::chrono::seconds timeout = 30s) {
  // It may be done already (kwok is fast): then no later event would ever come.
  json last;
  try {
    last = client.get("/api/v1/namespaces/" + ns + "/pods/" + name);
    if (done(last)) return last;
  } catch (const kube::KubeError&) {
  }
  std::string path = "/api/v1/namespaces/" + ns + "/pods?watch=1&allowWatchBookmarks=true&resourceVersion=" + rv +
                     "&timeoutSeconds=" + std::to_string(timeout.count()) +
                     "&fieldSelector=" + kube::url_encode("metadata.name=" + name);
  client.watch(path, [&](const kube::WatchEvent& ev) {
    if (ev.type == "BOOKMARK") return true;
    last = ev.object;
    return !done(ev.object);
  });
  return last;
}

json node_of(kube::Client& client, const json& pod) {
  return client.get("/api/v1/nodes/" + pod["spec"]["nodeName"].get<std::string>());
}

TEST(Cluster, RunsThePinnedKubernetesRelease) {
  kube::Client client(admin_config());
  EXPECT_EQ(client.server_version().value("gitVersion", ""), pinned_kubernetes_version());
}

TEST(Cluster, DefaultProfileProvidesReadyGpuNodesOfEveryKind) {
  kube::Client client(admin_config());
  json nodes = client.get("/api/v1/nodes?labelSelector=" + kube::url_encode("type=kwok"));
  std::set<std::string> kinds;
  for (const auto& n : nodes["items"]) {
    const auto& labels = n["metadata"]["labels"];
    const auto& alloc = n["status"]["allocatable"];
    bool ready = false;
    for (const auto& c : n["status"]["conditions"]) ready |= c["type"] == "Ready" && c["status"] == "True";
    EXPECT_TRUE(ready) << n["metadata"]["name"];
    EXPECT_TRUE(labels.contains("topology.kubernetes.io/zone")) << n["metadata"]["name"];
    if (alloc.contains("nvidia.com/gpu") && alloc["nvidia.com/gpu"] == "8") {
      EXPECT_EQ(labels.value("nvidia.com/gpu.product", ""), "NVIDIA-A100-SXM4-80GB");
      kinds.insert("nvidia-" + labels.value("karpenter.sh/capacity-type", "?"));
    }
    if (alloc.contains("amd.com/gpu")) kinds.insert("amd");
    if (alloc.contains("nvidia.com/mig-1g.10gb")) kinds.insert("mig");
    if (alloc.contains("nvidia.com/gpu.shared")) kinds.insert("time-sliced");
  }
  EXPECT_EQ(kinds, (std::set<std::string>{"amd", "mig", "nvidia-on-demand", "nvidia-spot", "time-sliced"}));
}

TEST(Cluster, ACrashedComponentIsRestartedBySupervisor) {
  auto scheduler_healthy = [] {
    // cluster.sh's port for it (VALLEY_SCHEDULER_PORT, for a second cluster beside the first).
    const char* port = std::getenv("VALLEY_SCHEDULER_PORT");
    ChildProcess probe({"/usr/bin/curl", "-skf", "https://127.0.0.1:" + std::string(port && *port ? port : "10259") + "/healthz"},
                       ::testing::TempDir() + "/probe.log");
    return probe.wait(5s) == 0;
  };
  ASSERT_TRUE(scheduler_healthy());
  ChildProcess kill({"/usr/bin/pkill", "-KILL", "-f", std::string("^") + VALLEY_SOURCE_DIR + "/.valley/bin/kube-scheduler "},
                    ::testing::TempDir() + "/pkill.log");
  ASSERT_EQ(kill.wait(5s), 0) << "no kube-scheduler process found";
  EXPECT_TRUE(eventually(scheduler_healthy, 30s));
}

// The planner's view of the real cluster: every node of the default profile read right, and a plan
// that fits a 16-worker gang on it.
TEST(Cluster, PlannerSnapshotOfTheLocalCluster) {
  kube::Client client(admin_config());
  std::vector<planner::Node> nodes;
  for (const auto& n : client.list(kube::resources::kNodes, "", {"type=kwok", "", 500, {}}).items) nodes.push_back(planner::node_from(n));
  std::map<std::string, planner::Node> by_name;
  for (const auto& n : nodes) by_name[n.name] = n;
  ASSERT_TRUE(by_name.count("a100-spot-0") && by_name.count("mi250-od-0") && by_name.count("a100-mig-0"));
  EXPECT_EQ(by_name["a100-spot-0"].capacity_class, "spot");
  EXPECT_EQ(by_name["a100-od-0"].capacity_class, "on-demand");
  EXPECT_EQ(by_name["mi250-od-0"].vendor, "amd");
  EXPECT_EQ(by_name["a100-mig-0"].free["nvidia.com/mig-1g.10gb"], 14);
  for (const auto& n : nodes) EXPECT_TRUE(n.schedulable) << n.name;
  planner::Task t;
  t.key = "ns/big";
  t.min_workers = 16;
  t.max_workers = 16;
  auto ds = planner::plan(nodes, {t}, std::chrono::system_clock::now());
  EXPECT_EQ(ds[0].action, planner::Action::Admit) << ds[0].reason;
}

using PodLifecycle = ClusterTest;

TEST_F(PodLifecycle, GpuPodIsScheduledOntoAGpuNodeAndRuns) {
  json created = admin->create("/api/v1/namespaces/" + ns + "/pods", gpu_pod("trainer", "nvidia.com/gpu", "2"));
  json pod = watch_pod_until(*admin, ns, "trainer", created["metadata"]["resourceVersion"],
                             [](const json& p) { return p["status"].value("phase", "") == "Running"; });
  ASSERT_EQ(pod["status"].value("phase", ""), "Running") << pod.dump();
  EXPECT_FALSE(pod["status"].value("podIP", "").empty());
  json node = node_of(*admin, pod);
  EXPECT_GE(std::stoi(node["status"]["allocatable"].value("nvidia.com/gpu", "0")), 2) << node["metadata"]["name"];
}

TEST_F(PodLifecycle, AmdAndMigRequestsLandOnNodesThatOfferThem) {
  json created_amd = admin->create("/api/v1/namespaces/" + ns + "/pods", gpu_pod("on-amd", "amd.com/gpu", "4"));
  json created = admin->create("/api/v1/namespaces/" + ns + "/pods", gpu_pod("on-mig", "nvidia.com/mig-1g.10gb", "1"));
  auto running = [](const json& p) { return p.is_object() && p.value("status", json::object()).value("phase", "") == "Running"; };
  json amd = watch_pod_until(*admin, ns, "on-amd", created_amd["metadata"]["resourceVersion"], running);
  json mig = watch_pod_until(*admin, ns, "on-mig", created["metadata"]["resourceVersion"], running);
  ASSERT_TRUE(running(amd) && running(mig));
  EXPECT_TRUE(node_of(*admin, amd)["status"]["allocatable"].contains("amd.com/gpu"));
  EXPECT_TRUE(node_of(*admin, mig)["status"]["allocatable"].contains("nvidia.com/mig-1g.10gb"));
}

TEST_F(PodLifecycle, AnnotationsMakeAPodSucceedOrFailAfterItsRunTime) {
  admin->create("/api/v1/namespaces/" + ns + "/pods",
                gpu_pod("ok", "nvidia.com/gpu", "1", {{"sim.valley.dev/run-time", "1s"}}));
  json created = admin->create(
      "/api/v1/namespaces/" + ns + "/pods",
      gpu_pod("crash", "nvidia.com/gpu", "1", {{"sim.valley.dev/run-time", "1s"}, {"sim.valley.dev/exit-code", "137"}}));
  auto finished = [](const json& p) {
    auto phase = p["status"].value("phase", "");
    return phase == "Succeeded" || phase == "Failed";
  };
  json ok = watch_pod_until(*admin, ns, "ok", created["metadata"]["resourceVersion"], finished);
  json crash = watch_pod_until(*admin, ns, "crash", created["metadata"]["resourceVersion"], finished);
  EXPECT_EQ(ok["status"].value("phase", ""), "Succeeded");
  EXPECT_EQ(crash["status"].value("phase", ""), "Failed");
  EXPECT_EQ(crash["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"], 137);
}

TEST_F(PodLifecycle, UnsatisfiableRequestStaysPendingWithASchedulerReason) {
  json created = admin->create("/api/v1/namespaces/" + ns + "/pods", gpu_pod("too-big", "nvidia.com/gpu", "9"));
  json pod = watch_pod_until(*admin, ns, "too-big", created["metadata"]["resourceVersion"], [](const json& p) {
    for (const auto& c : p["status"].value("conditions", json::array()))
      if (c["type"] == "PodScheduled" && c["status"] == "False") return true;
    return false;
  });
  std::string message;
  for (const auto& c : pod["status"]["conditions"])
    if (c["type"] == "PodScheduled") message = c.value("message", "");
  EXPECT_NE(message.find("Insufficient nvidia.com/gpu"), std::string::npos) << message;
}

// kwok finishes a deletion by the pod's name alone (a kubelet passes its UID): a delete queued for a
// pod that is gone would land on the pod that took its name since. The cluster's admission policy
// (tests/cluster/kwok-deletes.yaml) lets kwok delete only pods whose deletion has begun.
TEST_F(PodLifecycle, KwokFinishesDeletionsButNeverStartsOne) {
  json pod = gpu_pod("held", "nvidia.com/gpu", "9");  // never scheduled: nothing else acts on it
  pod["metadata"]["finalizers"] = {"valley.dev/test"};
  admin->create("/api/v1/namespaces/" + ns + "/pods", pod);
  kube::Client kwok(kube::load_kubeconfig(component_kubeconfig_path("kwok")));
  try {
    kwok.remove(kube::resources::kPods, ns, "held");
    FAIL() << "kwok deleted a pod nobody was deleting";
  } catch (const kube::KubeError& e) {
    EXPECT_EQ(e.http_status(), 403) << e.what();
    EXPECT_NE(std::string(e.what()).find("kwok finishes the deletion"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(admin->get(kube::resources::kPods, ns, "held")["metadata"].contains("deletionTimestamp"));
  admin->remove(kube::resources::kPods, ns, "held");  // the finalizer holds it
  EXPECT_NO_THROW(kwok.remove(kube::resources::kPods, ns, "held"));
  kube::remove_finalizer(*admin, kube::resources::kPods, ns, "held", {"valley.dev/test"}, "valley.dev/test");
}

using Rbac = ClusterTest;

// A service account's token authenticates, and RBAC grants it exactly what a Role binds: the ground
// on which deploy/'s least-privilege ClusterRole will be tested.
TEST_F(Rbac, ServiceAccountTokenGetsOnlyWhatItWasGranted) {
  admin->create("/api/v1/namespaces/" + ns + "/serviceaccounts",
                {{"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", {{"name", "robot"}}}});
  json review = admin->create("/api/v1/namespaces/" + ns + "/serviceaccounts/robot/token",
                              {{"apiVersion", "authentication.k8s.io/v1"},
                               {"kind", "TokenRequest"},
                               {"spec", {{"expirationSeconds", 600}}}});
  kube::ClusterConfig token_config = admin_config();
  token_config.client_cert_pem.clear();
  token_config.client_key_pem.clear();
  token_config.bearer_token = review["status"]["token"];
  kube::Client robot(token_config);

  auto can_i = [&](const std::string& verb, const std::string& resource) {
    json r = robot.create("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                          {{"apiVersion", "authorization.k8s.io/v1"},
                           {"kind", "SelfSubjectAccessReview"},
                           {"spec", {{"resourceAttributes", {{"namespace", ns}, {"verb", verb}, {"resource", resource}}}}}});
    return r["status"].value("allowed", false);
  };
  EXPECT_NO_THROW(robot.server_version());
  EXPECT_FALSE(can_i("list", "pods"));
  try {
    robot.get("/api/v1/namespaces/" + ns + "/pods");
    FAIL() << "an unbound service account listed pods";
  } catch (const kube::KubeError& e) {
    EXPECT_EQ(e.http_status(), 403);
    EXPECT_EQ(e.reason(), "Forbidden");
  }

  admin->create("/apis/rbac.authorization.k8s.io/v1/namespaces/" + ns + "/roles",
                {{"apiVersion", "rbac.authorization.k8s.io/v1"},
                 {"kind", "Role"},
                 {"metadata", {{"name", "pod-reader"}}},
                 {"rules", {{{"apiGroups", {""}}, {"resources", {"pods"}}, {"verbs", {"get", "list", "watch"}}}}}});
  bind_role(*admin, ns, "robot-reads-pods", "Role", "pod-reader", ns, "robot");
  EXPECT_TRUE(eventually([&] { return can_i("list", "pods"); }, 10s));
  EXPECT_NO_THROW(robot.get("/api/v1/namespaces/" + ns + "/pods"));
  EXPECT_FALSE(can_i("delete", "pods"));
  EXPECT_FALSE(can_i("list", "secrets"));
}

// In a pod the service-account token is a file the kubelet rotates; the client must pick up the new
// token without a restart. Two service accounts stand for the old and the rotated token.
TEST_F(Rbac, TokenFileIsReReadWhenItChanges) {
  auto token_for = [&](const std::string& sa) {
    admin->create("/api/v1/namespaces/" + ns + "/serviceaccounts",
                  {{"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", {{"name", sa}}}});
    json r = admin->create("/api/v1/namespaces/" + ns + "/serviceaccounts/" + sa + "/token",
                           {{"apiVersion", "authentication.k8s.io/v1"}, {"kind", "TokenRequest"}, {"spec", json::object()}});
    return r["status"]["token"].get<std::string>();
  };
  std::string path = ::testing::TempDir() + "/valley-token-" + ns;
  std::ofstream(path) << token_for("before") << "\n";
  kube::ClusterConfig cfg = admin_config();
  cfg.client_cert_pem.clear();
  cfg.client_key_pem.clear();
  cfg.token_file = path;
  kube::Client client(cfg);
  auto whoami = [&] {
    json r = client.create("/apis/authentication.k8s.io/v1/selfsubjectreviews",
                           {{"apiVersion", "authentication.k8s.io/v1"}, {"kind", "SelfSubjectReview"}});
    return r["status"]["userInfo"]["username"].get<std::string>();
  };
  EXPECT_EQ(whoami(), "system:serviceaccount:" + ns + ":before");
  std::this_thread::sleep_for(1100ms);  // a new mtime even on file systems with 1 s resolution
  std::ofstream(path) << token_for("after") << "\n";
  EXPECT_EQ(whoami(), "system:serviceaccount:" + ns + ":after");
}

TEST(OperatorBinary, ConnectsWithTheKubeconfigAndStopsOnSigterm) {
  ChildProcess op({binary("valley-operator"), "--kubeconfig=" + admin_kubeconfig_path()},
                  ::testing::TempDir() + "/valley-operator.log");
  std::string expected = "connected: Kubernetes " + pinned_kubernetes_version();
  ASSERT_TRUE(eventually([&] { return op.output().find(expected) != std::string::npos; }, 20s)) << op.output();
  op.signal(SIGTERM);
  EXPECT_EQ(op.wait(10s), 0) << op.output();
  EXPECT_NE(op.output().find("shutting down"), std::string::npos);
}

TEST(OperatorBinary, BadKubeconfigIsAClearErrorNotACrash) {
  ChildProcess op({binary("valley-operator"), "--kubeconfig=/does/not/exist"}, ::testing::TempDir() + "/valley-operator-bad.log");
  EXPECT_EQ(op.wait(10s), 1);
  EXPECT_NE(op.output().find("cannot read kubeconfig /does/not/exist"), std::string::npos) << op.output();
}

}  // namespace
}  // namespace valley::e2e
