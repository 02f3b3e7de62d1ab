// End to end on the real node (tests/cluster/node.bash, `make node-up`): Valley's pods in real
// containers under a real kubelet and containerd, real OpenMPI over sshd between pods, checkpoints
// in a real S3 store (versitygw) the pods reach over the node's bridge. Label "real".
#include "tests/e2e/real_node_fixture.h"

namespace valley::e2e {
namespace {

TEST_F(RealNodeTest, AnMpiTaskTrainsOnRealPodsCheckpointsToS3SucceedsAndCostsWhatItsPodsRan) {
  create_policy();
  record_pods();
  const auto submitted = std::chrono::steady_clock::now();
  // A data set in the store, which the workers' valley-data init container copies in.
  s3_->store(ns + "/data")->put("train/shard-0.bin", std::string(300000, 'd'));
  json spec = mpi_train_spec(2, 2, 2, 300, 100, 10);
  spec["data"] = {{"uri", "s3://" + std::string(testing::VersityGw::kBucket) + "/" + ns + "/data"}};
  apply(spec);
  ASSERT_TRUE(wait_phase("Running", 180s)) << task().dump(2) << describe_pods() << operator_log();
  const double to_running = std::chrono::duration<double>(std::chrono::steady_clock::now() - submitted).count();
  ASSERT_TRUE(wait_phase("Succeeded", 300s)) << task().dump(2) << describe_pods() << operator_log();
  const double to_done = std::chrono::duration<double>(std::chrono::steady_clock::now() - submitted).count();
  std::printf("real node: submitted -> Running %.1f s, -> Succeeded %.1f s\n", to_running, to_done);

  // The launcher really ran mpirun over both workers, two ranks each (slotsPerWorker 2).
  json launcher = admin->get(kPods, ns, "job-launcher");
  EXPECT_EQ(launcher["spec"].value("nodeName", ""), kRealNode);
  EXPECT_EQ(container_id(launcher).rfind("containerd://", 0), 0u) << launcher["status"].dump(2);
  const std::string log = pod_log("job-launcher");
  EXPECT_TRUE(final_loss(log, 300)) << log;
  EXPECT_NE(log.find("world=4"), std::string::npos) << log;
  EXPECT_NE(log.find("data: 300000 bytes in /valley/data on every rank"), std::string::npos) << log;
  // Its checkpoints are in the store: the last one at the final step, written at world size 4.
  auto latest = latest_checkpoint();
  ASSERT_TRUE(latest) << "no checkpoint record in S3";
  EXPECT_EQ(latest->step, 300);
  EXPECT_EQ(latest->world_size, 4);

  // The final cost is what the workers' containers ran, at 1 GPU each. It is written once every
  // pod has ended, and a worker may take its whole grace period (60 s, the checkpoint window) to stop.
  ASSERT_TRUE(eventually([&] { return cost().contains("final"); }, 90s)) << task().dump(2);
  double gpu_seconds = 0;
  int workers = 0;
  for (const auto& p : seen_pods()) {
    if (p["metadata"]["labels"].value("valley.dev/role", "") != "worker") continue;
    ++workers;
    EXPECT_EQ(container_id(p).rfind("containerd://", 0), 0u) << p["status"].dump(2);
    const json& term = p["status"]["containerStatuses"][0]["state"]["terminated"];
    ASSERT_TRUE(term.is_object() && term["startedAt"].is_string() && term["finishedAt"].is_string()) << p["status"].dump(2);
    gpu_seconds += std::chrono::duration<double>(*kube::parse_time(term["finishedAt"].get<std::string>()) -
                                                 *kube::parse_time(term["startedAt"].get<std::string>()))
                       .count();
  }
  EXPECT_EQ(workers, 2);
  const double expected = gpu_seconds * 3.60 / 3600 + 0.4 * gpu_seconds / 3600 * 0.50;
  const double actual = cost()["finalMicros"].get<int64_t>() / 1e6;
  std::printf("workers ran %.0f GPU-seconds: expected %.6f, final %.6f USD\n", gpu_seconds, expected, actual);
  EXPECT_NEAR(actual, expected, expected * 0.01 + 1e-6) << cost().dump(2);
  // The model rank 0 wrote on worker 0 was kept by its sidecar when the pod stopped, and Valley's
  // report beside it.
  ASSERT_TRUE(eventually([&] { return task()["status"].value("outputs", json::object()).contains("time"); }, 60s))
      << task()["status"].dump(2) << operator_log();
  EXPECT_EQ(task()["status"]["outputs"].value("files", 0), 1) << task()["status"]["outputs"].dump(2) << outputs_sidecars() << operator_log();
  auto outputs = s3_->store(ns + "/outputs");
  EXPECT_TRUE(outputs->get("model.txt").has_value());
  const json report = json::parse(outputs->get("valley-report.json").value_or("{}"));
  EXPECT_EQ(report.value("phase", ""), "Succeeded") << report.dump(2);
  EXPECT_EQ(report["outputs"].value("files", 0), 1) << report.dump(2);
  EXPECT_FALSE(task()["status"].contains("outputsNotKept")) << "every sidecar kept its files: " << task()["status"].dump(2);
}

// A sidecar that cannot keep the outputs (their bucket does not exist) is said, in the status and an
// Event, with valley-io's words or its exit; the pod is held until the sidecar has ended and then
// let go, and the task is not wedged.
TEST_F(RealNodeTest, AnOutputsSidecarThatCannotUploadIsSaidInTheStatusAndAnEventAndThePodIsLetGo) {
  create_policy();
  record_pods();
  apply({{"taskType", "Single"}, {"image", kTrainImage}, {"command", {"sh", "-c", "echo weights > /valley/output/model.txt"}},
         {"outputs", {{"uri", "s3://valley-no-such-bucket/" + ns}, {"secretRef", {{"name", "s3-creds"}}}}},
         {"worker", {{"gpus", "1"}, {"template", on_real_node()}}}},
        "lost");
  ASSERT_TRUE(wait_phase("Succeeded", 180s, "lost")) << task("lost").dump(2) << describe_pods();
  ASSERT_TRUE(eventually([&] { return !kube::array_at(task("lost")["status"], "outputsNotKept").empty(); }, 120s))
      << task("lost")["status"].dump(2) << outputs_sidecars() << operator_log();
  const json lost = task("lost")["status"]["outputsNotKept"][0];
  EXPECT_EQ(lost.value("pod", ""), "lost-worker-0") << lost.dump();
  EXPECT_NE(lost.value("exitCode", 0), 0) << lost.dump();
  EXPECT_FALSE(lost.value("message", "").empty()) << lost.dump();
  EXPECT_TRUE(has_event("\nOutputsNotKept: pod lost-worker-0 did not keep its outputs")) << events_text();
  // Its accounting finalizer is let go once the sidecar has ended, and the store's refusal is
  // the outputs' error (the report cannot be written there either).
  ASSERT_TRUE(eventually([&] {
    try {
      const json pod = admin->get(kPods, ns, "lost-worker-0");
      return kube::array_at(kube::object_at(pod, "metadata"), "finalizers").empty();
    } catch (const kube::KubeError& e) {
      return e.http_status() == 404;  // gone: nothing held it
    }
  }, 60s)) << describe_pods();
  ASSERT_TRUE(eventually([&] { return !kube::string_at(kube::object_at(task("lost")["status"], "outputs"), "error").empty(); }, 60s))
      << task("lost")["status"].dump(2);
  std::printf("outputs not kept: %s\n", lost.dump().c_str());
}

// The task's NetworkPolicy under a real enforcer: its launcher reaches its workers' sshd (mpirun
// runs), a pod of another namespace does not, though the same probe reaches an sshd of its own
// namespace.
TEST_F(RealNodeTest, AWorkersSshdAdmitsItsOwnTasksPodsAndRefusesAnotherNamespaces) {
  // Eight minutes of training: it runs on while the probes of a loaded machine are tried.
  apply(mpi_train_spec(2, 2, 1, 4800, 400, 100));
  ASSERT_TRUE(wait_phase("Running", 180s)) << task().dump(2) << describe_pods() << operator_log();
  std::string worker_ip;
  ASSERT_TRUE(eventually([&] {
    worker_ip = admin->get(kPods, ns, "job-worker-0")["status"].value("podIP", "");
    return !worker_ip.empty();
  }, 60s));
  const std::string other = other_namespace(*admin, ns);
  struct Remove {
    kube::Client& admin;
    std::string ns;
    ~Remove() { admin.remove(kube::resources::kNamespaces, "", ns); }
  } remove_other{*admin, other};
  // The control: an sshd of the other namespace's own (the image's default command), reached.
  json sshd = on_real_node();
  sshd["apiVersion"] = "v1";
  sshd["kind"] = "Pod";
  sshd["metadata"] = {{"name", "sshd"}};
  sshd["spec"]["containers"][0]["image"] = kTrainImage;
  admin->create(kPods, other, sshd);
  // The task's own pods connect: mpirun reached both workers, whose ranks trained together to a
  // checkpoint of the world of 2 (the training's end is the first test's to show). The worker's
  // sshd listens from then on, so a probe refused below is refused by the policy, not by a worker
  // that does not listen yet (the two look the same to a probe).
  ASSERT_TRUE(eventually([&] {
    const auto c = latest_checkpoint();
    return c && c->world_size == 2 && c->step >= 400;
  }, 180s)) << task()["status"].dump(2) << pod_log("job-launcher") << describe_pods();
  std::string sshd_ip;
  ASSERT_TRUE(eventually([&] {
    json p = admin->get(kPods, other, "sshd");
    sshd_ip = p["status"].value("podIP", "");
    return p["status"].value("phase", "") == "Running" && !sshd_ip.empty();
  }, 90s));
  // Tried until it connects: a pod Running may not listen yet, and the enforcer admits a new pod's
  // traffic once it has seen the pod. The refusal below is then the policy's, not a slow start's.
  int attempt = 0;
  EXPECT_TRUE(eventually([&] { return pod_connects(*admin, other, "probe-own-sshd-" + std::to_string(++attempt), sshd_ip, 22); }, 120s))
      << "the probe cannot reach an sshd of its own namespace";
  // The enforcer installs the worker's policy once it has synced the worker (kube-router syncs on
  // pod events, over a minute behind them when the suites beside this one load the machine): refused
  // within that time, and from then on. The worker listens, so a refusal is the policy's.
  const auto started = std::chrono::steady_clock::now();
  attempt = 0;
  EXPECT_TRUE(eventually([&] { return !pod_connects(*admin, other, "probe-worker-" + std::to_string(++attempt), worker_ip, 22); }, 240s))
      << "another namespace's pod reached the task's worker for 240 s";
  std::printf("the worker refused another namespace's probe after %d attempt(s), %.0f s after its ranks had connected\n", attempt,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  EXPECT_FALSE(pod_connects(*admin, other, "probe-worker-again", worker_ip, 22)) << "refused once, then reached";
  // The worker was there to refuse them, listening: the probes did not just miss a pod that had gone.
  EXPECT_EQ(admin->get(kPods, ns, "job-worker-0")["status"].value("podIP", ""), worker_ip);
  EXPECT_EQ(task()["status"].value("phase", ""), "Running") << task()["status"].dump(2);
}

TEST_F(RealNodeTest, AnElasticTaskGrowsWhenAGpuFreesAndResumesFromItsCheckpointAtTheNewWorldSize) {
  const int steps = 1500;
  const std::string reference = reference_run(2, steps);
  auto want = final_loss(reference, steps);
  ASSERT_TRUE(want) << reference;
  add_blocker("blocker", 1);
  ASSERT_TRUE(wait_phase("Running", 180s, "blocker")) << task("blocker").dump(2) << describe_pods();
  apply(mpi_train_spec(1, 2, 1, steps, 50, 30));
  ASSERT_TRUE(wait_phase("Running", 180s)) << task().dump(2) << describe_pods() << operator_log();
  EXPECT_EQ(task()["status"].value("replicas", 0), 1) << task()["status"].dump(2);
  // A periodic checkpoint at world size 1, then the other GPU frees.
  ASSERT_TRUE(eventually([&] { auto c = latest_checkpoint(); return c && c->step >= 100; }, 120s)) << describe_pods();
  admin->remove(kTrainingTasks, ns, "blocker");
  ASSERT_TRUE(eventually([&] {
    json st = task()["status"];
    return st.value("phase", "") == "Running" && st.value("replicas", 0) == 2;
  }, 120s)) << task()["status"].dump(2) << operator_log();
  EXPECT_GE(task()["status"]["restarts"].value("resizes", 0), 1) << task()["status"].dump(2);
  ASSERT_TRUE(wait_phase("Succeeded", 300s)) << task().dump(2) << describe_pods() << operator_log();
  const std::string log = pod_log("job-launcher");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(log, m, std::regex("resumed from step ([0-9]+) \\(saved at world size 1\\) at world size 2"))) << log;
  std::printf("grew from 1 to 2 workers; resumed at step %s\n", m[1].str().c_str());
  auto got = final_loss(log, steps);
  ASSERT_TRUE(got) << log;
  EXPECT_NEAR(*got, *want, std::fabs(*want) * 1e-9) << "resumed run diverged from the uninterrupted one\n" << log << reference;
}

TEST_F(RealNodeTest, ASpotNoticeCheckpointsOnSigtermAndTheTaskResumesFromThatCheckpoint) {
  const int steps = 100000, every = 1000;  // the periodic checkpoints are far apart: SIGTERM's is the one resumed from
  // With a data set, which the node keeps in the task's claim there: both workers share one copy.
  s3_->store(ns + "/data")->put("train/shard-0.bin", std::string(200000, 'd'));
  json spec = mpi_train_spec(2, 2, 1, steps, every, 20);
  spec["data"] = {{"uri", "s3://" + std::string(testing::VersityGw::kBucket) + "/" + ns + "/data"}};
  apply(spec);
  ASSERT_TRUE(wait_phase("Running", 180s)) << task().dump(2) << describe_pods() << operator_log();
  int copied = 0;
  for (const char* w : {"job-worker-0", "job-worker-1"}) copied += pod_log(w, "valley-data").find("(1 copied") != std::string::npos;
  EXPECT_EQ(copied, 1) << "one worker copied the set into the node's claim, the other found it there\n"
                       << pod_log("job-worker-0", "valley-data") << pod_log("job-worker-1", "valley-data");
  EXPECT_TRUE(std::filesystem::exists(data_dir_ + "/train/shard-0.bin")) << "the copy is in the node's local volume";
  // Training is under way (the ranks have started: give them a few hundred steps).
  std::this_thread::sleep_for(8s);
  const auto notice = std::chrono::steady_clock::now();
  admin->patch(kNodes, "", kRealNode, kube::PatchType::JSON,
               json::array({{{"op", "add"}, {"path", "/spec/taints/-"},
                             {"value", {{"key", "aws-node-termination-handler/spot-itn"}, {"value", "true"}, {"effect", "NoSchedule"}}}}}));
  ASSERT_TRUE(eventually([&] { return phase() == "Restarting" || phase() == "Pending"; }, 30s)) << task().dump(2);
  // valley-train checkpointed on SIGTERM, inside the grace period, at a step no periodic one reaches.
  std::optional<storage::CheckpointRecord> saved;
  ASSERT_TRUE(eventually([&] { saved = latest_checkpoint(); return saved.has_value(); }, 60s)) << describe_pods() << operator_log();
  EXPECT_GT(saved->step, 0);
  EXPECT_NE(saved->step % every, 0) << "the checkpoint is a periodic one, not SIGTERM's";
  const double to_checkpoint = std::chrono::duration<double>(std::chrono::steady_clock::now() - notice).count();
  // The node is back (the notice was a false alarm for this single-node cluster): the task resumes there.
  json node = admin->get(kNodes, "", kRealNode);
  json keep = json::array();
  for (const auto& t : node["spec"]["taints"])
    if (t["key"] != "aws-node-termination-handler/spot-itn") keep.push_back(t);
  admin->patch(kNodes, "", kRealNode, kube::PatchType::Merge, {{"spec", {{"taints", keep}}}});
  ASSERT_TRUE(eventually([&] {
    json st = task()["status"];
    return st.value("phase", "") == "Running" && st.value("epoch", 0) >= 2;
  }, 180s)) << task()["status"].dump(2) << describe_pods() << operator_log();
  const double to_running = std::chrono::duration<double>(std::chrono::steady_clock::now() - notice).count();
  ASSERT_TRUE(eventually([&] { return pod_log("job-launcher").find("resumed from step") != std::string::npos; }, 120s))
      << pod_log("job-launcher") << describe_pods();
  const std::string log = pod_log("job-launcher");
  EXPECT_NE(log.find("resumed from step " + std::to_string(saved->step) + " "), std::string::npos) << log;
  // The new epoch's workers copied nothing: the node had kept the set.
  for (const char* w : {"job-worker-0", "job-worker-1"}) {
    const std::string fetched = pod_log(w, "valley-data");
    EXPECT_NE(fetched.find("(0 copied, 0 resumed, 1 unchanged)"), std::string::npos) << w << ": " << fetched;
  }
  EXPECT_NE(log.find("data: 200000 bytes in /valley/data on every rank"), std::string::npos) << log;
  json st = task()["status"];
  std::printf("spot notice -> checkpoint in S3 %.1f s (step %lld), -> Running again %.1f s; work lost: none past that checkpoint\n",
              to_checkpoint, static_cast<long long>(saved->step), to_running);
  EXPECT_EQ(st["restarts"].value("disruptions", 0), 1) << st.dump(2);
  EXPECT_EQ(st["restarts"].value("failures", 0), 0) << st.dump(2);
  EXPECT_EQ(st["lastDisruption"].value("cause", ""), "NodeNotice") << st.dump(2);
  admin->remove(kTrainingTasks, ns, "job");
}

TEST_F(RealNodeTest, ASingleTaskRunsAndAPodOverItsMemoryLimitIsOomKilledRetriedAndReported) {
  json c = on_real_node();
  apply({{"taskType", "Single"}, {"image", kTrainImage}, {"command", {"sh", "-c", "echo hello from a real container"}},
         {"worker", {{"gpus", "1"}, {"template", c}}}},
        "single");
  ASSERT_TRUE(wait_phase("Succeeded", 180s, "single")) << task("single").dump(2) << describe_pods();
  EXPECT_NE(pod_log("single-worker-0").find("hello from a real container"), std::string::npos);

  // 64 MiB allowed; the shell builds a string of about 200 MB.
  c["spec"]["containers"][0]["resources"] = {{"limits", {{"memory", "64Mi"}}}, {"requests", {{"memory", "64Mi"}}}};
  apply({{"taskType", "Single"}, {"image", kTrainImage},
         {"command", {"sh", "-c", "x=$(yes | head -c 200000000); echo ${#x}"}},
         {"worker", {{"gpus", "1"}, {"template", c}}},
         {"runPolicy", {{"backoffLimit", 1}}}},
        "hog");
  ASSERT_TRUE(wait_phase("Failed", 240s, "hog")) << task("hog").dump(2) << describe_pods();
  json st = task("hog")["status"];
  EXPECT_EQ(st["restarts"].value("failures", 0), 1) << st.dump(2);
  EXPECT_EQ(st.value("reason", ""), "BackoffLimitExceeded") << st.dump(2);
  EXPECT_NE(st.value("message", "").find("OOMKilled"), std::string::npos) << st.dump(2);
}

// A mistyped image on a real kubelet: the task says ImagePullFailed in the kubelet's words, and the
// image fixed in the spec runs it at once (images may change while the pods cannot start).
TEST_F(RealNodeTest, AMistypedImageSaysImagePullFailedInTheKubeletsWordsAndFixingTheSpecRunsIt) {
  const std::string typo = "valley.local/valley-trian:dev";
  apply({{"taskType", "Single"}, {"image", typo}, {"command", {"sh", "-c", "echo the fixed image ran"}},
         {"worker", {{"gpus", "1"}, {"template", on_real_node()}}}},
        "typo");
  ASSERT_TRUE(eventually([&] { return task("typo").value("status", json::object()).value("reason", "") == "ImagePullFailed"; }, 120s))
      << task("typo").dump(2) << describe_pods();
  const json st = task("typo")["status"];
  EXPECT_EQ(st.value("phase", ""), "Admitted") << st.dump(2);
  EXPECT_NE(st.value("message", "").find("ErrImageNeverPull"), std::string::npos) << st.dump(2);
  EXPECT_NE(st.value("message", "").find(typo), std::string::npos) << "the kubelet's words name the image: " << st.dump(2);
  // Credentials from a Secret that does not exist: the kubelet cannot make the container's config.
  apply({{"taskType", "Single"}, {"image", kTrainImage}, {"command", {"sh", "-c", "true"}},
         {"checkpoint", {{"uri", "s3://valley-test/nosecret/"}, {"secretRef", {{"name", "no-such-secret"}}}}},
         {"worker", {{"gpus", "1"}, {"template", on_real_node()}}}},
        "nosecret");
  ASSERT_TRUE(eventually([&] { return task("nosecret").value("status", json::object()).value("reason", "") == "ContainerConfigError"; }, 120s))
      << task("nosecret").dump(2) << describe_pods();
  EXPECT_NE(task("nosecret")["status"].value("message", "").find("no-such-secret"), std::string::npos) << task("nosecret").dump(2);
  // kubectl get's REASON column tells both.
  std::string table;
  ASSERT_EQ(kubectl({"get", "trainingtasks", "-n", ns}, &table), 0) << table;
  EXPECT_NE(table.find("ImagePullFailed"), std::string::npos) << table;
  EXPECT_NE(table.find("ContainerConfigError"), std::string::npos) << table;
  admin->remove(kTrainingTasks, ns, "nosecret");
  admin->patch(kTrainingTasks, ns, "typo", kube::PatchType::Merge, {{"spec", {{"image", kTrainImage}}}});
  ASSERT_TRUE(wait_phase("Succeeded", 180s, "typo")) << task("typo").dump(2) << describe_pods();
  EXPECT_NE(pod_log("typo-worker-0").find("the fixed image ran"), std::string::npos);
  EXPECT_TRUE(has_event("\nSpecChanged: ")) << events_text();
}

// Pod Security "restricted" on a real kubelet: mpirun and sshd as the image's mpiuser (uid 1000),
// sshd on 2222, keys from the Secret readable through fsGroup, no capabilities.
TEST_F(RealNodeTest, UnderPodSecurityRestrictedAnMpiTaskRunsAsNonRootAndSucceeds) {
  admin->patch(kube::resources::kNamespaces, "", ns, kube::PatchType::Merge,
               {{"metadata", {{"labels", {{"pod-security.kubernetes.io/enforce", "restricted"}}}}}});
  json spec = mpi_train_spec(2, 2, 1, 200, 100, 5);
  spec["podSecurity"] = {{"level", "Restricted"}};
  apply(spec);
  ASSERT_TRUE(wait_phase("Succeeded", 300s)) << task().dump(2) << describe_pods() << operator_log();
  const std::string log = pod_log("job-launcher");
  EXPECT_TRUE(final_loss(log, 200)) << log;
  EXPECT_NE(log.find("world=2"), std::string::npos) << log;
  json launcher = admin->get(kPods, ns, "job-launcher");
  EXPECT_EQ(launcher["spec"]["securityContext"]["runAsUser"], 1000) << launcher["spec"].dump(2);
  EXPECT_EQ(container_id(launcher).rfind("containerd://", 0), 0u);
  auto latest = latest_checkpoint();
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->step, 200);
}

}  // namespace
}  // namespace valley::e2e
