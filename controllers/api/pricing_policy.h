// A PricingPolicy (valley.dev/v1beta1, cluster-scoped; the one named "default" is used) as typed
// values: GPU prices by vendor, product and capacity class, electricity tariffs in a time zone,
// priority multipliers, and the reduceCost and growth settings. Parsing is pure apart from reading
// the tz database. The lookups on it (a node's rate, the tariff at an instant) are cost/policy.h.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "controllers/api/money.h"
#include "controllers/api/timezone.h"

namespace valley::api {

using json = nlohmann::json;

struct GpuPrice {
  std::string vendor, product;  // "" matches any
  Micros on_demand = 0, spot = 0;  // per GPU-hour
};
struct GpuWatts {
  std::string vendor, product;
  int watts = 0;
};
// A tariff window in local time: [start, end) minutes of the day on the given weekdays; end <= start
// wraps past midnight (the part after midnight belongs to the day the window started).
struct TariffWindow {
  std::string name;
  Micros per_kwh = 0;
  unsigned days = 0x7f;  // bit 0 = Sunday ... bit 6 = Saturday
  int start = 0, end = 0;  // minutes
};
struct PriorityStep {
  int min_priority = 0;
  int64_t multiplier_milli = 1000;
};

struct Policy {
  std::string name = "default";
  std::string currency = "USD";
  std::vector<GpuPrice> gpu;  // first match wins
  std::vector<std::pair<std::string, std::string>> spot_labels = {{"karpenter.sh/capacity-type", "spot"},
                                                                  {"eks.amazonaws.com/capacityType", "SPOT"},
                                                                  {"cloud.google.com/gke-spot", "true"},
                                                                  {"cloud.google.com/gke-preemptible", "true"}};
  std::vector<std::string> product_labels = {"nvidia.com/gpu.product", "amd.com/gpu.product-name", "gpu.intel.com/product"};
  // Electricity.
  std::string time_zone_name = "UTC";
  TimeZone zone = TimeZone::utc();
  int64_t pue_milli = 1000;
  std::vector<GpuWatts> watts;  // first match wins
  int default_watts = 300;
  std::string flat_name = "flat";
  Micros flat_per_kwh = 0;  // outside every window
  std::vector<TariffWindow> windows;  // first match wins
  std::vector<PriorityStep> priority;  // sorted by min_priority
  int reduce_cost_idle_percent = 50;  // Valley before price-first placement only (valley-sim's valley-v1)
  // How long a reduceCost task without a deadline waits for cheaper capacity before it takes what is free.
  std::chrono::seconds reduce_cost_patience{6 * 3600};
  // A reduceCost task waits for a cheaper option only when it saves at least this share of what it
  // would pay now: a smaller saving does not pay for the chance that the capacity free now is gone.
  int reduce_cost_min_saving_percent = 10;
  // Growth pays while each added worker adds at least this share of linear speedup (thousandths);
  // tasks of at least `growth_fast_priority` grow to max regardless (speed over cost).
  int64_t growth_min_marginal_milli = 800;
  int growth_fast_priority = 90;
  // spec.growth.withoutReduceCost: tasks that did not set reduceCost trade money for time; by the
  // band of their priority (the highest minPriority at or below it) an added worker pays from this
  // share of linear, they start as large as no measurement rules out and are not shrunk for cost.
  // An empty list: they grow as reduceCost tasks do.
  struct TimeBand {
    int min_priority = 0;
    int64_t min_marginal_milli = 0;
  };
  // By default the exchange rate follows the priority multipliers' bands: below 30 (0.8x), an added
  // worker pays from 0.2 of linear; from 30 (1.0x and up), any size that is not slower pays.
  std::vector<TimeBand> growth_time_bands = {{0, 200}, {30, 0}};  // sorted by min_priority
  // What one checkpoint-restart costs a task, as time its GPUs are held without progress (save,
  // reschedule, load). A running task that checkpoints moves to cheaper free capacity at its size
  // when it would save more than that before its expected end; 0 turns moves off.
  std::chrono::seconds move_restart_cost{300};
  // spec.sharing.pairs: two workload profiles measured sharing one GPU (a replica each), each one's
  // rate beside the other in thousandths of its rate alone (what tasks allowing sharing pair by).
  struct SharingPair {
    std::string a, b;
    int64_t a_milli = 0, b_milli = 0;
  };
  std::vector<SharingPair> sharing_pairs;
};

// nullopt + errors ("spec.gpu[1].spot: ...") when the object is not a valid policy.
std::optional<Policy> parse_policy(const json& object, std::vector<std::string>* errors);

// The status Valley writes on every PricingPolicy: Valid (whether Valley accepts it; `errors` from
// parse_policy, empty when it does) and InUse (whether it prices tasks: only the one named
// `selected`, the operator's --pricing-policy, and only while valid). Transition times are kept
// from `object`'s status while a condition's status stays.
json policy_status(const json& object, const std::vector<std::string>& errors, const std::string& currency,
                   const std::string& selected, const std::string& now);

}  // namespace valley::api
