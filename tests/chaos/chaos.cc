// valley-chaos: the chaos campaign on the local cluster (make chaos; a short seeded run in make test).
// Two operator replicas under leader election talk to the API server through a proxy; a stream of
// TrainingTasks of every kind is created, scaled, suspended and deleted while faults are injected
// at random moments from a seeded generator: kill -9 of the leader, API-server and etcd restarts,
// spot notices and node deletions, network delay and drops, steps of the leader's wall clock. With
// --previous-operator the replicas, started on this build, are downgraded to the previous release's
// a third of the way in and upgraded back at two thirds, each by a rolling replacement during
// which a task is resized and a spot node noticed and lost. The independent checker
// (tests/chaos/checker.h) watches only the API server. Prints and writes what happened:
// faults, tasks, violations, recovery after each leader kill.
//   valley-chaos [--seed=N] [--seconds=S] [--out=bench/results/chaos.json] [--calm: no faults]
//                [--previous-operator=BINARY]
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "operator/kube/timefmt.h"
#include "tests/chaos/campaign.h"

namespace valley::chaos {

json Campaign::annotations_for(const std::string& run_time, const std::string& exit_code) {
  json a = {{"sim.valley.dev/run-time", run_time}};
  if (exit_code != "0") a["sim.valley.dev/exit-code"] = exit_code;
  return a;
}

void Campaign::prepare() {
  // A namespace of its own, a PricingPolicy of its own (no electricity, multiplier 1: the checker
  // prices GPU time alone), an S3 store for the checkpointing tasks.
  admin_->remove(kube::resources::kNamespaces, "", kNs);
  if (!e2e::eventually([&] {
        try {
          admin_->get(kube::resources::kNamespaces, "", kNs);
          return false;
        } catch (const kube::KubeError&) {
          return true;
        }
      }, 180s))
    throw std::runtime_error("namespace " + kNs + " from an earlier run is not going away");
  e2e::create_namespace_for_operators(*admin_, kNs);
  admin_->remove(kPricingPolicies, "", kNs);
  admin_->create(kPricingPolicies, "", json::parse(R"({"apiVersion":"valley.dev/v1beta1","kind":"PricingPolicy",
    "metadata":{"name":")" + kNs + R"("},
    "spec":{"currency":"USD",
      "gpu":[{"match":{"vendor":"nvidia"},"onDemand":"3.60","spot":"1.80"},{"match":{"vendor":"amd"},"onDemand":"2.00","spot":"1.00"}],
      "electricity":{"flatPerKWh":"0"},
      "priority":{"multipliers":[{"minPriority":0,"multiplier":"1"}]}}})"));
  s3_ = std::make_unique<testing::VersityGw>();
  json secret = {{"metadata", {{"name", "chaos-s3"}}}, {"stringData", s3_->env()}};
  admin_->create(kSecrets, kNs, secret);
  // The probe: a suspended task whose spec the driver changes at each leader kill.
  admin_->create(kTrainingTasks, kNs,
                 {{"apiVersion", "valley.dev/v1beta1"},
                  {"kind", "TrainingTask"},
                  {"metadata", {{"name", "probe"}, {"annotations", {{kExpect, "Suspended"}}}}},
                  {"spec", json::parse(R"({"taskType":"Single","image":"valley.dev/probe:1","runPolicy":{"suspend":true}})")}});
}

std::string Campaign::proxied_kubeconfig() {
  const auto admin = e2e::admin_config();
  std::string host = admin.server.substr(admin.server.find("://") + 3);
  const int port = std::stoi(host.substr(host.rfind(':') + 1));
  host = host.substr(0, host.rfind(':'));
  proxy_ = std::make_unique<Proxy>(host, port);
  std::ifstream in(e2e::operator_kubeconfig_path());
  std::stringstream text;
  text << in.rdbuf();
  std::string config = text.str();
  const std::string proxied = "https://127.0.0.1:" + std::to_string(proxy_->port());
  for (size_t at; (at = config.find(admin.server)) != std::string::npos;) config.replace(at, admin.server.size(), proxied);
  const std::string path = o_.logs + "/operator-via-proxy.kubeconfig";
  std::ofstream(path) << config;
  return path;
}

void Campaign::create_task() {
  // A backlog the cluster can work off: no new task while 12 are still under way.
  try {
    int going = 0;
    for (const auto& t : admin_->list(kTrainingTasks, kNs).items) {
      const std::string phase = t.value("status", json::object()).value("phase", "");
      if (phase != "Succeeded" && phase != "Failed" && phase != "Suspended") ++going;
    }
    if (going >= 12) return;
  } catch (const kube::KubeError&) {
    return;
  }
  const std::string name = "t" + std::to_string(++task_serial_);
  json spec, annotations = {{kExpect, "Succeeded"}};
  const std::string run = std::to_string(15 + pick(25)) + "s";
  const json mpi = json::parse(R"({"taskType":"MPI","master":{"image":"valley.dev/examples/launcher:1"},
    "worker":{"image":"valley.dev/examples/worker:1","gpus":"1"},"runPolicy":{"backoffLimit":2}})");
  std::string kind;
  switch (pick(8)) {
    case 0:
    case 1:
      kind = "mpi-elastic";
      spec = mpi;
      spec["replicas"] = {{"min", 1 + pick(2)}, {"max", 3 + pick(3)}};
      spec["master"]["template"] = {{"metadata", {{"annotations", annotations_for(run)}}}};
      break;
    case 2:
      kind = "mpi-failing";
      spec = mpi;
      spec["replicas"] = {{"min", 1}, {"max", 2}};
      spec["runPolicy"]["backoffLimit"] = 1;
      spec["master"]["template"] = {{"metadata", {{"annotations", annotations_for("5s", "3")}}}};
      annotations[kExpect] = "Failed";
      break;
    case 3:
      kind = "spot-checkpointing";
      spec = mpi;
      spec["replicas"] = {{"min", 2}, {"max", 4}};
      spec["worker"]["gpus"] = "4";
      spec["checkpoint"] = {{"uri", std::string("s3://") + testing::VersityGw::kBucket + "/" + kNs + "/" + name},
                            {"secretRef", {{"name", "chaos-s3"}}},
                            {"gracePeriodSeconds", 5}};
      spec["master"]["template"] = {{"metadata", {{"annotations", annotations_for(run)}}}};
      break;
    case 4:
      kind = "single";
      spec = {{"taskType", "Single"}, {"image", "valley.dev/examples/notebook:1"},
              {"worker", {{"gpus", "1"}, {"template", {{"metadata", {{"annotations", annotations_for(run)}}}}}}}};
      break;
    case 5:
      kind = "fractional";
      spec = {{"taskType", "Single"}, {"image", "valley.dev/examples/notebook:1"},
              {"worker", {{"gpus", "0.5"}, {"template", {{"metadata", {{"annotations", annotations_for(run)}}}}}}}};
      break;
    case 6:
      kind = "reduce-cost";
      spec = mpi;
      spec["replicas"] = {{"min", 1}, {"max", 2}};
      spec["amdSupport"] = true;
      spec["reduceCost"] = true;
      spec["estimatedDuration"] = "1m";
      spec["deadline"] = "2m";  // little slack: it takes what is free rather than wait the whole run
      spec["master"]["template"] = {{"metadata", {{"annotations", annotations_for(run)}}}};
      break;
    default:
      kind = "over-budget";
      spec = mpi;
      spec["replicas"] = {{"min", 2}, {"max", 2}};
      spec["maxCost"] = "0.02";  // 2 GPUs at 3.60/h spend it in 10 s
      spec["master"]["template"] = {{"metadata", {{"annotations", annotations_for("10m")}}}};
      annotations[kExpect] = "Suspended";
      break;
  }
  spec["priority"] = pick(60);
  try {
    admin_->create(kTrainingTasks, kNs,
                   {{"apiVersion", "valley.dev/v1beta1"},
                    {"kind", "TrainingTask"},
                    {"metadata", {{"name", name}, {"labels", {{"chaos.valley.dev/kind", kind}}}, {"annotations", annotations}}},
                    {"spec", spec}});
    ++tasks_created_;
    ++by_kind_[kind];
  } catch (const kube::KubeError& e) {
    log("create " + name + " failed: " + e.what());
  }
}

// Scale, suspend or delete a task that is still going; the expectation is written first, so a
// deletion that fails half-way is still checked.
void Campaign::act_on_a_task() {
  std::vector<json> going;
  try {
    for (auto& t : admin_->list(kTrainingTasks, kNs).items) {
      const std::string phase = t.value("status", json::object()).value("phase", "");
      if (t["metadata"]["name"] != "probe" && (phase == "Running" || phase == "Pending")) going.push_back(t);
    }
  } catch (const kube::KubeError&) {
    return;
  }
  if (going.empty()) return;
  const json& t = going[static_cast<size_t>(pick(static_cast<int>(going.size())))];
  const std::string name = t["metadata"]["name"];
  const json spec = t["spec"];
  try {
    switch (pick(4)) {
      case 0:
      case 1: {
        if (spec.value("taskType", "MPI") != "MPI") return;
        const int lo = spec["replicas"].value("min", 1), hi = spec["replicas"].value("max", 1);
        admin_->patch(kTrainingTasks, kNs, name, kube::PatchType::Merge, {{"spec", {{"replicas", {{"target", lo + pick(hi - lo + 1)}}}}}});
        ++actions_["scaled"];
        break;
      }
      case 2:
        admin_->patch(kTrainingTasks, kNs, name, kube::PatchType::Merge,
                      {{"metadata", {{"annotations", {{kExpect, "Suspended"}}}}}, {"spec", {{"runPolicy", {{"suspend", true}}}}}});
        ++actions_["suspended"];
        break;
      default:
        admin_->patch(kTrainingTasks, kNs, name, kube::PatchType::Merge, {{"metadata", {{"annotations", {{kExpect, "Deleted"}}}}}});
        admin_->remove(kTrainingTasks, kNs, name);
        ++actions_["deleted"];
        break;
    }
  } catch (const kube::KubeError& e) {
    log("acting on " + name + " failed: " + e.what());
  }
}

Snapshot Campaign::snapshot() {
  Snapshot s;
  try {
    s.t = wall_now();
    s.tasks = admin_->list(kTrainingTasks, kNs).items;
    s.pods = admin_->list(kPods, kNs).items;
    s.nodes = admin_->list(kNodes, "").items;
    kube::ListOptions valley_objects;
    valley_objects.label_selector = "valley.dev/task";
    for (const auto* r : {&kServices, &kSecrets, &kConfigMaps})
      for (auto& o : admin_->list(*r, kNs, valley_objects).items) s.owned.push_back(std::move(o));
    kube::ListOptions records;
    records.label_selector = "valley.dev/cost-record=true";
    s.cost_records = admin_->list(kConfigMaps, kNs, records).items;
  } catch (const kube::KubeError&) {
    return {};  // the API server is away (a fault): t = 0, no look this time
  }
  return s;
}

void Campaign::look(bool final) {
  const Snapshot s = snapshot();
  if (s.t == 0) return;
  std::lock_guard lock(checker_mu_);
  if (final) checker_.finish(s);
  else checker_.observe(s);
}

bool Campaign::settled() {
  try {
    for (const auto& t : admin_->list(kTrainingTasks, kNs).items) {
      const std::string expect = t["metadata"].value("annotations", json::object()).value(kExpect, "");
      const std::string phase = t.value("status", json::object()).value("phase", "");
      if (expect == "Deleted" || phase != expect) return false;
    }
    kube::ListOptions lo;
    lo.label_selector = "valley.dev/task";
    for (const auto& p : admin_->list(kPods, kNs, lo).items) {
      const std::string phase = p.value("status", json::object()).value("phase", "");
      if (phase != "Succeeded" && phase != "Failed") return false;
    }
    return true;
  } catch (const kube::KubeError&) {
    return false;
  }
}

static double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(std::ceil(p * double(v.size())) - 1))];
}

int Campaign::run() {
  log("seed " + std::to_string(o_.seed) + ", " + std::to_string(o_.seconds) + " s of faults");
  prepare();
  kubeconfig_ = proxied_kubeconfig();
  ReplicaSet set;
  set.ns = kNs;
  set.kubeconfig = kubeconfig_;
  set.logs = o_.logs;
  set.flags = {"--pricing-policy=" + kNs, "--planner-min-resize-interval=2s", "--unschedulable-timeout=3s", "--checkpoint-poll-interval=5s"};
  set.previous_binary = o_.previous_operator;
  set.faketime_library = o_.calm ? "" : find_faketime_library();
  if (!o_.calm && set.faketime_library.empty())
    throw std::runtime_error("libfaketime is not installed (make deps installs it): the clock faults need it");
  replicas_ = std::make_unique<Replicas>(set, [this](const std::string& m) { log(m); });
  const bool upgrades = !o_.previous_operator.empty() && !o_.calm;
  // This build runs first and last, so cost records are due from the start and through the settling,
  // where most tasks end (the previous release, in the middle third, keeps none).
  checker_.records_kept_from(wall_now(), 0);
  replicas_->start(false);

  kube::InformerOptions io;
  io.ns = kNs;
  task_watch_ = std::make_unique<kube::Informer>(*admin_, kTrainingTasks, io);
  task_watch_->add_handlers({nullptr,
                             [this](const kube::ObjectPtr& before, const kube::ObjectPtr& after) {
                               std::lock_guard lock(checker_mu_);
                               checker_.task_update(wall_now(), *before, *after);
                             },
                             nullptr});
  task_watch_->start();

  // Mean time between faults of each kind, scaled so a 20-minute run has >= 100 leader kills and
  // >= 10 API-server restarts.
  auto next = [&](double mean) { return Clock::now() + std::chrono::milliseconds(int64_t(1000 * mean * uniform(0.5, 1.5))); };
  auto t_task = next(3), t_act = next(12), t_kill = next(8), t_api = next(90), t_node = next(60), t_delay = next(45),
       t_drop = next(70), t_look = Clock::now(), t_etcd = start_ + std::chrono::seconds(o_.seconds / 2), t_nodes_back = next(40);
  auto t_clock = next(20);
  // The rollouts: downgrade a third of the way in, upgrade back at two thirds.
  std::vector<std::pair<Clock::time_point, bool>> rollouts;
  if (upgrades)
    rollouts = {{start_ + std::chrono::seconds(o_.seconds / 3), true}, {start_ + std::chrono::seconds(2 * o_.seconds / 3), false}};
  bool etcd_done = false;
  const auto end = start_ + std::chrono::seconds(o_.seconds);
  while (Clock::now() < end) {
    const auto now = Clock::now();
    replicas_->tend();
    follow_recovery();
    if (now >= t_look) { look(false); t_look = now + 1s; }
    if (now >= t_task) { create_task(); t_task = next(3); }
    if (now >= t_act) { act_on_a_task(); t_act = next(12); }
    if (o_.calm) {
      std::this_thread::sleep_for(100ms);
      continue;
    }
    if (now >= t_kill) { kill_leader(); t_kill = next(8); }
    if (now >= t_api) { restart("apiserver"); t_api = next(90); }
    if (!etcd_done && now >= t_etcd) { restart("etcd"); etcd_done = true; }
    if (now >= t_node) { disrupt_node(); t_node = next(60); }
    if (now >= t_nodes_back && !removed_nodes_.empty()) {
      if (e2e::cluster_sh({"nodes", std::string(VALLEY_SOURCE_DIR) + "/tests/cluster/profiles/default.yaml"}, 120s) == 0) {
        log("nodes back: " + std::to_string(removed_nodes_.size()));
        removed_nodes_.clear();
      }
      t_nodes_back = next(40);
    }
    if (now >= t_delay) {
      const auto d = std::chrono::milliseconds(200 + pick(600));
      proxy_->set_delay(d);
      log("network delay " + std::to_string(d.count()) + " ms");
      ++faults_["networkDelays"];
      std::thread([p = proxy_.get()] { std::this_thread::sleep_for(8s); p->set_delay(0ms); }).detach();
      t_delay = next(45);
    }
    if (now >= t_clock) t_clock = step_clock() ? next(20) : now + 1s;
    if (!rollouts.empty() && now >= rollouts.front().first) {
      rollout(rollouts.front().second);
      rollouts.erase(rollouts.begin());
    }
    if (now >= t_drop) {
      const auto d = std::chrono::milliseconds(2000 + pick(6000));
      proxy_->drop_for(d);
      log("network drop " + std::to_string(d.count()) + " ms");
      ++faults_["networkDrops"];
      t_drop = next(70);
    }
    std::this_thread::sleep_for(100ms);
  }

  // Calm: faults stop, nodes come back, both replicas run; every task must reach what its creator
  // expected, and everything the deleted ones owned must be collected.
  log("faults stop; waiting for every task to settle");
  proxy_->set_delay(0ms);
  if (!removed_nodes_.empty()) e2e::cluster_sh({"nodes", std::string(VALLEY_SOURCE_DIR) + "/tests/cluster/profiles/default.yaml"}, 120s);
  const auto settle_deadline = Clock::now() + 600s;
  while (Clock::now() < settle_deadline && !settled()) {
    replicas_->tend();
    follow_recovery();
    look(false);
    std::this_thread::sleep_for(1s);
  }
  std::this_thread::sleep_for(5s);  // the garbage collector's turn
  look(true);
  const double settle_seconds = since(end);
  task_watch_->stop();
  replicas_->stop();
  faults_["operatorExitedOnItsOwn"] = replicas_->exited_on_their_own();

  std::vector<double> leaderless, recovered;
  int not_recovered = 0;
  for (const auto& k : kills_) {
    if (k.leaderless) leaderless.push_back(*k.leaderless);
    if (k.recovered) recovered.push_back(*k.recovered);
    else ++not_recovered;
  }
  json violations = json::array();
  for (const auto& v : checker_.violations())
    violations.push_back({{"atSecond", std::llround(v.t - (wall_now() - since(start_)))}, {"rule", v.rule}, {"object", v.object}, {"detail", v.detail}});
  json faults = faults_;
  json report = {{"seed", o_.seed},
                 {"faultSeconds", o_.seconds},
                 {"settleSeconds", std::llround(settle_seconds)},
                 {"faults", faults},
                 {"tasks", {{"created", tasks_created_}, {"byKind", by_kind_}, {"actions", actions_}}},
                 {"recovery",
                  {{"leaderKills", kills_.size()},
                   {"notRecoveredWithin120s", not_recovered},
                   {"leaderlessSeconds", {{"p50", percentile(leaderless, 0.5)}, {"p95", percentile(leaderless, 0.95)}, {"max", percentile(leaderless, 1)}}},
                   {"recoverySeconds", {{"p50", percentile(recovered, 0.5)}, {"p95", percentile(recovered, 0.95)}, {"max", percentile(recovered, 1)}}}}},
                 {"rollouts", rollouts_},
                 {"checker", checker_.summary()},
                 {"violations", violations}};
  std::filesystem::create_directories(std::filesystem::path(o_.out).parent_path());
  std::ofstream(o_.out) << report.dump(2) << "\n";
  std::cout << report.dump(2) << "\n";
  // Leave nothing behind but the logs.
  admin_->remove(kube::resources::kNamespaces, "", kNs);
  admin_->remove(kPricingPolicies, "", kNs);
  std::printf("chaos: %zu violations (report %s, operator logs in %s)\n", checker_.violations().size(), o_.out.c_str(), o_.logs.c_str());
  return checker_.violations().empty() && not_recovered == 0 ? 0 : 1;
}

}  // namespace valley::chaos

int main(int argc, char** argv) {
  valley::chaos::Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* flag) { return a.substr(std::string(flag).size()); };
    if (a.rfind("--seed=", 0) == 0) o.seed = std::stoull(value("--seed="));
    else if (a.rfind("--seconds=", 0) == 0) o.seconds = std::stoi(value("--seconds="));
    else if (a.rfind("--out=", 0) == 0) o.out = value("--out=");
    else if (a == "--calm") o.calm = true;
    else if (a.rfind("--previous-operator=", 0) == 0 && a.size() > std::string("--previous-operator=").size())
      o.previous_operator = value("--previous-operator=");
    else {
      std::cerr << "usage: valley-chaos [--seed=N] [--seconds=S] [--out=FILE] [--calm] [--previous-operator=BINARY]\n";
      return 2;
    }
  }
  o.logs = std::filesystem::temp_directory_path() / ("valley-chaos-" + std::to_string(o.seed));
  std::filesystem::create_directories(o.logs);
  signal(SIGPIPE, SIG_IGN);
  try {
    return valley::chaos::Campaign(o).run();
  } catch (const std::exception& e) {
    std::cerr << "chaos: " << e.what() << "\n";
    return 2;
  }
}
