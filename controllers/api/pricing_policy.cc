#include "controllers/api/pricing_policy.h"

#include <algorithm>

#include "controllers/api/conditions.h"
#include "controllers/api/field_reader.h"
#include "operator/duration.h"
#include "operator/text.h"

namespace valley::api {
namespace {

const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};

std::optional<int> clock_minutes(const std::string& s) {
  if (s.size() != 5 || s[2] != ':' || !std::isdigit(static_cast<unsigned char>(s[0])) || !std::isdigit(static_cast<unsigned char>(s[1])) ||
      !std::isdigit(static_cast<unsigned char>(s[3])) || !std::isdigit(static_cast<unsigned char>(s[4])))
    return std::nullopt;
  int h = (s[0] - '0') * 10 + (s[1] - '0'), m = (s[3] - '0') * 10 + (s[4] - '0');
  if (h > 24 || m > 59 || (h == 24 && m != 0)) return std::nullopt;
  return h * 60 + m;
}

// spec.gpu, spec.capacityClass and spec.productLabels: what a GPU costs and how a node says which.
void parse_prices(FieldReader& r, const json& spec, Policy& p) {
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
}

// spec.electricity: the tariff, its time zone and what a GPU draws.
void parse_electricity(FieldReader& r, const json& spec, Policy& p) {
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
}

// spec.priority, spec.reduceCost, spec.growth and spec.moves: the economics' settings.
void parse_levers(FieldReader& r, const json& spec, Policy& p) {
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
    p.reduce_cost_min_saving_percent = r.integer(rc, "minSavingPercent", "spec.reduceCost.minSavingPercent", 10, 0, 100);
    std::string patience = r.str(rc, "patience", "spec.reduceCost.patience", "6h");
    auto d = parse_duration(patience);
    if (!d || *d > std::chrono::hours(24 * 30)) r.error("spec.reduceCost.patience: a duration such as 6h or 90m, at most 30d");
    else p.reduce_cost_patience = std::chrono::duration_cast<std::chrono::seconds>(*d);
  }
  if (spec.contains("growth") && spec["growth"].is_object()) {
    const json& g = spec["growth"];
    // A share of linear speedup, in thousandths.
    auto share_of_linear = [&r](const json& o, const std::string& path, int64_t def) {
      const int64_t v = r.milli(o, "minMarginalSpeedup", path, def);
      if (v < 0 || v > 1000) r.error(path + ": between 0 (always grow) and 1 (only linear speedup)");
      return v;
    };
    p.growth_min_marginal_milli = share_of_linear(g, "spec.growth.minMarginalSpeedup", 800);
    p.growth_fast_priority = r.integer(g, "fastPriority", "spec.growth.fastPriority", 90, 0, 101);
    if (g.contains("withoutReduceCost")) {
      p.growth_time_bands.clear();
      r.each(g, "withoutReduceCost", "spec.growth.withoutReduceCost", [&](const json& band, const std::string& path) {
        Policy::TimeBand b;
        b.min_priority = r.integer(band, "minPriority", path + ".minPriority", 0, 0, 100);
        b.min_marginal_milli = share_of_linear(band, path + ".minMarginalSpeedup", 500);
        for (const auto& other : p.growth_time_bands)
          if (other.min_priority == b.min_priority)
            r.error(path + ".minPriority: " + std::to_string(b.min_priority) + " is given twice");
        p.growth_time_bands.push_back(b);
      });
      std::sort(p.growth_time_bands.begin(), p.growth_time_bands.end(),
                [](const auto& a, const auto& b) { return a.min_priority < b.min_priority; });
    }
  }
  if (spec.contains("moves") && spec["moves"].is_object()) {
    std::string cost = r.str(spec["moves"], "restartCost", "spec.moves.restartCost", "5m");
    auto d = parse_duration(cost);
    if (!d || *d > std::chrono::hours(24)) r.error("spec.moves.restartCost: a duration such as 5m or 0s, at most 24h");
    else p.move_restart_cost = std::chrono::duration_cast<std::chrono::seconds>(*d);
  }
}

// spec.sharing.pairs: the measured rates of two workloads sharing a GPU.
void parse_sharing(FieldReader& r, const json& spec, Policy& p) {
  if (spec.contains("sharing") && spec["sharing"].is_object()) {
    r.each(spec["sharing"], "pairs", "spec.sharing.pairs", [&](const json& pair, const std::string& path) {
      const json* profiles = r.array(pair, "profiles", path + ".profiles");
      const json* rates = r.array(pair, "rates", path + ".rates");
      auto text = [](const json* a, size_t i) { return a && a->size() == 2 && (*a)[i].is_string() ? (*a)[i].get<std::string>() : std::string(); };
      Policy::SharingPair sp{text(profiles, 0), text(profiles, 1)};
      if (sp.a.empty() || sp.b.empty()) {
        r.error(path + ".profiles: two workload profiles (what spec.worker.sharing.profile names, by default a worker image)");
        return;
      }
      json rate_fields = json::object();
      if (rates && rates->size() == 2) rate_fields = {{"a", (*rates)[0]}, {"b", (*rates)[1]}};
      sp.a_milli = r.milli(rate_fields, "a", path + ".rates[0]", -1);
      sp.b_milli = r.milli(rate_fields, "b", path + ".rates[1]", -1);
      if (sp.a_milli < 0 || sp.b_milli < 0 || sp.a_milli > 2000 || sp.b_milli > 2000) {
        r.error(path + ".rates: two rates, each profile's beside the other as a share of its rate alone, between 0 and 2 (e.g. \"0.81\")");
        return;
      }
      p.sharing_pairs.push_back(sp);
    });
  }
}

}  // namespace

std::optional<Policy> parse_policy(const json& object, std::vector<std::string>* errors) {
  std::vector<std::string> local_errors;
  FieldReader r{errors ? *errors : local_errors};
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
  parse_prices(r, spec, p);
  parse_electricity(r, spec, p);
  parse_levers(r, spec, p);
  parse_sharing(r, spec, p);
  if (r.errors.size() != before) return std::nullopt;
  return p;
}

json policy_status(const json& object, const std::vector<std::string>& errors, const std::string& currency,
                   const std::string& selected, const std::string& now) {
  const int64_t generation = object.contains("metadata") && object["metadata"].is_object()
                                 ? object["metadata"].value("generation", int64_t{0})
                                 : 0;
  const std::string name = object.contains("metadata") && object["metadata"].is_object() ? object["metadata"].value("name", "") : "";
  json status = json::object();
  if (object.contains("status") && object["status"].is_object() && object["status"].contains("conditions"))
    status["conditions"] = object["status"]["conditions"];
  const bool valid = errors.empty();
  std::string problems;
  for (const auto& e : errors) problems += (problems.empty() ? "" : "; ") + e;
  set_condition(status, "Valid", valid, valid ? "Accepted" : "Invalid",
                utf8_head(valid ? "valid; prices in " + currency : problems, 2000), now, generation);
  if (name != selected) {
    set_condition(status, "InUse", false, "NotSelected",
                  "Valley prices tasks with the PricingPolicy named \"" + selected +
                      "\" (the operator's --pricing-policy); this one is not used",
                  now, generation);
  } else {
    set_condition(status, "InUse", valid, valid ? "Selected" : "Invalid",
                  valid ? "prices tasks in " + currency : "named by --pricing-policy but invalid: tasks are not priced", now,
                  generation);
  }
  status["observedGeneration"] = generation;
  return status;
}

}  // namespace valley::api
