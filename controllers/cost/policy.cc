#include "controllers/cost/policy.h"

#include <algorithm>

namespace valley::cost {
namespace {

bool matches(const std::string& want_vendor, const std::string& want_product, const std::string& vendor, const std::string& product) {
  return (want_vendor.empty() || want_vendor == vendor) && (want_product.empty() || want_product == product);
}

// Local calendar facts of an instant.
struct Local {
  int64_t day;     // days since 1970-01-01 (local)
  int weekday;     // 0 = Sunday
  int minute;      // of the day
  int64_t offset;  // seconds
};
Local local(const Policy& p, SystemTime t) {
  int64_t off = p.zone.offset(t).count();
  int64_t s = std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count() + off;
  int64_t day = s >= 0 ? s / 86400 : (s - 86399) / 86400;
  int64_t sec = s - day * 86400;
  int weekday = static_cast<int>(((day % 7) + 7 + 4) % 7);  // 1970-01-01 was a Thursday
  return {day, weekday, static_cast<int>(sec / 60), off};
}

bool in_window(const TariffWindow& w, const Local& l) {
  if (w.start < w.end) return (w.days >> l.weekday & 1) && l.minute >= w.start && l.minute < w.end;
  // Wraps midnight: the evening part on its own day, the morning part on the day after.
  if (l.minute >= w.start) return w.days >> l.weekday & 1;
  if (l.minute < w.end) return w.days >> ((l.weekday + 6) % 7) & 1;
  return false;
}

}  // namespace

NodeRate rate_for(const Policy& p, const std::string& vendor, const std::map<std::string, std::string>& labels,
                  const std::string& product_fallback) {
  api::PriceClass c{vendor, "on-demand", product_fallback};
  for (const auto& l : p.product_labels)
    if (auto it = labels.find(l); it != labels.end()) {
      c.product = it->second;
      break;
    }
  for (const auto& [k, v] : p.spot_labels)
    if (auto it = labels.find(k); it != labels.end() && it->second == v) c.capacity_class = "spot";
  return rate_for_class(p, c);
}

NodeRate rate_for_class(const Policy& p, const api::PriceClass& c) {
  NodeRate n;
  n.vendor = c.vendor;
  n.product = c.product;
  n.capacity_class = c.capacity_class == "spot" ? "spot" : "on-demand";
  for (const auto& g : p.gpu)
    if (matches(g.vendor, g.product, n.vendor, n.product)) {
      n.gpu_per_hour = n.capacity_class == "spot" ? g.spot : g.on_demand;
      break;
    }
  n.watts = p.default_watts;
  for (const auto& w : p.watts)
    if (matches(w.vendor, w.product, n.vendor, n.product)) {
      n.watts = w.watts;
      break;
    }
  return n;
}

api::PriceClass price_class_of(const NodeRate& rate) { return {rate.vendor, rate.capacity_class, rate.product}; }

int64_t multiplier_milli(const Policy& p, int priority) {
  int64_t m = 1000;
  for (const auto& s : p.priority)
    if (priority >= s.min_priority) m = s.multiplier_milli;
  return m;
}

Tariff tariff_at(const Policy& p, SystemTime t) {
  Local l = local(p, t);
  for (const auto& w : p.windows)
    if (in_window(w, l)) return {w.name, w.per_kwh};
  return {p.flat_name, p.flat_per_kwh};
}

SystemTime next_tariff_boundary(const Policy& p, SystemTime t) {
  Local l = local(p, t);
  int next = 1440;  // local midnight
  for (const auto& w : p.windows)
    for (int edge : {w.start, w.end})
      if (edge > l.minute && edge < next) next = edge;
  // The boundary in local time, back to UTC with today's offset; a DST switch in between comes first.
  int64_t local_s = l.day * 86400 + int64_t{next} * 60;
  SystemTime b{std::chrono::seconds(local_s - l.offset)};
  if (auto change = p.zone.next_change(t); change && *change < b) b = *change;
  if (b <= t) b = t + std::chrono::minutes(1);  // never stall (a boundary skipped by a DST jump)
  return b;
}

namespace {
// The cheapest tariff in use in a week (the flat one only if some minute falls outside every window).
Micros cheapest(const Policy& p) {
  Micros m = INT64_MAX;
  for (const auto& w : p.windows) m = std::min(m, w.per_kwh);
  for (int day = 0; day < 7 && m > p.flat_per_kwh; ++day)
    for (int minute = 0; minute < 1440; ++minute) {
      Local l{0, day, minute, 0};
      if (std::none_of(p.windows.begin(), p.windows.end(), [&](const TariffWindow& w) { return in_window(w, l); })) {
        m = std::min(m, p.flat_per_kwh);
        break;
      }
    }
  return m;
}
}  // namespace

bool off_peak(const Policy& p, SystemTime t) { return tariff_at(p, t).per_kwh <= cheapest(p); }

std::optional<SystemTime> next_off_peak(const Policy& p, SystemTime t) {
  SystemTime end = t + std::chrono::hours(24 * 8);
  for (SystemTime c = t; c < end; c = next_tariff_boundary(p, c))
    if (off_peak(p, c)) return c;
  return std::nullopt;
}

}  // namespace valley::cost
