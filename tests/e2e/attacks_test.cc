// A tenant's attacks on Valley (issue 70) against the real API server and the operator: what a user
// who may create TrainingTasks in their own namespace tried, each refused (by the API server's schema
// or the shipped admission policy, with the field in the message) or made harmless (the operator
// goes on, nothing is billed or left running outside its task). Each failed on the code before its
// fix: the operator exited, the request path reached another namespace, the template's annotation
// made the pod's GPUs free, a detached pod kept its GPUs.
#include <chrono>
#include <thread>

#include "tests/e2e/task_fixture.h"

namespace valley::e2e {
namespace {

using kube::resources::kNodes;

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

class AttacksTest : public TaskTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    pool_ = own_pool();
    own(kNodes, kwok_gpu_node(pool_ + "-a", {{"valley.dev/pool", pool_}}, 4));
    own_policy(json::parse(R"({"currency":"USD","gpu":[{"match":{"vendor":"nvidia"},"onDemand":"36.00"}]})"));
    start_operator();
  }
  std::vector<std::string> operator_flags() const override {
    auto flags = TaskTest::operator_flags();
    flags.push_back("--cost-interval=1s");
    return flags;
  }
  // The cost record of task incarnation `uid` in the operator's namespace (this test's), or null.
  json record_of(const std::string& uid) {
    kube::ListOptions lo;
    lo.label_selector = "valley.dev/cost-record=true";
    for (const auto& cm : admin->list(kube::resources::kConfigMaps, ns, lo).items)
      if (cm["metadata"].value("name", "") == "valley-cost-" + uid)
        return json::parse(cm.value("data", json::object()).value("record.json", "null"), nullptr, false);
    return nullptr;
  }
  // A Single task of one GPU on this test's node.
  json single() const {
    return {{"taskType", "Single"},
            {"image", "valley.dev/examples/train:1"},
            {"worker", {{"gpus", "1"}, {"template", {{"spec", {{"nodeSelector", {{"valley.dev/pool", pool_}}}}}}}}}};
  }
  bool operator_running() { return op_ && op_->wait(std::chrono::milliseconds(0)) == -1; }
  std::string pool_;
};

// The reported crash: the Event about this checkpoint store (no secretRef) carried its URI, cut by
// bytes inside a character; serialising the Event threw on the recorder's thread and the operator
// exited, again on every restart. Now the Event is written, and a healthy task beside it runs.
TEST_F(AttacksTest, ATextThatIsNotUtf8WhenCutStopsNobody) {
  json hostile = single();
  hostile["checkpoint"] = {{"uri", "s3://bkt/" + repeat("\xC3\xA9", 600)}};
  apply(hostile, "hostile");
  ASSERT_TRUE(eventually([&] { return !phase("hostile").empty(); }, 30s)) << operator_log();
  ASSERT_TRUE(has_event("s3://bkt/\xC3\xA9")) << events_text() << operator_log();
  apply(single(), "healthy");
  ASSERT_TRUE(wait_phase("Running", 60s, "healthy")) << task("healthy").dump(2) << operator_log();
  EXPECT_TRUE(operator_running()) << operator_log();
}

// The reported read of another tenant's Secret: the name was joined into the request path. The API
// server refuses it now (the CRD's pattern), and Valley would too (unit: TenantAttacks.*).
TEST_F(AttacksTest, ASecretReferenceOutsideTheNamespaceIsRefused) {
  for (const std::string name : {"../../kube-system/secrets/creds", "a/b", "..", "Creds"}) {
    json s = single();
    s["checkpoint"] = {{"uri", "s3://bkt/job"}, {"secretRef", {{"name", name}}}};
    EXPECT_NE(refused(s, "ref").find("spec.checkpoint.secretRef.name"), std::string::npos) << name;
    json d = single();
    d["data"] = {{"uri", "s3://bkt/data"}, {"secretRef", {{"name", name}}}};
    EXPECT_NE(refused(d, "ref").find("spec.data.secretRef.name"), std::string::npos) << name;
  }
}

// The reported free GPUs: the template's valley.dev/time-sliced-replicas made Valley count each GPU
// as 1/999th. Without the admission policy Valley refuses the task (InvalidSpec, naming the field)
// and creates no pod; with it the API server refuses it at once. The same for the template fields
// that leave isolation (a node's directory here), a sidecar asking for GPUs of its own (held
// outside the plan and the bill), and a task padded toward the object limit.
TEST_F(AttacksTest, ATemplateCarryingValleysRecordsOrLeavingIsolationIsRefusedNamingTheField) {
  json replicas = single();
  replicas["worker"]["template"]["metadata"] = {{"annotations", {{"valley.dev/time-sliced-replicas", "999"}}}};
  json host = single();
  host["worker"]["template"]["spec"]["volumes"] = {{{"name", "root"}, {"hostPath", {{"path", "/"}}}}};
  json padded = single();
  padded["worker"]["template"]["metadata"] = {{"annotations", {{"pad", std::string(300 * 1024, 'x')}}}};
  json sidecar = single();  // GPUs beside spec.worker.gpus, outside the plan and the bill
  sidecar["worker"]["template"]["spec"]["containers"] = {{{"name", "worker"}},
                                                         {{"name", "side"}, {"image", "x"}, {"resources", {{"limits", {{"nvidia.com/gpu", "2"}}}}}}};
  const std::pair<std::string, json> cases[] = {{"replicas", replicas}, {"host", host}, {"padded", padded}, {"sidecar", sidecar}};
  const std::string expected[] = {"valley.dev/time-sliced-replicas", "volumes.root.hostPath", "at most 262144",
                                  "containers[side].resources.limits.nvidia.com/gpu"};
  // deploy/base's own binding of the guard, cluster-wide, where something installed it (the real
  // node's operator test does): the API server then refuses the first two itself.
  bool guarded = false;
  for (const auto& b : admin->list(kAdmissionBindings, "").items) guarded |= b["metadata"].value("name", "") == "valley-template-guard";
  const std::string policy_words[] = {"valley.dev/ are Valley's own records", "template.spec.volumes.hostPath", "",
                                      "the GPUs of a task are spec.worker.gpus"};
  for (size_t i = 0; i < std::size(cases); ++i) {
    const auto& [name, spec] = cases[i];
    if (guarded && !policy_words[i].empty()) {
      EXPECT_NE(refused(spec, name).find(policy_words[i]), std::string::npos) << name;
      continue;
    }
    apply(spec, name);
    ASSERT_TRUE(wait_phase("Failed", 30s, name)) << name << ": " << task(name).dump(2) << operator_log();
    const json status = task(name)["status"];
    EXPECT_EQ(status.value("reason", ""), "InvalidSpec") << name;
    EXPECT_NE(status.value("message", "").find(expected[i]), std::string::npos) << name << ": " << status.dump(2);
    EXPECT_TRUE(pods(name).empty()) << name;
  }
  ASSERT_NO_FATAL_FAILURE(install_policy("template-guard.yaml"));
  // A new policy takes a moment to be in force (the API server compiles it and syncs its binding).
  std::string answer;
  ASSERT_TRUE(eventually([&] { return !(answer = refused(replicas, "replicas2")).empty(); }, 30s)) << "never refused";
  EXPECT_NE(answer.find("valley.dev/ are Valley's own records"), std::string::npos) << answer;
  EXPECT_NE(refused(host, "host2").find("template.spec.volumes.hostPath"), std::string::npos);
  json privileged = single();
  privileged["worker"]["template"]["spec"]["containers"] = {{{"name", "worker"}, {"securityContext", {{"privileged", true}}}}};
  EXPECT_NE(refused(privileged, "priv").find("privileged"), std::string::npos);
  json sealed = single();
  sealed["worker"]["template"]["spec"]["containers"] = {{{"name", "worker"}, {"env", {{{"name", "VALLEY_RECORDS"}, {"value", "{}"}}}}}};
  EXPECT_NE(refused(sealed, "sealed").find("env.VALLEY_RECORDS"), std::string::npos);
  EXPECT_NE(refused(sidecar, "sidecar2").find("the GPUs of a task are spec.worker.gpus"), std::string::npos);
  // The launcher's own resources are the CRD's to check, with or without the policy.
  json launcher = mpi_spec(1, 1);
  launcher["master"]["resources"] = {{"limits", {{"nvidia.com/gpu", "4"}}}};
  EXPECT_NE(refused(launcher, "launcher").find("limits.nvidia.com/gpu: the GPUs of a task"), std::string::npos);
  json fine = single();
  fine["worker"]["template"]["metadata"] = {{"annotations", {{"team", "a"}}}};
  EXPECT_EQ(refused(fine, "fine"), "") << "a plain template is taken";
  EXPECT_TRUE(operator_running()) << operator_log();
}

// A pod detached from its task (its owner references edited away, or its task deleted with
// --cascade=orphan) kept running with its GPU, outside every quota and bill. Valley deletes it.
TEST_F(AttacksTest, APodDetachedFromItsTaskIsDeleted) {
  apply(single());
  ASSERT_TRUE(wait_phase("Running", 60s)) << task().dump(2) << operator_log();
  ASSERT_EQ(workers().size(), 1u);
  const json pod = workers()[0];
  const std::string uid = pod["metadata"]["uid"], name = pod["metadata"]["name"];
  admin->patch(kPods, ns, name, kube::PatchType::Merge, {{"metadata", {{"ownerReferences", nullptr}}}});
  auto gone = [&](const std::string& pod_uid) {
    for (const auto& p : pods())
      if (p["metadata"].value("uid", "") == pod_uid && !p["metadata"].contains("deletionTimestamp")) return false;
    return true;
  };
  ASSERT_TRUE(eventually([&] { return gone(uid); }, 30s)) << operator_log();
  // The task notices its worker went and starts again; then it is deleted leaving its pods behind.
  ASSERT_TRUE(eventually([&] {
    auto w = workers();
    return w.size() == 1 && w[0]["metadata"].value("uid", "") != uid && w[0].value("status", json::object()).value("phase", "") == "Running";
  }, 60s)) << task().dump(2) << operator_log();
  const std::string second = workers()[0]["metadata"]["uid"];
  kube::DeleteOptions orphan;
  orphan.propagation = "Orphan";
  admin->remove(kTrainingTasks, ns, "job", orphan);
  ASSERT_TRUE(eventually([&] { return gone(second); }, 60s)) << operator_log();
  EXPECT_TRUE(operator_running()) << operator_log();
}

// Deleting a running task dropped what it had run since its last accrual, and its whole cost with
// its status. Its pods are now charged until they stop and its final cost is kept in a record of the
// operator's namespace, which valleyctl cost shows after the task is gone.
TEST_F(AttacksTest, ATaskDeletedWhileRunningIsChargedUntilItsPodsStopAndItsCostOutlivesIt) {
  apply(single());
  ASSERT_TRUE(wait_phase("Running", 60s)) << task().dump(2) << operator_log();
  int64_t accrued = 0;
  ASSERT_TRUE(eventually([&] { return (accrued = cost().value("accruedMicros", int64_t{0})) > 0; }, 30s)) << cost().dump(2);
  const std::string uid = task()["metadata"]["uid"];
  const auto deleted_at = std::chrono::system_clock::now();
  admin->remove(kTrainingTasks, ns, "job");
  json record;
  ASSERT_TRUE(eventually([&] {
    record = record_of(uid);
    return record.is_object() && record.value("deleted", false) && record["cost"].contains("finalMicros");
  }, 60s)) << record.dump(2) << operator_log();
  EXPECT_GE(record["cost"]["finalMicros"].get<int64_t>(), accrued);
  // Charged until its pod stopped, after the deletion; not only until its last accrual before it.
  ASSERT_EQ(record["cost"]["ledger"].size(), 1u) << record.dump(2);
  const auto until = std::chrono::system_clock::time_point(std::chrono::milliseconds(record["cost"]["ledger"][0].value("untilMs", int64_t{0})));
  EXPECT_GE(until, std::chrono::time_point_cast<std::chrono::seconds>(deleted_at)) << record.dump(2);
  EXPECT_EQ(record.value("name", ""), "job");
  ASSERT_TRUE(eventually([&] { return pods().empty(); }, 60s)) << "released once charged";
  ChildProcess ctl({binary("kubectl-valley"), "cost", "--kubeconfig=" + admin_kubeconfig_path(), "-n", ns, "--valley-namespace=" + ns},
                   ::testing::TempDir() + "/valleyctl-cost-" + ns + ".log");
  ASSERT_EQ(ctl.wait(30s), 0) << ctl.output();
  EXPECT_NE(ctl.output().find("(deleted)"), std::string::npos) << ctl.output();
  EXPECT_NE(ctl.output().find(record["cost"].value("final", "?")), std::string::npos) << ctl.output();
}

// A tenant with the built-in `edit` role (the shipped valley-trainingtask-editor aggregates into it)
// makes and changes TrainingTasks, but cannot write what Valley trusts in their status (the cost
// ledger, epochs, the pods a disruption replaced): the status subresource refuses them, and a
// status sent with the object is dropped by the API server.
TEST_F(AttacksTest, ATenantWithTheEditRoleMakesTasksButCannotWriteTheirStatus) {
  admin->create(kube::resources::kServiceAccounts, ns, {{"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", {{"name", "tenant"}}}});
  bind_role(*admin, ns, "tenant-edits", "ClusterRole", "edit", ns, "tenant");
  kube::Client tenant(kube::load_kubeconfig(service_account_kubeconfig(ns, "tenant")));
  const json object = {{"apiVersion", "valley.dev/v1beta1"}, {"kind", "TrainingTask"}, {"metadata", {{"name", "job"}}}, {"spec", single()}};
  ASSERT_TRUE(eventually([&] {
    try {
      tenant.create(kTrainingTasks, ns, object);
      return true;
    } catch (const kube::KubeError& e) {
      if (e.http_status() != 403) throw;
      return false;  // (the binding takes a moment to be seen)
    }
  }, 30s));
  ASSERT_TRUE(wait_phase("Running", 60s)) << task().dump(2) << operator_log();
  ASSERT_TRUE(eventually([&] { return cost().value("accruedMicros", int64_t{0}) > 0; }, 30s)) << cost().dump(2);
  const json forged = {{"status", {{"epoch", 99}, {"cost", {{"ledger", json::array()}, {"accruedMicros", 0}}}}}};
  try {
    tenant.patch(kTrainingTasks, ns, "job", kube::PatchType::Merge, forged, "status");
    FAIL() << "a tenant wrote a task's status";
  } catch (const kube::KubeError& e) {
    EXPECT_EQ(e.http_status(), 403) << e.what();
  }
  // Through the object itself: the spec change is taken, the status is not.
  json patch = forged;
  patch["metadata"] = {{"annotations", {{"owner", "tenant"}}}};
  EXPECT_NO_THROW(tenant.patch(kTrainingTasks, ns, "job", kube::PatchType::Merge, patch));
  const json now = task();
  EXPECT_EQ(now["metadata"]["annotations"].value("owner", ""), "tenant");
  EXPECT_NE(now["status"].value("epoch", 0), 99) << now["status"].dump(2);
  EXPECT_GT(cost().value("accruedMicros", int64_t{0}), 0) << cost().dump(2);
}

// A pod holding GPUs that Valley did not make runs outside every quota and bill: Valley says so on
// the pod (and counts it in valley_foreign_gpu_pods), once.
TEST_F(AttacksTest, AGpuPodValleyDidNotMakeIsToldOf) {
  admin->create(kPods, ns,
                {{"apiVersion", "v1"},
                 {"kind", "Pod"},
                 {"metadata", {{"name", "mine"}}},
                 {"spec",
                  {{"nodeSelector", {{"valley.dev/pool", pool_}}},
                   {"containers", json::array({{{"name", "c"}, {"image", "x"}, {"resources", {{"limits", {{"nvidia.com/gpu", "2"}}}}}}})}}}});
  EXPECT_TRUE(has_event("\nOutsideValley: holds 2 nvidia.com/gpu that Valley did not hand out")) << events_text() << operator_log();
}

// A tenant who may edit pods could make GPU pods of their own (outside quotas and bills) or write
// Valley's records on its pods. With the opt-in policy deploy/policies/valley-pods.yaml, neither is
// taken in a namespace labelled valley.dev/tenant=true, while Valley's own pods are.
TEST_F(AttacksTest, WithThePodPolicyOnlyValleyMakesGpuPodsOrWritesItsRecordsOnThem) {
  admin->patch(kube::resources::kNamespaces, "", ns, kube::PatchType::Merge, {{"metadata", {{"labels", {{"valley.dev/tenant", "true"}}}}}});
  ASSERT_NO_FATAL_FAILURE(install_policy("valley-pods.yaml"));
  json gpu_pod = {{"apiVersion", "v1"},
                  {"kind", "Pod"},
                  {"metadata", json::object()},
                  {"spec",
                   {{"nodeSelector", {{"valley.dev/pool", pool_}}},
                    {"containers", json::array({{{"name", "c"}, {"image", "x"}, {"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}}}})}}}};
  std::string why;
  int attempt = 0;
  ASSERT_TRUE(eventually([&] {
    // A new name each try: a pod taken before the policy was seen may still be terminating.
    gpu_pod["metadata"]["name"] = "mine-" + std::to_string(++attempt);
    try {
      admin->create(kPods, ns, gpu_pod);
      admin->remove(kPods, ns, gpu_pod["metadata"]["name"].get<std::string>());
      return false;
    } catch (const kube::KubeError& e) {
      why = e.what();
      return true;
    }
  }, 30s)) << "a GPU pod of the tenant's own was taken";
  EXPECT_NE(why.find("submit a TrainingTask"), std::string::npos) << why;
  apply(single());
  ASSERT_TRUE(wait_phase("Running", 60s)) << task().dump(2) << operator_log();
  const std::string worker = workers()[0]["metadata"]["name"];
  try {
    admin->patch(kPods, ns, worker, kube::PatchType::Merge, {{"metadata", {{"annotations", {{"valley.dev/time-sliced-replicas", "999"}}}}}});
    ADD_FAILURE() << "Valley's record on its pod was rewritten";
  } catch (const kube::KubeError& e) {
    EXPECT_NE(std::string(e.what()).find("Valley's own records"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(admin->patch(kPods, ns, worker, kube::PatchType::Merge, {{"metadata", {{"annotations", {{"team", "a"}}}}}}));
  EXPECT_EQ(phase(), "Running");
}

}  // namespace
}  // namespace valley::e2e
