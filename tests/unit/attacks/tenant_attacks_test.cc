// What a tenant who may create TrainingTasks in their own namespace tries against Valley (issue 70),
// each refused or made harmless in the pure code: text that is not UTF-8 or too long never stops a
// serialisation, a name never leaves its path segment, a template never carries Valley's own records
// or the fields that leave isolation, and billing counts a shared GPU by the node's split.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <random>
#include <regex>
#include <set>
#include <stdexcept>

#include "controllers/api/conditions.h"
#include "controllers/api/pod.h"
#include "controllers/api/spec.h"
#include "controllers/api/template_guard.h"
#include "controllers/api/vendors.h"
#include "controllers/cost/engine.h"
#include "controllers/gpu/resources.h"
#include "controllers/inputs/snapshot.h"
#include "controllers/render/render.h"
#include "operator/json_text.h"
#include "operator/kube/events.h"
#include "operator/kube/request_pool.h"
#include "operator/kube/resource.h"
#include "operator/text.h"

namespace valley {
namespace {

using json = nlohmann::json;

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

json task_object(const json& spec_patch) {
  json t = json::parse(R"({"metadata":{"name":"job","namespace":"team-a","uid":"u1","generation":1},
    "spec":{"replicas":{"min":1,"max":2},"master":{"image":"l"},"worker":{"image":"w","gpus":"1"}}})");
  if (spec_patch.is_object()) t["spec"].merge_patch(spec_patch);
  return t;
}

std::string errors_of(const api::ParsedTask& p) {
  std::string all;
  for (const auto& e : p.errors) all += e + "\n";
  return all;
}

TEST(Utf8Repair, MalformedBytesBecomeTheReplacementCharacterAndValidTextIsKept) {
  EXPECT_TRUE(utf8_valid("ab\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"));
  for (const char* bad : {"\xC3", "\xC0\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xFF", "a\x80z"}) {
    EXPECT_FALSE(utf8_valid(bad)) << bad;
    const std::string repaired = utf8_repaired(bad);
    EXPECT_TRUE(utf8_valid(repaired)) << bad;
    EXPECT_NE(repaired.find("\xEF\xBF\xBD"), std::string::npos) << bad;
  }
  EXPECT_EQ(utf8_repaired("a\x80z"), "a\xEF\xBF\xBDz");
  const std::string long_text = repeat("\xC3\xA9", 600);  // 1,200 bytes of é
  const std::string cut = bounded_text(long_text, 1024);
  EXPECT_LE(cut.size(), 1024u);
  EXPECT_TRUE(utf8_valid(cut));
  EXPECT_EQ(cut.substr(cut.size() - 3), "...");
}

TEST(JsonText, NeverThrowsOnAStringThatIsNotUtf8) {
  const json j = {{"note", std::string("s3://bkt/\xC3")}, {std::string("k\xFF"), 1}};
  EXPECT_THROW((void)j.dump(), json::type_error) << "what json_text exists for";
  EXPECT_NO_THROW((void)json_text(j));
  EXPECT_TRUE(utf8_valid(json_text(j, 2)));
}

// The reported crash: a checkpoint URI of 600 é in a note cut at byte 1021 split a character, and
// the Event could not be serialised on the recorder's thread.
TEST(TenantAttacks, AnEventNoteOfAnyBytesIsBoundedAndSerialises) {
  kube::EventAggregator agg({});
  const json regarding = {{"apiVersion", "valley.dev/v1beta1"}, {"kind", "TrainingTask"},
                          {"metadata", {{"name", "t"}, {"namespace", "team-a"}, {"uid", "u1"}}}};
  const auto now = kube::SystemTime(std::chrono::seconds(1795316645));
  std::mt19937 rng(70);
  const std::string uri = "checkpoint s3://bkt/" + repeat("\xC3\xA9", 600) + ": unreadable";
  ASSERT_TRUE(agg.observe(regarding, "Warning", "CheckpointUnreadable", "Read", uri, now));
  for (int i = 0; i < 200; ++i) {
    std::string note(static_cast<size_t>(rng() % 3000), '\0');
    for (auto& c : note) c = static_cast<char>(rng() % 256);
    agg.observe(regarding, "Warning", "Fuzzed" + std::to_string(i % 20), "Read", note, now + std::chrono::seconds(i));
  }
  const auto due = agg.take_due(now + std::chrono::hours(1));
  ASSERT_FALSE(due.empty());
  for (const auto& w : due) {
    const std::string note = w.event.value("note", "");
    EXPECT_LE(note.size(), 1024u);
    EXPECT_TRUE(utf8_valid(note));
    EXPECT_NO_THROW((void)w.event.dump()) << "the Event as the API client sends it";
  }
}

TEST(TenantAttacks, AConditionOrPhaseMessageOfAnyBytesSerialises) {
  json status = json::object();
  api::set_condition(status, "PodsStarted", false, "ImagePullFailed", "image " + repeat("\xC3", 50000), "2026-12-04T00:00:00Z", 1);
  EXPECT_NO_THROW((void)status.dump());
  EXPECT_LE(status["conditions"][0]["message"].get<std::string>().size(), 32768u);
}

TEST(TenantAttacks, ANameCannotLeaveItsPathSegment) {
  const auto& secrets = kube::resources::kSecrets;
  EXPECT_EQ(secrets.item("team-a", "creds"), "/api/v1/namespaces/team-a/secrets/creds");
  for (const std::string name : {"../../team-b/secrets/creds", "..", ".", "a/b", "a%2Fb", "a?x=1", "a#b", "", "a b", "\xC3\xA9"})
    EXPECT_THROW((void)secrets.item("team-a", name), kube::KubeError) << name;
  EXPECT_THROW((void)secrets.collection("team-a/../team-b"), kube::KubeError);
  try {
    (void)secrets.item("team-a", "../x");
  } catch (const kube::KubeError& e) {
    EXPECT_EQ(e.http_status(), 400);
  }
}

TEST(TenantAttacks, ASecretRefThatIsNotASecretsNameIsRefused) {
  for (const char* where : {"checkpoint", "data", "outputs"}) {
    json patch = {{"checkpoint", {{"uri", "s3://bkt/x"}, {"secretRef", {{"name", "creds"}}}}}};
    if (std::string(where) != "checkpoint") patch[where] = {{"uri", "s3://bkt/y"}, {"secretRef", {{"name", "../../team-b/secrets/creds"}}}};
    else patch["checkpoint"]["secretRef"]["name"] = "../../team-b/secrets/creds";
    const auto parsed = api::parse_task(task_object(patch));
    EXPECT_NE(errors_of(parsed).find(std::string("spec.") + where + ".secretRef.name: must name a Secret"), std::string::npos)
        << where << ": " << errors_of(parsed);
  }
  const auto fine = api::parse_task(task_object({{"checkpoint", {{"uri", "s3://bkt/x"}, {"secretRef", {{"name", "team.creds-1"}}}}}}));
  EXPECT_TRUE(fine.errors.empty()) << errors_of(fine);
}

TEST(TenantAttacks, ATemplateCarryingValleysRecordsOrLeavingIsolationIsRefusedFieldByField) {
  const json tmpl = json::parse(R"({
    "metadata": {"annotations": {"valley.dev/time-sliced-replicas": "999", "team": "ok"}, "labels": {"valley.dev/task": "other"}},
    "spec": {"hostNetwork": true, "hostPID": true, "nodeName": "n1", "schedulerName": "mine", "priorityClassName": "system-node-critical",
             "serviceAccountName": "admin", "tolerations": [{"operator": "Exists"}, {"key": "gpu", "operator": "Exists"}],
             "volumes": [{"name": "root", "hostPath": {"path": "/"}}, {"name": "scratch", "emptyDir": {}}],
             "containers": [{"name": "worker", "securityContext": {"privileged": true, "capabilities": {"add": ["SYS_ADMIN", "CHOWN"]}},
                             "ports": [{"containerPort": 22, "hostPort": 2222}]}]}})");
  const auto refusals = api::template_escapes(tmpl, "spec.worker.template");
  std::string all;
  for (const auto& r : refusals) all += r + "\n";
  for (const char* field : {"metadata.annotations.valley.dev/time-sliced-replicas", "metadata.labels.valley.dev/task", "spec.hostNetwork",
                            "spec.hostPID", "spec.nodeName", "spec.schedulerName", "spec.priorityClassName", "spec.serviceAccountName",
                            "spec.tolerations", "spec.volumes.root.hostPath", "securityContext.privileged", "capabilities.add: SYS_ADMIN",
                            "ports.hostPort"})
    EXPECT_NE(all.find(field), std::string::npos) << field << " not refused:\n" << all;
  EXPECT_EQ(all.find("CHOWN"), std::string::npos) << "Baseline allows CHOWN";
  EXPECT_EQ(all.find("scratch"), std::string::npos);
  EXPECT_EQ(all.find("annotations.team"), std::string::npos);
  EXPECT_EQ(std::count(all.begin(), all.end(), '\n'), 13);

  const auto parsed = api::parse_task(task_object({{"worker", {{"template", tmpl}}}}));
  EXPECT_NE(errors_of(parsed).find("spec.worker.template.spec.nodeName"), std::string::npos) << errors_of(parsed);
  const json plain = json::parse(R"({"metadata": {"labels": {"team": "a"}}, "spec": {"tolerations": [{"key": "spot", "operator": "Exists"}],
    "serviceAccountName": "default", "containers": [{"name": "worker", "securityContext": {"runAsUser": 1000}}]}})");
  EXPECT_TRUE(api::template_escapes(plain, "spec.worker.template").empty());
}

// GPUs asked for beside spec.worker.gpus (a launcher's limits, a sidecar's, an init container's, a
// pod-level request, a DRA claim of the template's own) would run outside the plan and the bill:
// each is refused, naming it; other extended resources (an RDMA NIC) are the template's to ask for.
TEST(TenantAttacks, GpusAskedForOutsideSpecWorkerGpusAreRefusedFieldByField) {
  const json tmpl = json::parse(R"({"spec": {
    "resourceClaims": [{"name": "g", "resourceClaimName": "theirs"}],
    "resources": {"limits": {"gpu.intel.com/xe": "1"}},
    "initContainers": [{"name": "warm", "resources": {"requests": {"amd.com/gpu": "2"}}}],
    "containers": [{"name": "main", "resources": {"limits": {"rdma/hca": "1", "cpu": "2"}, "claims": [{"name": "g"}]}},
                   {"name": "side", "resources": {"limits": {"nvidia.com/gpu": "7"}}},
                   {"name": "slice", "resources": {"limits": {"nvidia.com/mig-1g.10gb": "1"}}}]}})");
  std::string all;
  for (const auto& r : api::template_escapes(tmpl, "spec.worker.template")) all += r + "\n";
  for (const char* field : {"spec.resourceClaims", "spec.resources.limits.gpu.intel.com/xe", "initContainers[warm].resources.requests.amd.com/gpu",
                            "containers[main].resources.claims", "containers[side].resources.limits.nvidia.com/gpu",
                            "containers[slice].resources.limits.nvidia.com/mig-1g.10gb"})
    EXPECT_NE(all.find(field), std::string::npos) << field << " not refused:\n" << all;
  EXPECT_EQ(all.find("rdma"), std::string::npos) << all;
  EXPECT_EQ(std::count(all.begin(), all.end(), '\n'), 6) << all;

  const auto parsed = api::parse_task(task_object({{"master", {{"resources", {{"limits", {{"nvidia.com/gpu", "4"}}}}}}},
                                                   {"worker", {{"resources", {{"requests", {{"nvidia.com/gpu.shared", "1"}, {"memory", "1Gi"}}}}}}}}));
  EXPECT_NE(errors_of(parsed).find("spec.master.resources.limits.nvidia.com/gpu"), std::string::npos) << errors_of(parsed);
  EXPECT_NE(errors_of(parsed).find("spec.worker.resources.requests.nvidia.com/gpu.shared"), std::string::npos) << errors_of(parsed);
  const auto fine = api::parse_task(task_object({{"worker", {{"resources", {{"limits", {{"cpu", "4"}, {"rdma/hca", "1"}}}, {"claims", json::array()}}}}}}));
  EXPECT_TRUE(fine.errors.empty()) << errors_of(fine);

  // Every GPU resource Valley places is one the guard keeps to Valley.
  std::vector<std::string> placed = {gpu::kTimeSliced, gpu::kIntelXe};
  for (const char* vendor : api::kVendors) placed.push_back(gpu::whole_resource(vendor));
  for (const auto& p : gpu::kMigProfiles) placed.push_back(p.resource);
  for (const auto& r : placed) EXPECT_TRUE(api::is_gpu_device_resource(r)) << r;
}

// CUDA images set NVIDIA_VISIBLE_DEVICES=all, and the NVIDIA runtime hands a container the GPUs it
// names: a launcher, a sidecar or a CPU-only worker on a GPU node would use GPUs no plan or bill
// holds. Every container but the one holding the plan's GPUs says "void"; a template may not set it.
TEST(TenantAttacks, OnlyTheContainerHoldingThePlansGpusMaySeeTheNodesGpus) {
  const json tmpl = json::parse(R"({"spec": {"containers": [{"name": "worker"}, {"name": "side", "image": "cuda"}],
                                            "initContainers": [{"name": "warm", "image": "cuda"}]}})");
  api::ParsedTask parsed = api::parse_task(task_object({{"worker", {{"template", tmpl}}}}));
  ASSERT_TRUE(parsed.spec) << errors_of(parsed);
  auto visible = [](const json& c) -> std::string {
    for (const auto& e : c.value("env", json::array()))
      if (e.value("name", "") == api::kNvidiaVisibleDevices) return e.value("value", "?");
    return "(unset)";
  };
  const json gpu_worker = render::worker_pod(*parsed.spec, 0, {1, 1}, {"nvidia", "nvidia.com/gpu", 1, "n1", "", {}});
  EXPECT_EQ(visible(gpu_worker["spec"]["containers"][0]), "(unset)") << "the device plugin names its GPUs";
  EXPECT_EQ(visible(gpu_worker["spec"]["containers"][1]), "void");
  EXPECT_EQ(visible(gpu_worker["spec"]["initContainers"][0]), "void");
  const json cpu_worker = render::worker_pod(*parsed.spec, 0, {1, 1}, {"", "", 0, "n1", "", {}});
  EXPECT_EQ(visible(cpu_worker["spec"]["containers"][0]), "void");
  const json launcher = render::launcher_pod(*parsed.spec, {1, 1}, {});
  for (const char* list : {"containers", "initContainers"})
    for (const auto& c : launcher["spec"][list]) EXPECT_EQ(visible(c), "void") << list << " " << c.value("name", "");

  json asked = tmpl;
  asked["spec"]["containers"][1]["env"] = {{{"name", api::kNvidiaVisibleDevices}, {"value", "all"}}};
  std::string all;
  for (const auto& r : api::template_escapes(asked, "spec.worker.template")) all += r + "\n";
  EXPECT_NE(all.find("containers[side].env.NVIDIA_VISIBLE_DEVICES"), std::string::npos) << all;
}

// Attack 3 as reported: the worker template's annotation said the GPU was split 999 ways, and the
// task accrued nothing. The pod never carries the template's valley.dev/ keys, and billing counts a
// GPU by the node's split whatever the pod's own metadata says.
TEST(TenantAttacks, AWorkerIsBilledByItsNodesSplitNeverByAnnotationsItsUserWrote) {
  json spec_patch = {{"worker", {{"template", {{"metadata", {{"annotations", {{api::kTimeSlicedReplicasAnnotation, "999"}}}}}}}}}};
  auto parsed = api::parse_task(task_object(spec_patch));
  ASSERT_FALSE(parsed.errors.empty()) << "refused as a spec";
  api::ParsedTask lenient = api::parse_task(task_object({}));
  ASSERT_TRUE(lenient.spec);
  lenient.spec->worker.pod_template = spec_patch["worker"]["template"];  // as if it had been let through
  json pod = render::worker_pod(*lenient.spec, 0, {1, 1}, {"nvidia", "nvidia.com/gpu", 1, "n1", "", {}});
  EXPECT_FALSE(pod["metadata"]["annotations"].contains(api::kTimeSlicedReplicasAnnotation)) << pod["metadata"].dump();

  // Written on the pod afterwards (a tenant who may edit pods): the node, a whole-GPU node, decides.
  pod["metadata"]["annotations"][api::kTimeSlicedReplicasAnnotation] = "999";
  pod["spec"]["nodeName"] = "n1";
  const api::Pod read = api::pod_from(pod);
  const json whole = {{"metadata", {{"name", "n1"}, {"labels", {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"}}}}},
                      {"status", {{"allocatable", {{"nvidia.com/gpu", "8"}}}, {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
  EXPECT_EQ(planner::share_on_node(read, planner::node_from(whole, {})), 1000);
  json split = whole;
  split["metadata"]["labels"][gpu::kSharingStrategyLabel] = "time-slicing";
  split["metadata"]["labels"][gpu::kReplicasLabel] = "2";
  EXPECT_EQ(planner::share_on_node(read, planner::node_from(split, {})), 500);
}

// A spec padded toward etcd's object limit would leave no room for the status that charges and stops
// it: refused while its status still fits.
TEST(TenantAttacks, ATaskPaddedTowardTheObjectLimitIsRefused) {
  json padded = task_object({{"worker", {{"template", {{"metadata", {{"annotations", {{"pad", std::string(api::kMaxTaskBytes, 'x')}}}}}}}}}});
  EXPECT_NE(errors_of(api::parse_task(padded)).find("at most 262144"), std::string::npos);
  json annotated = task_object({});
  annotated["metadata"]["annotations"] = {{"pad", std::string(api::kMaxTaskBytes, 'x')}};
  EXPECT_NE(errors_of(api::parse_task(annotated)).find("spec, labels and annotations"), std::string::npos);
  json fine = task_object({{"worker", {{"template", {{"metadata", {{"annotations", {{"pad", std::string(100 * 1024, 'x')}}}}}}}}}});
  EXPECT_TRUE(api::parse_task(fine).errors.empty()) << errors_of(api::parse_task(fine));
}

TEST(RequestPool, AJobThatThrowsIsPassedToTheCallerAndThePoolGoesOn) {
  kube::RequestPool pool(2);
  std::atomic<int> ran{0};
  EXPECT_THROW(pool.run_all(4, [&](size_t i) {
    ++ran;
    if (i == 2) throw std::runtime_error("bad answer");
  }), std::runtime_error);
  EXPECT_EQ(ran.load(), 4);
  ran = 0;
  pool.run_all(3, [&](size_t) { ++ran; });
  EXPECT_EQ(ran.load(), 3);
}

// The GPU resource prefixes are written three times: in C++ (the operator's own check), in the
// CRD's CEL rules (refused at `kubectl apply`) and in the template guard policy. Each copy names
// exactly the same prefixes, so none lets through a GPU the others refuse.
TEST(TenantAttacks, EveryCopyOfTheGpuResourcePrefixesNamesTheSamePrefixes) {
  const std::set<std::string> prefixes(std::begin(api::kGpuDeviceResourcePrefixes), std::end(api::kGpuDeviceResourcePrefixes));
  auto lines_of = [](const std::string& relative) {
    std::ifstream in(std::string(VALLEY_SOURCE_DIR) + "/" + relative);
    EXPECT_TRUE(in.good()) << relative;
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  };
  auto quoted_in = [](const std::string& line, const std::regex& pattern) {
    std::set<std::string> found;
    for (std::sregex_iterator it(line.begin(), line.end(), pattern), end; it != end; ++it) found.insert((*it)[1]);
    return found;
  };
  // The CRD: every rule that refuses a GPU resource names them all (and nothing else).
  const std::regex starts_with(R"(startsWith\('([^']+)'\))");
  int rules = 0;
  for (const auto& line : lines_of("crds/valley.dev_trainingtasks.yaml")) {
    auto named = quoted_in(line, starts_with);
    if (std::none_of(prefixes.begin(), prefixes.end(), [&](const std::string& p) { return named.count(p); })) continue;
    ++rules;
    EXPECT_EQ(named, prefixes) << line;
  }
  EXPECT_EQ(rules, 4) << "the limits and requests rules (one schema for master and worker), with their messages";
  // The policy: its gpuPrefixes variable.
  const auto policy = lines_of("deploy/policies/template-guard.yaml");
  const auto at = std::find_if(policy.begin(), policy.end(), [](const std::string& l) { return l.find("name: gpuPrefixes") != std::string::npos; });
  ASSERT_NE(at, policy.end());
  ASSERT_NE(at + 1, policy.end());
  EXPECT_EQ(quoted_in(*(at + 1), std::regex(R"('([^']+)')")), prefixes) << *(at + 1);
}

}  // namespace
}  // namespace valley
