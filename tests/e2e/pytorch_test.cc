// PyTorch tasks on the real API server (kwok runs the pods): workers only, each told torchrun's
// rendezvous; resizes change the pod set without touching the workers that stay; an operator killed
// mid-resize duplicates nothing. (What the API server or Valley refuses of a PyTorch task is in the
// bad-input catalogue, tests/bad-inputs.)
#include <signal.h>

#include <map>
#include <set>

#include "operator/kube/error.h"
#include "tests/e2e/support.h"
#include "tests/e2e/task_fixture.h"

namespace valley::e2e {
namespace {

using kube::resources::kPods;
using kube::resources::kSecrets;
using kube::resources::kServices;
using kube::resources::kTrainingTasks;

json pytorch_spec(int min, int max) {
  return {{"taskType", "PyTorch"},
          {"replicas", {{"min", min}, {"max", max}, {"target", min}}},
          {"worker", {{"image", "valley.dev/examples/pytorch:1"}, {"command", {"python3", "/opt/train.py"}}, {"gpus", "1"}}}};
}

std::string env_of(const json& pod, const std::string& name) {
  for (const auto& e : pod["spec"]["containers"][0].value("env", json::array()))
    if (e.value("name", "") == name) return e.value("value", "");
  return "<unset>";
}

using PyTorchTest = TaskTest;

// The workers by name, with their uids: what a resize may add to or remove from, never replace.
std::map<std::string, std::string> worker_uids(const std::vector<json>& pods) {
  std::map<std::string, std::string> out;
  for (const auto& p : pods)
    if (p["metadata"].value("deletionTimestamp", "").empty()) out[p["metadata"]["name"]] = p["metadata"]["uid"];
  return out;
}

TEST_F(PyTorchTest, WorkersRunTorchrunGrowAndShrinkInPlaceAndAKilledOperatorDuplicatesNothing) {
  apply(pytorch_spec(2, 4));
  ASSERT_TRUE(eventually([&] { return phase() == "Running" && pods().size() == 2; }, 60s)) << task().dump(2) << operator_log();
  // Workers only: the Service names them and opens the rendezvous; no launcher, no key pair.
  const auto first = worker_uids(pods());
  EXPECT_EQ(first.size(), 2u);
  EXPECT_TRUE(first.count("job-worker-0") && first.count("job-worker-1"));
  json svc = admin->get(kServices, ns, "job-workers");
  EXPECT_EQ(svc["spec"]["ports"][0]["port"], 29400);
  EXPECT_THROW(admin->get(kSecrets, ns, "job-ssh"), kube::KubeError);
  for (const auto& p : pods()) {
    EXPECT_EQ(p["spec"]["containers"][0]["command"], json({"torchrun", "--no_python", "python3", "/opt/train.py"}));
    EXPECT_EQ(env_of(p, "PET_NNODES"), "2:4");
    EXPECT_EQ(env_of(p, "PET_RDZV_ENDPOINT"), "job-worker-0.job-workers." + ns + ".svc:29400");
    EXPECT_EQ(env_of(p, "PET_RDZV_ID"), "job-1");
    EXPECT_EQ(p["spec"]["subdomain"], "job-workers");
  }

  // Growth adds a worker; the two that run stay as they are.
  admin->patch(kTrainingTasks, ns, "job", kube::PatchType::Merge, {{"spec", {{"replicas", 3}}}}, "scale");
  ASSERT_TRUE(eventually([&] { return worker_uids(pods()).size() == 3 && phase() == "Running"; }, 60s)) << task()["status"].dump(2);
  auto grown = worker_uids(pods());
  for (const auto& [name, uid] : first) EXPECT_EQ(grown[name], uid) << name << " was replaced by a resize in place";
  EXPECT_EQ(task()["status"]["epoch"], 1);
  EXPECT_EQ(task()["status"]["restarts"]["resizes"], 1);

  // Growth again, the operator killed as it begins: one fourth worker, nobody replaced.
  admin->patch(kTrainingTasks, ns, "job", kube::PatchType::Merge, {{"spec", {{"replicas", 4}}}}, "scale");
  eventually([&] { return task()["status"].value("epochReplicas", 0) == 4; }, 20s);
  stop_operator(SIGKILL);
  start_operator();
  ASSERT_TRUE(eventually([&] { return worker_uids(pods()).size() == 4 && phase() == "Running"; }, 60s)) << task()["status"].dump(2);
  auto four = worker_uids(pods());
  for (const auto& [name, uid] : grown) EXPECT_EQ(four[name], uid) << name << " was replaced";
  std::set<std::string> names;
  for (const auto& p : pods()) names.insert(p["metadata"]["name"]);
  EXPECT_EQ(names, (std::set<std::string>{"job-worker-0", "job-worker-1", "job-worker-2", "job-worker-3"}));

  // A shrink removes the highest workers only.
  admin->patch(kTrainingTasks, ns, "job", kube::PatchType::Merge, {{"spec", {{"replicas", 2}}}}, "scale");
  ASSERT_TRUE(eventually([&] { return worker_uids(pods()).size() == 2; }, 60s)) << task()["status"].dump(2);
  auto shrunk = worker_uids(pods());
  EXPECT_EQ(shrunk["job-worker-0"], first.at("job-worker-0"));
  EXPECT_EQ(shrunk["job-worker-1"], first.at("job-worker-1"));
  json st = task()["status"];
  EXPECT_EQ(st["epoch"], 1) << "no resize of a PyTorch task restarted it";
  EXPECT_EQ(st["phase"], "Running");
  EXPECT_EQ(st["restarts"]["resizes"], 3);
}

}  // namespace
}  // namespace valley::e2e
