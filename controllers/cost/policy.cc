#include "controllers/cost/policy.h"

#include "operator/duration.h"

#include <algorithm>

namespace valley::cost {
namespace {

const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};

struct Reader {
  std::vector<std::string>& errors;
  void error(const std::string& e) { errors.push_back(e); }
  std::string str(const json& o, const char* key, const std::string& path, const std::string& def = "") {
    if (!o.contains(key)) return def;
    if (!o[key].is_string()) {
      error(path + ": must be a string");
      return def;
    }
    return o[key].get<std::string>();
  }
  Micros money(const json& o, const char* key, const std::string& path, bool required) {
    if (!o.contains(key)) {
      if (required) error(path + ": required");
      return 0;
    }
    auto m = o[key].is_string() ? parse_money(o[key].get<std::string>()) : std::nullopt;
    if (!m) error(path + ": must be an amount like \"2.40\" (a string, up to 6 decimals)");
    return m.value_or(0);
  }
  int64_t milli(const json& o, const char* key, const std::string& path, int64_t def) {
    if (!o.contains(key)) return def;
    auto m = o[key].is_string() ? parse_milli(o[key].get<std::string>()) : std::nullopt;
    if (!m) error(path + ": must be a decimal like \"1.5\" (a string, up to 3 decimals)");
    return m.value_or(def);
  }
  int integer(const json& o, const char* key, const std::string& path, int def, int lo, int hi) {
    if (!o.contains(key)) return def;
    if (!o[key].is_number_integer() || o[key].get<int64_t>() < lo || o[key].get<int64_t>() > hi) {
      error(path + ": must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
      return def;
    }
    return o[key].get<int>();
  }
  // A `match: {vendor, product}` selector; absent fields match anything.
  void match(const json& o, const std::string& path, std::string* vendor, std::string* product) {
    if (!o.contains("match") || !o["match"].is_object()) return;
    *vendor = str(o["match"], "vendor", path + ".match.vendor");
    *product = str(o["match"], "product", path + ".match.product");
  }
  // Calls f(item, "path[i]") for each item of the list o[key].
  template <typename F>
  void each(const json& o, const char* key, const std::string& path, F f) {
    if (const json* a = array(o, key, path))
      for (size_t i = 0; i < a->size(); ++i) f((*a)[i], path + "[" + std::to_string(i) + "]");
  }
  const json* array(const json& o, const char* key, const std::string& path) {
    if (!o.contains(key)) return nullptr;
    if (!o[key].is_array()) {
      error(path + ": must be a list");
      return nullptr;
    }
    return &o[key];
  }
};

std::optional<int> clock_minutes(const std::string& s) {
  if (s.size() != 5 || s[2] != ':' || !std::isdigit(static_cast<unsigned char>(s[0])) || !std::isdigit(static_cast<unsigned char>(s[1])) ||
      !std::isdigit(static_cast<unsigned char>(s[3])) || !std::isdigit(static_cast<unsigned char>(s[4])))
    return std::nullopt;
  int h = (s[0] - '0') * 10 + (s[1] - '0'), m = (s[3] - '0') * 10 + (s[4] - '0');
  if (h > 24 || m > 59 || (h == 24 && m != 0)) return std::nullopt;
  return h * 60 + m;
}

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

std::optional<Policy> parse_policy(const json& object, std::vector<std::string>* errors) {
  std::vector<std::string> local_errors;
  Reader r{errors ? *errors : local_errors};
  const size_t before = r.errors.size();
  Policy p;
  if (object.contains("metadata") && object["metadata"].is_object() && object["metadata"].contains("name") &&
      object["metadata"]["name"].is_string())
    p.name = object["metadata"]["name"].get<std::string>();
  if (!object.contains("spec") || !object["spec"].is_object()) {
    r.error("spec: required");
    return std::nullopt;
  }
  const json& spec = object["spec"];
  p.currency = r.str(spec, "currency", "spec.currency", "USD");
  if (p.currency.size() != 3 || !std::all_of(p.currency.begin(), p.currency.end(), [](char c) { return c >= 'A' && c <= 'Z'; }))
    r.error("spec.currency: must be an ISO 4217 code like USD or CNY");
  r.each(spec, "gpu", "spec.gpu", [&](const json& g, const std::string& path) {
    GpuPrice price;
    r.match(g, path, &price.vendor, &price.product);
    price.on_demand = r.money(g, "onDemand", path + ".onDemand", true);
    price.spot = g.contains("spot") ? r.money(g, "spot", path + ".spot", true) : price.on_demand;
    p.gpu.push_back(price);
  });
  if (p.gpu.empty()) r.error("spec.gpu: at least one GPU price is required");
  if (spec.contains("capacityClass") && spec["capacityClass"].is_object()) {
    if (const json* labels = r.array(spec["capacityClass"], "spotLabels", "spec.capacityClass.spotLabels")) {
      p.spot_labels.clear();
      for (const auto& l : *labels)
        if (l.is_object() && l.contains("key") && l["key"].is_string() && l.contains("value") && l["value"].is_string())
          p.spot_labels.push_back({l["key"].get<std::string>(), l["value"].get<std::string>()});
    }
  }
  if (const json* labels = r.array(spec, "productLabels", "spec.productLabels")) {
    p.product_labels.clear();
    for (const auto& l : *labels)
      if (l.is_string()) p.product_labels.push_back(l.get<std::string>());
  }
  if (spec.contains("electricity") && spec["electricity"].is_object()) {
    const json& e = spec["electricity"];
    p.time_zone_name = r.str(e, "timeZone", "spec.electricity.timeZone", "UTC");
    std::string why;
    if (auto tz = TimeZone::load(p.time_zone_name, &why)) {
      p.zone = *tz;
    } else {
      r.error("spec.electricity.timeZone: " + why);
    }
    p.pue_milli = r.milli(e, "pue", "spec.electricity.pue", 1000);
    if (p.pue_milli < 1000 || p.pue_milli > 3000) r.error("spec.electricity.pue: must be from 1.0 to 3.0");
    p.default_watts = r.integer(e, "defaultWattsPerGpu", "spec.electricity.defaultWattsPerGpu", 300, 0, 5000);
    r.each(e, "wattsPerGpu", "spec.electricity.wattsPerGpu", [&](const json& w, const std::string& path) {
      GpuWatts gw;
      r.match(w, path, &gw.vendor, &gw.product);
      gw.watts = r.integer(w, "watts", path + ".watts", 0, 0, 5000);
      p.watts.push_back(gw);
    });
    p.flat_name = r.str(e, "flatName", "spec.electricity.flatName", "flat");
    p.flat_per_kwh = r.money(e, "flatPerKWh", "spec.electricity.flatPerKWh", false);
    r.each(e, "windows", "spec.electricity.windows", [&](const json& w, const std::string& path) {
        TariffWindow tw;
        tw.name = r.str(w, "name", path + ".name");
        if (tw.name.empty()) r.error(path + ".name: required");
        tw.per_kwh = r.money(w, "perKWh", path + ".perKWh", true);
        auto start = clock_minutes(r.str(w, "start", path + ".start"));
        auto end = clock_minutes(r.str(w, "end", path + ".end"));
        if (!start || !end || *start == *end) r.error(path + ": start and end must be different HH:MM times");
        tw.start = start.value_or(0) % 1440;
        tw.end = end.value_or(0) % 1440;
        if (const json* days = r.array(w, "days", path + ".days")) {
          tw.days = 0;
          for (const auto& d : *days) {
            auto it = d.is_string() ? std::find(std::begin(kDays), std::end(kDays), d.get<std::string>()) : std::end(kDays);
            if (it == std::end(kDays)) {
              r.error(path + ".days: each must be one of Sun Mon Tue Wed Thu Fri Sat");
              continue;
            }
            tw.days |= 1u << (it - std::begin(kDays));
          }
        }
        p.windows.push_back(tw);
    });
  }
  if (spec.contains("priority") && spec["priority"].is_object()) {
    r.each(spec["priority"], "multipliers", "spec.priority.multipliers", [&](const json& step, const std::string& path) {
      PriorityStep s;
      s.min_priority = r.integer(step, "minPriority", path + ".minPriority", 0, 0, 100);
      s.multiplier_milli = r.milli(step, "multiplier", path + ".multiplier", 1000);
      if (s.multiplier_milli <= 0) r.error(path + ".multiplier: must be positive");
      p.priority.push_back(s);
    });
    std::sort(p.priority.begin(), p.priority.end(), [](const auto& a, const auto& b) { return a.min_priority < b.min_priority; });
  }
  if (spec.contains("reduceCost") && spec["reduceCost"].is_object()) {
    const json& rc = spec["reduceCost"];
    p.reduce_cost_idle_percent = r.integer(rc, "idleCapacityPercent", "spec.reduceCost.idleCapacityPercent", 50, 0, 101);
    std::string patience = r.str(rc, "patience", "spec.reduceCost.patience", "6h");
    auto d = parse_duration(patience);
    if (!d || *d > std::chrono::hours(24 * 30)) r.error("spec.reduceCost.patience: a duration such as 6h or 90m, at most 30d");
    else p.reduce_cost_patience = std::chrono::duration_cast<std::chrono::seconds>(*d);
  }
  if (spec.contains("growth") && spec["growth"].is_object()) {
    const json& g = spec["growth"];
    p.growth_min_marginal_milli = r.milli(g, "minMarginalSpeedup", "spec.growth.minMarginalSpeedup", 800);
    if (p.growth_min_marginal_milli < 0 || p.growth_min_marginal_milli > 1000)
      r.error("spec.growth.minMarginalSpeedup: between 0 (always grow) and 1 (only linear speedup)");
    p.growth_fast_priority = r.integer(g, "fastPriority", "spec.growth.fastPriority", 90, 0, 101);
  }
  if (r.errors.size() != before) return std::nullopt;
  return p;
}

NodeRate rate_for(const Policy& p, const std::string& vendor, const std::map<std::string, std::string>& labels) {
  NodeRate n;
  n.vendor = vendor;
  for (const auto& l : p.product_labels)
    if (auto it = labels.find(l); it != labels.end()) {
      n.product = it->second;
      break;
    }
  for (const auto& [k, v] : p.spot_labels)
    if (auto it = labels.find(k); it != labels.end() && it->second == v) n.capacity_class = "spot";
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
