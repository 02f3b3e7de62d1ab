// Data in and outputs out on a real control plane with a real S3 store (versitygw): a task whose
// data set cannot be listed holds nothing and says why, then runs once it can; its workers fetch it
// in an init container; once it has ended, what its pods kept (here written by the test, as the
// valley-outputs sidecar would on a kubelet) and Valley's report are in the store and in
// status.outputs, also when the operator was killed while the upload failed. kwok runs no
// containers: the pods' side (valley-io) is tested against versitygw (tests/storage) and on the
// real node.
#include <algorithm>
#include <fstream>
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
    start_operator();
  }
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
  json spec = mpi_spec(1, 1, {{"valley.dev/sim-run-time", "2s"}});
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
  json spec = mpi_spec(1, 1, {{"valley.dev/sim-run-time", "10m"}});
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

}  // namespace
}  // namespace valley::e2e
