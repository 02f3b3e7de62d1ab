// valleyctl: the user's command line for Valley (also usable as the kubectl plugin `kubectl-valley`).
// Commands so far: version, estimate.
#include <fstream>
#include <iostream>
#include <sstream>

#include "controllers/cost/candidates.h"
#include "controllers/cost/engine.h"
#include "controllers/planner/snapshot.h"
#include "controllers/task/seed.h"
#include "controllers/task/spec.h"
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
  estimate FILE    what a task (a TrainingTask or the seed task format) would cost, without
                   submitting it: the cluster's PricingPolicy and nodes, or --policy FILE
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
  if (valley::task::is_seed_format(doc->value)) {
    std::vector<std::string> errors;
    json task = valley::task::seed_to_task(*doc, "default", &errors);
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

int cmd_estimate(const valley::Flags& flags, const std::vector<std::string>& args) {
  if (args.size() != 2) {
    std::cerr << "usage: valleyctl estimate FILE [--policy FILE] [--duration 6h]\n";
    return 2;
  }
  std::string error;
  auto task = read_task(args[1], &error);
  if (!task) {
    std::cerr << "valleyctl: " << error << "\n";
    return 1;
  }
  if (!flags.get("duration").empty()) (*task)["spec"]["estimatedDuration"] = flags.get("duration");
  if (!(*task)["metadata"].contains("namespace")) (*task)["metadata"]["namespace"] = "default";
  auto parsed = valley::task::parse_task(*task);
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
  auto policy = valley::cost::parse_policy(policy_object, &errors);
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
  auto expected = valley::cost::likely_rate(spec, candidates);
  if (!expected) {
    std::cerr << "valleyctl: no GPU the task could use is priced\n";
    return 1;
  }
  auto now = std::chrono::system_clock::now();
  auto start = now;
  bool wait = spec.reduce_cost && !valley::cost::off_peak(*policy, now);
  if (wait)
    if (auto next = valley::cost::next_off_peak(*policy, now)) start = *next;
  auto e = valley::cost::estimate(*policy, spec, *expected, candidates, start);
  json out = valley::cost::estimate_json(*policy, *e);
  out["task"] = spec.name;
  if (flags.get("output") == "json") {
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::cout << "task        " << spec.name << " (" << (spec.type == valley::task::TaskType::MPI ? "MPI" : "Single") << ", priority "
            << spec.priority << ", " << spec.min_workers << "-" << spec.max_workers << " workers x " << valley::cost::format_milli(spec.gpus.milli)
            << " GPU" << (spec.reduce_cost ? ", reduceCost" : "") << (spec.amd_support ? ", amdSupport" : "") << ")\n";
  std::cout << "gpu-hours   " << out["gpuHours"].get<std::string>() << " (max workers for estimatedDuration; fewer workers run longer)\n";
  std::cout << "expected    " << out["expected"].get<std::string>() << " " << policy->currency << "  " << e->basis << "\n";
  std::cout << "starts      " << (wait ? "at the next off-peak window, " : "now, ") << valley::kube::format_time(start) << "\n";
  std::cout << "range       " << out["low"].get<std::string>() << " - " << out["high"].get<std::string>() << " " << policy->currency
            << "  (cheapest capacity at the cheapest tariff .. dearest at the dearest)\n";
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

int main(int argc, char** argv) {
  valley::Flags flags({
      {"kubeconfig", "", "path to a kubeconfig; empty: $KUBECONFIG, in-cluster, then ~/.kube/config"},
      {"context", "", "kubeconfig context to use"},
      {"policy", "", "estimate: a PricingPolicy file instead of the cluster's"},
      {"pricing-policy", "default", "estimate: the cluster's PricingPolicy to use"},
      {"duration", "", "estimate: the run time at max workers, when the file has none (e.g. 6h)"},
      {"output", "text", "-o: text or json", false},
      {"help", "false", "print this help", true},
  });
  std::vector<std::string> args;
  try {
    args = flags.parse(argc, argv);
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
  std::cerr << "valleyctl: unknown command \"" << args[0] << "\"\n\n" << kUsage;
  return 2;
}
