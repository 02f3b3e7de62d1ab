// What an admin scrapes and probes: the operator's /metrics, /healthz and /readyz on a running
// operator with a task, and its JSON logs. (The operator runs with the deploy/ ServiceAccount, as
// every e2e operator does: see operator_kubeconfig_path.)
#include <curl/curl.h>

#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include "operator/kube/error.h"
#include "tests/e2e/task_fixture.h"

namespace valley::e2e {
namespace {

using kube::resources::kPricingPolicies;

size_t collect(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

// GET http://127.0.0.1:port/path -> {status, body}; status 0 when nothing answered.
std::pair<long, std::string> http_get(int port, const std::string& path) {
  CURL* curl = curl_easy_init();
  std::string body;
  std::string url = "http://127.0.0.1:" + std::to_string(port) + path;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, 10L);
  long status = 0;
  if (curl_easy_perform(curl) == CURLE_OK) curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(curl);
  return {status, body};
}

// The value of the first sample of `series` (a name with its labels, e.g. `valley_tasks{phase="Running"}`).
std::optional<double> sample(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  return std::nullopt;
}

class OperabilityTest : public TaskTest {
 protected:
  std::vector<std::string> operator_flags() const override {
    auto flags = TaskTest::operator_flags();
    flags.push_back("--log-format=json");
    flags.push_back("--cost-interval=1s");
    return flags;
  }
  int port() {
    int found = 0;
    eventually([&] {
      std::smatch m;
      std::string log = operator_log();
      static const std::regex re("on port ([0-9]+)");
      if (std::regex_search(log, m, re)) found = std::stoi(m[1]);
      return found > 0;
    }, 20s);
    return found;
  }
};

TEST_F(OperabilityTest, MetricsHealthReadinessAndJsonLogs) {
  admin->create(kPricingPolicies, "",
                {{"apiVersion", "valley.dev/v1beta1"},
                 {"kind", "PricingPolicy"},
                 {"metadata", {{"name", ns}}},
                 {"spec", {{"gpu", {{{"onDemand", "3.60"}}}}}}});
  const int p = port();
  ASSERT_GT(p, 0) << operator_log();
  EXPECT_EQ(http_get(p, "/healthz").first, 200);
  ASSERT_TRUE(eventually([&] { return http_get(p, "/readyz").first == 200; }, 30s)) << http_get(p, "/readyz").second;
  EXPECT_EQ(http_get(p, "/nothing").first, 404);

  apply(mpi_spec(2, 2));
  ASSERT_TRUE(wait_phase("Running")) << task().dump(2) << operator_log();
  ASSERT_TRUE(eventually([&] { return task()["status"].value("cost", json::object()).value("accruedMicros", 0) > 0; }, 20s));
  std::string text;
  ASSERT_TRUE(eventually([&] {
    text = http_get(p, "/metrics").second;
    // The metrics read the cache, which shows the status with a cost a moment after the API does.
    return sample(text, "valley_tasks{phase=\"Running\"}").value_or(0) >= 1 &&
           sample(text, "valley_task_workers{namespace=\"" + ns + "\",task=\"job\"}").value_or(0) == 2 &&
           sample(text, "valley_cost_accrued{namespace=\"" + ns + "\",currency=\"USD\"}").value_or(0) > 0;
  }, 20s)) << text;
  EXPECT_GE(sample(text, "valley_reconcile_total{controller=\"trainingtask\",result=\"success\"}").value_or(0), 3) << text;
  EXPECT_GE(sample(text, "valley_reconcile_duration_seconds_count{controller=\"trainingtask\"}").value_or(0), 3);
  EXPECT_TRUE(sample(text, "valley_workqueue_depth{queue=\"trainingtask\"}"));
  EXPECT_GE(sample(text, "valley_workqueue_queue_duration_seconds_count{queue=\"trainingtask\"}").value_or(0), 3);
  EXPECT_GE(sample(text, "valley_api_requests_total{verb=\"POST\",code=\"201\"}").value_or(0), 5);  // pods, Service, ConfigMap, Secret, Events
  EXPECT_GE(sample(text, "valley_api_request_duration_seconds_count{verb=\"PUT\",code=\"200\"}").value_or(0), 1);  // status
  EXPECT_TRUE(sample(text, "valley_watch_restarts_total{resource=\"pods\"}"));
  EXPECT_GE(sample(text, "valley_gpus_allocated{vendor=\"nvidia\",capacity_class=\"on-demand\"}").value_or(0) +
                sample(text, "valley_gpus_allocated{vendor=\"nvidia\",capacity_class=\"spot\"}").value_or(0),
            2)
      << text;
  // What the default kwok profile offers: 2 on-demand A100 nodes of 8 and 5 whole GPUs beside MIG
  // slices (2 GPUs in 1g.10gb sevenths, one in two 3g.40gb), 16 time-sliced replicas of 4 GPUs split 4 ways;
  // 4 Intel GPUs through a device plugin and 4 through a DRA driver.
  EXPECT_GE(sample(text, "valley_gpus_capacity{vendor=\"nvidia\",capacity_class=\"on-demand\",kind=\"whole\"}").value_or(0), 21) << text;
  EXPECT_GT(sample(text, "valley_gpus_capacity{vendor=\"nvidia\",capacity_class=\"on-demand\",kind=\"mig\"}").value_or(0), 2) << text;
  EXPECT_EQ(sample(text, "valley_gpus_capacity{vendor=\"nvidia\",capacity_class=\"on-demand\",kind=\"time-sliced\"}").value_or(0), 4) << text;
  EXPECT_GE(sample(text, "valley_gpus_capacity{vendor=\"amd\",capacity_class=\"on-demand\",kind=\"whole\"}").value_or(0), 16) << text;
  EXPECT_GE(sample(text, "valley_gpus_capacity{vendor=\"intel\",capacity_class=\"on-demand\",kind=\"whole\"}").value_or(0), 4) << text;
  EXPECT_GE(sample(text, "valley_gpus_capacity{vendor=\"intel\",capacity_class=\"on-demand\",kind=\"dra\"}").value_or(0), 4) << text;
  EXPECT_GT(sample(text, "valley_cost_accrued{namespace=\"" + ns + "\",currency=\"USD\"}").value_or(0), 0) << text;
  EXPECT_EQ(sample(text, "valley_leader").value_or(0), 1);
  EXPECT_GE(sample(text, "valley_plan_duration_seconds_count").value_or(0), 1);
  // A resize is counted.
  admin->patch(kTrainingTasks, ns, "job", kube::PatchType::Merge, {{"spec", {{"replicas", {{"max", 3}, {"target", 3}}}}}});
  ASSERT_TRUE(eventually([&] {
    text = http_get(p, "/metrics").second;
    return sample(text, "valley_task_restarts_total{cause=\"resize\"}").value_or(0) >= 1;
  }, 30s)) << text;
  // JSON logs: every line an object; lines about the task carry its key.
  std::istringstream lines(operator_log());
  int parsed = 0, with_task = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    json j = json::parse(line, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << "not JSON: " << line;
    EXPECT_TRUE(j.contains("time") && j.contains("level") && j.contains("msg")) << line;
    ++parsed;
    if (j.value("task", "") == ns + "/job") ++with_task;
  }
  EXPECT_GT(parsed, 3);
  EXPECT_GE(with_task, 2) << operator_log();  // at least its phase changes
  admin->remove(kPricingPolicies, "", ns);
}

// Tasks and pods come through separate watches, so a task's new pods can reach the cache before the
// status write that made them (parallel creates make that likely). A reconcile in that window must
// decide on its own write: not take the new epoch's pods for stale and delete them, nor have its
// writes refused as based on an old version. Here the task watch is held back 2 s, so every
// reconcile the pods wake falls in the window.
class SlowTaskWatchTest : public OperabilityTest {
 protected:
  std::vector<std::string> operator_flags() const override {
    auto flags = OperabilityTest::operator_flags();
    flags.push_back("--debug-task-watch-delay=2s");
    return flags;
  }
};

TEST_F(SlowTaskWatchTest, PodsThatReachTheCacheBeforeTheTasksStatusAreNotTakenForStale) {
  apply(mpi_spec(4, 4));
  // Each new epoch's pods arrive ahead of their status: at admission, and after a restart (a worker
  // deleted by hand: one disruption, epoch 2).
  auto settled = [&](int epoch, int disruptions) {
    std::map<std::string, std::string> first;  // pod name -> uid, as Running found them
    for (const auto& p : pods()) first[p["metadata"]["name"]] = p["metadata"]["uid"];
    EXPECT_EQ(first.size(), 5u);
    // Long enough for the reconciles of the held-back task events to act.
    std::this_thread::sleep_for(6s);
    const json st = task()["status"];
    EXPECT_EQ(st.value("phase", ""), "Running");
    EXPECT_EQ(st.value("epoch", 0), epoch) << st.dump(2);
    EXPECT_EQ(st.value("restarts", json::object()).value("disruptions", 0), disruptions) << st.dump(2);
    for (const auto& p : pods()) {
      EXPECT_EQ(first[p["metadata"]["name"]], p["metadata"]["uid"]) << p["metadata"]["name"] << " was replaced";
      EXPECT_FALSE(p["metadata"].contains("deletionTimestamp")) << p["metadata"]["name"] << " is being deleted";
    }
  };
  ASSERT_TRUE(wait_phase("Running", 90s)) << task().dump(2);
  settled(1, 0);
  admin->remove(kPods, ns, "job-worker-1");
  ASSERT_TRUE(eventually([&] {
    const json st = task()["status"];
    if (st.value("phase", "") != "Running" || st.value("epoch", 0) < 2) return false;
    for (const auto& p : pods())
      if (p["status"].value("phase", "") != "Running") return false;
    return true;
  }, 90s)) << task().dump(2);
  settled(2, 1);
  EXPECT_NE(operator_log().find("the cache shows the task from before our last status write"), std::string::npos)
      << "the window this test is about never opened";
  // Deciding on the cached task instead would have its status writes refused, again and again.
  EXPECT_EQ(sample(http_get(port(), "/metrics").second, "valley_status_conflicts_total").value_or(0), 0);
}

// --metrics-bind-address: /metrics on its own port (a NetworkPolicy opens it to Prometheus only),
// probes on the other, which then has no /metrics.
class SeparateMetricsTest : public OperabilityTest {
 protected:
  std::vector<std::string> operator_flags() const override {
    auto flags = OperabilityTest::operator_flags();
    flags.push_back("--metrics-bind-address=127.0.0.1:0");
    return flags;
  }
  int port_of(const std::string& what) {
    int found = 0;
    eventually([&] {
      std::smatch m;
      const std::string log = operator_log();
      const std::regex re("serving " + what + " on port ([0-9]+)");
      if (std::regex_search(log, m, re)) found = std::stoi(m[1]);
      return found > 0;
    }, 20s);
    return found;
  }
};

TEST_F(SeparateMetricsTest, MetricsOnTheirOwnPortProbesOnTheOther) {
  const int probes = port_of("/healthz, /readyz"), metrics = port_of("/metrics");
  ASSERT_GT(probes, 0) << operator_log();
  ASSERT_GT(metrics, 0) << operator_log();
  EXPECT_NE(probes, metrics);
  EXPECT_EQ(http_get(probes, "/healthz").first, 200);
  EXPECT_EQ(http_get(probes, "/metrics").first, 404);
  ASSERT_TRUE(eventually([&] { return sample(http_get(metrics, "/metrics").second, "valley_leader").value_or(0) == 1; }, 30s))
      << http_get(metrics, "/metrics").second;
}

TEST_F(OperabilityTest, TheDeployKustomizationIsAcceptedByTheApiServer) {
  // Every object of deploy/base (CRDs, Namespace, RBAC, Deployment, Service, PDB), validated by the
  // real API server's schemas and admission without persisting anything.
  ChildProcess apply({std::string(VALLEY_SOURCE_DIR) + "/.valley/bin/kubectl", "--kubeconfig=" + admin_kubeconfig_path(), "apply",
                      "--dry-run=server", "-k", std::string(VALLEY_SOURCE_DIR) + "/deploy/base"},
                     ::testing::TempDir() + "/apply-deploy-dry-run.log");
  ASSERT_EQ(apply.wait(60s), 0) << apply.output();
  for (const char* object : {"deployment.apps/valley-operator", "poddisruptionbudget.policy/valley-operator",
                             "clusterrole.rbac.authorization.k8s.io/valley-operator", "service/valley-operator-metrics",
                             "validatingadmissionpolicy.admissionregistration.k8s.io/valley-tenant-priority",
                             "networkpolicy.networking.k8s.io/valley-operator"})
    EXPECT_NE(apply.output().find(object), std::string::npos) << apply.output();
}

TEST_F(OperabilityTest, TheSamplesAreAcceptedByTheApiServerInTheNamespaceTheyCreate) {
  const std::string kubectl = std::string(VALLEY_SOURCE_DIR) + "/.valley/bin/kubectl";
  const std::string samples = std::string(VALLEY_SOURCE_DIR) + "/deploy/samples";
  ChildProcess ns_apply({kubectl, "--kubeconfig=" + admin_kubeconfig_path(), "apply", "-f", samples + "/namespace.yaml"},
                        ::testing::TempDir() + "/samples-namespace.log");
  ASSERT_EQ(ns_apply.wait(30s), 0) << ns_apply.output();
  // Everything else, as `kubectl apply -f deploy/samples/` would send it, validated without persisting.
  ChildProcess apply({kubectl, "--kubeconfig=" + admin_kubeconfig_path(), "apply", "--dry-run=server", "-f", samples},
                     ::testing::TempDir() + "/samples-dry-run.log");
  const int rc = apply.wait(60s);
  admin->remove(kube::resources::kNamespaces, "", "valley-samples");
  ASSERT_EQ(rc, 0) << apply.output();
  for (const char* object : {"trainingtask.valley.dev/resnet50", "trainingtask.valley.dev/spot-train",
                             "trainingtask.valley.dev/finetune-small", "trainingtask.valley.dev/training1",
                             "pricingpolicy.valley.dev/default"})
    EXPECT_NE(apply.output().find(object), std::string::npos) << apply.output();
}

TEST_F(OperabilityTest, ValleyctlSubmitsTheSeedFormatListsAndDescribes) {
  auto valleyctl = [&](std::vector<std::string> args, const std::string& log) {
    args.insert(args.begin(), binary("kubectl-valley"));  // the kubectl plugin name, a link to valleyctl
    args.push_back("--kubeconfig=" + admin_kubeconfig_path());
    args.push_back("-n");
    args.push_back(ns);
    auto p = std::make_unique<ChildProcess>(args, ::testing::TempDir() + "/" + log + "-" + ns + ".log");
    int rc = p->wait(30s);
    return std::make_pair(rc, p->output());
  };
  const std::string seed = std::string(VALLEY_SOURCE_DIR) + "/deploy/examples/seed/training1.yaml";
  // --dry-run: the API server validates, nothing is created.
  auto [dry_rc, dry_out] = valleyctl({"submit", seed, "--dry-run"}, "submit-dry");
  ASSERT_EQ(dry_rc, 0) << dry_out;
  EXPECT_NE(dry_out.find("dry run"), std::string::npos) << dry_out;
  EXPECT_THROW(admin->get(kTrainingTasks, ns, "training1"), kube::KubeError);
  auto [rc, out] = valleyctl({"submit", seed, "-o", "yaml"}, "submit");
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("kind: TrainingTask"), std::string::npos) << out;
  // The equivalent of deploy/samples/training1-seed.yaml, field for field.
  json t = admin->get(kTrainingTasks, ns, "training1");
  EXPECT_EQ(t["spec"]["taskType"], "MPI");
  EXPECT_EQ(t["spec"]["priority"], 50);
  EXPECT_EQ(t["spec"]["replicas"]["min"], 10);
  EXPECT_EQ(t["spec"]["replicas"]["max"], 40);
  EXPECT_EQ(t["spec"]["amdSupport"], true);
  EXPECT_EQ(t["spec"]["reduceCost"], true);
  EXPECT_EQ(t["spec"]["master"]["image"], "vacant.io/training-master:1.0");
  EXPECT_EQ(t["spec"]["worker"]["image"], "vacant.io/training-worker:1.0");
  EXPECT_EQ(t["spec"]["estimatedDuration"], "6h");
  ASSERT_TRUE(eventually([&] { return !phase("training1").empty(); }, 30s));
  auto [list_rc, list_out] = valleyctl({"list"}, "list");
  ASSERT_EQ(list_rc, 0) << list_out;
  EXPECT_NE(list_out.find("training1"), std::string::npos) << list_out;
  EXPECT_NE(list_out.find("10-40"), std::string::npos) << list_out;
  auto [d_rc, d_out] = valleyctl({"describe", "training1"}, "describe");
  ASSERT_EQ(d_rc, 0) << d_out;
  for (const char* field : {"Phase:", "Workers:", "Placement:", "Checkpoint:", "Restarts:", "Cost:", "Events:"})
    EXPECT_NE(d_out.find(field), std::string::npos) << field << " missing:\n" << d_out;
  // Mistakes: a clear message and a non-zero exit, never a crash.
  auto [bad_rc, bad_out] = valleyctl({"describe", "no-such-task"}, "describe-missing");
  EXPECT_EQ(bad_rc, 1);
  EXPECT_NE(bad_out.find("not found"), std::string::npos) << bad_out;
}

}  // namespace
}  // namespace valley::e2e
