#include "controllers/render/render.h"
#include "controllers/render/transfers.h"

#include "controllers/api/pod.h"
#include "controllers/api/quantity.h"
#include "controllers/inputs/snapshot.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

namespace valley::render {
namespace {

TaskSpec spec() {
  auto parsed = api::parse_task(json::parse(R"({"metadata":{"name":"resnet","namespace":"team-a","uid":"u-1"},
    "spec":{"replicas":{"min":2,"max":8},"amdSupport":true,
      "master":{"image":"l:1","command":["mpirun","python","train.py"],
                "template":{"metadata":{"annotations":{"sim":"1"}},"spec":{"tolerations":[{"key":"gpu","operator":"Exists"}]}}},
      "worker":{"image":"w:1","amdImage":"w-rocm:1","gpus":"2","slotsPerWorker":4,"resources":{"requests":{"cpu":"8"}}},
      "checkpoint":{"uri":"s3://bkt/p/"}}})"));
  return *parsed.spec;
}

std::string env_of(const json& pod, const std::string& name) {
  for (const auto& e : pod["spec"]["containers"][0]["env"])
    if (e["name"] == name) return e["value"];
  return "<unset>";
}

TEST(Render, WorkerPodCarriesNamesLabelsOwnerContractAndGpus) {
  json pod = worker_pod(spec(), 3, {6, 2}, default_placement(spec()));
  EXPECT_EQ(pod["metadata"]["name"], "resnet-worker-3");
  EXPECT_EQ(pod["metadata"]["namespace"], "team-a");
  EXPECT_EQ(pod["metadata"]["labels"]["app.kubernetes.io/managed-by"], "valley");
  EXPECT_EQ(pod["metadata"]["labels"]["valley.dev/task"], "resnet");
  EXPECT_EQ(pod["metadata"]["labels"]["valley.dev/role"], "worker");
  EXPECT_EQ(pod["metadata"]["labels"]["valley.dev/epoch"], "2");
  EXPECT_EQ(pod["metadata"]["ownerReferences"][0]["uid"], "u-1");
  EXPECT_TRUE(pod["metadata"]["ownerReferences"][0]["controller"].get<bool>());
  EXPECT_EQ(pod["spec"]["hostname"], "resnet-worker-3");
  EXPECT_EQ(pod["spec"]["subdomain"], "resnet-workers");
  EXPECT_EQ(pod["spec"]["restartPolicy"], "Never");
  EXPECT_EQ(env_of(pod, "VALLEY_WORLD_SIZE"), "24");  // 6 workers x 4 slots
  EXPECT_EQ(env_of(pod, "VALLEY_EPOCH"), "2");
  EXPECT_EQ(env_of(pod, "VALLEY_RESUME"), "1");
  EXPECT_EQ(env_of(pod, "VALLEY_WORKER_INDEX"), "3");
  EXPECT_EQ(env_of(pod, "VALLEY_CHECKPOINT_URI"), "s3://bkt/p/");
  const json& res = pod["spec"]["containers"][0]["resources"];
  EXPECT_EQ(res["limits"]["nvidia.com/gpu"], "2");
  EXPECT_EQ(res["requests"]["cpu"], "8");
  // It holds GPUs: its object stays until its cost is recorded.
  EXPECT_EQ(pod["metadata"]["finalizers"], json::array({"valley.dev/accounting"}));
  EXPECT_EQ(pod["spec"]["containers"][0]["image"], "w:1");
}

// A worker says how its planned node prices its GPUs, read back as the cache reads it; the
// template cannot say it (keys under valley.dev/ are Valley's), nor does a worker without GPUs.
TEST(Render, AWorkerCarriesItsPlannedNodesPriceClassAndTheTemplateCannotSetIt) {
  TaskSpec s = spec();
  s.worker.pod_template = json::parse(R"({"metadata":{"annotations":{"valley.dev/priced-as":"nvidia/spot/cheap"}}})");
  WorkerPlacement placement = default_placement(s);
  json unknown = worker_pod(s, 0, {1, 1}, placement);
  EXPECT_FALSE(unknown["metadata"]["annotations"].contains(api::kPricedAsAnnotation)) << unknown["metadata"].dump();
  placement.node = "n1";
  placement.priced_as = {"nvidia", "on-demand", "A100-SXM4-80GB"};
  json pod = worker_pod(s, 0, {1, 1}, placement);
  EXPECT_EQ(pod["metadata"]["annotations"][api::kPricedAsAnnotation], "nvidia/on-demand/A100-SXM4-80GB");
  EXPECT_EQ(api::pod_from(pod).priced_as, placement.priced_as);
  // Sealed in the container, where no edit of the pod reaches (api::kRecordsEnv), after every
  // variable a template set: what the container sees is what Valley reads.
  pod["metadata"]["annotations"][api::kPricedAsAnnotation] = "nvidia/spot/cheap";
  EXPECT_EQ(api::pod_from(pod).priced_as, placement.priced_as);
  EXPECT_EQ(pod["spec"]["containers"][0]["env"].back().value("name", ""), api::kRecordsEnv);
  s.worker.pod_template = json::parse(R"({"spec":{"containers":[{"name":"w","env":[{"name":"VALLEY_RECORDS","value":"{}"}]}]}})");
  json templated = worker_pod(s, 0, {1, 1}, placement);
  int seals = 0;
  for (const auto& e : templated["spec"]["containers"][0]["env"]) seals += e.value("name", "") == api::kRecordsEnv;
  EXPECT_EQ(seals, 1) << templated["spec"]["containers"][0]["env"].dump();
  EXPECT_EQ(api::pod_from(templated).priced_as, placement.priced_as);
  placement.gpu_count = 0;
  EXPECT_FALSE(worker_pod(s, 0, {1, 1}, placement)["metadata"]["annotations"].contains(api::kPricedAsAnnotation));
}

// Restricted pods pass Pod Security "restricted" (every field it checks), keep what the template
// chose itself, and move sshd to a port and a key directory a non-root user can use.
TEST(Render, RestrictedPodsRunNonRootWithoutPrivilegesAndSshOnAHighPort) {
  TaskSpec s = spec();
  s.pod_security.level = api::PodSecurityLevel::Restricted;
  s.pod_security.run_as_user = 1500;
  s.worker.pod_template = json::parse(R"({"spec":{"securityContext":{"seccompProfile":{"type":"Localhost","localhostProfile":"mpi.json"}},
    "initContainers":[{"name":"fetch","image":"busybox"}],
    "containers":[{"name":"x","securityContext":{"readOnlyRootFilesystem":true}},{"name":"sidecar","image":"s:1"}]}})");
  json pod = worker_pod(s, 1, {2, 1}, default_placement(s));
  const json& sc = pod["spec"]["securityContext"];
  EXPECT_EQ(sc["runAsNonRoot"], true);
  EXPECT_EQ(sc["runAsUser"], 1500);
  EXPECT_EQ(sc["runAsGroup"], 1500);
  EXPECT_EQ(sc["fsGroup"], 1500);
  EXPECT_EQ(sc["seccompProfile"]["type"], "Localhost");  // the template's own choice stays
  for (const char* list : {"initContainers", "containers"})
    for (const auto& c : pod["spec"][list]) {
      EXPECT_EQ(c["securityContext"]["allowPrivilegeEscalation"], false) << c.dump();
      EXPECT_EQ(c["securityContext"]["capabilities"]["drop"], json::array({"ALL"})) << c.dump();
    }
  EXPECT_EQ(pod["spec"]["containers"][0]["securityContext"]["readOnlyRootFilesystem"], true);
  EXPECT_EQ(env_of(pod, "VALLEY_SSH_PORT"), "2222");
  EXPECT_EQ(env_of(pod, "VALLEY_SSH_DIR"), "/etc/valley/ssh");
  EXPECT_NE(env_of(pod, "OMPI_MCA_plm_rsh_args").find("-p 2222 -i /etc/valley/ssh/id_ecdsa"), std::string::npos);
  EXPECT_EQ(env_of(pod, "OMPI_MCA_rtc_hwloc_vmhole"), "none");  // orted's shared topology segfaults at random
  bool mounted = false;
  for (const auto& m : pod["spec"]["containers"][0]["volumeMounts"])
    if (m["name"] == "valley-ssh") mounted = m["mountPath"] == "/etc/valley/ssh";
  EXPECT_TRUE(mounted);
  for (const auto& v : pod["spec"]["volumes"])
    if (v["name"] == "valley-ssh") {
      EXPECT_EQ(v["secret"]["defaultMode"], 0440);
    }
  EXPECT_EQ(headless_service(s)["spec"]["ports"][0]["port"], 2222);
  // The launcher too; Baseline (the default) adds no securityContext and keeps root's port 22.
  EXPECT_EQ(launcher_pod(s, {2, 1})["spec"]["securityContext"]["runAsNonRoot"], true);
  json base = worker_pod(spec(), 1, {2, 1}, default_placement(spec()));
  EXPECT_FALSE(base["spec"].contains("securityContext"));
  EXPECT_EQ(env_of(base, "VALLEY_SSH_PORT"), "22");
  EXPECT_EQ(headless_service(spec())["spec"]["ports"][0]["port"], 22);
}

// A Single task has no headless Service or SSH Secret: its pod must not name them (a real kubelet never starts a pod whose Secret volume does not exist; kwok did).
TEST(Render, ASingleTasksPodHasNoMpiVolumesEnvOrSubdomain) {
  auto parsed = api::parse_task(json::parse(R"({"metadata":{"name":"one","namespace":"team-a","uid":"u-2"},
    "spec":{"taskType":"Single","image":"i:1","command":["python","train.py"],"worker":{"gpus":"1"}}})"));
  ASSERT_TRUE(parsed.spec);
  json pod = worker_pod(*parsed.spec, 0, {1, 1}, default_placement(*parsed.spec));
  EXPECT_FALSE(pod["spec"].contains("subdomain"));
  EXPECT_EQ(pod["spec"]["hostname"], "one-worker-0");
  EXPECT_TRUE(pod["spec"]["volumes"].empty()) << pod["spec"]["volumes"].dump();
  EXPECT_TRUE(pod["spec"]["containers"][0]["volumeMounts"].empty());
  EXPECT_EQ(env_of(pod, "OMPI_MCA_orte_default_hostfile"), "<unset>");
  EXPECT_EQ(env_of(pod, "VALLEY_SSH_PORT"), "<unset>");
  EXPECT_EQ(env_of(pod, "VALLEY_WORLD_SIZE"), "1");
  // An MPI worker has them all but the hostfile, which only the launcher reads.
  json mpi = worker_pod(spec(), 0, {2, 1}, default_placement(spec()));
  EXPECT_EQ(mpi["spec"]["subdomain"], "resnet-workers");
  ASSERT_EQ(mpi["spec"]["volumes"].size(), 2u) << "the SSH keys and the outputs (its checkpoint is in S3)";
  EXPECT_EQ(mpi["spec"]["volumes"][1]["name"], "valley-ssh");
  EXPECT_EQ(env_of(mpi, "VALLEY_SSH_PORT"), "22");
  EXPECT_EQ(env_of(mpi, "OMPI_MCA_orte_default_hostfile"), "<unset>");
}

TEST(Render, FirstEpochDoesNotResume) {
  EXPECT_EQ(env_of(worker_pod(spec(), 0, {2, 1}, default_placement(spec())), "VALLEY_RESUME"), "0");
}

TEST(Render, AmdPlacementUsesTheAmdImageAndResource) {
  WorkerPlacement p{"amd", "amd.com/gpu", 2, "mi250-od-0", "", {}};
  json pod = worker_pod(spec(), 0, {2, 1}, p);
  EXPECT_EQ(pod["spec"]["containers"][0]["image"], "w-rocm:1");
  EXPECT_EQ(pod["spec"]["containers"][0]["resources"]["limits"]["amd.com/gpu"], "2");
  const json& term = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0];
  EXPECT_EQ(term["matchFields"][0]["key"], "metadata.name");
  EXPECT_EQ(term["matchFields"][0]["values"][0], "mi250-od-0");
}

TEST(Render, FractionsMapToTheSmallestMigProfileThatHoldsThem) {
  TaskSpec s = spec();
  s.gpus.milli = 100;
  EXPECT_EQ(default_placement(s).gpu_resource, "nvidia.com/mig-1g.10gb");
  s.gpus.milli = 250;
  EXPECT_EQ(default_placement(s).gpu_resource, "nvidia.com/mig-2g.20gb");
  s.gpus.milli = 400;
  EXPECT_EQ(default_placement(s).gpu_resource, "nvidia.com/mig-3g.40gb");
  s.gpus.milli = 500;
  EXPECT_EQ(default_placement(s).gpu_resource, "nvidia.com/mig-4g.40gb");
  s.gpus.milli = 900;
  EXPECT_EQ(default_placement(s).gpu_resource, "nvidia.com/gpu");
}

TEST(Render, LauncherMergesTheUserTemplate) {
  json pod = launcher_pod(spec(), {2, 1});
  EXPECT_EQ(pod["metadata"]["name"], "resnet-launcher");
  EXPECT_EQ(pod["metadata"]["annotations"]["sim"], "1");
  EXPECT_EQ(pod["spec"]["tolerations"][0]["key"], "gpu");
  EXPECT_EQ(pod["spec"]["containers"][0]["command"][0], "mpirun");
  EXPECT_FALSE(pod["spec"]["containers"][0]["resources"].contains("limits"));  // no GPUs for mpirun
  EXPECT_FALSE(pod["metadata"].contains("finalizers"));                         // nothing to charge
  bool ssh = false;
  for (const auto& v : pod["spec"]["volumes"]) ssh |= v["name"] == "valley-ssh" && v["secret"]["defaultMode"] == 0600;
  EXPECT_TRUE(ssh);
}

// A launcher kept off spot nodes: every required term excludes each spot label, the user's own
// terms kept (a node must still match one of them).
TEST(Render, ALauncherKeptOffSpotExcludesEverySpotLabelInEveryTerm) {
  const std::vector<std::pair<std::string, std::string>> spot = {{"karpenter.sh/capacity-type", "spot"}, {"cloud.google.com/gke-spot", "true"}};
  json plain = launcher_pod(spec(), {2, 1}, {spot, {}, {}});
  const json& terms = plain["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
  ASSERT_EQ(terms.size(), 1u);
  ASSERT_EQ(terms[0]["matchExpressions"].size(), 2u);
  EXPECT_EQ(terms[0]["matchExpressions"][0], json::parse(R"({"key":"karpenter.sh/capacity-type","operator":"NotIn","values":["spot"]})"));
  EXPECT_EQ(terms[0]["matchExpressions"][1]["key"], "cloud.google.com/gke-spot");
  // Nothing to keep off: no node affinity added.
  EXPECT_FALSE(launcher_pod(spec(), {2, 1})["spec"]["affinity"].contains("nodeAffinity"));
  // The user's two terms (zone a, or zone b) each get the exclusions.
  TaskSpec s = spec();
  s.launcher.pod_template["spec"]["affinity"] = json::parse(R"({"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":
    {"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]},
                          {"matchExpressions":[{"key":"zone","operator":"In","values":["b"]}]}]}}})");
  json user = launcher_pod(s, {2, 1}, {spot, {}, {}});
  const json& both = user["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
  ASSERT_EQ(both.size(), 2u);
  for (const auto& term : both) {
    ASSERT_EQ(term["matchExpressions"].size(), 3u);
    EXPECT_EQ(term["matchExpressions"][0]["key"], "zone");
    EXPECT_EQ(term["matchExpressions"][1]["operator"], "NotIn");
  }
}

// An operator that plans on some nodes only (--node-selector) keeps the launcher to them: every
// requirement of the selector, in node affinity's words, in each of the template's terms.
TEST(Render, ALauncherStaysOnTheNodesTheOperatorPlansOn) {
  const auto nodes = *kube::parse_label_selector("valley.dev/fleet=a,!dedicated");
  json pod = launcher_pod(spec(), {2, 1}, {{}, {}, nodes});
  const json& terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
  ASSERT_EQ(terms.size(), 1u) << pod["spec"]["affinity"].dump();
  EXPECT_EQ(terms[0]["matchExpressions"], json::parse(R"([{"key":"valley.dev/fleet","operator":"In","values":["a"]},
                                                          {"key":"dedicated","operator":"DoesNotExist"}])"));
  EXPECT_TRUE(pod["spec"]["affinity"].contains("podAffinity")) << "still preferably beside worker 0";
}

// A launcher pool named by the operator is required (In, beside the spot exclusions); without one
// the launcher prefers worker 0's node, its only preference beside the template's own.
TEST(Render, ALauncherRunsInTheLauncherPoolOrElseBesideWorkerZero) {
  json pooled = launcher_pod(spec(), {2, 1}, {{{"karpenter.sh/capacity-type", "spot"}}, {{"node-role/cpu", "true"}}, {}});
  const json& term = pooled["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0];
  ASSERT_EQ(term["matchExpressions"].size(), 2u) << term.dump();
  EXPECT_EQ(term["matchExpressions"][1], json::parse(R"({"key":"node-role/cpu","operator":"In","values":["true"]})"));
  EXPECT_FALSE(pooled["spec"]["affinity"].contains("podAffinity"));
  TaskSpec s = spec();
  s.launcher.pod_template["spec"]["affinity"] = json::parse(R"({"podAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":
    [{"weight":10,"podAffinityTerm":{"topologyKey":"zone","labelSelector":{"matchLabels":{"app":"cache"}}}}]}})");
  json beside = launcher_pod(s, {2, 1});
  const json& preferred = beside["spec"]["affinity"]["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"];
  ASSERT_EQ(preferred.size(), 2u) << preferred.dump();
  EXPECT_EQ(preferred[0]["weight"], 10);  // the template's own, kept
  EXPECT_EQ(preferred[1]["podAffinityTerm"]["topologyKey"], "kubernetes.io/hostname");
  const json& wanted = preferred[1]["podAffinityTerm"]["labelSelector"]["matchLabels"];
  EXPECT_EQ(wanted[label::kTask], s.name);
  EXPECT_EQ(wanted[label::kRole], "worker");
  EXPECT_EQ(wanted[label::kWorkerIndex], "0");
  // Worker 0 carries those labels.
  json worker0 = worker_pod(s, 0, {2, 1}, default_placement(s));
  for (const auto& [k, v] : wanted.items()) EXPECT_EQ(worker0["metadata"]["labels"][k], v) << k;
}

// The launcher carries its hosts in annotations and mounts them at /etc/mpi through the downward
// API (no ConfigMap a task); Horovod's discovery script reads the hostfile, run here as horovodrun
// would run it.
TEST(Render, TheLauncherMountsItsHostsFromItsAnnotations) {
  json pod = launcher_pod(spec(), {3, 1});
  EXPECT_EQ(pod["metadata"]["annotations"][api::kHostfileAnnotation], hostfile(spec(), 3));
  EXPECT_EQ(env_of(pod, "OMPI_MCA_orte_default_hostfile"), "/etc/mpi/hostfile");
  const json* hosts = nullptr;
  for (const auto& v : pod["spec"]["volumes"])
    if (v["name"] == "valley-hosts") hosts = &v;
  ASSERT_NE(hosts, nullptr) << pod["spec"]["volumes"].dump();
  std::map<std::string, json> items;
  for (const auto& item : (*hosts)["downwardAPI"]["items"]) items[item["path"]] = item;
  ASSERT_EQ(items.size(), 2u);
  const std::string hostfile_field = items["hostfile"]["fieldRef"]["fieldPath"];
  EXPECT_EQ(hostfile_field, "metadata.annotations['valley.dev/hostfile']");
  EXPECT_EQ(items["discover_hosts.sh"]["mode"], 0755);
  // Both the launcher and its wait for the workers read the hostfile.
  for (const json* c : {&pod["spec"]["containers"][0], &pod["spec"]["initContainers"].back()}) {
    bool mounted = false;
    for (const auto& m : (*c)["volumeMounts"]) mounted |= m["name"] == "valley-hosts" && m["mountPath"] == "/etc/mpi";
    EXPECT_TRUE(mounted) << (*c)["name"];
  }
  // The discovery script, as the kubelet would write it from the annotation its fieldRef names.
  const std::string field = items["discover_hosts.sh"]["fieldRef"]["fieldPath"];
  const std::string key = field.substr(field.find("['") + 2, field.find("']") - field.find("['") - 2);
  const std::string dir = ::testing::TempDir() + "/discover-hosts";
  std::system(("rm -rf " + dir + " && mkdir -p " + dir).c_str());
  std::ofstream(dir + "/hostfile") << pod["metadata"]["annotations"][api::kHostfileAnnotation].get<std::string>();
  std::ofstream(dir + "/discover_hosts.sh") << pod["metadata"]["annotations"][key].get<std::string>();
  ASSERT_EQ(std::system(("cd " + dir + " && OMPI_MCA_orte_default_hostfile=" + dir + "/hostfile sh discover_hosts.sh > out").c_str()), 0);
  std::stringstream out;
  out << std::ifstream(dir + "/out").rdbuf();
  EXPECT_EQ(out.str(),
            "resnet-worker-0.resnet-workers.team-a.svc:4\n"
            "resnet-worker-1.resnet-workers.team-a.svc:4\n"
            "resnet-worker-2.resnet-workers.team-a.svc:4\n");
}

// The launcher's init container, run as the pod would run it (sh -c, the launcher's environment)
// against a stand-in ssh that answers for a host only from its second try.
TEST(Render, TheLaunchersInitContainerWaitsUntilEveryWorkerAnswersOverSsh) {
  json pod = launcher_pod(spec(), {2, 1});
  ASSERT_TRUE(pod["spec"]["initContainers"].is_array());
  const json& wait = pod["spec"]["initContainers"].back();
  EXPECT_EQ(wait["name"], kWaitForWorkers);
  EXPECT_EQ(wait["image"], pod["spec"]["containers"][0]["image"]);          // the launcher's ssh and keys
  EXPECT_EQ(wait["volumeMounts"], pod["spec"]["containers"][0]["volumeMounts"]);
  EXPECT_FALSE(wait.contains("args"));
  ASSERT_EQ(wait["command"].size(), 3u);
  const std::string script = wait["command"][2];

  const std::string dir = ::testing::TempDir() + "/wait-for-workers";
  std::system(("rm -rf " + dir + " && mkdir -p " + dir + "/bin").c_str());
  std::ofstream(dir + "/hostfile") << hostfile(spec(), 2);
  // ssh records each call's host; a host answers once it has been tried before; "never" never does.
  std::ofstream(dir + "/bin/ssh") << "#!/bin/sh\nhost=$(echo \"$@\" | awk '{print $(NF-1)}')\n"
                                     "echo \"$host\" >> " << dir << "/calls\n"
                                     "case $host in never*) exit 255;; esac\n"
                                     "[ $(grep -c \"^$host$\" " << dir << "/calls) -ge 2 ]\n";
  std::system(("chmod +x " + dir + "/bin/ssh").c_str());
  std::ofstream(dir + "/script.sh") << script;
  auto run = [&](const std::string& env) {
    return std::system(("cd " + dir + " && env PATH=" + dir + "/bin:$PATH OMPI_MCA_orte_default_hostfile=" + dir +
                        "/hostfile OMPI_MCA_plm_rsh_args='-o StrictHostKeyChecking=no' " + env + " sh script.sh > out 2> err")
                           .c_str());
  };
  EXPECT_EQ(run(""), 0);
  auto read = [&](const std::string& name) {
    std::stringstream text;
    text << std::ifstream(dir + "/" + name).rdbuf();
    return text.str();
  };
  EXPECT_EQ(read("calls"),
            "resnet-worker-0.resnet-workers.team-a.svc\nresnet-worker-0.resnet-workers.team-a.svc\n"
            "resnet-worker-1.resnet-workers.team-a.svc\nresnet-worker-1.resnet-workers.team-a.svc\n");

  // A worker that never answers: the wait gives up at its limit, naming the worker.
  std::ofstream(dir + "/hostfile") << "never.resnet-workers.team-a.svc slots=4\n";
  EXPECT_NE(run("VALLEY_WORKERS_WAIT_SECONDS=0"), 0);
  const std::string said = read("err");
  EXPECT_NE(said.find("worker never.resnet-workers.team-a.svc did not answer over ssh within 0s"), std::string::npos) << said;
}

TEST(Render, HostfileHasOneLinePerWorkerWithSlots) {
  std::string h = hostfile(spec(), 3);
  EXPECT_EQ(h,
            "resnet-worker-0.resnet-workers.team-a.svc slots=4\n"
            "resnet-worker-1.resnet-workers.team-a.svc slots=4\n"
            "resnet-worker-2.resnet-workers.team-a.svc slots=4\n");
}

// launcher_too_large counts the annotations without rendering the pod: the count is the rendered
// pod's, the user's template's annotations included.
TEST(Render, TheLaunchersAnnotationBytesAreCountedAsRendered) {
  for (int workers : {1, 3, 40}) {
    json pod = launcher_pod(spec(), {workers, 1});
    size_t bytes = 0;
    for (const auto& [k, v] : pod["metadata"]["annotations"].items()) bytes += k.size() + (v.is_string() ? v.get<std::string>().size() : v.dump().size());
    EXPECT_EQ(launcher_annotation_bytes(spec(), workers), bytes) << workers;
  }
  EXPECT_FALSE(launcher_too_large(spec()).has_value());
  TaskSpec big = spec();
  big.max_workers = 10000;
  ASSERT_TRUE(launcher_too_large(big).has_value());
  EXPECT_NE(launcher_too_large(big)->find(std::to_string(launcher_annotation_bytes(big, 10000)) + " bytes"), std::string::npos);
}

TEST(Render, HeadlessServiceSelectsTheTasksPodsBeforeTheyAreReady) {
  json svc = headless_service(spec());
  EXPECT_EQ(svc["metadata"]["name"], "resnet-workers");
  EXPECT_EQ(svc["spec"]["clusterIP"], "None");
  EXPECT_TRUE(svc["spec"]["publishNotReadyAddresses"].get<bool>());
  EXPECT_EQ(svc["spec"]["selector"]["valley.dev/task"], "resnet");
}

TEST(SshKeys, OpenSshAcceptsThePairAndDerivesTheSamePublicKey) {
  SshKeyPair keys = generate_ssh_key_pair("valley");
  EXPECT_EQ(keys.public_openssh.rfind("ecdsa-sha2-nistp256 AAAA", 0), 0u);
  EXPECT_NE(keys.private_pem.find("BEGIN PRIVATE KEY"), std::string::npos);
  EXPECT_NE(generate_ssh_key_pair().public_openssh, keys.public_openssh);
  if (std::ifstream("/usr/bin/ssh-keygen").good()) {
    std::string path = ::testing::TempDir() + "/valley-key";
    std::ofstream(path) << keys.private_pem;
    std::string cmd = "chmod 600 " + path + " && /usr/bin/ssh-keygen -y -f " + path;
    FILE* p = popen(cmd.c_str(), "r");
    char buf[512] = {0};
    size_t n = fread(buf, 1, sizeof buf - 1, p);
    pclose(p);
    std::string derived(buf, n);
    EXPECT_EQ(derived.substr(0, derived.find_last_not_of(" \n") + 1),
              keys.public_openssh.substr(0, keys.public_openssh.rfind(' ')));
  }
}

TEST(Render, CheckpointStoresReachThePods) {
  auto parse = [](const std::string& checkpoint) {
    return *api::parse_task(json::parse(R"({"metadata":{"name":"t","namespace":"n","uid":"u"},"spec":{"replicas":{"min":1,"max":2},
      "master":{"image":"l"},"worker":{"image":"w"},"checkpoint":)" + checkpoint + "}}")).spec;
  };
  // pvc://: the claim is mounted where the workload expects it, the directory in the environment.
  json pvc = worker_pod(parse(R"({"uri":"pvc://ckpt-claim/runs/t","gracePeriodSeconds":90})"), 0, {2, 1}, default_placement(parse(R"({"uri":"pvc://ckpt-claim/x"})")));
  EXPECT_EQ(env_of(pvc, "VALLEY_CHECKPOINT_DIR"), "/valley/checkpoint/ckpt-claim/runs/t");
  EXPECT_EQ(pvc["spec"]["terminationGracePeriodSeconds"], 90);
  bool mounted = false, volume = false;
  for (const auto& m : pvc["spec"]["containers"][0]["volumeMounts"]) mounted |= m["mountPath"] == "/valley/checkpoint/ckpt-claim";
  for (const auto& v : pvc["spec"]["volumes"])
    volume |= v.contains("persistentVolumeClaim") && v["persistentVolumeClaim"]["claimName"] == "ckpt-claim";
  EXPECT_TRUE(mounted && volume) << pvc.dump(2);
  // s3:// with a Secret: its keys as the pods' environment; the default window is 60 s.
  json s3 = launcher_pod(parse(R"({"uri":"s3://bucket/t","secretRef":{"name":"creds"}})"), {2, 1});
  EXPECT_EQ(s3["spec"]["containers"][0]["envFrom"][0]["secretRef"]["name"], "creds");
  EXPECT_EQ(s3["spec"]["terminationGracePeriodSeconds"], 60);
  EXPECT_EQ(env_of(s3, "VALLEY_CHECKPOINT_DIR"), "<unset>");
  // A bad URI is an InvalidSpec with its reason, not a pod.
  auto bad = api::parse_task(json::parse(R"({"metadata":{"name":"t","namespace":"n"},"spec":{"replicas":{"min":1,"max":1},
      "master":{"image":"l"},"worker":{"image":"w"},"checkpoint":{"uri":"s3://x/y"}}})"));
  ASSERT_FALSE(bad.spec);
  EXPECT_NE(bad.errors[0].find("bucket name"), std::string::npos) << bad.errors[0];
}

const json* container_named(const json& list, const std::string& name) {
  for (const auto& c : list)
    if (c["name"] == name) return &c;
  return nullptr;
}

TEST(Render, DataComesInBeforeTheWorkloadAndOutputsGoOutWhenThePodStops) {
  auto parse = [](const std::string& extra) {
    auto p = api::parse_task(json::parse(R"({"metadata":{"name":"t","namespace":"n","uid":"u"},"spec":{"replicas":{"min":1,"max":2},
      "master":{"image":"l"},"worker":{"image":"w"},"checkpoint":{"uri":"s3://ckpts/runs/t/","secretRef":{"name":"creds"}})" + extra + "}}"));
    EXPECT_TRUE(p.errors.empty()) << p.errors[0];
    return *p.spec;
  };
  TaskSpec s = parse(R"(,"data":{"uri":"s3://datasets/imagenet-mini","mountPath":"/data"})");
  s.io_image = "valley-operator:test";
  ASSERT_TRUE(s.data && s.outputs);
  EXPECT_EQ(s.data->secret, "creds") << "the checkpoint's Secret by default";
  EXPECT_EQ(s.outputs->uri, "s3://ckpts/runs/t/outputs") << "outputs beside the checkpoints by default";
  json w = worker_pod(s, 0, {2, 1}, default_placement(s));
  const json& inits = w["spec"]["initContainers"];
  const json* data = container_named(inits, "valley-data");
  const json* keep = container_named(inits, "valley-outputs");
  ASSERT_TRUE(data && keep) << w["spec"].dump(2);
  EXPECT_EQ(data->at("image"), "valley-operator:test");
  EXPECT_EQ(data->at("args"), json::array({"fetch", "--uri", "s3://datasets/imagenet-mini", "--dir", "/data"}));
  EXPECT_EQ(data->at("envFrom")[0]["secretRef"]["name"], "creds");
  EXPECT_FALSE(data->contains("restartPolicy")) << "a plain init container: the workload starts after it";
  EXPECT_EQ(keep->at("restartPolicy"), "Always") << "a sidecar: stopped after the workload";
  EXPECT_EQ(keep->at("args"), json::array({"keep", "--uri", "s3://ckpts/runs/t/outputs", "--dir", "/valley/output"}));
  EXPECT_EQ(env_of(w, "VALLEY_DATA_DIR"), "/data");
  EXPECT_EQ(env_of(w, "VALLEY_OUTPUT_DIR"), "/valley/output");
  bool data_ro = false;
  for (const auto& m : w["spec"]["containers"][0]["volumeMounts"]) data_ro |= m["mountPath"] == "/data" && m.contains("readOnly") && m["readOnly"] == true;
  EXPECT_TRUE(data_ro) << w["spec"]["containers"][0].dump(2);
  // The launcher keeps outputs too but fetches no data (the workers train on it).
  json l = launcher_pod(s, {2, 1});
  EXPECT_FALSE(container_named(l["spec"]["initContainers"], "valley-data"));
  EXPECT_TRUE(container_named(l["spec"]["initContainers"], "valley-outputs"));
  // The sidecar counts towards the pod's room as the scheduler counts it: beside the workload.
  auto room = planner::room_requests(api::pod_from(w));
  EXPECT_EQ(room[api::kCpu], 50) << "the sidecar's 50m (the workload requests none)";
  // Restricted: the transfer containers are hardened like the rest.
  TaskSpec r = parse(R"(,"data":{"uri":"s3://datasets/x"},"podSecurity":{"level":"Restricted"})");
  json rw = worker_pod(r, 0, {2, 1}, default_placement(r));
  const json* hardened = container_named(rw["spec"]["initContainers"], "valley-data");
  ASSERT_TRUE(hardened);
  EXPECT_EQ(hardened->at("securityContext").at("allowPrivilegeEscalation"), false);
  // Without an s3:// checkpoint or spec.outputs: no outputs; a data URI must be s3://.
  auto plain = api::parse_task(json::parse(R"({"metadata":{"name":"t","namespace":"n"},"spec":{"replicas":{"min":1,"max":1},
      "master":{"image":"l"},"worker":{"image":"w"},"checkpoint":{"uri":"pvc://claim/x"}}})"));
  ASSERT_TRUE(plain.spec);
  EXPECT_FALSE(plain.spec->outputs);
  EXPECT_FALSE(worker_pod(*plain.spec, 0, {1, 1}, default_placement(*plain.spec))["spec"].contains("initContainers"));
  auto bad = api::parse_task(json::parse(R"({"metadata":{"name":"t","namespace":"n"},"spec":{"replicas":{"min":1,"max":1},
      "master":{"image":"l"},"worker":{"image":"w"},"data":{"uri":"pvc://claim/x","mountPath":"rel"}}})"));
  ASSERT_EQ(bad.errors.size(), 2u);
  EXPECT_EQ(bad.errors[0], "spec.data.uri: must start with s3://");
  EXPECT_NE(bad.errors[1].find("spec.data.mountPath"), std::string::npos);
}

TEST(Render, AWorkerPinnedToANodeKeepsItsDataInThatNodesClaimWhenTheOperatorHasACacheClass) {
  auto p = api::parse_task(json::parse(R"({"metadata":{"name":"t","namespace":"n","uid":"u"},"spec":{"replicas":{"min":1,"max":2},
      "master":{"image":"l"},"worker":{"image":"w"},"data":{"uri":"s3://datasets/x","mountPath":"/data"}}})"));
  ASSERT_TRUE(p.spec && p.spec->data);
  TaskSpec s = *p.spec;
  WorkerPlacement on_node = default_placement(s);
  on_node.node = "gpu-7";
  auto data_volume = [](const json& pod) -> json {
    for (const auto& v : pod["spec"]["volumes"])
      if (v["name"] == "valley-data") return v;
    return nullptr;
  };
  // No class, or the set's size not known yet (not listed), or no node: an emptyDir per pod.
  EXPECT_TRUE(data_volume(worker_pod(s, 0, {1, 1}, on_node)).contains("emptyDir"));
  s.data->cache_class = "local-nvme";
  EXPECT_TRUE(data_volume(worker_pod(s, 0, {1, 1}, on_node)).contains("emptyDir")) << "size unknown";
  s.data->cache_bytes = 5ull << 30;
  EXPECT_TRUE(data_volume(worker_pod(s, 0, {1, 1}, default_placement(s))).contains("emptyDir")) << "not pinned";
  EXPECT_FALSE(uses_data_cache(s, ""));
  ASSERT_TRUE(uses_data_cache(s, "gpu-7"));
  const json w = worker_pod(s, 1, {2, 1}, on_node);
  EXPECT_EQ(data_volume(w), json({{"name", "valley-data"}, {"persistentVolumeClaim", {{"claimName", "t-data-gpu-7"}}}})) << w["spec"].dump(2);
  const json* fetch = container_named(w["spec"]["initContainers"], "valley-data");
  ASSERT_TRUE(fetch);
  EXPECT_EQ(fetch->at("volumeMounts")[0]["name"], "valley-data") << "the init container fills the claim";
  EXPECT_EQ(fetch->at("securityContext")["runAsUser"], 0) << "a provisioner's directory is root's: Baseline copies as root";
  EXPECT_FALSE(w["spec"]["securityContext"].contains("fsGroup"));
  // Restricted: the pod's fsGroup makes the claim the pod's, once; the copy runs as the pod's user.
  TaskSpec r = s;
  r.pod_security.level = api::PodSecurityLevel::Restricted;
  const json rw = worker_pod(r, 0, {1, 1}, on_node);
  EXPECT_EQ(rw["spec"]["securityContext"]["fsGroupChangePolicy"], "OnRootMismatch");
  const json* restricted_fetch = container_named(rw["spec"]["initContainers"], "valley-data");
  ASSERT_TRUE(restricted_fetch);
  EXPECT_FALSE(restricted_fetch->at("securityContext").contains("runAsUser")) << restricted_fetch->dump(2);
  // The claim: owned by the task, labelled for its cleanup, of the class, the set and a tenth more in GiB.
  const json c = data_cache_claim(s, "gpu-7");
  EXPECT_EQ(c["kind"], "PersistentVolumeClaim");
  EXPECT_EQ(c["metadata"]["name"], "t-data-gpu-7");
  EXPECT_EQ(c["metadata"]["namespace"], "n");
  EXPECT_EQ(c["metadata"]["ownerReferences"][0]["uid"], "u");
  EXPECT_EQ(c["metadata"]["labels"]["valley.dev/task"], "t");
  EXPECT_EQ(c["metadata"]["labels"]["valley.dev/role"], "data-cache");
  EXPECT_EQ(c["metadata"]["annotations"]["valley.dev/node"], "gpu-7");
  EXPECT_EQ(c["spec"]["storageClassName"], "local-nvme");
  EXPECT_EQ(c["spec"]["accessModes"], json::array({"ReadWriteOnce"}));
  EXPECT_EQ(c["spec"]["resources"]["requests"]["storage"], "6Gi") << "5 GiB and a tenth, rounded up";
  s.data->cache_bytes = 1000;
  EXPECT_EQ(data_cache_claim(s, "gpu-7")["spec"]["resources"]["requests"]["storage"], "1Gi") << "at least 1 GiB";
  // A node whose name would make too long a claim name: a stable hash of it instead.
  const std::string long_node(250, 'n');
  const std::string hashed = data_cache_claim_name(s, long_node);
  EXPECT_LE(hashed.size(), 253u);
  EXPECT_EQ(hashed.rfind("t-data-", 0), 0u);
  EXPECT_EQ(hashed, data_cache_claim_name(s, long_node));
  EXPECT_NE(hashed, data_cache_claim_name(s, std::string(251, 'n')));
}

}  // namespace
}  // namespace valley::render
