// The chaos campaign's faults: leader kills, API-server and etcd restarts, spot notices and node
// losses, steps of the leader's wall clock, and rollouts (upgrade, downgrade) of the operator.
#include <filesystem>
#include <thread>

#include "tests/chaos/campaign.h"

namespace valley::chaos {

std::string Campaign::leader() {
  try {
    return admin_->get(kLeases, kNs, "valley-operator").value("spec", json::object()).value("holderIdentity", "");
  } catch (const kube::KubeError&) {
    return "";
  }
}

void Campaign::kill_leader() {
  const std::string holder = leader();
  if (holder.empty() || !replicas_->kill(holder, std::chrono::milliseconds(500 + pick(2500)))) return;
  Kill k;
  k.at = Clock::now();
  k.old_leader = holder;
  try {  // a change for the new leader to reconcile
    probe_priority_ = 1 - probe_priority_;
    json probe = admin_->patch(kTrainingTasks, kNs, "probe", kube::PatchType::Merge, {{"spec", {{"priority", probe_priority_}}}});
    k.probe_generation = probe["metadata"].value("generation", int64_t{0});
  } catch (const kube::KubeError&) {
  }
  kills_.push_back(k);
  ++faults_["leaderKills"];
  log("kill -9 leader " + holder);
}

// The leader's wall clock jumps: ahead by 1-10 minutes (a VM resumed, a late NTP sync), then back
// to 1-3 minutes behind the real time (an NTP correction), and so on. Never further back than the
// cluster's certificates are old: a host clock before a certificate's start fails every TLS
// handshake, which is a fault of another kind.
bool Campaign::step_clock() {
  const std::string holder = leader();
  if (holder.empty()) return false;
  std::chrono::seconds offset;
  if (clock_steps_ % 2 == 0) {
    offset = std::chrono::seconds(60 + pick(541));
  } else {
    std::optional<std::chrono::seconds> age;  // of the newest certificate
    std::error_code ec;
    for (const auto& f : std::filesystem::directory_iterator(std::filesystem::path(VALLEY_SOURCE_DIR) / ".valley" / "pki", ec))
      if (f.path().extension() == ".crt") {
        const auto a = std::chrono::duration_cast<std::chrono::seconds>(std::filesystem::file_time_type::clock::now() - f.last_write_time(ec));
        age = age ? std::min(*age, a) : a;
      }
    if (!age) age = std::chrono::seconds(90);
    offset = -std::min(std::chrono::seconds(60 + pick(121)), std::max(std::chrono::seconds(0), *age - std::chrono::seconds(30)));
  }
  // Refused while the Lease still names a killed leader, or the leader runs the previous release.
  if (!replicas_->step_clock(holder, offset)) return false;
  ++clock_steps_;
  ++faults_[offset.count() >= 0 ? "clockStepsAhead" : "clockStepsBack"];
  log("wall clock of leader " + holder + " stepped to " + std::to_string(offset.count()) + " s from the real time");
  return true;
}

// A spot node's termination notice: the taint its handler puts.
void Campaign::notice(const json& n) {
  const std::string name = n["metadata"]["name"];
  json taints = n["spec"].value("taints", json::array());
  taints.push_back({{"key", "aws-node-termination-handler/spot-itn"}, {"value", "true"}, {"effect", "NoSchedule"}});
  admin_->patch(kNodes, "", name, kube::PatchType::Merge, {{"spec", {{"taints", taints}}}});
  ++faults_["spotNotices"];
  log("spot notice on " + name);
}

void Campaign::delete_node(const std::string& name) {
  try {
    admin_->remove(kNodes, "", name);
    ++faults_["nodeDeletions"];
    removed_nodes_.push_back(name);
    log("deleted node " + name);
  } catch (const kube::KubeError& e) {
    log("deleting " + name + " failed: " + e.what());
  }
}

// A node goes away: a spot node gets its termination notice first, then is deleted; it comes back
// (as a new node of the same name) a while later, as an autoscaler would replace it.
void Campaign::disrupt_node() {
  std::vector<json> nodes;
  try {
    kube::ListOptions lo;
    lo.label_selector = "type=kwok";
    nodes = admin_->list(kNodes, "", lo).items;
  } catch (const kube::KubeError&) {
    return;
  }
  if (nodes.size() <= 3) return;
  const json& n = nodes[static_cast<size_t>(pick(static_cast<int>(nodes.size())))];
  const std::string name = n["metadata"]["name"];
  const bool spot = n["metadata"].value("labels", json::object()).value("karpenter.sh/capacity-type", "") == "spot";
  try {
    if (spot) {
      notice(n);
      std::this_thread::sleep_for(std::chrono::seconds(5 + pick(10)));
    }
  } catch (const kube::KubeError& e) {
    log("noticing " + name + " failed: " + e.what());
  }
  delete_node(name);
}

// An upgrade (or downgrade): both replicas replaced one after the other while a task is resized and
// a spot node holding work gets its notice and is lost; the checker's window rule then holds the
// tasks to no restart the rollout could have caused.
void Campaign::rollout(bool previous_build) {
  const std::string what = previous_build ? "downgrade" : "upgrade";
  log(what + " to " + replicas_->build_name(previous_build) + " begins");
  const auto began = Clock::now();
  auto settled_snapshot = [&] {  // the API server may be restarting (a fault)
    Snapshot s = snapshot();
    for (int i = 0; s.t == 0 && i < 60; ++i, s = snapshot()) std::this_thread::sleep_for(1s);
    return s;
  };
  {
    const Snapshot s = settled_snapshot();
    std::lock_guard lock(checker_mu_);
    checker_.window_begin(s);
    // The previous release keeps no cost records: a task that ended shortly before may be left to it.
    if (previous_build) checker_.records_kept_until(s.t, 90);
  }
  act_on_a_task();
  std::set<std::string> disrupted;
  std::optional<json> noticed;
  try {  // the spot node with the most Valley pods
    kube::ListOptions lo;
    lo.label_selector = "type=kwok,karpenter.sh/capacity-type=spot";
    std::map<std::string, int> load;
    for (const auto& p : admin_->list(kPods, kNs).items) ++load[p.value("spec", json::object()).value("nodeName", "")];
    for (const auto& n : admin_->list(kNodes, "", lo).items)
      if (!noticed || load[n["metadata"]["name"]] > load[(*noticed)["metadata"]["name"]]) noticed = n;
    if (noticed) {
      notice(*noticed);
      disrupted.insert((*noticed)["metadata"]["name"].get<std::string>());
    }
  } catch (const kube::KubeError& e) {
    log(what + ": no spot notice (" + e.what() + ")");
  }
  replicas_->roll(previous_build, 4s, [&] {
    follow_recovery();
    look(false);
  });
  if (noticed) delete_node((*noticed)["metadata"]["name"]);
  // The new build's turn to act on what happened meanwhile.
  for (auto until = Clock::now() + 20s; Clock::now() < until;) {
    replicas_->tend();
    look(false);
    std::this_thread::sleep_for(1s);
  }
  const Snapshot s = settled_snapshot();
  {
    std::lock_guard lock(checker_mu_);
    checker_.window_end(s, what, disrupted);
    // A task whose end the previous release wrote may be seen a little late (a watch re-listed).
    if (!previous_build) checker_.records_kept_from(s.t, 30);
  }
  ++faults_[previous_build ? "downgrades" : "upgrades"];
  rollouts_.push_back({{"kind", what}, {"atSecond", std::llround(since(start_) - since(began))}, {"seconds", std::llround(since(began))},
                       {"spotNode", noticed ? (*noticed)["metadata"]["name"] : json(nullptr)}});
  log(what + " done in " + std::to_string(std::llround(since(began))) + " s");
}

void Campaign::follow_recovery() {
  for (auto& k : kills_) {
    if (k.leaderless && k.recovered) continue;
    if (since(k.at) > 120) continue;  // reported as not recovered
    try {
      if (!k.leaderless) {
        json lease = admin_->get(kLeases, kNs, "valley-operator");
        const std::string holder = lease.value("spec", json::object()).value("holderIdentity", "");
        if (!holder.empty() && holder != k.old_leader) k.leaderless = since(k.at);
      }
      if (!k.recovered && k.probe_generation > 0) {
        json probe = admin_->get(kTrainingTasks, kNs, "probe");
        if (probe.value("status", json::object()).value("observedGeneration", int64_t{0}) >= k.probe_generation) k.recovered = since(k.at);
      }
    } catch (const kube::KubeError&) {
    }
  }
}

void Campaign::restart(const std::string& component) {
  log("restart " + component);
  ++faults_[component == "apiserver" ? "apiserverRestarts" : "etcdRestarts"];
  if (e2e::cluster_sh({"restart", component}, 180s) != 0) log("cluster.sh restart " + component + " failed");
}

}  // namespace valley::chaos
