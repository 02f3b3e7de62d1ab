// The lookups the cost engine needs on a PricingPolicy (controllers/api/pricing_policy.h): a node's
// GPU price and wattage, the tariff at an instant, the priority multiplier, off-peak periods.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "controllers/api/pod.h"
#include "controllers/api/pricing_policy.h"

namespace valley::cost {

// The API types the cost engine prices with.
using api::GpuPrice;
using api::GpuWatts;
using api::Micros;
using api::Policy;
using api::PriorityStep;
using api::TariffWindow;
using api::TimeZone;
using api::format_milli;
using api::format_money;
using api::parse_milli;
using api::parse_money;
using api::parse_policy;
using kube::SystemTime;
using json = nlohmann::json;

// What a GPU of a node costs: its vendor, product and capacity class from labels, priced.
struct NodeRate {
  std::string vendor, product, capacity_class = "on-demand";
  Micros gpu_per_hour = 0;
  int watts = 0;
  bool operator==(const NodeRate&) const = default;
};
// `product_fallback`: the product when no product label names one (a DRA GPU's, from its attributes).
// The node's price class (vendor, capacity class, product) priced: rate_for_class.
NodeRate rate_for(const Policy& p, const std::string& vendor, const std::map<std::string, std::string>& labels,
                  const std::string& product_fallback = "");

NodeRate rate_for_class(const Policy& p, const api::PriceClass& c);
api::PriceClass price_class_of(const NodeRate& rate);

int64_t multiplier_milli(const Policy& p, int priority);

// The tariff at `t`: the window's name and price, or the flat one.
struct Tariff {
  std::string name;
  Micros per_kwh = 0;
};
Tariff tariff_at(const Policy& p, SystemTime t);
// The next instant after t at which the tariff may change (a window edge, midnight, or a DST switch).
SystemTime next_tariff_boundary(const Policy& p, SystemTime t);
// Off-peak = the cheapest tariff the policy has. now is off-peak, or when the next off-peak period
// starts (within 8 days; nullopt if never).
bool off_peak(const Policy& p, SystemTime t);
std::optional<SystemTime> next_off_peak(const Policy& p, SystemTime t);

}  // namespace valley::cost
