// Data in and outputs out on a real control plane with a real S3 store (versitygw): a task whose
// data set cannot be listed holds nothing and says why, then runs once it can; its workers fetch it
// in an init container; once it has ended, what its pods kept (here written by the test, as the
// valley-outputs sidecar would on a kubelet) and Valley's report are in the store and in
// status.outputs, also when the operator was killed while the upload failed. kwok runs no
// containers: the pods' side (valley-io) is tested against versitygw (tests/storage) and on the
// real node.
#include <algorithm>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "tests/e2e/task_fixture.h"
#include "tests/storage/versitygw.h"

namespace valley::e2e {
namespace {

using kube::resources::kSecrets;

class TransfersTest : public TaskTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    gw_ = std::make_unique<testing::VersityGw>();
    secret("s3", gw_->env());
    before_operator();
    start_operator();
  }
  virtual void before_operator() {}  // what a derived test needs in place before the operator starts
  void TearDown() override {
    TaskTest::TearDown();
    gw_.reset();
  }
  std::vector<std::string> operator_flags() const override {
    auto flags = TaskTest::operator_flags();
    flags.push_back("--checkpoint-poll-interval=1s");
    flags.push_back("--outputs-finalizer");
    return flags;
  }
  void secret(const std::string& name, const std::map<std::string, std::string>& values) {
    json s = {{"apiVersion", "v1"}, {"kind", "Secret"}, {"metadata", {{"name", name}}}, {"stringData", values}};
    try {
      admin->create(kSecrets, ns, s);
    } catch (const kube::KubeError&) {
      admin->patch(kSecrets, ns, name, kube::PatchType::Merge, {{"stringData", values}});
    }
  }
  std::string status_field(const char* key) { return task().value("status", json::object()).value(key, ""); }
  const json* init_container(const json& pod, const std::string& name) {
    const json& spec = pod["spec"];
    if (!spec.contains("initContainers")) return nullptr;
    for (const auto& c : spec["initContainers"])
      if (c["name"] == name) return &c;
    return nullptr;
  }

  std::unique_ptr<testing::VersityGw> gw_;
};

TEST_F(TransfersTest, DataThatCannotBeListedHoldsNothingThenTheTaskRunsAndItsOutputsAndReportAreKeptOnceAcrossARestart) {
  const std::string base = std::string("s3://") + testing::VersityGw::kBucket + "/" + ns;
  // The outputs' credentials are wrong at first: keeping them fails until the Secret is fixed.
  auto wrong = gw_->env("not-the-secret");
  secret("out", wrong);
  json spec = mpi_spec(1, 1, {{"sim.valley.dev/run-time", "2s"}});
  spec["checkpoint"] = {{"uri", base + "/ckpt"}, {"secretRef", {{"name", "s3"}}}};
  spec["data"] = {{"uri", base + "/data"}, {"mountPath", "/data"}};
  spec["outputs"] = {{"uri", base + "/out"}, {"secretRef", {{"name", "out"}}}};
  apply(spec);
  // Nothing under the data prefix: the task says so and holds nothing.
  ASSERT_TRUE(eventually([&] { return status_field("reason") == "DataUnavailable"; }, 60s)) << task().dump(2);
  EXPECT_NE(status_field("message").find("no objects"), std::string::npos) << task()["status"].dump(2);
  EXPECT_EQ(status_field("phase"), "Pending");
  EXPECT_TRUE(has_event("\nDataUnavailable: ")) << events_text();
  std::this_thread::sleep_for(3s);  // planning rounds pass: still nothing made for it
  EXPECT_TRUE(pods().empty());
  EXPECT_EQ(task()["status"].value("epoch", 0), 0);

  // The data set arrives (and the workload's model, as its sidecar would upload it): it runs.
  gw_->store(ns + "/data")->put("train/shard-0.bin", std::string(4096, 'd'));
  gw_->store(ns + "/out")->put("model/weights.bin", std::string(1000, 'w'));
  ASSERT_TRUE(eventually([&] { return !pods().empty(); }, 60s)) << task()["status"].dump(2);
  for (const auto& p : pods()) {
    const bool worker = p["metadata"]["labels"].value("valley.dev/role", "") == "worker";
    const json* data = init_container(p, "valley-data");
    EXPECT_EQ(data != nullptr, worker) << p["spec"].dump(2);
    if (data) {
      EXPECT_EQ(data->at("args")[2], base + "/data");
    }
    EXPECT_TRUE(init_container(p, "valley-outputs")) << p["spec"].dump(2);
  }
  ASSERT_TRUE(wait_phase("Succeeded", 120s)) << task()["status"].dump(2);
  // Keeping the outputs fails with the wrong key: the status says why, and the operator dies.
  ASSERT_TRUE(eventually([&] { return task()["status"].value("outputs", json::object()).contains("error"); }, 60s)) << task()["status"].dump(2);
  stop_operator(SIGKILL);
  secret("out", gw_->env());
  start_operator();
  ASSERT_TRUE(eventually([&] { return task()["status"].value("outputs", json::object()).contains("time"); }, 60s))
      << task()["status"].dump(2) << operator_log();
  const json out = task()["status"]["outputs"];
  EXPECT_EQ(out.value("files", 0), 1) << out.dump(2);
  EXPECT_EQ(out.value("bytes", 0), 1000) << out.dump(2);
  EXPECT_EQ(out.value("partial", true), false) << out.dump(2);
  EXPECT_EQ(out.value("report", ""), base + "/out/valley-report.html");
  EXPECT_FALSE(out.contains("error")) << out.dump(2);
  // The report is there once, beside the model, and tells the task's story.
  auto store = gw_->store(ns + "/out");
  std::vector<std::string> keys;
  for (const auto& o : store->list()) keys.push_back(o.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"model/weights.bin", "valley-report.html", "valley-report.json"}));
  const json report = json::parse(store->get("valley-report.json").value_or("{}"));
  EXPECT_EQ(report.value("task", ""), "job");
  EXPECT_EQ(report.value("phase", ""), "Succeeded");
  EXPECT_EQ(report["outputs"].value("files", 0), 1);
  ASSERT_TRUE(report["history"].is_array() && report["history"].size() >= 3) << report.dump(2);
  EXPECT_EQ(report["history"].front().value("phase", ""), "Pending");
  EXPECT_EQ(report["history"].back().value("phase", ""), "Succeeded");
  const std::string html = store->get("valley-report.html").value_or("");
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find(ns + "/job"), std::string::npos);
  EXPECT_TRUE(has_event("\nOutputsKept: ")) << events_text();
  // valleyctl lists them and writes the page.
  auto valleyctl = [&](std::vector<std::string> args) {
    args.insert(args.begin(), binary("valleyctl"));
    args.push_back("--kubeconfig=" + admin_kubeconfig_path());
    args.push_back("-n=" + ns);
    ChildProcess p(args, ::testing::TempDir() + "/valleyctl-" + args[1] + "-" + ns + ".log");
    EXPECT_EQ(p.wait(60s), 0) << p.output();
    return p.output();
  };
  const std::string listing = valleyctl({"outputs", "job"});
  EXPECT_NE(listing.find("Kept:   1 files, 1000 bytes; report written"), std::string::npos) << listing;
  EXPECT_NE(listing.find("model/weights.bin"), std::string::npos) << listing;
  const std::string page = ::testing::TempDir() + "/report-" + ns + ".html";
  EXPECT_NE(valleyctl({"report", "job", "--file=" + page}).find("wrote " + page), std::string::npos);
  std::ifstream in(page);
  std::stringstream written;
  written << in.rdbuf();
  EXPECT_EQ(written.str(), html);
}

// A task deleted while it runs is held by Valley's finalizer, also across an operator that was
// down when it was deleted: it ends (Failed, Deleted), its pods stop, and it goes only once what
// they kept and Valley's report (partial) are in the store.
TEST_F(TransfersTest, ATaskDeletedMidRunGoesOnlyOnceItsPartialOutputsAndReportAreKept) {
  const std::string base = std::string("s3://") + testing::VersityGw::kBucket + "/" + ns;
  json spec = mpi_spec(1, 1, {{"sim.valley.dev/run-time", "10m"}});
  spec["checkpoint"] = {{"uri", base + "/ckpt"}, {"secretRef", {{"name", "s3"}}}};  // outputs beside it
  apply(spec);
  ASSERT_TRUE(wait_phase("Running", 90s)) << task()["status"].dump(2) << operator_log();
  auto holds_finalizer = [&] {
    const json f = task()["metadata"].value("finalizers", json::array());
    return std::find(f.begin(), f.end(), "valley.dev/outputs") != f.end();
  };
  // Another controller's finalizer, there before Valley adds its own: it stays through both.
  admin->patch(kTrainingTasks, ns, "job", kube::PatchType::Merge, {{"metadata", {{"finalizers", {"e2e.valley.dev/keep"}}}}});
  ASSERT_TRUE(eventually(holds_finalizer, 30s)) << task()["metadata"].dump(2);
  EXPECT_EQ(task()["metadata"]["finalizers"], json({"e2e.valley.dev/keep", "valley.dev/outputs"})) << "added once, after the other";
  gw_->store(ns + "/ckpt/outputs")->put("model/step-40.bin", std::string(500, 'w'));  // as the sidecar would
  // Deleted while no operator runs: it stays, and the operator that comes up finishes it.
  stop_operator(SIGKILL);
  admin->remove(kTrainingTasks, ns, "job");
  std::this_thread::sleep_for(2s);
  ASSERT_TRUE(task()["metadata"].contains("deletionTimestamp")) << task()["metadata"].dump(2);
  start_operator();
  auto gone = [&] {
    try {
      task();
      return false;
    } catch (const kube::KubeError& e) {
      return e.http_status() == 404;
    }
  };
  // Valley lets go of its own only; the task then waits for the other's, which the test removes.
  ASSERT_TRUE(eventually([&] { return !holds_finalizer(); }, 120s)) << task().dump(2) << operator_log();
  EXPECT_EQ(task()["metadata"]["finalizers"], json({"e2e.valley.dev/keep"})) << "another's finalizer stays";
  admin->patch(kTrainingTasks, ns, "job", kube::PatchType::Merge, {{"metadata", {{"finalizers", nullptr}}}});
  ASSERT_TRUE(eventually(gone, 30s)) << task().dump(2) << operator_log();
  EXPECT_TRUE(has_event("\nDeleted: ")) << events_text();
  EXPECT_TRUE(has_event("\nOutputsKept: ")) << events_text();
  auto store = gw_->store(ns + "/ckpt/outputs");
  std::vector<std::string> keys;
  for (const auto& o : store->list()) keys.push_back(o.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"model/step-40.bin", "valley-report.html", "valley-report.json"}));
  const json report = json::parse(store->get("valley-report.json").value_or("{}"));
  EXPECT_EQ(report.value("phase", ""), "Failed") << report.dump(2);
  EXPECT_EQ(report.value("reason", ""), "Deleted") << report.dump(2);
  EXPECT_EQ(report["outputs"].value("partial", false), true) << report.dump(2);
  EXPECT_EQ(report["outputs"].value("files", 0), 1) << report.dump(2);
  ASSERT_TRUE(report["history"].is_array() && !report["history"].empty()) << report.dump(2);
  EXPECT_EQ(report["history"].back().value("reason", ""), "Deleted") << report.dump(2);
}

// A task's store is named by its tenant (its Secret's AWS_ENDPOINT_URL), and the operator reads it
// from inside the cluster: an address the operator is told its tasks may not reach
// (--task-egress-except) is refused before any request goes out, and the task says so. The data
// set is there, so the same task runs once the operator is not told to refuse the address.
class StoreAddressTest : public TransfersTest {
 protected:
  std::vector<std::string> operator_flags() const override {
    auto flags = TransfersTest::operator_flags();
    if (deny_store_) flags.push_back("--task-egress-except=10.96.0.0/12," + gw_->host() + "/32");
    return flags;
  }
  bool deny_store_ = true;
};

TEST_F(StoreAddressTest, AStoreAtAnAddressTheOperatorMayNotReachIsRefusedAndTheTaskSaysWhy) {
  const std::string base = std::string("s3://") + testing::VersityGw::kBucket + "/" + ns;
  gw_->store(ns + "/data")->put("train/shard-0.bin", std::string(4096, 'd'));
  json spec = mpi_spec(1, 1, {{"sim.valley.dev/run-time", "2s"}});
  spec["checkpoint"] = {{"uri", base + "/ckpt"}, {"secretRef", {{"name", "s3"}}}};
  spec["data"] = {{"uri", base + "/data"}, {"mountPath", "/data"}};
  apply(spec);
  const std::string& host = gw_->host();
  ASSERT_TRUE(eventually([&] { return status_field("reason") == "DataUnavailable"; }, 60s)) << task().dump(2) << operator_log();
  const std::string message = status_field("message");
  EXPECT_NE(message.find("refused: the endpoint's address " + host + " (in " + host + "/32)"), std::string::npos) << message;
  EXPECT_EQ(status_field("phase"), "Pending");
  std::this_thread::sleep_for(3s);  // planning rounds pass: still nothing made for it
  EXPECT_TRUE(pods().empty());

  // The same store, the operator not told to refuse its address: the data is listed and the task runs.
  stop_operator();
  deny_store_ = false;
  start_operator();
  ASSERT_TRUE(wait_phase("Succeeded", 120s)) << task()["status"].dump(2) << operator_log();
}

// A data cache (--data-cache-class): each worker's copy of the data set is a claim on its node,
// made before the pod, owned by the task, and deleted when the task ends. Local PVs stand for a
// node-local provisioner (kwok runs no containers; the copy reused across pods is the real node's test).
class DataCacheTest : public TransfersTest {
 protected:
  void before_operator() override {
    pool_ = own_pool();
    for (const std::string& node : {pool_ + "-a", pool_ + "-b"}) {
      own(kube::resources::kNodes, kwok_gpu_node(node, {{"valley.dev/pool", pool_}}, 1));
      own_local_volume(node, "job-data-" + node, "/var/lib/valley-e2e");
    }
  }
  std::vector<std::string> operator_flags() const override {
    auto flags = TransfersTest::operator_flags();
    flags.push_back(std::string("--data-cache-class=") + kLocalStorageClass);
    return flags;
  }
  std::optional<json> claim(const std::string& name) {
    try {
      return admin->get(kube::resources::kPersistentVolumeClaims, ns, name);
    } catch (const kube::KubeError& e) {
      if (e.http_status() == 404) return std::nullopt;
      throw;
    }
  }
  std::string pool_;
};

TEST_F(DataCacheTest, EachWorkersDataIsAClaimOnItsNodeOwnedByTheTaskAndDeletedWhenItEnds) {
  const std::string base = std::string("s3://") + testing::VersityGw::kBucket + "/" + ns;
  gw_->store(ns + "/data")->put("train/shard-0.bin", std::string(4096, 'd'));
  json spec = mpi_spec(2, 2, {{"sim.valley.dev/run-time", "4s"}});
  spec["worker"]["template"] = {{"spec", {{"nodeSelector", {{"valley.dev/pool", pool_}}}}}};
  spec["data"] = {{"uri", base + "/data"}, {"secretRef", {{"name", "s3"}}}, {"mountPath", "/data"}};
  apply(spec);
  ASSERT_TRUE(wait_phase("Running", 90s)) << task()["status"].dump(2) << operator_log();
  const json st = task()["status"];
  EXPECT_EQ(st["data"], json({{"uri", base + "/data"}, {"files", 1}, {"bytes", 4096}})) << st.dump(2);
  const std::string uid = task()["metadata"]["uid"];
  std::set<std::string> claims;
  for (const auto& p : pods()) {
    if (p["metadata"]["labels"].value("valley.dev/role", "") != "worker") continue;
    const std::string node = p["spec"].value("nodeName", "");
    ASSERT_EQ(node.rfind(pool_, 0), 0u) << p["spec"].dump(2);
    json volume;
    for (const auto& v : p["spec"]["volumes"])
      if (v["name"] == "valley-data") volume = v;
    EXPECT_EQ(volume["persistentVolumeClaim"].value("claimName", ""), "job-data-" + node) << p["spec"].dump(2);
    auto c = claim("job-data-" + node);
    ASSERT_TRUE(c) << "no claim for " << node;
    EXPECT_EQ((*c)["metadata"]["ownerReferences"][0]["uid"], uid);
    EXPECT_EQ((*c)["spec"].value("storageClassName", ""), kLocalStorageClass);
    EXPECT_EQ((*c)["spec"]["resources"]["requests"]["storage"], "1Gi");
    EXPECT_EQ((*c)["status"].value("phase", ""), "Bound") << "bound to the local PV of the pod's node: " << c->dump(2);
    claims.insert("job-data-" + node);
  }
  EXPECT_EQ(claims.size(), 2u) << "one claim per node, each worker on its own";
  ASSERT_TRUE(wait_phase("Succeeded", 120s)) << task()["status"].dump(2);
  // Ended: its claims go (a claim still mounted by a pod stays until that pod has gone).
  for (const auto& name : claims)
    EXPECT_TRUE(eventually([&] {
      auto c = claim(name);
      return !c || (*c)["metadata"].contains("deletionTimestamp");
    }, 60s)) << name << " not deleted\n" << operator_log();
  EXPECT_NE(operator_log().find("deleted data cache job-data-"), std::string::npos) << operator_log();
}

TEST_F(DataCacheTest, AnOperatorToldOfAStorageClassThatIsNotThereSaysSoAndDoesNotStart) {
  auto flags = TransfersTest::operator_flags();
  flags.push_back("--data-cache-class=no-such-class");
  ChildProcess op(operator_argv(ns, flags), ::testing::TempDir() + "/operator-" + ns + "-no-class.log");
  EXPECT_EQ(op.wait(60s), 1) << op.output();
  EXPECT_NE(op.output().find("--data-cache-class=no-such-class: no such StorageClass"), std::string::npos) << op.output();
}

}  // namespace
}  // namespace valley::e2e
