// A PyTorch task on the real node (tests/cluster/node.bash): Debian's CPU PyTorch with the gloo
// backend in real pods, torchrun's c10d rendezvous through the task's Service and the node's
// CoreDNS, checkpoints in the real S3 store. Valley grows it when a GPU frees and shrinks it for a
// task of higher priority; torchrun restarts the training processes at the new world size in the
// pods that stay, and they resume from the checkpoint the stopped ones wrote on SIGTERM.
//
// One worker evicted goes the way one worker's spot notice or GPU fault does: that worker stops,
// the others go on at the smaller world size in the same epoch, its replacement joins them.
//
// What the real nodes cannot show: NCCL and GPUs (their GPUs are an extended resource with no device
// behind them). A spot notice that takes one worker but not the others needs two nodes: the second
// test below; spot_test.cc shows the notice on kwok nodes. Label "real".
#include <algorithm>
#include <map>
#include <regex>

#include "tests/e2e/real_node_fixture.h"

namespace valley::e2e {
namespace {

constexpr const char* kPyTorchImage = "valley.local/valley-pytorch-example:dev";  // node.bash's PYTORCH_IMAGE

// The worker's progress lines (train.py's rank 0 prints "step N loss L world W"), by step.
std::map<int, std::pair<double, int>> progress(const std::string& log) {
  std::map<int, std::pair<double, int>> out;
  static const std::regex line("step ([0-9]+) loss ([0-9.eE+-]+) world ([0-9]+)");
  for (auto it = std::sregex_iterator(log.begin(), log.end(), line); it != std::sregex_iterator(); ++it)
    out[std::stoi((*it)[1])] = {std::stod((*it)[2]), std::stoi((*it)[3])};
  return out;
}

// The steps the log's processes started from at world size `world` ("rank R/W: starting at step S").
std::vector<int> starts_at(const std::string& log, int world) {
  std::vector<int> out;
  const std::regex line("rank [0-9]+/" + std::to_string(world) + ": starting at step ([0-9]+)");
  for (auto it = std::sregex_iterator(log.begin(), log.end(), line); it != std::sregex_iterator(); ++it) out.push_back(std::stoi((*it)[1]));
  return out;
}

// Every start in the log, in order: (world size, step).
std::vector<std::pair<int, int>> all_starts(const std::string& log) {
  std::vector<std::pair<int, int>> out;
  static const std::regex line("rank [0-9]+/([0-9]+): starting at step ([0-9]+)");
  for (auto it = std::sregex_iterator(log.begin(), log.end(), line); it != std::sregex_iterator(); ++it)
    out.emplace_back(std::stoi((*it)[1]), std::stoi((*it)[2]));
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

class RealNodePyTorchTest : public RealNodeTest {
 protected:
  // train.py under torchrun, 1 to 2 workers of one GPU; periodic checkpoints far apart, so that what
  // a restart resumes from is the SIGTERM one.
  json pytorch_spec(int steps) {
    return {{"taskType", "PyTorch"},
            {"replicas", {{"min", 1}, {"max", 2}}},
            {"worker",
             {{"image", kPyTorchImage},
              {"command", {"python3", "/opt/train.py"}},
              {"args", {"--steps", std::to_string(steps), "--checkpoint-every", "1000", "--step-seconds", "0.02", "--lr", "0.0005"}},
              {"gpus", "1"},
              {"template", on_real_node()}}},
            {"checkpoint", {{"uri", "s3://" + std::string(testing::VersityGw::kBucket) + "/" + ns + "/"}, {"secretRef", {{"name", "s3-creds"}}}}},
            {"runPolicy", {{"backoffLimit", 2}}}};
  }
  // The loss kept falling across the resizes, the mean of each stretch between `bounds` (steps:
  // 0, each resumption, the last) below the one before, and the model is in the store (the worker
  // that ended as rank 0 wrote it, its sidecar kept it) at the last step and `final_world`. The means.
  std::vector<double> expect_trained_through(const std::string& logs, const std::vector<int>& bounds, int final_world) {
    const auto lines = progress(logs);
    std::vector<double> means;
    for (size_t k = 1; k < bounds.size(); ++k) means.push_back(mean_loss(lines, bounds[k - 1], bounds[k]));
    for (size_t k = 1; k < means.size(); ++k) EXPECT_GT(means[k - 1], means[k]) << "stretch " << k << "\n" << logs;
    EXPECT_GT(means.back(), 0) << logs;
    if (!eventually([&] { return task()["status"].value("outputs", json::object()).contains("time"); }, 90s)) {
      ADD_FAILURE() << "the outputs were not kept\n" << task()["status"].dump(2) << operator_log();
      return means;
    }
    auto outputs = s3_->store(ns + "/outputs");
    EXPECT_TRUE(outputs->get("model.pt").has_value());
    const json final_state = json::parse(outputs->get("final.json").value_or("{}"));
    EXPECT_EQ(final_state.value("step", 0), bounds.back()) << final_state.dump();
    EXPECT_EQ(final_state.value("worldSize", 0), final_world) << final_state.dump();
    return means;
  }
  // The mean loss of the progress lines at `world` between two steps.
  static double mean_loss(const std::map<int, std::pair<double, int>>& lines, int from, int to) {
    double sum = 0;
    int n = 0;
    for (const auto& [step, lw] : lines)
      if (step > from && step <= to) sum += lw.first, ++n;
    return n ? sum / n : -1;
  }
};

TEST_F(RealNodePyTorchTest, ItGrowsWhenAGpuFreesShrinksForHigherPriorityGoesOnWithoutAnEvictedWorkerAndKeepsItsModel) {
  const int steps = 3500;
  add_blocker("blocker", 1);
  ASSERT_TRUE(wait_phase("Running", 180s, "blocker")) << task("blocker").dump(2) << describe_pods();
  apply(pytorch_spec(steps));
  ASSERT_TRUE(wait_phase("Running", 300s)) << task().dump(2) << describe_pods() << operator_log();
  EXPECT_EQ(task()["status"].value("replicas", 0), 1) << task()["status"].dump(2);
  ASSERT_TRUE(eventually([&] { return progress(pod_log("job-worker-0")).count(300) > 0; }, 180s))
      << pod_log("job-worker-0") << describe_pods();
  const std::string worker0_uid = admin->get(kPods, ns, "job-worker-0")["metadata"]["uid"];

  // The blocker goes: Valley grows the task onto the freed GPU; worker 0 stays, its torchrun stops
  // its process (SIGTERM: a checkpoint) and starts it again with the new worker at world size 2.
  const auto freed = std::chrono::steady_clock::now();
  admin->remove(kTrainingTasks, ns, "blocker");
  ASSERT_TRUE(eventually([&] { return !starts_at(pod_log("job-worker-0"), 2).empty(); }, 240s))
      << task()["status"].dump(2) << pod_log("job-worker-0") << describe_pods() << operator_log();
  const double to_grown = seconds_since(freed);
  std::string log0 = pod_log("job-worker-0");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(log0, m, std::regex("rank 0: SIGTERM at step ([0-9]+): checkpointed"))) << log0;
  const int stopped_at_1 = std::stoi(m[1]);
  const int resumed_at_2 = starts_at(log0, 2).front();
  EXPECT_EQ(resumed_at_2, stopped_at_1) << "the world of 2 resumed from the checkpoint written on SIGTERM\n" << log0;
  EXPECT_EQ(admin->get(kPods, ns, "job-worker-0")["metadata"]["uid"], worker0_uid) << "growth replaced worker 0";
  json st = task()["status"];
  EXPECT_EQ(st.value("replicas", 0), 2) << st.dump(2);
  EXPECT_EQ(st.value("epoch", 0), 1) << "a resize in place, not a new epoch: " << st.dump(2);

  // A task of higher priority wants a GPU: Valley shrinks this one to its minimum (before
  // preempting it). Worker 1's process checkpoints on SIGTERM; worker 0's starts again at size 1.
  // Rank 0 of the world of 2 may be either worker: both logs are kept while they can be read.
  std::string log1;
  ASSERT_TRUE(eventually([&] {
    log1 = pod_log("job-worker-1");
    const auto lines = progress(pod_log("job-worker-0") + log1);
    return !lines.empty() && lines.rbegin()->first >= resumed_at_2 + 300;
  }, 180s)) << pod_log("job-worker-0") << log1;
  add_blocker("urgent", 1, 50);
  const auto wanted = std::chrono::steady_clock::now();
  // The checkpoint written on SIGTERM at world size 2 (not a periodic one), read from the store
  // before the world of 1 writes its next.
  std::optional<storage::CheckpointRecord> on_sigterm;
  ASSERT_TRUE(eventually([&] {
    if (std::string l = pod_log("job-worker-1"); !l.empty()) log1 = l;
    if (auto c = latest_checkpoint(); c && c->world_size == 2 && c->step % 1000 != 0) on_sigterm = c;
    return starts_at(pod_log("job-worker-0"), 1).size() >= 2;  // its first start, then the one after the shrink
  }, 240s)) << task()["status"].dump(2) << pod_log("job-worker-0") << log1 << describe_pods() << operator_log();
  const double to_shrunk = seconds_since(wanted);
  ASSERT_TRUE(wait_phase("Running", 120s, "urgent")) << task("urgent").dump(2) << describe_pods() << operator_log();
  log0 = pod_log("job-worker-0");
  ASSERT_TRUE(on_sigterm) << "no checkpoint at world size 2 written on SIGTERM\n" << log0 << log1;
  const int stopped_at_2 = static_cast<int>(on_sigterm->step);
  const int resumed_at_1 = starts_at(log0, 1).back();
  // The ranks step together (each step's gradients are averaged): the survivor resumes from the
  // step the stopped worker saved.
  EXPECT_EQ(resumed_at_1, stopped_at_2) << log0 << log1;
  EXPECT_EQ(admin->get(kPods, ns, "job-worker-0")["metadata"]["uid"], worker0_uid) << "the shrink replaced worker 0";
  st = task()["status"];
  EXPECT_EQ(st.value("replicas", 0), 1) << st.dump(2);
  EXPECT_GE(st["restarts"].value("resizes", 0), 2) << st.dump(2);

  // The urgent task goes: the task grows back to 2. Then worker 1 is evicted (a drain, as a spot
  // notice on its node alone would be): it checkpoints on SIGTERM, worker 0 goes on at world size 1
  // in the same epoch, and worker 1's replacement joins it at world size 2 again.
  admin->remove(kTrainingTasks, ns, "urgent");
  // Regrown: worker 0's last start is at world size 2, after its start at 1 (a start at 2 while the
  // shrink was under way, before the one at 1, does not count).
  int regrown_at = -1;
  ASSERT_TRUE(eventually([&] {
    const auto starts = all_starts(pod_log("job-worker-0"));
    const auto at_1 = std::find_if(starts.rbegin(), starts.rend(), [](const auto& s) { return s.first == 1; });
    if (at_1 == starts.rend() || at_1 == starts.rbegin() || starts.back().first != 2) return false;
    regrown_at = starts.back().second;
    return true;
  }, 240s)) << task()["status"].dump(2) << pod_log("job-worker-0") << describe_pods() << operator_log();
  ASSERT_TRUE(eventually([&] {
    const auto lines = progress(pod_log("job-worker-0") + pod_log("job-worker-1"));
    return !lines.empty() && lines.rbegin()->first >= regrown_at + 300;
  }, 180s)) << pod_log("job-worker-0") << pod_log("job-worker-1");
  const std::string evicted_uid = admin->get(kPods, ns, "job-worker-1")["metadata"]["uid"];
  const int epoch_before = task()["status"].value("epoch", 0);
  const size_t starts_before = all_starts(pod_log("job-worker-0")).size();
  const auto evicted = std::chrono::steady_clock::now();
  admin->create("/api/v1/namespaces/" + ns + "/pods/job-worker-1/eviction",
                {{"apiVersion", "policy/v1"}, {"kind", "Eviction"}, {"metadata", {{"name", "job-worker-1"}, {"namespace", ns}}}});
  // Worker 0's torchrun restarts its process: at world size 1 while the replacement is placed, or
  // straight at 2 when the replacement joins the rendezvous first (the node is fine: it comes back
  // within seconds). Either way it resumes from the evicted worker's SIGTERM checkpoint and ends at 2.
  std::optional<storage::CheckpointRecord> on_eviction;
  std::string log1_evicted;
  // The evicted pod goes and its replacement comes while this looks: either may be absent.
  const auto worker1_uid = [&]() -> std::string {
    try {
      return admin->get(kPods, ns, "job-worker-1")["metadata"].value("uid", "");
    } catch (const kube::KubeError& e) {
      if (e.http_status() == 404) return "";
      throw;
    }
  };
  ASSERT_TRUE(eventually([&] {
    if (std::string l = pod_log("job-worker-1"); !l.empty() && worker1_uid() == evicted_uid) log1_evicted = l;
    if (auto c = latest_checkpoint(); c && c->world_size == 2 && c->step > regrown_at && c->step % 1000 != 0 && !on_eviction) on_eviction = c;
    const auto starts = all_starts(pod_log("job-worker-0"));
    return starts.size() > starts_before && starts.back().first == 2;
  }, 240s)) << task()["status"].dump(2) << pod_log("job-worker-0") << describe_pods() << operator_log();
  const double to_replaced = seconds_since(evicted);
  log0 = pod_log("job-worker-0");
  const auto after = all_starts(log0);
  const int at_world_1 = static_cast<int>(std::count_if(after.begin() + static_cast<std::ptrdiff_t>(starts_before), after.end(),
                                                        [](const auto& s) { return s.first == 1; }));
  ASSERT_TRUE(on_eviction) << "no checkpoint at world size 2 written on the eviction's SIGTERM\n" << log0 << log1_evicted;
  EXPECT_EQ(after[starts_before].second, static_cast<int>(on_eviction->step)) << "worker 0 resumed from the evicted worker's checkpoint\n" << log0;
  EXPECT_EQ(admin->get(kPods, ns, "job-worker-0")["metadata"]["uid"], worker0_uid) << "the eviction replaced worker 0";
  EXPECT_NE(admin->get(kPods, ns, "job-worker-1")["metadata"]["uid"], evicted_uid);
  st = task()["status"];
  EXPECT_EQ(st.value("epoch", 0), epoch_before) << "one worker's disruption restarted the whole task: " << st.dump(2);
  EXPECT_EQ(st["restarts"].value("disruptions", 0), 1) << st.dump(2);
  EXPECT_EQ(st["restarts"].value("failures", 0), 0) << st.dump(2);
  EXPECT_EQ(st["lastDisruption"].value("cause", ""), "Evicted") << st.dump(2);
  EXPECT_TRUE(st["lastDisruption"].value("inPlace", false)) << st.dump(2);

  ASSERT_TRUE(wait_phase("Succeeded", 300s)) << task().dump(2) << pod_log("job-worker-0") << describe_pods() << operator_log();
  log0 = pod_log("job-worker-0");
  // The loss kept falling across both changes: the mean of each stretch below the one before.
  const auto loss = expect_trained_through(log0 + log1, {0, resumed_at_2, resumed_at_1, steps}, 2);
  const double before = loss[0], grown = loss[1], after_loss = loss[2];
  std::printf("PyTorch on the real node: GPU freed -> world of 2 training %.1f s (resumed at step %d, SIGTERM's checkpoint: "
              "0 steps lost); higher-priority task -> world of 1 training %.1f s (resumed at step %d, stopped at %d); "
              "mean loss %.4f -> %.4f -> %.4f; worker 1 evicted -> world of 2 with its replacement training %.1f s later "
              "(%d start%s at world 1 between; resumed at step %lld, the evicted worker's SIGTERM checkpoint), same epoch\n",
              to_grown, resumed_at_2, to_shrunk, resumed_at_1, stopped_at_2, before, grown, after_loss, to_replaced, at_world_1,
              at_world_1 == 1 ? "" : "s", static_cast<long long>(on_eviction->step));
}

// The second real node (valley-node-1, 1 GPU, tainted so that only pods asking for it run there):
// a task of 2 workers on the first node grows to 3 when the second node's GPU frees, and a spot
// notice on the second node takes only the worker there: it checkpoints on SIGTERM and the two on
// the first node go on at world size 2 from that checkpoint, in the same epoch.
class RealNodesPyTorchTest : public RealNodePyTorchTest {
 protected:
  static constexpr const char* kSecondNode = "valley-node-1";  // node.bash's SECOND_NODE_NAME
  static json tolerating_second_node(json tmpl) {
    tmpl["spec"]["tolerations"].push_back({{"key", "valley.dev/second-node"}, {"operator", "Exists"}, {"effect", "NoSchedule"}});
    return tmpl;
  }
  void SetUp() override {
    RealNodePyTorchTest::SetUp();
    try {
      second_node_taints_ = admin->get(kNodes, "", kSecondNode)["spec"].value("taints", json::array());
    } catch (const std::exception& e) {
      GTEST_FAIL() << "no second real node (" << e.what() << "): run tests/cluster/cluster.sh node-up";
    }
  }
  void TearDown() override {
    // The notice goes with the test: the node serves the next one.
    if (!second_node_taints_.is_null())
      admin->patch(kNodes, "", kSecondNode, kube::PatchType::Merge, {{"spec", {{"taints", second_node_taints_}}}});
    RealNodePyTorchTest::TearDown();
  }
  std::string node_of(const std::string& pod) {
    try {
      return admin->get(kPods, ns, pod)["spec"].value("nodeName", "");
    } catch (const kube::KubeError&) {
      return "";
    }
  }
  // Every worker's log (rank 0 of a world may be any of them), as last read while its pod was there.
  std::string worker_logs(int workers) {
    std::string out;
    for (int w = 0; w < workers; ++w) {
      const std::string name = "job-worker-" + std::to_string(w);
      if (std::string l = pod_log(name); !l.empty()) last_logs_[name] = l;
      out += last_logs_[name];
    }
    return out;
  }
  json second_node_taints_;
  std::map<std::string, std::string> last_logs_;
};

TEST_F(RealNodesPyTorchTest, ItGrowsOntoAFreedGpuOfAnotherNodeAndASpotNoticeThereTakesOnlyTheWorkerOnIt) {
  const int steps = 3000;
  // A task of another user holds the second node's GPU.
  json on_second_node = tolerating_second_node(on_real_node());
  on_second_node["spec"]["nodeSelector"]["valley.dev/second-node"] = "true";
  add_blocker("blocker", 1, 0, on_second_node);
  ASSERT_TRUE(wait_phase("Running", 180s, "blocker")) << task("blocker").dump(2) << describe_pods();
  json spec = pytorch_spec(steps);
  spec["replicas"] = {{"min", 2}, {"max", 3}};
  spec["worker"]["template"] = tolerating_second_node(spec["worker"]["template"]);
  apply(spec);
  ASSERT_TRUE(wait_phase("Running", 300s)) << task().dump(2) << describe_pods() << operator_log();
  EXPECT_EQ(task()["status"].value("replicas", 0), 2) << task()["status"].dump(2);
  EXPECT_EQ(node_of("job-worker-0"), kRealNode);
  EXPECT_EQ(node_of("job-worker-1"), kRealNode);
  ASSERT_TRUE(eventually([&] { return progress(worker_logs(2)).count(300) > 0; }, 240s)) << worker_logs(2) << describe_pods();
  const std::string uid0 = admin->get(kPods, ns, "job-worker-0")["metadata"]["uid"];
  const std::string uid1 = admin->get(kPods, ns, "job-worker-1")["metadata"]["uid"];

  // The blocker ends: the task grows onto the second node's GPU. torchrun restarts the two workers'
  // processes (SIGTERM: a checkpoint) and they start again with the third at world size 3.
  const auto freed = std::chrono::steady_clock::now();
  admin->remove(kTrainingTasks, ns, "blocker");
  ASSERT_TRUE(eventually([&] { return !starts_at(worker_logs(3), 3).empty(); }, 240s))
      << task()["status"].dump(2) << worker_logs(3) << describe_pods() << operator_log();
  const double to_grown = seconds_since(freed);
  EXPECT_EQ(node_of("job-worker-2"), kSecondNode);
  const int resumed_at_3 = starts_at(worker_logs(3), 3).front();
  json st = task()["status"];
  EXPECT_EQ(st.value("replicas", 0), 3) << st.dump(2);
  EXPECT_EQ(st.value("epoch", 0), 1) << "a resize in place, not a new epoch: " << st.dump(2);
  ASSERT_TRUE(eventually([&] {
    const auto lines = progress(worker_logs(3));
    return !lines.empty() && lines.rbegin()->first >= resumed_at_3 + 300;
  }, 240s)) << worker_logs(3);

  // A spot notice on the second node: its worker checkpoints on SIGTERM and goes; the first node's
  // two restart at world size 2 from that checkpoint. No GPU is free for a replacement (the first
  // node's two are the task's, the noticed node takes no pod): it goes on at 2, its minimum.
  std::string log2;
  const size_t starts_before = all_starts(worker_logs(2)).size();
  json noticed = second_node_taints_;
  noticed.push_back({{"key", "aws-node-termination-handler/spot-itn"}, {"value", "true"}, {"effect", "NoSchedule"}});
  const auto notice = std::chrono::steady_clock::now();
  admin->patch(kNodes, "", kSecondNode, kube::PatchType::Merge, {{"spec", {{"taints", noticed}}}});
  std::optional<storage::CheckpointRecord> on_notice;
  ASSERT_TRUE(eventually([&] {
    if (std::string l = pod_log("job-worker-2"); !l.empty()) log2 = l;
    if (auto c = latest_checkpoint(); c && c->world_size == 3 && c->step % 1000 != 0 && !on_notice) on_notice = c;
    const auto starts = all_starts(worker_logs(2));
    return starts.size() > starts_before && starts.back().first == 2;
  }, 240s)) << task()["status"].dump(2) << worker_logs(2) << log2 << describe_pods() << operator_log();
  const double to_shrunk = seconds_since(notice);
  ASSERT_TRUE(on_notice) << "no checkpoint at world size 3 written on the notice's SIGTERM\n" << worker_logs(2) << log2;
  const auto after = all_starts(worker_logs(2));
  EXPECT_EQ(after.back().second, static_cast<int>(on_notice->step)) << "the world of 2 resumed from the noticed worker's checkpoint\n"
                                                                     << worker_logs(2);
  EXPECT_EQ(admin->get(kPods, ns, "job-worker-0")["metadata"]["uid"], uid0) << "the notice replaced worker 0";
  EXPECT_EQ(admin->get(kPods, ns, "job-worker-1")["metadata"]["uid"], uid1) << "the notice replaced worker 1";
  ASSERT_TRUE(eventually([&] { return node_of("job-worker-2").empty(); }, 60s)) << describe_pods();
  st = task()["status"];
  EXPECT_EQ(st.value("epoch", 0), 1) << "one worker's notice restarted the whole task: " << st.dump(2);
  EXPECT_EQ(st["restarts"].value("disruptions", 0), 1) << st.dump(2);
  EXPECT_EQ(st["restarts"].value("failures", 0), 0) << st.dump(2);
  EXPECT_EQ(st["lastDisruption"].value("cause", ""), "NodeNotice") << st.dump(2);
  EXPECT_TRUE(st["lastDisruption"].value("inPlace", false)) << st.dump(2);

  ASSERT_TRUE(wait_phase("Succeeded", 300s)) << task().dump(2) << worker_logs(2) << describe_pods() << operator_log();
  const std::string logs = worker_logs(2) + log2;
  const int resumed_at_2 = after.back().second;
  const auto loss = expect_trained_through(logs, {0, resumed_at_3, resumed_at_2, steps}, 2);
  const double before = loss[0], grown = loss[1], after_loss = loss[2];
  std::printf("PyTorch on two real nodes: GPU freed on the second -> world of 3 training %.1f s (resumed at step %d); "
              "spot notice on the second -> world of 2 training %.1f s (resumed at step %d, the noticed worker's SIGTERM "
              "checkpoint: 0 steps lost); mean loss %.4f -> %.4f -> %.4f, same epoch\n",
              to_grown, resumed_at_3, to_shrunk, resumed_at_2, before, grown, after_loss);
}

}  // namespace
}  // namespace valley::e2e
