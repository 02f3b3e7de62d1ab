// PyTorch tasks (taskType PyTorch): what the spec accepts and refuses, how the seed format maps to
// it, the workers torchrun runs (rendezvous, nodes, processes), and the lifecycle of workers only:
// a Service and no key pair, resizes in place, worker 0 deciding the end.
#include "controllers/api/pod.h"
#include "controllers/api/seed.h"
#include "controllers/api/spec.h"
#include "controllers/render/render.h"
#include "lifecycle_fixtures.h"
#include "operator/yaml_json.h"

#include <gtest/gtest.h>

namespace valley::lifecycle {
namespace {
using namespace fixtures;

json pytorch(json patch = json::object(), json status = json::object()) {
  json t = task_object({}, std::move(status));
  t["spec"] = {{"taskType", "PyTorch"},
               {"replicas", {{"min", 2}, {"max", 4}}},
               {"worker", {{"image", "torch:1"}, {"command", {"python3", "train.py"}}, {"args", {"--epochs", "3"}}, {"gpus", "2"}}},
               {"runPolicy", {{"backoffLimit", 2}}}};
  if (patch.is_object()) t["spec"].merge_patch(patch);  // ({} is null: it would replace the spec)
  return t;
}

std::vector<std::string> errors_of(const json& task) { return api::parse_task(task).errors; }

bool any_error_has(const json& task, const std::string& text) {
  for (const auto& e : errors_of(task))
    if (e.find(text) != std::string::npos) return true;
  return false;
}

std::string env_of(const json& pod, const std::string& name) {
  for (const auto& e : pod["spec"]["containers"][0]["env"])
    if (e["name"] == name) return e["value"];
  return "<unset>";
}

TEST(PyTorchSpec, EveryTypesNameReadsBackAsItselfAndNoOtherSpellingIsAType) {
  for (api::TaskType t : {api::TaskType::MPI, api::TaskType::Single, api::TaskType::PyTorch})
    EXPECT_EQ(api::parse_task_type(api::task_type_name(t)), t) << api::task_type_name(t);
  for (const char* name : {"pytorch", "mpi", "Pytorch", "PyTorch ", "", "Batch"}) EXPECT_FALSE(api::parse_task_type(name)) << name;
  // The CRD and the seed format refuse the same spellings.
  EXPECT_TRUE(any_error_has(pytorch({{"taskType", "pytorch"}}), "spec.taskType: must be MPI, PyTorch or Single"));
  std::string err;
  auto docs = parse_yaml("TaskName: x\nTaskType: pytorch\n", &err);
  ASSERT_TRUE(docs) << err;
  std::vector<std::string> errors;
  api::seed_to_task(docs->front(), "", &errors);
  ASSERT_FALSE(errors.empty());
  EXPECT_NE(errors[0].find("TaskType: must be MPI, PyTorch or Single"), std::string::npos) << errors[0];
}

TEST(PyTorchSpec, DefaultsToResizesInPlaceAndOneProcessPerGpu) {
  auto parsed = api::parse_task(pytorch());
  ASSERT_TRUE(parsed.spec) << (parsed.errors.empty() ? "" : parsed.errors[0]);
  EXPECT_EQ(parsed.spec->type, api::TaskType::PyTorch);
  EXPECT_TRUE(parsed.spec->hot_elastic);
  EXPECT_EQ(parsed.spec->slots_per_worker, 2);
  EXPECT_FALSE(parsed.spec->has_launcher());
  EXPECT_TRUE(parsed.spec->has_worker_service());
  // Said otherwise, as said.
  auto told = api::parse_task(pytorch({{"elasticity", "Restart"}, {"worker", {{"slotsPerWorker", 1}}}}));
  ASSERT_TRUE(told.spec);
  EXPECT_FALSE(told.spec->hot_elastic);
  EXPECT_EQ(told.spec->slots_per_worker, 1);
  // An MPI task keeps its defaults.
  auto mpi = api::parse_task(task_object({{"worker", {{"gpus", "2"}}}}));
  ASSERT_TRUE(mpi.spec);
  EXPECT_FALSE(mpi.spec->hot_elastic);
  EXPECT_EQ(mpi.spec->slots_per_worker, 1);
}

TEST(PyTorchSpec, RefusesALauncherNoCommandAndTorchrunFlagsThatAreValleys) {
  EXPECT_TRUE(any_error_has(pytorch({{"master", {{"image", "l"}}}}), "spec.master: a PyTorch task has no launcher"));
  json no_command = pytorch();
  no_command["spec"]["worker"].erase("command");
  EXPECT_TRUE(any_error_has(no_command, "spec.worker.command: a PyTorch task needs the command"));
  EXPECT_TRUE(any_error_has(pytorch({{"worker", {{"image", nullptr}}}}), "spec.worker.image"));
  // torchrun with flags of its own is fine; the rendezvous and the node count are Valley's.
  EXPECT_TRUE(errors_of(pytorch({{"worker", {{"command", {"torchrun", "--max_restarts", "5", "--monitor-interval=2", "train.py", "--nnodes", "9"}}}}})).empty())
      << "a script's own --nnodes after the script is the script's";
  EXPECT_TRUE(any_error_has(pytorch({{"worker", {{"command", {"torchrun", "--nnodes=1:2", "train.py"}}}}}), "--nnodes is Valley's to set"));
  EXPECT_TRUE(any_error_has(pytorch({{"worker", {{"command", {"torchrun", "--max_restarts", "5", "--rdzv_endpoint", "h:1", "train.py"}}}}}),
                            "--rdzv_endpoint is Valley's to set"));
  EXPECT_TRUE(any_error_has(pytorch({{"worker", {{"command", {"torchrun"}}, {"args", {"--standalone", "train.py"}}}}}), "--standalone is Valley's"));
  EXPECT_FALSE(any_error_has(pytorch({{"worker", {{"command", {"torchrun", "-", "--", "-=x", "train.py"}}}}}), "Valley's to set"));  // odd words
  EXPECT_TRUE(any_error_has(pytorch({{"taskType", "Horovod"}}), "must be MPI, PyTorch or Single"));
}

TEST(PyTorchSeed, MapsToWorkersOnlyWithTheCommand) {
  std::string err;
  auto docs = parse_yaml("TaskName: ddp\nTaskType: PyTorch\nMinReplicas: 2\nMaxReplicas: 3\nTaskImage: torch:1\n"
                         "Command: [python3, train.py]\nGPUsPerWorker: 1\n",
                         &err);
  ASSERT_TRUE(docs) << err;
  std::vector<std::string> errors;
  const json task = api::seed_to_task(docs->front(), "team", &errors);
  ASSERT_TRUE(errors.empty()) << errors[0];
  const json& spec = task["spec"];
  EXPECT_EQ(spec["taskType"], "PyTorch");
  EXPECT_FALSE(spec.contains("master"));
  EXPECT_EQ(spec["worker"]["image"], "torch:1");
  EXPECT_EQ(spec["worker"]["command"], json({"python3", "train.py"}));
  EXPECT_EQ(spec["replicas"], json({{"min", 2}, {"max", 3}}));
  EXPECT_TRUE(api::parse_task(task).errors.empty());
  auto bad = parse_yaml("TaskName: ddp\nTaskType: PyTorch\nTaskImage: t\nMasterImage: m\nCommand: [python3, t.py]\n", &err);
  ASSERT_TRUE(bad) << err;
  errors.clear();
  api::seed_to_task(bad->front(), "team", &errors);
  ASSERT_FALSE(errors.empty());
  EXPECT_NE(errors[0].find("MasterImage: a PyTorch task has no launcher"), std::string::npos) << errors[0];
}

TEST(PyTorchRender, WorkersRunTheCommandUnderTorchrunWithTheTasksRendezvous) {
  const api::TaskSpec spec = *api::parse_task(pytorch()).spec;
  json w0 = render::worker_pod(spec, 0, {3, 2}, render::default_placement(spec));
  json w2 = render::worker_pod(spec, 2, {3, 2}, render::default_placement(spec));
  const json& c = w0["spec"]["containers"][0];
  EXPECT_EQ(c["command"], json({"torchrun", "--no_python", "python3", "train.py"}));
  EXPECT_EQ(c["args"], json({"--epochs", "3"}));
  EXPECT_EQ(env_of(w0, "PET_NNODES"), "2:4");
  EXPECT_EQ(env_of(w0, "PET_NPROC_PER_NODE"), "2");
  EXPECT_EQ(env_of(w0, "PET_RDZV_BACKEND"), "c10d");
  EXPECT_EQ(env_of(w0, "PET_RDZV_ENDPOINT"), "t-worker-0.t-workers.ns.svc:29400");
  EXPECT_EQ(env_of(w2, "PET_RDZV_ENDPOINT"), env_of(w0, "PET_RDZV_ENDPOINT"));
  EXPECT_EQ(env_of(w0, "PET_RDZV_ID"), "t-2");  // a new rendezvous each epoch
  EXPECT_EQ(env_of(w0, "PET_RDZV_CONF").rfind("is_host=1,", 0), 0u);
  EXPECT_EQ(env_of(w2, "PET_RDZV_CONF").rfind("is_host=0,", 0), 0u);
  EXPECT_EQ(env_of(w2, "VALLEY_WORLD_SIZE"), "6");  // 3 workers x 2 processes
  EXPECT_EQ(w2["spec"]["subdomain"], "t-workers");
  // No SSH: neither the keys nor OpenMPI's settings.
  EXPECT_EQ(env_of(w0, "OMPI_MCA_plm_rsh_args"), "<unset>");
  for (const auto& v : w0["spec"].value("volumes", json::array())) EXPECT_NE(v["name"], "valley-ssh");
  // A command that is torchrun already is run as written (its flags, Valley's environment).
  const api::TaskSpec own = *api::parse_task(pytorch({{"worker", {{"command", {"torchrun", "--max_restarts=3", "train.py"}}}}})).spec;
  json p = render::worker_pod(own, 1, {2, 1}, render::default_placement(own));
  EXPECT_EQ(p["spec"]["containers"][0]["command"], json({"torchrun", "--max_restarts=3", "train.py"}));
  EXPECT_EQ(env_of(p, "PET_NNODES"), "2:4");
}

TEST(PyTorchRender, TheServiceNamesTheWorkersAndOpensTheRendezvousPort) {
  const api::TaskSpec spec = *api::parse_task(pytorch()).spec;
  json svc = render::headless_service(spec);
  EXPECT_EQ(svc["metadata"]["name"], "t-workers");
  EXPECT_TRUE(svc["spec"]["publishNotReadyAddresses"].get<bool>());
  ASSERT_EQ(svc["spec"]["ports"].size(), 1u);
  EXPECT_EQ(svc["spec"]["ports"][0]["name"], "rendezvous");
  EXPECT_EQ(svc["spec"]["ports"][0]["port"], 29400);
  EXPECT_FALSE(render::launcher_too_large(spec).has_value());
}

TEST(PyTorchLifecycle, AnAdmittedTaskGetsItsServiceAndWorkersButNoLauncherOrKeys) {
  Observed o = observe(pytorch(), {}, /*objects=*/false);
  Decision d = decide(o);
  EXPECT_FALSE(d.create_ssh_secret);
  EXPECT_EQ(created_names(d), (std::vector<std::string>{"t-workers", "t-worker-0", "t-worker-1"}));
  // Running once every worker is Ready.
  Decision up = decide(observe(pytorch({}, d.status), running_pods(1, 2, false)));
  EXPECT_EQ(up.status["phase"], "Running") << up.status.dump();
  EXPECT_TRUE(up.create.empty());
}

TEST(PyTorchLifecycle, AnIsolatedTaskLetsItsWorkersReachEachOtherOnEveryPortAndNoOneElseIn) {
  Observed o = observe(pytorch(), {}, /*objects=*/false);
  o.isolate = true;
  Decision d = decide(o);
  const json* policy = nullptr;
  for (const auto& object : d.create)
    if (object["kind"] == "NetworkPolicy") policy = &object;
  ASSERT_NE(policy, nullptr) << created_names(d).size();
  // Worker to worker: the rendezvous (29400) and gloo's or NCCL's own ports, which torch picks at
  // run time, so no port list: every port, from the task's own pods only.
  const json& ingress = (*policy)["spec"]["ingress"];
  ASSERT_EQ(ingress.size(), 1u) << ingress.dump();
  EXPECT_FALSE(ingress[0].contains("ports"));
  EXPECT_EQ(ingress[0]["from"][0]["podSelector"]["matchLabels"]["valley.dev/task"], "t");
  EXPECT_EQ((*policy)["spec"]["podSelector"]["matchLabels"]["valley.dev/task"], "t");
}

TEST(PyTorchLifecycle, ResizesAddAndRemoveWorkersInTheSameEpoch) {
  Decision grow = decide(observe(pytorch({{"replicas", {{"target", 3}}}}, running_status()), running_pods(1, 2, false)));
  EXPECT_EQ(grow.status["epoch"], 1);
  EXPECT_EQ(grow.status["epochReplicas"], 3);
  EXPECT_EQ(grow.status["phase"], "Running");  // the new worker is not Ready yet: still running
  EXPECT_TRUE(grow.delete_pods.empty());
  EXPECT_EQ(created_names(grow), std::vector<std::string>{"t-worker-2"});
  EXPECT_FALSE(grow.launcher_hostfile.has_value());
  Decision shrink = decide(observe(pytorch({{"replicas", {{"target", 2}}}}, running_status(1, 3)), running_pods(1, 3, false)));
  EXPECT_EQ(shrink.status["epoch"], 1);
  ASSERT_EQ(shrink.delete_pods.size(), 1u);
  EXPECT_EQ(shrink.delete_pods[0].name, "t-worker-2");
  EXPECT_TRUE(shrink.create.empty());
}

TEST(PyTorchLifecycle, WorkerZeroEndingWellEndsTheTaskAndAnotherWorkersCrashEndsTheEpoch) {
  auto pods = running_pods(1, 2, false);
  pods[0].phase = "Succeeded";
  pods[0].ready = false;
  Decision done = decide(observe(pytorch({}, running_status()), pods));
  EXPECT_EQ(done.status["phase"], "Succeeded");
  EXPECT_EQ(done.status["message"], "worker 0 (torchrun's rendezvous host) completed successfully");
  auto crashed = running_pods(1, 2, false);
  crashed[1].phase = "Failed";
  crashed[1].exit_code = 137;
  crashed[1].ready = false;
  Decision again = decide(observe(pytorch({}, running_status()), crashed));
  EXPECT_EQ(again.status["epoch"], 2);
  EXPECT_EQ(again.status["phase"], "Restarting");
}

// Three workers of epoch 1 on n1..n3, admitted at 3 with the plan's nodes as they are.
Observed three_on_nodes(json status, std::vector<PodView> pods, std::map<std::string, NodeView> nodes) {
  Observed o = observe(pytorch({}, std::move(status)), std::move(pods));
  o.nodes_known = true;
  o.nodes = std::move(nodes);
  o.admission->workers = 3;
  o.admission->placement.resize(3);
  for (int i = 0; i < 3; ++i) o.admission->placement[i].node = "n" + std::to_string(i + 1);
  return o;
}

std::vector<PodView> three_running() {
  auto pods = running_pods(1, 3, false);
  for (size_t i = 0; i < pods.size(); ++i) pods[i].node = "n" + std::to_string(i + 1);
  return pods;
}

std::map<std::string, NodeView> four_nodes() { return {{"n1", {}}, {"n2", {}}, {"n3", {}}, {"n4", {}}}; }

TEST(PyTorchLifecycle, ASpotNoticeOnOneWorkerReplacesItWhileTheOthersGoOnInTheSameEpoch) {
  auto nodes = four_nodes();
  nodes["n3"].notice = "aws-node-termination-handler/spot-itn";
  Decision d = decide(three_on_nodes(running_status(1, 3), three_running(), nodes));
  EXPECT_EQ(d.status["epoch"], 1);
  EXPECT_EQ(d.status["phase"], "Running");
  EXPECT_EQ(d.status["restarts"]["disruptions"], 1);
  EXPECT_EQ(d.status["lastDisruption"]["inPlace"], true);
  EXPECT_EQ(d.status["lastDisruption"]["node"], "n3");
  EXPECT_EQ(d.status["lastDisruption"]["pods"][0]["uid"], "uid-t-worker-2");
  ASSERT_EQ(d.delete_pods.size(), 1u);  // only the worker taken, gracefully (SIGTERM: it checkpoints)
  EXPECT_EQ(d.delete_pods[0].name, "t-worker-2");
  EXPECT_FALSE(d.delete_pods[0].force);
  EXPECT_TRUE(d.create.empty());
  ASSERT_EQ(d.events.size(), 1u) << d.events.back().reason << ": " << d.events.back().note;
  EXPECT_EQ(d.events[0].reason, "Disrupted");
  EXPECT_NE(d.events[0].note.find("the other 2 workers go on"), std::string::npos) << d.events[0].note;

  // Decided once: the terminating worker (seen by a restarted operator too) is not a new disruption,
  // nor a failure once its containers stopped.
  auto pods = three_running();
  pods[2].deleting = true;
  pods[2].phase = "Failed";
  pods[2].exit_code = 143;
  Decision again = decide(three_on_nodes(d.status, pods, nodes));
  EXPECT_EQ(again.status["restarts"]["disruptions"], 1);
  EXPECT_EQ(again.status["epoch"], 1);
  EXPECT_EQ(again.status["phase"], "Running");
  EXPECT_TRUE(again.events.empty());
  EXPECT_TRUE(again.create.empty());

  // Gone: its replacement goes where the plan puts it now, in the same epoch.
  pods.pop_back();
  Observed gone = three_on_nodes(d.status, pods, nodes);
  gone.admission->placement[2].node = "n4";
  Decision replaced = decide(gone);
  ASSERT_EQ(created_names(replaced), std::vector<std::string>{"t-worker-2"});
  EXPECT_EQ(api::pinned_node(replaced.create[0]), "n4");
  EXPECT_TRUE(replaced.delete_pods.empty());
  EXPECT_EQ(replaced.status["epoch"], 1);

  // Ready: recovered, back at its size.
  auto back = three_running();
  back[2].node = "n4";
  back[2].uid = "uid-t-worker-2-again";
  Decision recovered = decide(three_on_nodes(replaced.status, back, nodes));
  EXPECT_TRUE(recovered.status["lastDisruption"].contains("recoveredTime")) << recovered.status.dump();
  ASSERT_EQ(recovered.events.size(), 1u);
  EXPECT_NE(recovered.events[0].note.find("back at 3 workers"), std::string::npos) << recovered.events[0].note;
}

// No GPU for the replacement: the plan shrinks the task to the workers that stay. The worker on the
// noticed node, still stopping beyond the new size, is the same disruption, not one of the gang.
TEST(PyTorchLifecycle, AWorkerTakenInPlaceThatCannotBeReplacedIsAShrinkNotARestart) {
  auto nodes = four_nodes();
  nodes["n3"].notice = "aws-node-termination-handler/spot-itn";
  Decision d = decide(three_on_nodes(running_status(1, 3), three_running(), nodes));
  ASSERT_EQ(d.status["lastDisruption"]["inPlace"], true);
  auto pods = three_running();
  pods[2].deleting = true;
  json status = d.status;
  for (int round = 0; round < 2; ++round) {
    Observed shrunk = three_on_nodes(status, pods, nodes);
    shrunk.admission->workers = 2;
    shrunk.admission->placement.resize(2);
    Decision next = decide(shrunk);
    EXPECT_EQ(next.status["epoch"], 1) << next.status.dump(2);
    EXPECT_EQ(next.status["phase"], "Running") << next.status.dump(2);
    EXPECT_EQ(next.status["restarts"]["disruptions"], 1) << next.status.dump(2);
    EXPECT_EQ(next.status["epochReplicas"], 2) << next.status.dump(2);
    for (const auto& p : next.delete_pods) EXPECT_EQ(p.name, "t-worker-2");
    EXPECT_TRUE(next.create.empty());
    status = next.status;
  }
}

TEST(PyTorchLifecycle, AnEvictedWorkerIsReplacedInPlaceWithoutCountingAFailure) {
  auto pods = three_running();
  pods[1].phase = "Failed";
  pods[1].ready = false;
  pods[1].exit_code = 137;
  pods[1].disruption = "EvictionByEvictionAPI";
  Decision d = decide(three_on_nodes(running_status(1, 3), pods, four_nodes()));
  EXPECT_EQ(d.status["epoch"], 1);
  EXPECT_EQ(d.status["lastDisruption"]["cause"], "Evicted");
  EXPECT_EQ(d.status["restarts"].value("failures", 0), 0);
  ASSERT_EQ(d.delete_pods.size(), 1u);
  EXPECT_EQ(d.delete_pods[0].name, "t-worker-1");
}

TEST(PyTorchLifecycle, LosingTheRendezvousHostOrGoingBelowMinRestartsTheEpoch) {
  auto nodes = four_nodes();
  nodes["n1"].notice = "karpenter.sh/disrupted";  // worker 0's
  Decision host = decide(three_on_nodes(running_status(1, 3), three_running(), nodes));
  EXPECT_EQ(host.status["epoch"], 2);
  EXPECT_EQ(host.status["phase"], "Restarting");
  EXPECT_FALSE(host.status["lastDisruption"].contains("inPlace"));

  auto two_nodes = four_nodes();
  two_nodes["n2"].notice = "aws-node-termination-handler/spot-itn";
  two_nodes["n3"].notice = "aws-node-termination-handler/spot-itn";  // 1 worker left of min 2
  Decision below = decide(three_on_nodes(running_status(1, 3), three_running(), two_nodes));
  EXPECT_EQ(below.status["epoch"], 2);
  EXPECT_EQ(below.status["phase"], "Restarting");
}

}  // namespace
}  // namespace valley::lifecycle
