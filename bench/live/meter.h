// The live benchmark's meter, independent of any scheduler's accounting: what each job's pods cost
// from the moment they are bound to a node until they end (finished, deleted, or their node gone),
// priced by the PricingPolicy from the labels of the pool their node belongs to, with the job's
// priority multiplier; and each job's completion time from submission. Pure: the harness feeds it
// what it observes, in trace seconds.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bench/live/live_jobs.h"
#include "controllers/cost/policy.h"

namespace valley::live {

class Meter {
 public:
  // pool_of(node name) -> the pool, or nullptr for a node outside the benchmark's fleet (charged
  // nothing: it holds no GPU the benchmark prices).
  explicit Meter(const sim::Cluster& cluster) : cluster_(cluster) {}

  void submitted(const std::string& job, double t);
  void completed(const std::string& job, double t);
  // A pod of `job` seen bound to `node` holding `gpus` GPUs; later calls for the same uid change nothing.
  void bound(const std::string& job, const std::string& uid, const std::string& node, int gpus, double t);
  void ended(const std::string& uid, double t);
  void node_gone(const std::string& node, double t);

  struct JobFigures {
    std::string name, cls;
    bool reduce_cost = false;
    int gpus = 0, priority = 0;
    double submit = 0, end = -1;  // -1: not complete
    api::Micros cost = 0;
    double gpu_seconds = 0;
    std::map<std::string, double> pool_gpu_seconds;  // where they were held
  };
  struct Figures {
    std::vector<JobFigures> jobs;
    api::Micros cost = 0;
    double mean_jct = 0, p95_jct = 0, mean_jct_not_reduce_cost = 0, makespan = 0;  // seconds
    int finished = 0, unfinished = 0;
    std::map<std::string, double> pool_gpu_hours;
  };
  // Everything priced up to `now` (pods still bound are charged until then); `zero`: trace second 0.
  Figures figures(const std::vector<LiveJob>& jobs, const cost::Policy& pricing, kube::SystemTime zero, double now) const;

 private:
  struct Span {
    std::string job, node;
    int gpus = 0;
    double from = 0, to = -1;
  };
  const sim::Pool* pool_of(const std::string& node) const;
  const sim::Cluster& cluster_;
  std::map<std::string, Span> spans_;  // by pod uid
  std::map<std::string, double> submit_, end_;
};

// The live fleet's node names: `<prefix><pool>-<i>`; the pool part is what pricing and the spot
// schedule know it by.
std::string pool_node_name(const std::string& node, const std::string& prefix);

}  // namespace valley::live
