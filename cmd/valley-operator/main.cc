// valley-operator: the Valley controller process. Connects to the API server named by a kubeconfig
// or the in-cluster service account, wins leader election, and runs the controllers while leading
// until SIGTERM/SIGINT (see operator/manager.h).
#include <spdlog/spdlog.h>

#include <malloc.h>

#include <cstdlib>
#include <iostream>

#include "cmd/valley-operator/options.h"
#include "controllers/render/transfers.h"
#include "controllers/task/controllers.h"
#include "operator/http_server.h"
#include "operator/kube/client.h"
#include "operator/kube/error.h"
#include "operator/kube/events.h"
#include "operator/logging.h"
#include "operator/manager.h"
#include "operator/metrics/registry.h"
#include "operator/signals.h"
#include "valley/version.h"

namespace {

// /healthz and /readyz (and /metrics, unless --metrics-bind-address serves it on its own port).
// False after logging why a server could not start.
bool serve(const valley::Flags& flags, valley::Manager& manager, valley::task::Controllers& controllers,
           std::unique_ptr<valley::HttpServer>& http_server, std::unique_ptr<valley::HttpServer>& metrics_server) {
  auto render_metrics = [] { return valley::metrics::registry().render(); };
  const std::string metrics_address = flags.get("metrics-bind-address");
  if (!flags.get("http-bind-address").empty()) {
    try {
      valley::HttpEndpoints endpoints;
      if (metrics_address.empty()) endpoints.metrics = render_metrics;
      // A standby replica is ready (it serves probes and waits for the lease); the leader once its
      // caches are synced and its workers run.
      endpoints.ready = [&manager, &controllers](std::string* why) {
        if (!manager.leading()) return true;
        if (controllers.running()) return true;
        *why = "leading; caches syncing";
        return false;
      };
      http_server = std::make_unique<valley::HttpServer>(flags.get("http-bind-address"), endpoints);
      spdlog::info("serving {}/healthz, /readyz on port {}", metrics_address.empty() ? "/metrics, " : "", http_server->port());
    } catch (const std::exception& e) {
      spdlog::error("--http-bind-address={}: {}", flags.get("http-bind-address"), e.what());
      return false;
    }
  }
  if (!metrics_address.empty()) {
    try {
      valley::HttpEndpoints endpoints;
      endpoints.metrics = render_metrics;
      metrics_server = std::make_unique<valley::HttpServer>(metrics_address, endpoints);
      spdlog::info("serving /metrics on port {}", metrics_server->port());
    } catch (const std::exception& e) {
      spdlog::error("--metrics-bind-address={}: {}", metrics_address, e.what());
      return false;
    }
  }
  return true;
}

// valley-io's image when --io-image names none: the image this operator runs from (its pod, named
// by POD_NAME in the namespace it runs in), so task pods get the very build that renders them; by
// the digest the kubelet pulled (status.containerStatuses[].imageID) where it names one, so that a
// tag moved since cannot put another image beside the tenant's store credentials.
std::string own_image(valley::kube::Client& client, const std::string& ns) {
  const char* pod = std::getenv("POD_NAME");
  if (pod && *pod) {
    try {
      auto self = client.get(valley::kube::resources::kPods, ns, pod);
      const auto containers = self["spec"].value("containers", nlohmann::json::array());
      for (const auto& c : containers) {
        if (c.value("name", "") != "operator" && containers.size() != 1) continue;
        for (const auto& s : self.value("status", nlohmann::json::object()).value("containerStatuses", nlohmann::json::array()))
          if (s.value("name", "") == c.value("name", "")) {
            const std::string id = s.value("imageID", "");
            if (const auto at = id.find("@sha256:"); at != std::string::npos) return id.substr(id.find("://") == std::string::npos ? 0 : id.find("://") + 3);
          }
        return c.value("image", "");
      }
    } catch (const std::exception& e) {
      spdlog::warn("cannot read this operator's pod {}/{} for its image: {}", ns, pod, e.what());
    }
  }
  return "";
}

// Why --data-cache-class cannot serve ("" when it can, or is not set): a class that binds at once
// would put a node's claim on another node, where the pod pinned to it could never run.
std::string data_cache_unusable(valley::kube::Client& client, const std::string& name) {
  if (name.empty()) return "";
  try {
    auto sc = client.get(valley::kube::resources::kStorageClasses, "", name);
    const std::string mode = sc.value("volumeBindingMode", "Immediate");
    if (mode != "WaitForFirstConsumer") return "its volumeBindingMode is " + mode + "; a node's data cache needs WaitForFirstConsumer";
    return "";
  } catch (const valley::kube::KubeError& e) {
    if (e.http_status() == 404) return "no such StorageClass";
    return std::string("cannot read the StorageClass: ") + e.what();
  }
}

}  // namespace

int main(int argc, char** argv) {
  // Two malloc arenas rather than glibc's eight a core: each informer, reconcile, request and
  // planning thread would otherwise keep freed memory in an arena of its own. MALLOC_ARENA_MAX in
  // the environment still decides when set.
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr) mallopt(M_ARENA_MAX, 2);
  valley::ShutdownSignal shutdown;  // first: blocks the signals before any other thread starts
  valley::Flags flags = valley::op::make_flags();
  valley::op::OperatorOptions options;
  try {
    auto positional = flags.parse(argc, argv);
    if (!positional.empty()) throw std::invalid_argument("unexpected argument \"" + positional[0] + "\"");
    if (flags.get_bool("help")) {
      std::cout << "valley-operator: runs Valley's controllers\n\nflags (or VALLEY_<FLAG> variables):\n" << flags.usage();
      return 0;
    }
    if (flags.get_bool("version")) {
      std::cout << "valley-operator " << valley::kVersion << " (" << valley::kGitCommit << ")\n";
      return 0;
    }
    valley::init_logging(flags.get("log-level"), flags.get("log-format"));
    options = valley::op::parse_options(flags);
  } catch (const std::exception& e) {  // std::stod/stoi throw std::invalid_argument/out_of_range too
    std::cerr << "valley-operator: " << e.what() << "\n\nflags:\n" << flags.usage();
    return 2;
  }

  spdlog::info("valley-operator {} ({}) starting", valley::kVersion, valley::kGitCommit);
  std::unique_ptr<valley::kube::Client> client, lease_client;
  try {
    auto config = valley::kube::load_default(flags.get("kubeconfig"), flags.get("context"));
    spdlog::info("API server {} from {}", config.server, config.source);
    valley::op::with_namespace(options, flags, config.default_namespace);
    const std::string own_namespace = config.default_namespace;
    // The lease is renewed on a client of its own: no rate limit shared with the controllers and no
    // retries, each request bounded by the renew deadline (as client-go bounds a renewal), so a
    // slow API server ends an attempt in time for the deadline to be kept or seen to pass.
    valley::kube::HttpOptions lease_http = options.http;
    lease_http.qps = 0;
    lease_http.retry.max_retries = 0;
    lease_http.request_timeout = options.manager.leader_election.renew_deadline;
    lease_client = std::make_unique<valley::kube::Client>(config, lease_http);
    client = std::make_unique<valley::kube::Client>(std::move(config), options.http);
    if (options.controllers.io_image.empty()) options.controllers.io_image = own_image(*client, own_namespace);
    if (options.controllers.io_image.empty()) options.controllers.io_image = valley::render::kDefaultIoImage;
    spdlog::info("task pods copy data and outputs with {}", options.controllers.io_image);
    if (const std::string why = data_cache_unusable(*client, options.controllers.data_cache_class); !why.empty()) {
      spdlog::error("configuration: --data-cache-class={}: {}", options.controllers.data_cache_class, why);
      return 1;
    }
  } catch (const valley::kube::KubeError& e) {
    spdlog::error("configuration: {}", e.what());
    return 1;
  }

  valley::kube::EventOptions event_options;
  event_options.reporting_instance = options.manager.leader_election.identity;
  valley::kube::EventRecorder events(*client, event_options);
  valley::task::Controllers controllers(*client, events, options.controllers);

  valley::Manager manager(*client, options.manager, shutdown, lease_client.get());
  // Once this replica's lease lapses, nothing more it would write reaches the API server.
  client->http().set_write_fence([&manager] { return manager.may_write(); });
  manager.add({"controllers", [&controllers](const std::atomic<bool>& stop) { controllers.run(stop); }});

  auto& leader = valley::metrics::registry().gauge("valley_leader", "1 while this replica leads and runs the controllers.");
  valley::metrics::registry().add_collector([&] {
    leader.set({}, manager.leading() ? 1 : 0);
    if (manager.leading()) controllers.collect_metrics();
  });
  std::unique_ptr<valley::HttpServer> http_server, metrics_server;
  if (!serve(flags, manager, controllers, http_server, metrics_server)) return 2;
  return manager.run();
}
