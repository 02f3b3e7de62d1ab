// valleyctl: the user's command line for Valley (also usable as the kubectl plugin `kubectl-valley`).
// Commands so far: version.
#include <iostream>

#include "operator/flags.h"
#include "operator/kube/client.h"
#include "operator/kube/error.h"
#include "valley/version.h"

namespace {

constexpr const char* kUsage = R"(valleyctl: run and inspect Valley training tasks

usage: valleyctl [flags] COMMAND

commands:
  version   print the client version and, when a cluster is reachable, the server's
)";

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
  std::cerr << "valleyctl: unknown command \"" << args[0] << "\"\n\n" << kUsage;
  return 2;
}
