// valley-operator: the Valley controller process. At this stage it connects to the API server named
// by a kubeconfig or the in-cluster service account, reports the server version, and runs until
// SIGTERM/SIGINT. Controllers, leader election and the HTTP endpoints join it in later issues.
#include <spdlog/spdlog.h>

#include <chrono>
#include <iostream>

#include "operator/flags.h"
#include "operator/kube/client.h"
#include "operator/kube/error.h"
#include "operator/logging.h"
#include "operator/signals.h"
#include "valley/version.h"

namespace {

valley::Flags make_flags() {
  return valley::Flags({
      {"kubeconfig", "", "path to a kubeconfig; empty: $KUBECONFIG, in-cluster, then ~/.kube/config"},
      {"context", "", "kubeconfig context to use; empty: the current context"},
      {"log-level", "info", "trace, debug, info, warn or error"},
      {"version", "false", "print the version and exit", true},
      {"help", "false", "print this help and exit", true},
  });
}

}  // namespace

int main(int argc, char** argv) {
  valley::ShutdownSignal shutdown;  // first: blocks the signals before any other thread starts
  valley::Flags flags = make_flags();
  try {
    auto positional = flags.parse(argc, argv);
    if (!positional.empty()) throw std::invalid_argument("unexpected argument \"" + positional[0] + "\"");
  } catch (const std::invalid_argument& e) {
    std::cerr << "valley-operator: " << e.what() << "\n\nflags:\n" << flags.usage();
    return 2;
  }
  if (flags.get_bool("help")) {
    std::cout << "valley-operator: runs Valley's controllers\n\nflags:\n" << flags.usage();
    return 0;
  }
  if (flags.get_bool("version")) {
    std::cout << "valley-operator " << valley::kVersion << " (" << valley::kGitCommit << ")\n";
    return 0;
  }
  try {
    valley::init_logging(flags.get("log-level"));
  } catch (const std::exception& e) {
    std::cerr << "valley-operator: " << e.what() << "\n";
    return 2;
  }

  spdlog::info("valley-operator {} ({}) starting", valley::kVersion, valley::kGitCommit);
  std::unique_ptr<valley::kube::Client> client;
  try {
    auto config = valley::kube::load_default(flags.get("kubeconfig"), flags.get("context"));
    spdlog::info("API server {} from {}", config.server, config.source);
    client = std::make_unique<valley::kube::Client>(std::move(config));
  } catch (const valley::kube::KubeError& e) {
    spdlog::error("configuration: {}", e.what());
    return 1;
  }

  // The API server may be restarting (or not up yet when we are): retry, with backoff, until it
  // answers or we are told to stop. Authentication and authorization failures will not heal: exit.
  std::chrono::milliseconds backoff(200);
  for (;;) {
    try {
      auto version = client->server_version();
      spdlog::info("connected: Kubernetes {} (platform {})", version.value("gitVersion", "?"), version.value("platform", "?"));
      break;
    } catch (const valley::kube::KubeError& e) {
      if (e.http_status() == 401 || e.http_status() == 403) {
        spdlog::error("the API server refused our credentials: {}", e.what());
        return 1;
      }
      spdlog::warn("API server not reachable yet, retrying in {} ms: {}", backoff.count(), e.what());
    }
    if (shutdown.wait_for(backoff)) break;
    backoff = std::min(backoff * 2, std::chrono::milliseconds(10000));
  }

  shutdown.wait();
  spdlog::info("signal {} received, shutting down", shutdown.signal_number());
  return 0;
}
