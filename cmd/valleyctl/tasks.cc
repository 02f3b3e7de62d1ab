// valleyctl's task commands: submit, list, cost, describe, version.
#include "cmd/valleyctl/common.h"
#include "cmd/valleyctl/table.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "controllers/inputs/candidates.h"
#include "controllers/cost/engine.h"
#include "controllers/inputs/planner_config.h"
#include "controllers/cost/report.h"
#include "controllers/planner/scaling.h"
#include "controllers/inputs/snapshot.h"
#include "controllers/api/seed.h"
#include "controllers/api/spec.h"
#include "controllers/api/tenant.h"
#include "controllers/tenancy/tenants.h"
#include "operator/kube/json_fields.h"
#include "operator/duration.h"
#include "operator/kube/resource.h"
#include "operator/yaml_json.h"

#include "operator/flags.h"
#include "operator/kube/client.h"
#include "operator/kube/error.h"
#include "valley/version.h"
#include "controllers/api/cost_record.h"
#include "operator/json_text.h"

namespace valley::ctl {

int cmd_submit(const valley::Flags& flags, const std::vector<std::string>& args) {
  if (!one_argument(args, "valleyctl submit FILE [-n NAMESPACE] [--dry-run] [-o yaml|json]")) return 2;
  auto task = read_task_or_report(args[1]);
  if (!task) return 1;
  try {
    std::string ns;
    auto client = connect(flags, &ns);
    if (!flags.get("namespace").empty() || !(*task)["metadata"].contains("namespace")) (*task)["metadata"]["namespace"] = ns;
    ns = (*task)["metadata"]["namespace"];
    const bool dry = flags.get_bool("dry-run");
    std::string path = "/apis/valley.dev/v1beta1/namespaces/" + ns + "/trainingtasks" + (dry ? "?dryRun=All" : "");
    json created = client->create(path, *task);
    if (flags.get("output") == "yaml" || flags.get("output") == "json") {
      print(flags, created);
    } else {
      std::cout << "trainingtask.valley.dev/" << created["metadata"].value("name", "") << (dry ? " valid (dry run, not created)" : " created")
                << " in namespace " << ns << "\n";
      if (!dry) std::cout << "follow it: valleyctl describe " << created["metadata"].value("name", "") << " -n " << ns << "\n";
    }
    return 0;
  } catch (const valley::kube::KubeError& e) {
    std::cerr << "valleyctl: " << args[1] << ": " << e.what() << "\n";
    return 1;
  }
}


int cmd_list(const valley::Flags& flags) {
  return with_cluster([&] {
    std::string ns;
    auto client = connect(flags, &ns);
    if (flags.get_bool("all-namespaces")) ns = "";
    auto items = client->list(valley::kube::resources::kTrainingTasks, ns).items;
    if (flags.get("output") == "json" || flags.get("output") == "yaml") {
      print(flags, json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}});
      return 0;
    }
    Table table({"NAMESPACE", "NAME", "PHASE", "WORKERS", "MIN-MAX", "PRIORITY", "ESTIMATED", "ACCRUED", "FINAL", "AGE"});
    for (const auto& t : items) {
      const json st = t.value("status", json::object());
      const json spec = t.value("spec", json::object());
      const json cost = st.value("cost", json::object());
      const json r = spec.value("replicas", json::object());
      std::string range = std::to_string(r.value("min", 1)) + "-" + std::to_string(r.value("max", 1));
      std::string currency = cost.value("currency", "");
      auto money = [&](const char* k) { return cost.contains(k) ? cost.value(k, "") + " " + currency : std::string("-"); };
      table.add({t["metadata"].value("namespace", ""), t["metadata"].value("name", ""), st.value("phase", "Pending"),
                 std::to_string(st.value("replicas", 0)), range, std::to_string(spec.value("priority", 0)), money("estimated"),
                 money("accrued"), money("final"), age(t["metadata"].value("creationTimestamp", ""))});
    }
    if (items.empty())
      std::cout << "no TrainingTasks" << (ns.empty() ? "" : " in namespace " + ns) << "\n";
    else
      table.print(std::cout);
    return 0;
  });
}

// What each task cost against what it was estimated to cost, GPU-hours per pool as numbers, and the
// namespace's totals per currency.
int cmd_cost(const valley::Flags& flags) {
  return with_cluster([&] {
    std::string ns;
    auto client = connect(flags, &ns);
    if (flags.get_bool("all-namespaces")) ns = "";
    auto items = client->list(valley::kube::resources::kTrainingTasks, ns).items;
    std::sort(items.begin(), items.end(), [](const json& a, const json& b) {
      return std::make_pair(a["metadata"].value("namespace", ""), a["metadata"].value("name", "")) <
             std::make_pair(b["metadata"].value("namespace", ""), b["metadata"].value("name", ""));
    });
    Table table({"NAMESPACE", "NAME", "PHASE", "ESTIMATE", "RANGE", "SPENT", "VS-EST", "RANGE?", "GPU-HOURS"});
    struct Total {
      valley::api::Micros estimate = 0, spent = 0;
    };
    std::map<std::string, Total> totals;
    std::map<std::string, valley::api::Micros> hours_by_pool;  // GPU-hours x 1e6, all tasks
    // Tasks deleted since (by a user or their TTL): their final cost from Valley's records, which a
    // user who may not read the operator's namespace does not see (said below the table).
    std::set<std::string> live;
    for (const auto& t : items) live.insert(t["metadata"].value("uid", ""));
    std::string records_note;
    try {
      valley::api::CostRecords records(*client, flags.get("valley-namespace"));
      for (const auto& r : records.all(ns))
        if (!live.count(r.uid) && r.deleted)
          items.push_back({{"metadata", {{"namespace", r.ns}, {"name", r.name}, {"uid", r.uid}}},
                           {"status", {{"phase", (r.phase.empty() ? std::string("Deleted") : r.phase) + " (deleted)"}, {"cost", r.cost}}}});
    } catch (const valley::kube::KubeError& e) {
      records_note = "deleted tasks' costs are kept in " + flags.get("valley-namespace") + ", which this account may not read (" +
                     std::to_string(e.http_status()) + ")";
    }
    for (const auto& t : items) {
      const json st = t.value("status", json::object());
      const auto r = valley::cost::report_of(st.value("cost", json::object()));
      auto m = [](const std::optional<valley::api::Micros>& v) { return v ? valley::api::format_money(*v) : std::string("-"); };
      const auto spent = r.final ? r.final : r.accrued;
      // Finished: how far the final is from the estimate; still running: how much of it is spent.
      std::string vs = "-";
      char buf[32];
      if (r.final && r.error_percent) {
        std::snprintf(buf, sizeof buf, "%+.1f%%", *r.error_percent);
        vs = buf;
      } else if (r.spent_percent) {
        std::snprintf(buf, sizeof buf, "%.0f%% so far", *r.spent_percent);
        vs = buf;
      }
      const std::string range = r.low && r.high ? m(r.low) + "-" + m(r.high) : "-";
      const std::string inside = r.within_range ? (*r.within_range ? "inside" : "outside") : "-";
      table.add({t["metadata"].value("namespace", ""), t["metadata"].value("name", ""), st.value("phase", "Pending"), m(r.estimate), range,
                 m(spent) + (r.final || !spent ? "" : "*"), vs, inside, valley::cost::gpu_hours_text(r)});
      if (!r.currency.empty()) {
        totals[r.currency].estimate += r.estimate.value_or(0);
        totals[r.currency].spent += spent.value_or(0);
      }
      for (const auto& [pool, h] : r.gpu_hours)
        if (auto v = valley::api::parse_money(h)) hours_by_pool[pool] += *v;
    }
    if (items.empty()) {
      std::cout << "no TrainingTasks" << (ns.empty() ? "" : " in namespace " + ns) << "\n";
      return 0;
    }
    table.print(std::cout);
    std::cout << "(* still accruing)\n";
    if (!records_note.empty()) std::cout << records_note << "\n";
    for (const auto& [currency, tot] : totals)
      std::cout << "total " << currency << ": estimated " << valley::api::format_money(tot.estimate) << ", spent "
                << valley::api::format_money(tot.spent) << "\n";
    std::string pools;
    for (const auto& [pool, h] : hours_by_pool) pools += (pools.empty() ? "" : ", ") + valley::api::format_money(h, 3) + " " + pool;
    if (!pools.empty()) std::cout << "GPU-hours: " << pools << "\n";
    return 0;
  });
}

int cmd_describe(const valley::Flags& flags, const std::vector<std::string>& args) {
  if (!one_argument(args, "valleyctl describe NAME [-n NAMESPACE]")) return 2;
  return with_cluster([&] {
    std::string ns;
    auto client = connect(flags, &ns);
    json t = client->get(valley::kube::resources::kTrainingTasks, ns, args[1]);
    if (flags.get("output") == "json" || flags.get("output") == "yaml") {
      print(flags, t);
      return 0;
    }
    const json st = t.value("status", json::object());
    const json spec = t.value("spec", json::object());
    const json r = spec.value("replicas", json::object());
    std::cout << "Name:         " << args[1] << "\nNamespace:    " << ns << "\n";
    std::cout << "Type:         " << spec.value("taskType", "MPI") << ", priority " << spec.value("priority", 0)
              << (spec.value("reduceCost", false) ? ", reduceCost" : "") << (spec.value("amdSupport", false) ? ", amdSupport" : "") << "\n";
    std::cout << "Phase:        " << st.value("phase", "Pending") << " (" << st.value("reason", "") << ": " << st.value("message", "") << ")\n";
    std::cout << "Workers:      " << st.value("replicas", 0) << " running, " << st.value("readyReplicas", 0) << " ready, "
              << st.value("desiredReplicas", 0) << " desired (min " << r.value("min", 1) << ", max " << r.value("max", 1) << "), epoch "
              << st.value("epoch", 0) << "\n";
    // Where: nodes of the current epoch's workers.
    valley::kube::ListOptions lo;
    lo.label_selector = "valley.dev/task=" + args[1];
    std::map<std::string, int> per_node;
    for (const auto& p : client->list(valley::kube::resources::kPods, ns, lo).items) {
      const json labels = p["metadata"].value("labels", json::object());
      if (labels.value("valley.dev/role", "") != "worker" || labels.value("valley.dev/epoch", "") != std::to_string(st.value("epoch", 0))) continue;
      per_node[p["spec"].value("nodeName", "(not bound)")]++;
    }
    std::string where;
    for (const auto& [n, c] : per_node) where += (where.empty() ? "" : ", ") + n + " x" + std::to_string(c);
    std::cout << "Placement:    " << (where.empty() ? "-" : where) << "\n";
    if (st.contains("checkpoint")) {
      const json c = st["checkpoint"];
      std::cout << "Checkpoint:   step " << c.value("step", 0) << " at " << c.value("time", "") << " (" << age(c.value("time", "")) << " ago) "
                << c.value("uri", "") << "\n";
    } else {
      std::cout << "Checkpoint:   " << (spec.contains("checkpoint") ? "none reported yet" : "no spec.checkpoint") << "\n";
    }
    const json rs = st.value("restarts", json::object());
    std::cout << "Restarts:     " << rs.value("total", 0) << " (failures " << rs.value("failures", 0) << ", resizes " << rs.value("resizes", 0)
              << ", moves " << rs.value("moves", 0) << ", preemptions " << rs.value("preemptions", 0) << ", disruptions " << rs.value("disruptions", 0) << ")\n";
    if (st.contains("lastDisruption")) {
      const json d = st["lastDisruption"];
      std::cout << "Disruption:   " << d.value("cause", "") << " at " << d.value("time", "") << (d.contains("node") ? " on " + d.value("node", "") : "");
      if (d.contains("recoverySeconds"))
        std::cout << "; running again after " << d.value("recoverySeconds", 0) << "s, work lost "
                  << (d.contains("workLostSeconds") ? std::to_string(d.value("workLostSeconds", 0)) + "s" : std::string("unknown"));
      std::cout << "\n";
    }
    const json use = st.value("utilization", json::object());
    if (!use.empty()) {
      std::cout << "GPU use:      " << use.value("gpuPercent", 0) << "% now (" << use.value("memoryUsedMiB", 0) << " MiB a GPU), "
                << use.value("meanGpuPercent", 0) << "% on average; " << use.value("idleGpuHours", std::string("0.00"))
                << " idle GPU-hours" << (use.contains("idleSince") ? ", idle since " + use.value("idleSince", "") : std::string()) << "\n";
    }
    const json cost = st.value("cost", json::object());
    if (cost.empty()) {
      std::cout << "Cost:         not priced (no PricingPolicy)\n";
    } else {
      const std::string cur = " " + cost.value("currency", "");
      const json e = cost.value("estimate", json::object());
      const valley::cost::CostReport report = valley::cost::report_of(cost);
      std::cout << "Cost:         " << valley::cost::versus_estimate(report) << ", priority x" << cost.value("multiplier", "1") << "\n";
      const json b = cost.value("breakdown", json::object());
      std::cout << "  GPU:        " << b.value("gpu", "0.00") << cur << " for " << valley::cost::gpu_hours_text(report) << " GPU-h";
      // What the idle share of the observed GPU-time cost, at the task's average GPU price.
      const int64_t sampled = use.value("sampledGpuSeconds", int64_t{0}), idle = use.value("idleGpuSeconds", int64_t{0});
      if (sampled > 0 && idle > 0)
        std::cout << "; you paid for " << use.value("idleGpuHours", std::string("0.00")) << " idle GPU-hours (about "
                  << valley::api::format_money(static_cast<int64_t>(static_cast<double>(b.value("gpuMicros", int64_t{0})) * idle / sampled))
                  << cur << ")";
      const json kwh = b.value("kWh", json::object());
      std::cout << "\n  energy:     " << b.value("energy", "0.00") << cur << " for";
      for (const auto& [k, v] : kwh.items()) std::cout << " " << (v.is_string() ? v.get<std::string>() : json_text(v)) << " kWh " << k << ";";
      std::cout << "\n";
      if (!e.empty()) {
        std::cout << "  estimate:   " << e.value("basis", "") << ", from " << e.value("start", "") << "\n";
        std::cout << "  low:        " << e.value("lowAssumes", "") << "\n  high:       " << e.value("highAssumes", "") << "\n";
      }
    }
    // Recent events about it.
    valley::kube::ListOptions eo;
    eo.field_selector = "regarding.name=" + args[1];
    auto events = client->list(valley::kube::resources::kEvents, ns, eo).items;
    std::sort(events.begin(), events.end(), [](const json& a, const json& b) {
      return a["metadata"].value("creationTimestamp", "") < b["metadata"].value("creationTimestamp", "");
    });
    std::cout << "Events:\n";
    size_t from = events.size() > 12 ? events.size() - 12 : 0;
    for (size_t i = from; i < events.size(); ++i) {
      const json& e = events[i];
      std::cout << "  " << age(e["metadata"].value("creationTimestamp", "")) << "\t" << e.value("type", "") << "\t" << e.value("reason", "")
                << "\t" << e.value("note", "") << "\n";
    }
    if (events.empty()) std::cout << "  (none)\n";
    return 0;
  });
}


int cmd_version(const valley::Flags& flags) {
  std::cout << "client: valleyctl " << valley::kVersion << " (" << valley::kGitCommit << ")\n";
  try {
    valley::kube::Client client(valley::kube::load_default(flags.get("kubeconfig"), flags.get("context")));
    auto version = client.server_version();
    std::cout << "server: Kubernetes " << version.value("gitVersion", "?") << " at " << client.config().server << "\n";
  } catch (const valley::kube::KubeError& e) {
    std::cout << "server: not reachable (" << e.what() << ")\n";
  }
  return 0;
}


}  // namespace valley::ctl
