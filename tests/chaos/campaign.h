// The chaos campaign's driver (valley-chaos): its set-up and stream of tasks (chaos.cc) and its
// faults (faults.cc). See chaos.cc for what a run does.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "operator/kube/informer.h"
#include "tests/chaos/checker.h"
#include "tests/chaos/proxy.h"
#include "tests/chaos/replicas.h"
#include "tests/e2e/support.h"
#include "tests/storage/versitygw.h"

namespace valley::chaos {

using namespace std::chrono_literals;
using e2e::ChildProcess;
using kube::resources::kConfigMaps;
using kube::resources::kLeases;
using kube::resources::kNodes;
using kube::resources::kPods;
using kube::resources::kPricingPolicies;
using kube::resources::kSecrets;
using kube::resources::kServices;
using kube::resources::kTrainingTasks;
using Clock = std::chrono::steady_clock;

inline const std::string kNs = "valley-chaos";
inline const std::string kExpect = "chaos.valley.dev/expect";

inline double wall_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }
inline double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Options {
  uint64_t seed = 1;
  int seconds = 120;
  std::string out = "bench/results/chaos.json";
  std::string logs;  // where operator logs go
  bool calm = false;  // the same stream of tasks without faults: a control run for the checker's rules
  std::string previous_operator;  // the previous release's build: upgrade and downgrade faults
};

class Campaign {
 public:
  explicit Campaign(Options o) : o_(std::move(o)), rng_(o_.seed), admin_(e2e::unlimited_admin()) {}

  int run();

 private:
  // --- set-up ---
  void prepare();
  std::string proxied_kubeconfig();
  std::string leader();
  // --- the stream of tasks ---
  void create_task();
  void act_on_a_task();
  json annotations_for(const std::string& run_time, const std::string& exit_code = "0");
  // --- faults ---
  void kill_leader();
  void restart(const std::string& component);
  void disrupt_node();
  void notice(const json& node);
  void delete_node(const std::string& name);
  bool step_clock();
  void rollout(bool previous_build);
  void follow_recovery();
  // --- checking ---
  Snapshot snapshot();
  void look(bool final);
  bool settled();

  double uniform(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng_); }
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  void log(const std::string& what) {
    std::printf("[%7.1fs] %s\n", since(start_), what.c_str());
    std::fflush(stdout);
  }

  Options o_;
  std::mt19937_64 rng_;
  std::unique_ptr<kube::Client> admin_;
  std::unique_ptr<testing::VersityGw> s3_;
  std::unique_ptr<Proxy> proxy_;
  std::string kubeconfig_;
  std::unique_ptr<Replicas> replicas_;
  Clock::time_point start_ = Clock::now();

  std::mutex checker_mu_;
  // Orphans: the garbage collector is Kubernetes'; after an API-server restart it takes its time
  // (over 60 s was seen), so the continuous rule allows 3 minutes; the final look allows none.
  Checker checker_{PriceBook{{{{"nvidia", "on-demand"}, 3'600'000}, {{"nvidia", "spot"}, 1'800'000},
                              {{"amd", "on-demand"}, 2'000'000}, {{"amd", "spot"}, 1'000'000}}},
                   180};
  std::unique_ptr<kube::Informer> task_watch_;

  int tasks_created_ = 0, task_serial_ = 0;
  std::map<std::string, int> by_kind_, by_expectation_, actions_;
  std::map<std::string, int> faults_;
  std::vector<std::string> removed_nodes_;
  // Recovery after a leader kill: until a new leader holds the Lease, and until it has reconciled
  // a change made to the probe task at the moment of the kill.
  struct Kill {
    Clock::time_point at;
    std::string old_leader;
    int64_t probe_generation = 0;
    std::optional<double> leaderless, recovered;
  };
  std::vector<Kill> kills_;
  int probe_priority_ = 0;
  // Clock steps: offsets from the real time, alternately ahead and behind.
  int clock_steps_ = 0;
  std::chrono::seconds clock_offset_{0};
  json rollouts_ = json::array();
};

}  // namespace valley::chaos
