// What a task's own progress says about how it scales, and the growth rule built on it (pure).
//
// Observations are the workload's progress (steps per second) measured at each worker count and
// placement shape (how many nodes the workers ran on), from two checkpoint records (latest.json) of
// one epoch; they live in the task's status.scaling, so they survive operator restarts. The rule: a task grows only while the next workers pay for themselves,
// i.e. the marginal speedup per added worker is at least `min_marginal` of linear (linear = the
// per-worker rate at the task's own minimum size). Each measured size is judged on its own step from
// the size reached, so a dip does not hide a larger size that pays; sizes above every measurement are
// explored one step at a time; a size that turned out not to pay is given back. Before any
// measurement a task runs at its minimum.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace valley::planner {

struct ScalingSample {
  int workers = 0;
  double rate = 0;  // steps per second, mean over samples
  int samples = 0;
  int nodes = 0;  // how many nodes the workers ran on; 0: not recorded (an earlier release's entry)
  bool operator==(const ScalingSample&) const = default;
};
// Sorted by workers, then nodes. The rules below that judge sizes take one entry per size
// (by_size); a task's status holds one per size and shape.
using Scaling = std::vector<ScalingSample>;

// Folds one measured rate at `workers` on `nodes` nodes into the observations (running mean).
Scaling observe(Scaling s, int workers, double rate, int nodes = 0);

// One entry per size: the mean over its shapes, by samples: what the size yielded where the planner
// could put it. The size rules below judge that; shape_step_pays then judges the shape a step lands on.
Scaling by_size(const Scaling& shapes);

// The rate between two checkpoint records of one run (steps, RFC 3339 times); nullopt when they
// are not comparable (same time, step not increasing).
std::optional<double> progress_rate(int64_t step0, const std::string& time0, int64_t step1, const std::string& time1);

// status.scaling <-> values, one entry per size and shape; malformed entries are skipped (the status
// is the API server's, not ours).
Scaling scaling_from(const nlohmann::json& status_scaling);
nlohmann::json scaling_json(const Scaling& s);

// The anti-thrash step from size n (at least min_gain workers or min_gain_fraction of n).
int growth_step(int n, int min_gain_workers, double min_gain_fraction);

// Linear: the per-worker rate at the task's minimum size (interpolated; below every measurement, the
// smallest measured size's per-worker rate).
double linear_rate(const Scaling& s, int min);

// The mean marginal speedup of the step from `from` to `to` workers, as a share of linear_rate; 1
// where the step reaches above every measurement (the task's own measurement there decides).
double step_marginal(const Scaling& s, int from, int to, int min);

// The size a task should run at: `current` workers now (0 = not running), within [min, max].
// From min, each measured size (ascending; one above max is read at max) becomes the size reached
// when the step to it from the size reached so far pays. Not running or below it: that size.
// At it: one growth step up when nothing above it was measured (exploration), else stay. Above it:
// back to it when a size in between (or the current one) was measured, else stay (await the measure).
int paying_size(const Scaling& s, int current, int min, int max, int step_workers, double min_gain_fraction,
                double min_marginal);

// The size a task that did not ask to wait (no reduceCost: time over money) should run at, with
// `current` workers now (0 = not running): each measured size judged as paying_size judges it, at
// `min_marginal` (the exchange rate of its priority band); where nothing above the size reached was
// measured to fall short, max: a size not yet measured is taken to pay, so the task starts as
// large as the free GPUs allow instead of growing a checkpoint-restart at a time. Never below
// `current`: a size measured not to pay is kept (no restart for cost alone) until something else
// needs its GPUs.
int timely_size(const Scaling& s, int current, int min, int max, double min_marginal);

// Whether growing from `from` workers on `from_nodes` nodes to `to` workers on `to_nodes` pays (the
// step's marginal speedup at least `min_marginal` of linear), by what the task measured of
// placement shapes; nullopt when the shapes say nothing the size rule does not:
// - `to` measured on `to_nodes`: that rate decides;
// - `to` measured only on more nodes than `to_nodes`: its rate on the fewest of those narrowed back
//   by the widening the task measured (below), else true: the narrower shape is untried (a size
//   measured not to pay across nodes may pay on fewer);
// - `to` measured only on fewer nodes: its rate on the most nodes measured below `to_nodes` times
//   the widening factor for the nodes added: the ratio of one size's rate on more nodes to its rate
//   on its fewest, as the task measured it, interpolated from 1 at no node added, the widest
//   measured's beyond it; nullopt when it never measured one size on two node counts;
// - `to` not measured, on more nodes than `from_nodes`: the size curve's rate at `to` (by_size,
//   interpolated) widened by the nodes added to from_nodes, as above.
// The rate at `from` is its measurement on `from_nodes`, else the size curve's; linear is the size
// rule's. Entries without a recorded shape teach no widening.
std::optional<bool> shape_step_pays(const Scaling& shapes, int from, int from_nodes, int to, int to_nodes, int min, double min_marginal);

// What the tasks of one kind (the same worker image) measured, pooled: a task that has not measured
// two sizes itself sizes by it (paying_size on the pooled curve) instead of starting at its minimum
// and growing one measured step at a time. Each task's per-worker rate by size is taken relative to
// its smallest measured size, joined to the pooled curve so far at the pool's rate for that size
// (interpolated or extrapolated; tasks in order of their smallest size), and averaged by size over the
// kind's latest kMaxPriorTasks tasks.
class ScalingPriors {
 public:
  static constexpr size_t kMaxPriorTasks = 64;
  // The task's observations (replacing its earlier ones); fewer than two sizes teach nothing.
  void record(const std::string& kind, const std::string& task, const Scaling& s);
  // The pooled curve of the kind (rates relative to a worker at its smallest size); null: none yet.
  std::shared_ptr<const Scaling> pooled(const std::string& kind) const;

 private:
  struct Kind {
    std::map<std::string, Scaling> by_task;
    std::vector<std::string> order;  // oldest first
    std::shared_ptr<const Scaling> pooled;
  };
  static std::shared_ptr<const Scaling> pool(const std::map<std::string, Scaling>& by_task);
  std::map<std::string, Kind> kinds_;
};

// The speedup from `from` to `to` workers the observations imply (measured, interpolated, or
// extrapolated at the last measured marginal efficiency; with no measurement, `prior_efficiency`
// per added worker). Used for durations in estimates and deadlines.
double speedup_ratio(const Scaling& s, int from, int to, double prior_efficiency);

// When a task started at `start` with `duration_at_max` (its estimatedDuration) is expected to end
// while running `workers` of `max` (the longer, the fewer workers, by speedup_ratio).
std::chrono::system_clock::time_point expected_end(std::chrono::system_clock::time_point start,
                                                   std::chrono::milliseconds duration_at_max, const Scaling& s,
                                                   int workers, int max, double prior_efficiency);

// Until when a reduceCost task may wait for cheaper capacity. Without a deadline: its patience from
// creation. With one: the latest start from which it still finishes in time at the smallest size it
// may run (its remaining estimatedDuration stretched by the speedup it would lack), less a restart's
// allowance; without estimatedDuration, the earlier of the patience and the deadline.
// `done_fraction`: the share of its work done so far (0 for a new task).
std::chrono::system_clock::time_point cheap_until(std::chrono::system_clock::time_point created,
                                                  std::chrono::seconds patience,
                                                  std::optional<std::chrono::system_clock::time_point> deadline,
                                                  std::optional<std::chrono::milliseconds> duration_at_max, double done_fraction,
                                                  const Scaling& s, int min, int max, double prior_efficiency);

}  // namespace valley::planner
