// valleyctl: the user's command line for Valley (also usable as the kubectl plugin `kubectl-valley`).
// Commands: version, submit, estimate, list, describe, cost, tenants, outputs, report,
// migrate-storage (common.h).
#include <iostream>
#include <string>
#include <vector>

#include "cmd/valleyctl/common.h"

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
  outputs NAME     where the task's outputs are kept, whether they were, and what is there
  report NAME      Valley's report of an ended task as an HTML page (--file PATH; -o json: its JSON)
  capacity         the GPUs the cluster offers, as Valley's planner reads them: by vendor, capacity
                   class, kind (whole, dra, mig, mps, time-sliced) and product, free, a GPU-hour's price
  tenants          each Tenant: its namespaces, GPUs used/nominal, borrowed, lent, fair share,
                   spend this period against its budget, waiting tasks, and why it is not Ready
  migrate-storage  after an upgrade: rewrite Valley's objects in the version their CRDs store and
                   record that no older version is stored (--dry-run: count only); README, Upgrading
)";

}  // namespace

using namespace valley::ctl;

int main(int argc, char** argv) {
  valley::Flags flags({
      {"kubeconfig", "", "path to a kubeconfig; empty: $KUBECONFIG, in-cluster, then ~/.kube/config"},
      {"context", "", "kubeconfig context to use"},
      {"policy", "", "estimate: a PricingPolicy file instead of the cluster's"},
      {"pricing-policy", "default", "estimate: the cluster's PricingPolicy to use"},
      {"node-selector", "", "estimate, capacity: only the nodes this label selector selects (the operator's --node-selector)"},
      {"duration", "", "estimate: the run time at max workers, when the file has none (e.g. 6h)"},
      {"output", "text", "-o: text, yaml or json", false},
      {"namespace", "", "-n: the namespace; empty: the kubeconfig's"},
      {"all-namespaces", "false", "-A: list, cost: every namespace", true},
      {"valley-namespace", "valley-system", "cost: where Valley keeps the costs of deleted tasks (its own namespace)"},
      {"file", "", "report: where to write the page (default NAME-report.html)"},
      {"dry-run", "false", "submit: validate with the API server without creating; migrate-storage: count only", true},
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
  if (args[0] == "capacity") return with_cluster([&] { return cmd_capacity(flags); });
  if (args[0] == "tenants") return cmd_tenants(flags);
  if (args[0] == "outputs") return cmd_outputs(flags, args);
  if (args[0] == "report") return cmd_report(flags, args);
  if (args[0] == "migrate-storage") return cmd_migrate_storage(flags);
  std::cerr << "valleyctl: unknown command \"" << args[0] << "\"\n\n" << kUsage;
  return 2;
}
