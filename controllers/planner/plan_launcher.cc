// Where an MPI task's launcher may go. kube-scheduler places it (no GPU, anywhere its master
// template, the operator's launcher pool and the spot rule allow); the plan only makes sure that
// somewhere can, before any worker is admitted and charged: a launcher that cannot bind would hold
// its gang's GPUs until the start grace gives up, and again at every retry.
// The spot rule (a task that writes no checkpoint keeps its launcher off spot) gives way to a
// template that allows only spot nodes: the user's pin is honoured, and the task is warned.
#include "controllers/planner/plan.h"

#include "controllers/api/nodepool.h"

#include <algorithm>
#include <string>

namespace valley::planner::detail {

namespace {

// Taints that come and go (a node not Ready, cordoned, given notice) say nothing about whether the
// launcher can ever bind there.
bool passing_taint(const Node& n, const Taint& taint) {
  return taint.key == "node.kubernetes.io/not-ready" || taint.key == "node.kubernetes.io/unreachable" ||
         taint.key == "node.kubernetes.io/unschedulable" || (!n.notice.empty() && taint.key == n.notice);
}

bool allows(const Task::Launcher& l, const std::vector<std::pair<std::string, std::string>>& pool, const Node& n) {
  if (!selects_labels(l.node_selector, l.node_terms, n)) return false;
  for (const auto& [key, value] : pool) {
    auto it = n.labels.find(key);
    if (it == n.labels.end() || it->second != value) return false;
  }
  return std::all_of(n.taints.begin(), n.taints.end(),
                     [&](const Taint& taint) { return passing_taint(n, taint) || tolerates(l.tolerations, taint); });
}

std::string constraints_of(const Task::Launcher& l, const std::vector<std::pair<std::string, std::string>>& pool) {
  std::string what;
  auto add = [&what](const std::string& s) { what += (what.empty() ? "" : ", ") + s; };
  for (const auto& [key, value] : l.node_selector) add("nodeSelector " + key + "=" + value);
  if (!l.node_terms.empty()) add("its required node affinity");
  for (const auto& [key, value] : pool) add("the operator's launcher pool " + key + "=" + value);
  add(l.tolerations.empty() ? "no tolerations" : std::to_string(l.tolerations.size()) + " tolerations");
  return what;
}

}  // namespace

const Plan::LauncherFit& Plan::launcher_fit(size_t i) {
  static const LauncherFit kAnywhere;
  const Task& t = tasks_[i];
  if (!config_.launcher_nodes_known || !t.launcher) return kAnywhere;
  const Task::Launcher& l = *t.launcher;
  // Launchers their templates do not place share the answer with every one of the same request.
  const bool plain = l.node_selector.empty() && l.node_terms.empty() && l.tolerations.empty();
  std::string key = plain ? (t.checkpointed ? "c" : "-") : "task " + t.key;
  if (plain)
    for (const auto& [resource, units] : l.room) key += "/" + resource + "=" + std::to_string(units);
  if (auto it = launcher_fit_.find(key); it != launcher_fit_.end()) return it->second;

  std::array<int64_t, kRoomColumns> need{};
  for (int c = 0; c < kRoomColumns; ++c)
    if (auto it = l.room.find(kRoomResources[c]); it != l.room.end()) need[c] = it->second;
  // What the nodes the launcher may use offer, on stable capacity and on spot.
  struct Offer {
    bool any = false, room = false;
    std::array<int64_t, kRoomColumns> most{};
  } stable, spot;
  bool any_node = false;
  for (size_t k = 0; k < nodes_.size(); ++k) {
    const Node& n = *nodes_[k];
    if (api::is_provisionable(n.name)) continue;  // a launcher buys no node
    any_node = true;
    if (!allows(l, config_.launcher_pool, n)) continue;
    Offer& offer = info_[k].spot ? spot : stable;
    offer.any = true;
    bool holds = true;
    for (int c = 0; c < kRoomColumns; ++c) {
      auto cap = n.room_capacity.find(kRoomResources[c]);
      const int64_t have = cap == n.room_capacity.end() ? kUnlimitedRoom : cap->second;
      offer.most[c] = std::max(offer.most[c], have);
      holds = holds && have >= need[c];
    }
    offer.room = offer.room || holds;
  }
  LauncherFit fit;
  if (!any_node) return launcher_fit_[key] = fit;  // no node known yet: it waits like any task
  if (!stable.any && !spot.any) {
    fit.unplaceable = "Unplaceable: no node Valley plans on may hold its launcher (" + constraints_of(l, config_.launcher_pool) + ")";
    return launcher_fit_[key] = std::move(fit);
  }
  const bool off_spot = !t.checkpointed;
  fit.on_spot = off_spot && !stable.any;  // its template allows only spot nodes: the user pinned it there
  const bool spot_allowed = !off_spot || fit.on_spot;
  if (stable.room || (spot_allowed && spot.room)) return launcher_fit_[key] = std::move(fit);
  std::array<int64_t, kRoomColumns> most = stable.most;
  if (spot_allowed)
    for (int c = 0; c < kRoomColumns; ++c) most[c] = std::max(most[c], spot.most[c]);
  for (int c = 0; c < kRoomColumns && fit.unplaceable.empty(); ++c)
    if (need[c] > most[c]) {
      const std::string has = amount(c, most[c]);
      fit.unplaceable = "Unplaceable: its launcher needs " + amount(c, need[c]) + "; the largest node it may use" +
                        (spot_allowed ? "" : " (off spot: the task writes no checkpoint)") + " has " + has.substr(0, has.find(' '));
    }
  return launcher_fit_[key] = std::move(fit);
}

}  // namespace valley::planner::detail
