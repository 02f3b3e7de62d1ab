#include "tests/chaos/checker.h"

#include <algorithm>
#include <cmath>

#include "operator/kube/json_fields.h"

namespace valley::chaos {
namespace {

using kube::array_at;
using kube::int_at;
using kube::object_at;
using kube::string_at;

constexpr int64_t kCent = 10'000;  // micro-units

double seconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}
std::optional<double> time_field(const json& o, const char* key) {
  if (auto t = kube::time_at(o, key)) return seconds(*t);
  return std::nullopt;
}

std::string uid_of(const json& o) { return string_at(object_at(o, "metadata"), "uid"); }
std::string name_of(const json& o) {
  const json& meta = object_at(o, "metadata");
  return string_at(meta, "namespace") + "/" + string_at(meta, "name");
}
std::string label(const json& o, const char* key) { return string_at(object_at(object_at(o, "metadata"), "labels"), key); }
// The uid of the object's controller (ownerReferences[controller=true]), "" if none.
std::string controller_uid(const json& o) {
  for (const auto& ref : array_at(object_at(o, "metadata"), "ownerReferences"))
    if (ref.is_object() && ref.value("controller", false) == true) return string_at(ref, "uid");
  return "";
}
bool terminal(const json& pod) {
  const std::string phase = string_at(object_at(pod, "status"), "phase");
  return phase == "Succeeded" || phase == "Failed";
}
int64_t micros_of(const json& task, const char* key) {
  return int_at(object_at(object_at(task, "status"), "cost"), key).value_or(-1);
}

// Thousandths of a GPU a pod asks for; -1 for a resource this checker does not price. Whole GPUs
// count 1000, a MIG slice <n>g its n sevenths.
int64_t gpu_share(const json& pod) {
  int64_t share = 0;
  for (const auto& c : array_at(object_at(pod, "spec"), "containers")) {
    const json& res = object_at(c, "resources");
    const json& req = object_at(res, "requests").empty() ? object_at(res, "limits") : object_at(res, "requests");
    for (const auto& [name, value] : req.items()) {
      if (name.find("gpu") == std::string::npos && name.find("mig-") == std::string::npos) continue;
      int64_t n = value.is_number_integer() ? value.get<int64_t>() : value.is_string() ? std::atoll(value.get<std::string>().c_str()) : 0;
      if (name == "nvidia.com/gpu" || name == "amd.com/gpu") {
        share += n * 1000;
      } else if (name.rfind("nvidia.com/mig-", 0) == 0) {
        share += n * std::atoi(name.c_str() + 15) * 1000 / 7;
      } else {
        return -1;
      }
    }
  }
  return share;
}

}  // namespace

void Checker::violation(double t, const std::string& rule, const std::string& object, const std::string& detail) {
  if (!reported_.insert(rule + " " + object).second) return;
  violations_.push_back({t, rule, object, detail});
}

std::optional<int64_t> Checker::price_of(const std::string& node) const {
  auto n = node_class_.find(node);
  if (n == node_class_.end()) return std::nullopt;
  auto p = prices_.per_gpu_hour.find(n->second);
  if (p == prices_.per_gpu_hour.end()) return std::nullopt;
  return p->second;
}

void Checker::follow_pods(const Snapshot& s) {
  for (const auto& node : s.nodes) {
    const json& status = object_at(node, "status");
    std::string vendor = object_at(status, "allocatable").contains("amd.com/gpu") ? "amd" : "nvidia";
    std::string klass = label(node, "karpenter.sh/capacity-type") == "spot" ? "spot" : "on-demand";
    node_class_[string_at(object_at(node, "metadata"), "name")] = {vendor, klass};
  }
  std::set<std::string> present;
  for (const auto& pod : s.pods) {
    const std::string uid = uid_of(pod);
    present.insert(uid);
    PodRecord& r = pods_[uid];
    r.task_uid = controller_uid(pod);
    r.name = name_of(pod);
    if (std::string node = string_at(object_at(pod, "spec"), "nodeName"); !node.empty()) r.node = node;
    r.share_milli = gpu_share(pod);
    const json& status = object_at(pod, "status");
    if (r.terminal_seen) {
      if (!terminal(pod)) r.resurrected = true;
      for (const auto& cs : array_at(status, "containerStatuses"))
        if (auto finished = time_field(object_at(object_at(cs, "state"), "terminated"), "finishedAt"); finished && r.end && *finished > *r.end)
          r.end_rewritten = true;
      continue;  // its end is the one first seen
    }
    for (const auto& cs : array_at(status, "containerStatuses")) {
      const json& state = object_at(cs, "state");
      auto started = time_field(object_at(state, "running"), "startedAt");
      if (!started) started = time_field(object_at(state, "terminated"), "startedAt");
      if (started) r.starts_seen.insert(std::llround(*started * 1000));
      if (started && (!r.start || *started < *r.start)) r.start = started;
      if (auto finished = time_field(object_at(state, "terminated"), "finishedAt")) r.end = finished;
    }
    if (auto since = time_field(status, "startTime")) r.starts_seen.insert(std::llround(*since * 1000));
    if (auto deadline = time_field(object_at(pod, "metadata"), "deletionTimestamp"); deadline && !r.deletion_asked)
      r.deletion_asked = *deadline - double(int_at(object_at(pod, "metadata"), "deletionGracePeriodSeconds").value_or(0));
    if (!r.start && (r.end || string_at(status, "phase") == "Running")) r.start = time_field(status, "startTime");
    if (terminal(pod)) {
      r.terminal_seen = true;
      if (!r.end) r.end = r.last_seen_alive.value_or(s.t);  // ended without saying when: since the last look
    } else {
      r.last_seen_alive = s.t;
    }
  }
  for (auto& [uid, r] : pods_)
    if (!present.count(uid) && !r.first_seen_gone) r.first_seen_gone = s.t;
}

void Checker::check_pods(const Snapshot& s) {
  std::map<std::string, std::vector<std::string>> live;         // task/role/index -> pods
  std::map<std::string, std::set<std::string>> running_epochs;  // task -> epochs
  for (const auto& pod : s.pods) {
    const std::string task = controller_uid(pod);
    if (task.empty()) continue;  // the orphan rule reports it
    const std::string role = label(pod, "valley.dev/role");
    if (!terminal(pod)) {
      const std::string index = role == "worker" ? label(pod, "valley.dev/worker-index") : "-";
      live[task + "/" + role + "/" + index].push_back(name_of(pod));
    }
    if (string_at(object_at(pod, "status"), "phase") == "Running") running_epochs[task].insert(label(pod, "valley.dev/epoch"));
  }
  for (const auto& [key, names] : live)
    if (names.size() > 1) {
      std::string list;
      for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
      violation(s.t, "duplicate-pod", key, "live at once: " + list);
    }
  for (const auto& [task, epochs] : running_epochs)
    if (epochs.size() > 1) {
      std::string list;
      for (const auto& e : epochs) list += (list.empty() ? "" : ", ") + e;
      violation(s.t, "two-epochs", task, "pods of epochs " + list + " Running at once");
    }
}

void Checker::check_orphans(const Snapshot& s, bool final) {
  std::set<std::string> tasks;
  for (const auto& t : s.tasks) tasks.insert(uid_of(t));
  std::set<std::string> seen;
  auto check = [&](const json& o) {
    const std::string uid = uid_of(o), owner = controller_uid(o);
    seen.insert(uid);
    if (owner.empty()) {
      violation(s.t, "orphan", name_of(o), "no controller owner reference");
      return;
    }
    if (tasks.count(owner)) {
      orphan_since_.erase(uid);
      return;
    }
    double since = orphan_since_.emplace(uid, s.t).first->second;
    longest_orphan_ = std::max(longest_orphan_, s.t - since);
    if (final || s.t - since > orphan_grace_)
      violation(s.t, "orphan", name_of(o), "its owner " + owner + " is gone (for " + std::to_string(int(s.t - since)) + "s)");
  };
  for (const auto& p : s.pods) check(p);
  for (const auto& o : s.owned) check(o);
  for (auto it = orphan_since_.begin(); it != orphan_since_.end();) it = seen.count(it->first) ? std::next(it) : orphan_since_.erase(it);
}

void Checker::observe(const Snapshot& s) {
  ++looks_;
  if (window_open_)
    for (const auto& p : s.pods)
      if (const std::string node = p.value("spec", json::object()).value("nodeName", ""); !node.empty())
        window_seen_[node].insert(controller_uid(p));
  follow_ends(s);
  follow_pods(s);
  check_pods(s);
  check_orphans(s, false);
}

void Checker::task_update(double t, const json& before, const json& after) {
  for (const auto& e : array_at(object_at(object_at(after, "status"), "cost"), "ledger")) {
    int64_t& until = charged_until_ms_[string_at(e, "uid")];
    until = std::max(until, int_at(e, "untilMs").value_or(0));
  }
  if (uid_of(before) != uid_of(after)) return;
  const std::string name = name_of(after);
  const int64_t was = micros_of(before, "accruedMicros"), now = micros_of(after, "accruedMicros");
  if (was >= 0 && now >= 0 && now < was)
    violation(t, "accrued-decreased", name, "status.cost.accruedMicros went from " + std::to_string(was) + " to " + std::to_string(now));
  auto gen_before = int_at(object_at(before, "status"), "observedGeneration");
  auto gen_after = int_at(object_at(after, "status"), "observedGeneration");
  if (gen_before && gen_after && *gen_after < *gen_before)
    violation(t, "generation-backwards", name,
              "status.observedGeneration went from " + std::to_string(*gen_before) + " to " + std::to_string(*gen_after));
}

void Checker::check_final(const Snapshot& s) {
  for (const auto& task : s.tasks) {
    const std::string expect = string_at(object_at(object_at(task, "metadata"), "annotations"), "chaos.valley.dev/expect");
    const std::string phase = string_at(object_at(task, "status"), "phase");
    if (!expect.empty() && phase != expect)
      violation(s.t, "final-phase", name_of(task), "expected " + expect + ", is " + (phase.empty() ? "without a phase" : phase) +
                                                       " (" + string_at(object_at(task, "status"), "message") + ")");
    if (phase != "Succeeded" && phase != "Failed") continue;
    const int64_t final_micros = micros_of(task, "finalMicros");
    if (final_micros < 0) {
      violation(s.t, "final-cost", name_of(task), "finished without status.cost.final");
      continue;
    }
    // Its pods' intervals, each as short and as long as the looks allow.
    double low = 0, high = 0;
    bool priceable = true;
    const std::string uid = uid_of(task);
    std::string intervals;  // for the report: each pod's share, node and seconds
    bool gpu_pod_seen = false;
    for (const auto& [pod_uid, r] : pods_) {
      if (r.task_uid != uid || !r.start) continue;
      gpu_pod_seen |= r.share_milli > 0;
      const double seen_end = r.end ? *r.end : r.first_seen_gone.value_or(s.t);
      intervals += "; " + r.name.substr(r.name.find('/') + 1) + " " + std::to_string(r.share_milli) + "m on " + r.node + " " +
                   std::to_string(std::lround(seen_end - *r.start)) + "s" + (r.end ? "" : " (vanished)") +
                   (r.resurrected ? " (shown running again after it ended)" : "") +
                   (r.end_rewritten ? " (shown ending again later)" : "");
      if (auto charged = charged_until_ms_.find(pod_uid); charged == charged_until_ms_.end())
        intervals += " (in no ledger seen)";
      else
        intervals += " (a ledger charged it " + std::to_string(std::lround(double(charged->second) / 1000 - *r.start)) + "s)";
      if (r.starts_seen.size() > 1) {  // the status moved its start: say by how much, for the diagnosis
        intervals += " (starts seen at +0";
        for (auto it = std::next(r.starts_seen.begin()); it != r.starts_seen.end(); ++it)
          intervals += ", +" + std::to_string((*it - *r.starts_seen.begin()) / 1000) + "s";
        intervals += ")";
      }
      auto price = price_of(r.node);
      if (r.share_milli < 0 || !price) {
        priceable = false;
        break;
      }
      double end_low = r.end ? *r.end : r.last_seen_alive.value_or(*r.start);
      if (!r.end && r.deletion_asked) end_low = std::max(*r.start, std::min(end_low, *r.deletion_asked));
      double end_high = r.end ? *r.end : r.first_seen_gone.value_or(s.t);
      auto cost = [&](double end) { return std::max(0.0, end - *r.start) / 3600.0 * double(*price) * double(r.share_milli) / 1000.0; };
      low += cost(end_low);
      high += cost(end_high);
    }
    // None of its GPU pods was in a look (they came and went between two): nothing here bounds it.
    if (!priceable || (!gpu_pod_seen && final_micros > 0)) {
      ++costs_unpriceable_;
      continue;
    }
    ++costs_checked_;
    widest_uncertainty_ = std::max(widest_uncertainty_, int64_t(std::llround(high - low)));
    if (double(final_micros) < low - kCent || double(final_micros) > high + kCent)
      violation(s.t, "final-cost", name_of(task),
                "final " + std::to_string(final_micros) + " micros, its pods' intervals cost " + std::to_string(std::llround(low)) +
                    ".." + std::to_string(std::llround(high)) + " (one cent allowed either side)" + intervals +
                    "; Valley's GPU time " + object_at(object_at(object_at(task, "status"), "cost"), "breakdown").value("gpuMilliSeconds", json::object()).dump());
  }
  // Tasks deleted as expected are gone; what they owned must be gone too (the orphan rule).
}

void Checker::finish(const Snapshot& s) {
  observe(s);
  check_orphans(s, true);
  check_final(s);
  check_records(s);
}

void Checker::follow_ends(const Snapshot& s) {
  std::map<std::string, std::string> live;
  for (const auto& task : s.tasks) {
    const std::string uid = uid_of(task);
    live[uid] = name_of(task);
    const int64_t final = micros_of(task, "finalMicros");
    if (final >= 0 && !ends_.count(uid)) ends_[uid] = {name_of(task), s.t, final, false};
  }
  for (const auto& [uid, name] : live_tasks_)
    if (!live.count(uid) && !ends_.count(uid)) ends_[uid] = {name, s.t, std::nullopt, true};
  live_tasks_ = std::move(live);
}

void Checker::check_records(const Snapshot& s) {
  std::map<std::string, json> records;  // by task uid
  for (const auto& cm : s.cost_records) {
    const json r = json::parse(string_at(object_at(cm, "data"), "record.json"), nullptr, false);
    if (r.is_object()) records[string_at(r, "uid")] = r;
  }
  std::set<std::string> held_gpus;  // tasks one of whose pods was seen holding a GPU
  for (const auto& [pod, r] : pods_)
    if (r.start && r.share_milli != 0) held_gpus.insert(r.task_uid);
  for (const auto& [uid, end] : ends_) {
    if (std::none_of(record_spans_.begin(), record_spans_.end(), [&](const auto& span) { return end.t >= span.first && end.t <= span.second; }))
      continue;
    if (end.deleted && !held_gpus.count(uid)) continue;
    ++records_checked_;
    auto it = records.find(uid);
    const json cost = it == records.end() ? json::object() : object_at(it->second, "cost");
    if (it == records.end() || !cost.contains("finalMicros")) {
      violation(s.t, "cost-record", end.name, std::string(end.deleted ? "deleted" : "finished") + " with no final cost in valley-cost-" + uid);
    } else if (end.final && int_at(cost, "finalMicros").value_or(-1) != *end.final) {
      violation(s.t, "cost-record", end.name,
                "record's final " + std::to_string(int_at(cost, "finalMicros").value_or(-1)) + " differs from the status's " + std::to_string(*end.final));
    }
  }
}

std::set<std::string> Checker::tasks_on(const Snapshot& s, const std::set<std::string>& nodes) const {
  std::set<std::string> out;
  for (const auto& p : s.pods) {
    const std::string node = p.value("spec", json::object()).value("nodeName", "");
    if (!node.empty() && nodes.count(node)) out.insert(controller_uid(p));
  }
  return out;
}

void Checker::window_begin(const Snapshot& s) {
  window_begin_ = s;
  window_open_ = true;
  window_seen_.clear();
}

void Checker::window_end(const Snapshot& s, const std::string& window, const std::set<std::string>& disrupted_nodes) {
  ++windows_;
  const Snapshot& first = window_begin_;
  // Excused: tasks with a pod on a node disrupted meanwhile (in either look: by the end such a pod
  // is gone, replaced elsewhere), or, in the first look, on a node already gone or noticed: what
  // those do to their tasks is the fault's.
  std::set<std::string> live, lost = disrupted_nodes;
  for (const auto& n : first.nodes) {
    const std::string name = n["metadata"].value("name", "");
    live.insert(name);
    for (const auto& taint : n.value("spec", json::object()).value("taints", json::array()))
      if (taint.value("key", "").find("termination") != std::string::npos || taint.value("key", "").find("spot-itn") != std::string::npos)
        lost.insert(name);
  }
  for (const auto& p : first.pods) {
    const std::string node = p.value("spec", json::object()).value("nodeName", "");
    if (!node.empty() && !live.count(node)) lost.insert(node);
  }
  std::set<std::string> excused = tasks_on(first, lost);
  for (const auto& uid : tasks_on(s, disrupted_nodes)) excused.insert(uid);
  for (const auto& node : disrupted_nodes)
    if (auto seen = window_seen_.find(node); seen != window_seen_.end()) excused.insert(seen->second.begin(), seen->second.end());
  std::map<std::string, json> restarts_before;  // by task uid
  for (const auto& t : first.tasks)
    restarts_before[t["metadata"].value("uid", "")] = t.value("status", json::object()).value("restarts", json::object());
  for (const auto& t : s.tasks) {
    const std::string uid = t["metadata"].value("uid", "");
    auto before = restarts_before.find(uid);
    if (before == restarts_before.end() || excused.count(uid)) continue;
    ++window_tasks_;
    const json after = t.value("status", json::object()).value("restarts", json::object());
    const bool may_fail = t["metadata"].value("annotations", json::object()).value("chaos.valley.dev/expect", "") == "Failed";
    for (const char* kind : {"startFailures", "disruptions", "failures"}) {
      if (std::string(kind) == "failures" && may_fail) continue;
      const int64_t was = before->second.value(kind, int64_t{0}), now = after.value(kind, int64_t{0});
      // One disruption whose record names a node the campaign disrupted: a pod there for less
      // than a look apart (placed and noticed between two looks) is the fault's too.
      const json last = t.value("status", json::object()).value("lastDisruption", json::object());
      if (std::string(kind) == "disruptions" && now == was + 1 && last.is_object() && lost.count(last.value("node", ""))) continue;
      if (now > was)
        violation(s.t, "restarted-by-window", t["metadata"].value("name", ""),
                  window + ": status.restarts." + kind + " went from " + std::to_string(was) + " to " + std::to_string(now));
    }
  }
  window_begin_ = {};
  window_open_ = false;
  window_seen_.clear();
}

json Checker::summary() const {
  int starts_moved = 0, resurrected = 0, rewritten = 0;
  for (const auto& [uid, r] : pods_) {
    starts_moved += r.starts_seen.size() > 1;
    resurrected += r.resurrected;
    rewritten += r.end_rewritten;
  }
  return {{"podsWhoseStartMoved", starts_moved},
          {"podsResurrected", resurrected},
          {"podsEndRewritten", rewritten},
          {"looks", looks_},
          {"windows", windows_},
          {"tasksCheckedInWindows", window_tasks_},
          {"podsFollowed", pods_.size()},
          {"costsChecked", costs_checked_},
          {"costRecordsChecked", records_checked_},
          {"costsNotPriceable", costs_unpriceable_},
          {"widestCostUncertaintyMicros", widest_uncertainty_},
          {"longestOrphanSeconds", std::lround(longest_orphan_)},
          {"violations", violations_.size()}};
}

}  // namespace valley::chaos
