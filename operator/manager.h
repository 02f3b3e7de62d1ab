// The operator's process lifecycle: connect to the API server, win leader election (unless
// disabled), run the registered controllers while leading, stop them on SIGTERM (releasing the
// lease) or when leadership is lost (then the process exits non-zero so a fresh replica campaigns:
// a former leader must never keep acting).
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "operator/kube/client.h"
#include "operator/kube/leader_election.h"
#include "operator/signals.h"

namespace valley {

struct ManagerOptions {
  bool leader_elect = true;
  kube::LeaderElectionConfig leader_election;
};

// A controller (or any loop) that runs only on the leader: it returns when `stop` becomes true.
struct LeaderTask {
  std::string name;
  std::function<void(const std::atomic<bool>& stop)> run;
};

class Manager {
 public:
  // `lease_client`: the client the lease is renewed through (its own connection, rate limit and
  // deadline per attempt, so that the controllers' requests never delay a renewal); null: `client`.
  Manager(kube::Client& client, ManagerOptions options, ShutdownSignal& shutdown, kube::Client* lease_client = nullptr);
  void add(LeaderTask task);
  // Returns the process exit code: 0 after an orderly shutdown, 1 after lost leadership or a fatal error.
  int run();
  bool leading() const { return leading_.load(); }
  // Whether the controllers may write: without leader election always; with it, only while this
  // replica's lease is valid (LeaderElector::lease_valid). The controllers' client is fenced by it.
  bool may_write() const;

 private:
  bool wait_for_api_server();
  void start_tasks();
  void stop_tasks();

  kube::Client& client_;
  ManagerOptions options_;
  ShutdownSignal& shutdown_;
  std::vector<LeaderTask> tasks_;
  std::vector<std::thread> threads_;
  std::atomic<bool> tasks_stop_{false};
  std::atomic<bool> leading_{false};
  kube::Client* lease_client_;
  std::atomic<const kube::LeaderElector*> elector_{nullptr};
};

}  // namespace valley
