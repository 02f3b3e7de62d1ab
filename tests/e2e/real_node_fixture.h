// The real node's test fixture (tests/cluster/node.bash, `make node-up`): a Valley operator of the
// test's own, a real S3 store (versitygw) on the node's bridge with the namespace's credentials in
// Secret s3-creds, the A100 PricingPolicy, MPI task specs running valley-train, and what the pods
// left behind (logs, container times, the outputs sidecars' states).
//
// The node's GPUs are simulated (an extended resource, or the DRA example driver's devices, with no
// device behind them): there is no GPU on this machine. Everything else is real.
#pragma once

#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <regex>

#include "operator/kube/json_fields.h"
#include "operator/kube/timefmt.h"
#include "operator/storage/checkpoint_record.h"
#include "tests/e2e/task_fixture.h"
#include "tests/storage/versitygw.h"

namespace valley::e2e {

using kube::resources::kNodes;
using kube::resources::kPricingPolicies;
using kube::resources::kSecrets;

inline constexpr const char* kRealNode = "valley-node-0";
inline constexpr const char* kNodeIp = "10.244.0.1";  // node.bash: the node's InternalIP on its bridge
inline constexpr const char* kTrainImage = "valley.local/valley-train:dev";

// The pod's container ran in a real runtime (kwok reports no container IDs).
inline std::string container_id(const json& pod) {
  for (const auto& s : pod["status"].value("containerStatuses", json::array())) return s.value("containerID", "");
  return "";
}

// A pod template that runs on the real node only, with the locally built image (no registry).
inline json on_real_node() {
  return {{"spec",
           {{"nodeSelector", {{"valley.dev/real-node", "true"}}},
            {"tolerations", json::array({{{"key", "valley.dev/real-node"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}})},
            {"containers", json::array({{{"name", "main"}, {"imagePullPolicy", "Never"}}})}}}};
}

// Whether a pod in namespace `ns` on the real node opens a TCP connection to ip:port within 5 s
// (the node's enforcer rejects what a NetworkPolicy does not admit).
inline bool pod_connects(kube::Client& admin, const std::string& ns, const std::string& name, const std::string& ip, int port) {
  json pod = on_real_node();
  pod["apiVersion"] = "v1";
  pod["kind"] = "Pod";
  pod["metadata"] = {{"name", name}};
  pod["spec"]["restartPolicy"] = "Never";
  auto& c = pod["spec"]["containers"][0];
  c["image"] = kTrainImage;
  c["command"] = {"bash", "-c", "timeout 5 bash -c '</dev/tcp/" + ip + "/" + std::to_string(port) + "' && echo open || echo closed"};
  admin.create(kPods, ns, pod);
  std::string phase;
  EXPECT_TRUE(eventually([&] {
    phase = admin.get(kPods, ns, name)["status"].value("phase", "");
    return phase == "Succeeded" || phase == "Failed";
  }, 90s)) << name << " is " << phase;
  std::string log;
  kubectl({"-n", ns, "logs", name}, &log);
  EXPECT_TRUE(log.find("open") != std::string::npos || log.find("closed") != std::string::npos) << name << ": " << log;
  return log.find("open") != std::string::npos;
}

// A namespace of the test's own beside its main one, removed after it.
inline std::string other_namespace(kube::Client& admin, const std::string& ns) {
  const std::string other = ns + "-other";
  admin.create(kube::resources::kNamespaces, "", {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", other}}}});
  return other;
}

class RealNodeTest : public TaskTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    json node;
    try {
      node = admin->get(kNodes, "", kRealNode);
    } catch (const std::exception& e) {
      GTEST_FAIL() << "no real node (" << e.what() << "): run tests/cluster/cluster.sh node-up";
    }
    bool ready = false;
    for (const auto& c : node["status"].value("conditions", json::array()))
      if (c["type"] == "Ready") ready = c["status"] == "True";
    ASSERT_TRUE(ready) << "node " << kRealNode << " is not Ready: " << node["status"].dump(2);
    s3_ = std::make_unique<testing::VersityGw>(kNodeIp);
    json secret = {{"apiVersion", "v1"}, {"kind", "Secret"}, {"metadata", {{"name", "s3-creds"}}}, {"stringData", s3_->env()}};
    admin->create(kSecrets, ns, secret);
    // The node's data cache for the test's task "job": a local PV in a directory of the host (the
    // node's kubelet runs on it), as a node-local provisioner would make one.
    data_dir_ = ::testing::TempDir() + "/real-node-data-" + ns;
    std::filesystem::create_directories(data_dir_);
    own_local_volume(kRealNode, std::string("job-data-") + kRealNode, data_dir_);
    start_operator();
  }
  void TearDown() override {
    TaskTest::TearDown();
    s3_.reset();
  }
  std::vector<std::string> operator_flags() const override {
    // valley-io from the operator image node.bash built (no registry here).
    return {"--pricing-policy=" + ns, "--cost-interval=1s", "--cost-settle=2s", "--planner-min-resize-interval=2s",
            "--io-image=localhost/valley-operator:dev", "--checkpoint-poll-interval=2s",
            std::string("--data-cache-class=") + kLocalStorageClass};
  }

  // valley-train under mpirun over the workers Valley lists in the hostfile; checkpoints in S3.
  json mpi_train_spec(int min, int max, int slots, int steps, int checkpoint_every, int step_delay_ms) {
    // The model (rank 0's final weights) goes to VALLEY_OUTPUT_DIR, which the pods' sidecar keeps.
    const std::string train = "valley-train --steps " + std::to_string(steps) + " --checkpoint-every " +
                              std::to_string(checkpoint_every) + " --step-delay-ms " + std::to_string(step_delay_ms) +
                              " --output /valley/output/model.txt";
    return {{"taskType", "MPI"},
            {"replicas", {{"min", min}, {"max", max}}},
            {"master",
             {{"image", kTrainImage},
              {"command",
               {"sh", "-c",
                "exec mpirun -np \"$VALLEY_WORLD_SIZE\" -x VALLEY_CHECKPOINT_URI -x VALLEY_EPOCH -x VALLEY_RESUME -x VALLEY_DATA_DIR "
                "-x AWS_ACCESS_KEY_ID -x AWS_SECRET_ACCESS_KEY -x AWS_REGION -x AWS_ENDPOINT_URL " +
                    train}},
              {"template", on_real_node()}}},
            {"worker", {{"image", kTrainImage}, {"gpus", "1"}, {"slotsPerWorker", slots}, {"template", on_real_node()}}},
            {"checkpoint", {{"uri", "s3://" + std::string(testing::VersityGw::kBucket) + "/" + ns + "/"}, {"secretRef", {{"name", "s3-creds"}}}}},
            {"runPolicy", {{"backoffLimit", 2}}}};
  }
  std::optional<storage::CheckpointRecord> latest_checkpoint() {
    std::string text, error;
    try {
      auto got = s3_->store(ns)->get(storage::kLatestKey);
      if (!got) return std::nullopt;
      text = *got;
    } catch (const std::exception&) {
      return std::nullopt;
    }
    return storage::parse_checkpoint_record(text, &error);
  }
  std::string pod_log(const std::string& pod, const std::string& container = "") {
    std::string out;
    if (container.empty()) kubectl({"-n", ns, "logs", pod}, &out);
    else kubectl({"-n", ns, "logs", pod, "-c", container}, &out);
    return out;
  }
  std::string describe_pods() {
    std::string out;
    for (const auto& p : pods()) out += p["metadata"]["name"].get<std::string>() + ": " + p["status"].dump() + "\n";
    return out;
  }

  // The last state of every pod of the namespace seen, deleted ones included: the worker pods'
  // container times once Valley has deleted them.
  void record_pods() {
    kube::InformerOptions io;
    io.ns = ns;
    pod_informer_ = std::make_unique<kube::Informer>(*admin, kPods, io);
    auto keep = [this](const kube::ObjectPtr& o) {
      std::lock_guard l(seen_mu_);
      seen_[(*o)["metadata"].value("uid", "")] = *o;
    };
    pod_informer_->add_handlers({keep, [keep](const kube::ObjectPtr&, const kube::ObjectPtr& o) { keep(o); }, keep});
    pod_informer_->start();
    ASSERT_TRUE(pod_informer_->wait_for_sync(10s));
  }
  std::vector<json> seen_pods() {
    std::lock_guard l(seen_mu_);
    std::vector<json> out;
    for (const auto& [uid, p] : seen_) out.push_back(p);
    return out;
  }
  // Each pod's outputs sidecar as last seen (its state says whether it kept the files and, failing,
  // why: its termination message holds its last log lines), for a failed outputs check.
  std::string outputs_sidecars() {
    std::string out;
    for (const auto& p : seen_pods())
      for (const auto& cs : kube::array_at(kube::object_at(p, "status"), "initContainerStatuses"))
        if (kube::string_at(cs, "name") == "valley-outputs")
          out += "\n" + kube::string_at(kube::object_at(p, "metadata"), "name") + " (" + kube::string_at(kube::object_at(p, "status"), "phase") +
                 "): " + kube::object_at(cs, "state").dump() + " last " + kube::object_at(cs, "lastState").dump();
    return out;
  }
  // A100 on demand at 3.60/GPU-h, 400 W per GPU at 0.50/kWh flat, no priority multiplier.
  void create_policy() {
    json spec = json::parse(R"({"currency":"USD",
      "gpu":[{"match":{"vendor":"nvidia","product":"NVIDIA-A100-SXM4-80GB"},"onDemand":"3.60","spot":"1.80"},{"onDemand":"1.00"}],
      "electricity":{"timeZone":"UTC","pue":"1.0","wattsPerGpu":[{"match":{"vendor":"nvidia"},"watts":400}],"flatPerKWh":"0.50"},
      "priority":{"multipliers":[{"minPriority":0,"multiplier":"1.0"}]}})");
    admin->create(kPricingPolicies, "", {{"apiVersion", "valley.dev/v1beta1"}, {"kind", "PricingPolicy"}, {"metadata", {{"name", ns}}}, {"spec", spec}});
  }
  // valley-train uninterrupted on this host (the same binary the image has), for comparison.
  std::string reference_run(int ranks, int steps) {
    ChildProcess ref({"/usr/bin/env", "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", "OMPI_MCA_rmaps_base_oversubscribe=1",
                      "mpirun", "-np", std::to_string(ranks), binary("valley-train"), "--steps", std::to_string(steps)},
                     ::testing::TempDir() + "/reference-" + ns + ".log");
    EXPECT_EQ(ref.wait(120s), 0) << ref.output();
    return ref.output();
  }
  static std::optional<double> final_loss(const std::string& log, int steps) {
    std::smatch m;
    if (!std::regex_search(log, m, std::regex("done step=" + std::to_string(steps) + " loss=([0-9.eE+-]+)"))) return std::nullopt;
    return std::stod(m[1]);
  }
  void add_blocker(const std::string& name, int gpus, int priority = 0, json tmpl = on_real_node()) {
    json spec = {{"taskType", "Single"},
                 {"image", kTrainImage},
                 // Exits on SIGTERM at once (a shell as PID 1 has no default action for it).
                 {"command", {"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"}},
                 {"worker", {{"gpus", std::to_string(gpus)}, {"template", std::move(tmpl)}}}};
    if (priority != 0) spec["priority"] = priority;
    apply(spec, name);
  }

  std::unique_ptr<testing::VersityGw> s3_;
  std::string data_dir_;  // the node's data cache for "job" (a local PV)
  std::unique_ptr<kube::Informer> pod_informer_;
  std::mutex seen_mu_;
  std::map<std::string, json> seen_;
};

}  // namespace valley::e2e
