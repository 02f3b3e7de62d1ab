// valleyctl: the user's command line for Valley (also usable as the kubectl plugin `kubectl-valley`).
// Commands: version, submit, estimate, list, describe, cost.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>

#include "controllers/cost/candidates.h"
#include "controllers/cost/engine.h"
#include "controllers/cost/planner_config.h"
#include "controllers/cost/report.h"
#include "controllers/planner/scaling.h"
#include "controllers/planner/snapshot.h"
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

namespace {

constexpr const char* kUsage = R"(valleyctl: run and inspect Valley training tasks

usage: valleyctl [flags] COMMAND

commands:
  version          print the client version and, when a cluster is reachable, the server's
  submit FILE      create the task in FILE (a TrainingTask or the seed task format);
                   --dry-run: validated by the API server, not created; -o yaml|json prints it
  estimate FILE    what a task would cost, without submitting it: the cluster's PricingPolicy
                   and nodes, or --policy FILE offline
  list             tasks in the namespace (-A: all) with phase, workers and cost
  describe NAME    one task: phase, workers and where, checkpoint, restarts, cost, recent events
  cost             what each task cost against its estimate, GPU-hours per pool, totals (-A: all)
  tenants          each Tenant: its namespaces, GPUs used/nominal, borrowed, lent, fair share,
                   spend this period against its budget, waiting tasks, and why it is not Ready
)";

using json = nlohmann::json;

// The first document of a YAML file; exits with a clear message when it cannot be read.
std::optional<valley::YamlDocument> read_document(const std::string& path, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = path + ": cannot read";
    return std::nullopt;
  }
  std::stringstream s;
  s << in.rdbuf();
  auto docs = valley::parse_yaml(s.str(), error);
  if (!docs) {
    *error = path + ": " + *error;
    return std::nullopt;
  }
  if (docs->empty()) {
    *error = path + ": no document";
    return std::nullopt;
  }
  return docs->front();
}

// A TrainingTask object from FILE, in either format.
std::optional<json> read_task(const std::string& path, std::string* error) {
  auto doc = read_document(path, error);
  if (!doc) return std::nullopt;
  if (valley::api::is_seed_format(doc->value)) {
    std::vector<std::string> errors;
    json task = valley::api::seed_to_task(*doc, "default", &errors);
    if (!errors.empty()) {
      *error = path + " (seed format):";
      for (const auto& e : errors) *error += "\n  " + e;
      return std::nullopt;
    }
    return task;
  }
  if (doc->value.value("kind", "") != "TrainingTask") {
    *error = path + ": neither a TrainingTask nor the seed task format (TaskName: ...)";
    return std::nullopt;
  }
  return doc->value;
}

// Commands that talk to the cluster: an API error is a message and exit 1, never a crash.
int with_cluster(const std::function<int()>& command) {
  try {
    return command();
  } catch (const valley::kube::KubeError& e) {
    std::cerr << "valleyctl: " << e.what() << "\n";
    return 1;
  }
}

// Commands that take one argument: the usage line and exit 2 otherwise.
bool one_argument(const std::vector<std::string>& args, const char* usage) {
  if (args.size() == 2) return true;
  std::cerr << "usage: " << usage << "\n";
  return false;
}

std::unique_ptr<valley::kube::Client> connect(const valley::Flags& flags, std::string* ns) {
  auto config = valley::kube::load_default(flags.get("kubeconfig"), flags.get("context"));
  if (ns) *ns = flags.get("namespace").empty() ? config.default_namespace : flags.get("namespace");
  return std::make_unique<valley::kube::Client>(std::move(config));
}

void print(const valley::Flags& flags, const json& object) {
  if (flags.get("output") == "json") {
    std::cout << object.dump(2) << "\n";
  } else {
    std::cout << valley::to_yaml(object);
  }
}

// The task in FILE, or nullopt after telling the user what is wrong with it.
std::optional<json> read_task_or_report(const std::string& path) {
  std::string error;
  auto task = read_task(path, &error);
  if (!task) std::cerr << "valleyctl: " << error << "\n";
  return task;
}

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
    std::string path = "/apis/valley.dev/v1alpha1/namespaces/" + ns + "/trainingtasks" + (dry ? "?dryRun=All" : "");
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

std::string age(const std::string& rfc3339) {
  auto t = valley::kube::parse_time(rfc3339);
  if (!t) return "-";
  auto s = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now() - *t).count();
  if (s < 120) return std::to_string(s) + "s";
  if (s < 7200) return std::to_string(s / 60) + "m";
  if (s < 172800) return std::to_string(s / 3600) + "h";
  return std::to_string(s / 86400) + "d";
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
    std::printf("%-16s%-24s%-12s%-9s%-9s%-10s%-11s%-11s%-11s%s\n", "NAMESPACE", "NAME", "PHASE", "WORKERS", "MIN-MAX", "PRIORITY",
                "ESTIMATED", "ACCRUED", "FINAL", "AGE");
    for (const auto& t : items) {
      const json st = t.value("status", json::object());
      const json spec = t.value("spec", json::object());
      const json cost = st.value("cost", json::object());
      const json r = spec.value("replicas", json::object());
      std::string range = std::to_string(r.value("min", 1)) + "-" + std::to_string(r.value("max", 1));
      std::string currency = cost.value("currency", "");
      auto money = [&](const char* k) { return cost.contains(k) ? cost.value(k, "") + " " + currency : std::string("-"); };
      std::printf("%-16s%-24s%-12s%-9d%-9s%-10d%-11s%-11s%-11s%s\n", t["metadata"].value("namespace", "").c_str(),
                  t["metadata"].value("name", "").c_str(), st.value("phase", "Pending").c_str(), st.value("replicas", 0), range.c_str(),
                  spec.value("priority", 0), money("estimated").c_str(), money("accrued").c_str(), money("final").c_str(),
                  age(t["metadata"].value("creationTimestamp", "")).c_str());
    }
    if (items.empty()) std::cout << "no TrainingTasks" << (ns.empty() ? "" : " in namespace " + ns) << "\n";
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
    std::printf("%-16s%-20s%-11s%-10s%-15s%-10s%-12s%-8s%s\n", "NAMESPACE", "NAME", "PHASE", "ESTIMATE", "RANGE", "SPENT", "VS-EST",
                "RANGE?", "GPU-HOURS");
    struct Total {
      valley::api::Micros estimate = 0, spent = 0;
    };
    std::map<std::string, Total> totals;
    std::map<std::string, valley::api::Micros> hours_by_pool;  // GPU-hours x 1e6, all tasks
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
      std::printf("%-16s%-20s%-11s%-10s%-15s%-10s%-12s%-8s%s\n", t["metadata"].value("namespace", "").c_str(),
                  t["metadata"].value("name", "").c_str(), st.value("phase", "Pending").c_str(), m(r.estimate).c_str(), range.c_str(),
                  (m(spent) + (r.final || !spent ? "" : "*")).c_str(), vs.c_str(), inside.c_str(), valley::cost::gpu_hours_text(r).c_str());
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
    std::cout << "(* still accruing)\n";
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
              << ", preemptions " << rs.value("preemptions", 0) << ", disruptions " << rs.value("disruptions", 0) << ")\n";
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
      for (const auto& [k, v] : kwh.items()) std::cout << " " << (v.is_string() ? v.get<std::string>() : v.dump()) << " kWh " << k << ";";
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

int cmd_estimate(const valley::Flags& flags, const std::vector<std::string>& args) {
  if (!one_argument(args, "valleyctl estimate FILE [--policy FILE] [--duration 6h]")) return 2;
  auto task = read_task_or_report(args[1]);
  if (!task) return 1;
  std::string error;
  if (!flags.get("duration").empty()) (*task)["spec"]["estimatedDuration"] = flags.get("duration");
  if (!(*task)["metadata"].contains("namespace")) (*task)["metadata"]["namespace"] = "default";
  auto parsed = valley::api::parse_task(*task);
  if (!parsed.spec) {
    std::cerr << "valleyctl: " << args[1] << ":";
    for (const auto& e : parsed.errors) std::cerr << "\n  " << e;
    std::cerr << "\n";
    return 1;
  }
  const auto& spec = *parsed.spec;
  if (!spec.estimated_duration) {
    std::cerr << "valleyctl: " << args[1] << ": no estimatedDuration (EstimatedDuration in the seed format); pass --duration 6h\n";
    return 1;
  }
  // The policy and the nodes: from files, else from the cluster.
  json policy_object;
  std::vector<json> nodes;
  std::unique_ptr<valley::kube::Client> client;
  if (!flags.get("policy").empty()) {
    auto doc = read_document(flags.get("policy"), &error);
    if (!doc) {
      std::cerr << "valleyctl: " << error << "\n";
      return 1;
    }
    policy_object = doc->value;
  }
  try {
    client = std::make_unique<valley::kube::Client>(valley::kube::load_default(flags.get("kubeconfig"), flags.get("context")));
    if (policy_object.is_null()) policy_object = client->get(valley::kube::resources::kPricingPolicies, "", flags.get("pricing-policy"));
    nodes = client->list(valley::kube::resources::kNodes, "").items;
  } catch (const valley::kube::KubeError& e) {
    if (policy_object.is_null()) {
      std::cerr << "valleyctl: no PricingPolicy: " << e.what() << " (pass --policy FILE to estimate offline)\n";
      return 1;
    }
  }
  std::vector<std::string> errors;
  auto policy = valley::api::parse_policy(policy_object, &errors);
  if (!policy) {
    std::cerr << "valleyctl: the PricingPolicy is invalid:";
    for (const auto& e : errors) std::cerr << "\n  " << e;
    std::cerr << "\n";
    return 1;
  }
  std::vector<valley::cost::NodeRate> candidates = valley::cost::candidate_rates(*policy, spec, *task, nodes);
  if (candidates.empty()) {
    // Offline: every GPU price in the policy, on demand and spot.
    for (const auto& g : policy->gpu) {
      if (g.vendor == "amd" && !spec.amd_support) continue;
      std::map<std::string, std::string> labels;
      if (!g.product.empty()) labels[g.vendor == "amd" ? "amd.com/gpu.product-name" : "nvidia.com/gpu.product"] = g.product;
      auto od = valley::cost::rate_for(*policy, g.vendor.empty() ? "nvidia" : g.vendor, labels);
      candidates.push_back(od);
      labels[policy->spot_labels.front().first] = policy->spot_labels.front().second;
      candidates.push_back(valley::cost::rate_for(*policy, g.vendor.empty() ? "nvidia" : g.vendor, labels));
    }
  }
  namespace planner = valley::planner;
  namespace cost = valley::cost;
  if (candidates.empty()) {
    std::cerr << "valleyctl: no GPU the task could use is priced\n";
    return 1;
  }
  // The same decision the operator would make now: the cluster's nodes less what its pods hold,
  // priced by the policy, and this task planned among them (tasks waiting in the queue are not
  // counted). Offline: no nodes, so the cheapest capacity it may use, starting now.
  const auto now = std::chrono::system_clock::now();
  if (!(*task)["metadata"].contains("creationTimestamp")) (*task)["metadata"]["creationTimestamp"] = valley::kube::format_time(now);
  planner::Task t = planner::task_from(spec, *task, {});
  std::vector<planner::Node> pn;
  std::map<std::string, size_t> index;
  for (const auto& n : nodes) {
    index[n["metadata"].value("name", "")] = pn.size();
    pn.push_back(planner::node_from(n));
  }
  if (client && !pn.empty()) {
    try {
      for (const auto& pod : client->list(valley::kube::resources::kPods, "").items) {
        auto it = index.find(pod["spec"].value("nodeName", ""));
        if (it != index.end()) planner::subtract(pn[it->second], valley::api::pod_from(pod));
      }
    } catch (const valley::kube::KubeError& e) {
      std::cerr << "valleyctl: cannot list pods (" << e.what() << "); estimating as if the cluster were empty\n";
    }
  }
  planner::Config config = cost::planner_config(*policy, pn, now, {});
  if (spec.reduce_cost) {
    t.cheap_until = planner::cheap_until(now, policy->reduce_cost_patience, spec.deadline(now), spec.estimated_duration, 0, {}, t.min_workers,
                                         t.max_workers, config.min_marginal_efficiency);
  }
  planner::Decision d;
  d.key = t.key;
  if (!pn.empty()) d = planner::plan(pn, {t}, now, config)[0];
  std::map<std::string, cost::NodeRate> rates;
  for (const auto& n : pn)
    if (!n.vendor.empty()) rates[n.name] = cost::rate_for(*policy, n.vendor, n.labels);
  auto basis = cost::estimate_basis(spec, t, d, config, rates, candidates, now);
  auto e = cost::estimate(*policy, spec, basis);
  json out = cost::estimate_json(*policy, *e);
  out["task"] = spec.name;
  if (!d.reason.empty()) out["decision"] = d.reason;
  if (flags.get("output") == "json") {
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::cout << "task        " << spec.name << " (" << (spec.type == valley::api::TaskType::MPI ? "MPI" : "Single") << ", priority "
            << spec.priority << ", " << spec.min_workers << "-" << spec.max_workers << " workers x " << valley::api::format_milli(spec.gpus.milli)
            << " GPU" << (spec.reduce_cost ? ", reduceCost" : "") << (spec.amd_support ? ", amdSupport" : "") << ")\n";
  if (!d.reason.empty()) std::cout << "planner     " << d.reason << "\n";
  std::cout << "expected    " << out["expected"].get<std::string>() << " " << policy->currency << "  " << e->basis << "\n";
  std::cout << "gpu-hours   " << out["gpuHours"].get<std::string>() << " (" << e->workers << " workers for " << out["hours"].get<std::string>()
            << " h; it grows while the measured speedup pays)\n";
  std::cout << "starts      " << valley::kube::format_time(e->start) << (e->start > now + std::chrono::minutes(1) ? " (it waits)" : " (now)") << "\n";
  std::cout << "range       " << out["low"].get<std::string>() << " - " << out["high"].get<std::string>() << " " << policy->currency
            << "  (low: " << e->low_basis << "; high: " << e->high_basis << ")\n";
  std::cout << "policy      " << policy->name << (nodes.empty() ? " (offline: prices from the policy only)" : "") << "\n";
  return 0;
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

}  // namespace

// The Tenants as Valley keeps them: what each owns (as Valley resolves it, when namespaces may be
// listed), uses, borrows, lends and spends, and its tasks still waiting.
int cmd_tenants(const valley::Flags& flags) {
  return with_cluster([&] {
    std::string ns;
    auto client = connect(flags, &ns);
    auto items = client->list(valley::kube::resources::kTenants, "").items;
    if (flags.get("output") == "json" || flags.get("output") == "yaml") {
      print(flags, json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}});
      return 0;
    }
    std::vector<valley::tenancy::TenantObject> tenants;
    for (const auto& t : items)
      if (auto parsed = valley::api::parse_tenant(t); parsed.spec) {
        valley::tenancy::TenantObject o;
        o.spec = *parsed.spec;
        o.created = valley::kube::time_at(valley::kube::object_at(t, "metadata"), "creationTimestamp").value_or(valley::kube::SystemTime{});
        tenants.push_back(std::move(o));
      }
    std::map<std::string, std::vector<std::string>> owned;  // tenant -> namespaces
    bool resolved = false;
    try {
      std::map<std::string, std::map<std::string, std::string>> labels;
      for (const auto& n : client->list(valley::kube::resources::kNamespaces, "").items)
        labels[n["metadata"].value("name", "")] = valley::kube::labels_of(n);
      for (const auto& [n, tenant] : valley::tenancy::assign_namespaces(tenants, labels).owner) owned[tenant].push_back(n);
      resolved = true;
    } catch (const valley::kube::KubeError&) {  // may not list namespaces: what each spec names
      for (const auto& t : tenants) owned[t.spec.name] = t.spec.namespaces;
    }
    std::printf("%-18s %-28s %-11s %-9s %-7s %-7s %-8s %-24s %-8s %s\n", "TENANT", resolved ? "NAMESPACES" : "NAMESPACES (listed)", "GPUS", "BORROWED",
                "LENT", "WEIGHT", "SHARE", "SPEND (PERIOD)", "WAITING", "STATUS");
    for (const auto& t : items) {
      const std::string name = t["metadata"].value("name", "");
      const json st = t.value("status", json::object());
      std::string namespaces;
      for (const auto& n : owned[name]) namespaces += (namespaces.empty() ? "" : ",") + n;
      if (namespaces.size() > 28 && owned[name].size() > 1)  // a long list: the first, and how many more
        namespaces = owned[name].front() + ",+" + std::to_string(owned[name].size() - 1);
      std::string status = "Ready";
      for (const auto& c : valley::kube::array_at(st, "conditions")) {
        const std::string type = valley::kube::string_at(c, "type"), value = valley::kube::string_at(c, "status");
        if ((type == "Ready" && value != "True") || (type == "BudgetExhausted" && value == "True"))
          status = valley::kube::string_at(c, "reason") + ": " + valley::kube::string_at(c, "message");
      }
      if (st.empty()) status = "not yet reconciled by Valley";
      const json spend = valley::kube::object_at(st, "spend");
      const std::string spent = valley::kube::string_at(spend, "summary").empty()
                                    ? "-"
                                    : valley::kube::string_at(spend, "summary") + " (" + valley::kube::string_at(spend, "period") + ")";
      auto text = [&](const char* k) { return st.contains(k) && st[k].is_string() ? st[k].get<std::string>() : std::string("-"); };
      std::printf("%-18s %-28s %-11s %-9s %-7s %-7s %-8s %-24s %-8d %s\n", name.c_str(), (namespaces.empty() ? "-" : namespaces).c_str(),
                  text("gpus").c_str(), text("borrowed").c_str(), text("lent").c_str(),
                  t.value("spec", json::object()).value("weight", "1").c_str(), text("share").c_str(), spent.c_str(),
                  static_cast<int>(valley::kube::int_at(st, "waitingTasks").value_or(0)), status.c_str());
    }
    if (items.empty()) std::cout << "no Tenants\n";
    return 0;
  });
}

int main(int argc, char** argv) {
  valley::Flags flags({
      {"kubeconfig", "", "path to a kubeconfig; empty: $KUBECONFIG, in-cluster, then ~/.kube/config"},
      {"context", "", "kubeconfig context to use"},
      {"policy", "", "estimate: a PricingPolicy file instead of the cluster's"},
      {"pricing-policy", "default", "estimate: the cluster's PricingPolicy to use"},
      {"duration", "", "estimate: the run time at max workers, when the file has none (e.g. 6h)"},
      {"output", "text", "-o: text, yaml or json", false},
      {"namespace", "", "-n: the namespace; empty: the kubeconfig's"},
      {"all-namespaces", "false", "-A: list, cost: every namespace", true},
      {"dry-run", "false", "submit: validate with the API server without creating", true},
      {"help", "false", "print this help", true},
  });
  // kubectl's short flags: -n NS, -A, -o FORMAT (also -oyaml, -n=NS).
  std::vector<std::string> expanded;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    const std::pair<const char*, const char*> shorts[] = {{"-n", "--namespace"}, {"-o", "--output"}};
    bool done = false;
    for (const auto& [s, l] : shorts) {
      if (a == s) {
        expanded.push_back(l);
        done = true;
      } else if (a.rfind(s, 0) == 0 && a.size() > 2) {
        expanded.push_back(std::string(l) + "=" + a.substr(a[2] == '=' ? 3 : 2));
        done = true;
      }
    }
    if (!done) expanded.push_back(a == "-A" ? "--all-namespaces" : a);
  }
  std::vector<char*> expanded_argv;
  for (auto& a : expanded) expanded_argv.push_back(a.data());
  std::vector<std::string> args;
  try {
    args = flags.parse(static_cast<int>(expanded_argv.size()), expanded_argv.data());
  } catch (const std::invalid_argument& e) {
    std::cerr << "valleyctl: " << e.what() << "\n\n" << kUsage << "\nflags:\n" << flags.usage();
    return 2;
  }
  if (flags.get_bool("help") || args.empty()) {
    std::cout << kUsage << "\nflags:\n" << flags.usage();
    return args.empty() && !flags.get_bool("help") ? 2 : 0;
  }
  if (args[0] == "version") return cmd_version(flags);
  if (args[0] == "estimate") return cmd_estimate(flags, args);
  if (args[0] == "submit") return cmd_submit(flags, args);
  if (args[0] == "list") return cmd_list(flags);
  if (args[0] == "describe") return cmd_describe(flags, args);
  if (args[0] == "cost") return cmd_cost(flags);
  if (args[0] == "tenants") return cmd_tenants(flags);
  std::cerr << "valleyctl: unknown command \"" << args[0] << "\"\n\n" << kUsage;
  return 2;
}
