#include "operator/manager.h"

#include <spdlog/spdlog.h>

#include "operator/kube/error.h"

namespace valley {

Manager::Manager(kube::Client& client, ManagerOptions options, ShutdownSignal& shutdown, kube::Client* lease_client)
    : client_(client), options_(std::move(options)), shutdown_(shutdown), lease_client_(lease_client ? lease_client : &client) {}

bool Manager::may_write() const {
  if (!options_.leader_elect) return true;
  const kube::LeaderElector* elector = elector_.load();
  return elector && elector->lease_valid();
}

void Manager::add(LeaderTask task) { tasks_.push_back(std::move(task)); }

bool Manager::wait_for_api_server() {
  // The API server may be restarting (or not up yet when we are): retry with backoff until it
  // answers or we are told to stop. Refused credentials will not heal: give up on those.
  std::chrono::milliseconds backoff(200);
  for (;;) {
    try {
      auto version = client_.server_version();
      spdlog::info("connected: Kubernetes {} (platform {})", version.value("gitVersion", "?"), version.value("platform", "?"));
      return true;
    } catch (const kube::KubeError& e) {
      if (e.http_status() == 401 || e.http_status() == 403) {
        spdlog::error("the API server refused our credentials: {}", e.what());
        return false;
      }
      spdlog::warn("API server not reachable yet, retrying in {} ms: {}", backoff.count(), e.what());
    }
    if (shutdown_.wait_for(backoff)) return false;
    backoff = std::min(backoff * 2, std::chrono::milliseconds(10000));
  }
}

void Manager::start_tasks() {
  tasks_stop_ = false;
  for (auto& task : tasks_) {
    spdlog::info("starting {}", task.name);
    threads_.emplace_back([this, &task] { task.run(tasks_stop_); });
  }
  spdlog::info("leading: {} controller(s) running", tasks_.size());
}

void Manager::stop_tasks() {
  tasks_stop_ = true;
  for (auto& t : threads_) t.join();
  threads_.clear();
}

int Manager::run() {
  if (!wait_for_api_server()) return shutdown_.requested() ? 0 : 1;

  if (!options_.leader_elect) {
    leading_ = true;
    start_tasks();
    shutdown_.wait();
    spdlog::info("signal {} received, shutting down", shutdown_.signal_number());
    stop_tasks();
    return 0;
  }

  bool lost = false;
  kube::LeaderCallbacks callbacks;
  callbacks.on_started_leading = [this] {
    leading_ = true;
    start_tasks();
  };
  callbacks.on_stopped_leading = [this, &lost] {
    leading_ = false;
    stop_tasks();
    lost = !shutdown_.requested();
  };
  callbacks.on_new_leader = [this](const std::string& id) {
    if (id != options_.leader_election.identity) spdlog::info("leader election: the leader is {}", id);
  };
  kube::LeaderElector elector(*lease_client_, options_.leader_election, callbacks);
  elector_ = &elector;
  elector.run(*shutdown_.flag());
  elector_ = nullptr;
  if (lost) {
    spdlog::error("lost leadership; exiting so that a fresh process campaigns");
    return 1;
  }
  spdlog::info("signal {} received, shutting down: done", shutdown_.signal_number());
  return 0;
}

}  // namespace valley
