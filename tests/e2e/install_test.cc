// The Helm chart (deploy/helm/valley) as a platform team installs it: `helm install` on the real
// API server (with OwnerReferencesPermissionEnforcement and PodSecurity enabled), the release's
// objects in place under the release's names, and Valley run with the chart's ServiceAccount and
// the arguments of the chart's Deployment reconciling a task to Running (so the chart's RBAC
// suffices). The Deployment's own pods are kwok's (no image runs here); the operator is this build's
// binary. `helm uninstall` then removes what the release made and keeps the CRDs (Helm never
// deletes CRDs: tasks would go with them).
#include <gtest/gtest.h>

#include "tests/e2e/task_fixture.h"

namespace valley::e2e {
namespace {

class HelmTest : public TaskTest {
 protected:
  void SetUp() override { ClusterTest::SetUp(); }  // the operator comes from the chart, later
  void TearDown() override {
    stop_operator();
    helm({"uninstall", kRelease, "-n", ns, "--wait", "--timeout", "60s"}, "uninstall-teardown");
    TaskTest::TearDown();
  }
  static constexpr const char* kRelease = "helm-e2e";  // fullname: helm-e2e-valley
  std::pair<int, std::string> helm(std::vector<std::string> args, const std::string& log) {
    args.insert(args.begin(), std::string(VALLEY_SOURCE_DIR) + "/.valley/bin/helm");
    args.push_back("--kubeconfig=" + admin_kubeconfig_path());
    ChildProcess p(args, ::testing::TempDir() + "/helm-" + log + "-" + ns + ".log");
    const int rc = p.wait(180s);
    return {rc, p.output()};
  }
};

TEST_F(HelmTest, TheChartInstallsAndItsServiceAccountRunsValley) {
  // Two releases of Valley do not share a cluster: this one's admission policy is left out, the
  // cluster-wide one (deploy/policies) may be installed already.
  auto [rc, out] = helm({"install", kRelease, std::string(VALLEY_SOURCE_DIR) + "/deploy/helm/valley", "-n", ns, "--set",
                         "replicas=1,admissionPolicies.tenantPriority=false", "--wait", "--timeout", "120s"},
                        "install");
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("STATUS: deployed"), std::string::npos) << out;
  const std::string fullname = std::string(kRelease) + "-valley";
  json deployment = admin->get("/apis/apps/v1/namespaces/" + ns + "/deployments/" + fullname + "-operator");
  EXPECT_EQ(deployment["spec"]["template"]["spec"]["serviceAccountName"], fullname + "-operator");
  json role = admin->get("/apis/rbac.authorization.k8s.io/v1/clusterroles/" + fullname + "-operator");
  bool finalizers = false;
  for (const auto& rule : role["rules"])
    for (const auto& r : rule["resources"]) finalizers |= r == "trainingtasks/finalizers";
  EXPECT_TRUE(finalizers) << role.dump(2);
  for (const std::string& path : {"/api/v1/namespaces/" + ns + "/services/" + fullname + "-operator-metrics",
                                 "/apis/policy/v1/namespaces/" + ns + "/poddisruptionbudgets/" + fullname + "-operator",
                                 "/apis/networking.k8s.io/v1/namespaces/" + ns + "/networkpolicies/" + fullname + "-operator",
                                 "/apis/rbac.authorization.k8s.io/v1/namespaces/" + ns + "/rolebindings/" + fullname + "-leader-election"})
    EXPECT_NO_THROW(admin->get(path)) << path;

  // Valley with the chart's ServiceAccount and its Deployment's arguments (ports moved to free ones).
  std::vector<std::string> argv{binary("valley-operator"), "--kubeconfig=" + service_account_kubeconfig(ns, fullname + "-operator")};
  for (const auto& a : deployment["spec"]["template"]["spec"]["containers"][0]["args"]) {
    const std::string arg = a.get<std::string>();
    if (arg.rfind("--http-bind-address=", 0) == 0) argv.push_back("--http-bind-address=127.0.0.1:0");
    else if (arg.rfind("--metrics-bind-address=", 0) == 0) argv.push_back("--metrics-bind-address=127.0.0.1:0");
    else argv.push_back(arg);
  }
  op_ = std::make_unique<ChildProcess>(argv, ::testing::TempDir() + "/operator-helm-" + ns + ".log");
  apply(mpi_spec(1, 1));
  ASSERT_TRUE(wait_phase("Running", 90s)) << task().dump(2) << operator_log();
  EXPECT_NE(operator_log().find("serving /metrics on port"), std::string::npos) << operator_log();
  stop_operator();

  auto [urc, uout] = helm({"uninstall", kRelease, "-n", ns, "--wait", "--timeout", "60s"}, "uninstall");
  ASSERT_EQ(urc, 0) << uout;
  EXPECT_THROW(admin->get("/apis/rbac.authorization.k8s.io/v1/clusterroles/" + fullname + "-operator"), kube::KubeError);
  EXPECT_NO_THROW(admin->get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/trainingtasks.valley.dev"));
}

}  // namespace
}  // namespace valley::e2e
