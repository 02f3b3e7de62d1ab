// The cost engine, pure: what a pod's use of GPUs costs over an interval, split at tariff
// boundaries (time zone and DST aware), in integer micro-units; each task's accrual from its pods'
// actual running intervals, kept in its status so it survives operator restarts and is never
// counted twice; the estimate shown at submission.
//
// Per interval: GPU = price per GPU-hour (by vendor, product, spot or on-demand) x GPUs held x hours;
// energy = watts per GPU x GPUs held x PUE x hours x the tariff's price per kWh. A fractional GPU
// (MIG slice, time-sliced replica) counts as its share. The task's total is (GPU + energy) x the
// priority multiplier, rounded once.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "controllers/cost/duration_spread.h"
#include "controllers/cost/policy.h"
#include "controllers/api/pod.h"
#include "controllers/api/spec.h"

namespace valley::cost {

struct Charge {
  Micros gpu = 0, energy = 0;
  std::map<std::string, int64_t> gpu_milli_seconds;  // by "vendor/class", GPU-seconds x 1000
  std::map<std::string, int64_t> micro_wh;           // by tariff name
  void add(const Charge& other);
  void subtract(const Charge& other);
};

// One pod holding `share_milli` thousandths of a GPU on a node priced `rate`, from..to.
Charge charge_interval(const Policy& p, const NodeRate& rate, int64_t share_milli, SystemTime from, SystemTime to);

Micros apply_multiplier(Micros amount, int64_t multiplier_milli);

// A pod's use as the API shows it.
struct PodUse {
  std::string uid, name, node;
  int64_t share_milli = 0;           // GPUs held, thousandths
  std::optional<SystemTime> start;   // first container started
  std::optional<SystemTime> end;     // all containers ended (or deleted while not running)
};
PodUse pod_use(const api::Pod& pod);

// Brings status.cost (as stored; empty for a new task) up to `now` for the task's pods. `rates`
// holds the rate of every node that exists; a pod on a node gone since keeps the rate its ledger
// entry captured. Ledger entries are dropped with their pods: a pod never comes back, so nothing
// is charged twice. An ended pod is charged to its end. A running pod is charged up to `now` less
// `settle`, in whole seconds: its end reaches us late (cache lag, a watch broken by a fault) and
// with a second's precision, and what is charged is never given back, so that the accrued cost
// never goes down; should an end still come earlier than charged, the excess is given back so the
// final cost stays exact. `finished` also writes cost.final. `priority` is the one the task is
// planned at (its tenant's default and cap applied), recorded as cost.priority.
nlohmann::json accrue(const Policy& p, const nlohmann::json& cost_status, const std::vector<PodUse>& pods,
                      const std::map<std::string, NodeRate>& rates, int priority, SystemTime now, bool finished,
                      std::chrono::seconds settle = std::chrono::seconds(0));

// How many entries accrue() leaves in the ledger for `pods`, without accruing: when it differs from
// the stored ledger's size, a pod started holding GPUs or went, which is news however recent the
// last accrual.
size_t ledger_entries(const nlohmann::json& cost_status, const std::vector<PodUse>& pods, const std::map<std::string, NodeRate>& rates);

// The pod's cost is all in `cost_status`: it never held a GPU, or it has ended and its ledger entry
// has charged it to its end. (When its end will never be known, the caller charges it to now.)
bool charged_to_end(const PodUse& pod, const nlohmann::json& cost_status);

// How often a running task's accrued cost is written: every `base`, or less often when that many
// tasks would write more than `writes_per_second` between them (each write is a status PUT the API
// server stores and sends to every watcher; the final cost stays exact whatever the interval).
std::chrono::seconds accrual_interval(std::chrono::seconds base, size_t accruing_tasks, double writes_per_second);

// The accrued total in status.cost, in micros (0 when absent).
Micros accrued_micros(const nlohmann::json& cost_status);

// The estimate for a task, from what the planner decided for it: the pool it runs on or waits for
// (`rate`), when it starts, the size it runs at (elastic tasks: where growth pays; fixed or fastest
// tasks: max) and how much longer than estimatedDuration (its duration at max workers) that size
// takes. The range: `low` = the size never grows and gains nothing from it (GPU-hours = workers x
// duration) at the cheapest tariff; `high` = it grows to max at linear speedup (GPU-hours = max x
// duration) at the dearest tariff. Both on the expected pool, and with the duration the user stated
// scaled by the spread's low and high ends (duration_spread.h): the user's duration is a guess.
struct EstimateBasis {
  NodeRate rate;
  SystemTime start{};
  int workers = 1;
  double duration_factor = 1;  // run time at `workers` / estimatedDuration
  std::string why;             // where the pool and start come from, for the user
  DurationSpread spread;       // how far the stated duration may be off
  // Not placed yet: the dearest capacity it may be placed on, when dearer than `rate` (the high end
  // assumes it; the planner may place it there once the cheaper capacity is gone).
  std::optional<NodeRate> high_rate;
  // Sharing a GPU (spec.worker.sharing): where it is placed on a shared GPU, the share of it a
  // worker is charged and the lowest rate beside a partner it may run at (the run takes 1 / that
  // longer; alone, it runs at full speed); not placed yet, only that it may share (the low end
  // assumes a shared GPU's share of `rate`, alone).
  struct Shared {
    int64_t share_milli = 500;
    double worst_rate = 1;
    bool placed = false;
  };
  std::optional<Shared> shared;
  int priority = -1;  // the priority it is planned at, which its multiplier bills (-1: spec.priority)
};
struct Estimate {
  Micros expected = 0, low = 0, high = 0;
  int workers = 1, max_workers = 1;
  std::chrono::milliseconds duration{0};
  int64_t gpu_milli_hours = 0;
  SystemTime start{};
  std::string basis, low_basis, high_basis;  // what was assumed, for the user
};
std::optional<Estimate> estimate(const Policy& p, const api::TaskSpec& spec, const EstimateBasis& basis);
nlohmann::json estimate_json(const Policy& p, const Estimate& e);

}  // namespace valley::cost
