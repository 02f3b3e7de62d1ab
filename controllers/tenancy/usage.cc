#include "controllers/tenancy/usage.h"

#include <cmath>
#include <cstdio>

namespace valley::tenancy {
namespace {

using kube::civil_from_days;
using kube::days_from_civil;

int64_t seconds_of(SystemTime t) { return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count(); }

// The UTC instant of local midnight starting local day `day` (days since the epoch, local).
SystemTime local_midnight(const api::TimeZone& zone, int64_t day) {
  const int64_t local = day * 86400;
  // The offset there, found from a guess (a DST switch near midnight moves it by an hour at most).
  SystemTime guess{std::chrono::seconds(local - zone.offset(SystemTime{std::chrono::seconds(local)}).count())};
  return SystemTime{std::chrono::seconds(local - zone.offset(guess).count())};
}

}  // namespace

double decay_usage(double gpu_hours, double gpus, std::chrono::seconds elapsed, std::chrono::seconds half_life) {
  const double hours = std::max<double>(0, static_cast<double>(elapsed.count())) / 3600.0;
  if (half_life.count() <= 0) return gpus * hours;  // no decay: plain usage over the interval
  const double h = static_cast<double>(half_life.count()) / 3600.0;
  const double keep = std::exp2(-hours / h);
  return gpu_hours * keep + gpus * mean_life_hours(half_life) * (1 - keep);
}

double mean_life_hours(std::chrono::seconds half_life) { return static_cast<double>(half_life.count()) / 3600.0 / std::log(2.0); }

Period budget_period(api::BudgetPeriod kind, const api::TimeZone& zone, SystemTime t) {
  const int64_t local = seconds_of(t) + zone.offset(t).count();
  const int64_t day = local >= 0 ? local / 86400 : (local - 86399) / 86400;
  const kube::CivilDate c = civil_from_days(day);
  char name[32];
  Period p;
  switch (kind) {
    case api::BudgetPeriod::Day:
      p.start = local_midnight(zone, day);
      p.end = local_midnight(zone, day + 1);
      std::snprintf(name, sizeof name, "%04lld-%02u-%02u", static_cast<long long>(c.year), c.month, c.day);
      break;
    case api::BudgetPeriod::Week: {
      const int64_t weekday = ((day % 7) + 7 + 3) % 7;  // 0 = Monday (1970-01-01 was a Thursday)
      const int64_t monday = day - weekday;
      p.start = local_midnight(zone, monday);
      p.end = local_midnight(zone, monday + 7);
      // ISO week: the week belongs to the year of its Thursday.
      const kube::CivilDate thursday = civil_from_days(monday + 3);
      const int64_t week = (monday + 3 - days_from_civil(thursday.year, 1, 1)) / 7 + 1;
      std::snprintf(name, sizeof name, "%04lld-W%02lld", static_cast<long long>(thursday.year), static_cast<long long>(week));
      break;
    }
    case api::BudgetPeriod::Month: {
      p.start = local_midnight(zone, days_from_civil(c.year, c.month, 1));
      p.end = local_midnight(zone, c.month == 12 ? days_from_civil(c.year + 1, 1, 1) : days_from_civil(c.year, c.month + 1, 1));
      std::snprintf(name, sizeof name, "%04lld-%02u", static_cast<long long>(c.year), c.month);
      break;
    }
  }
  p.name = name;
  return p;
}

Spend count_spend(const Spend& before, const std::map<std::string, Micros>& accrued, const Period& now) {
  Spend s;
  s.period = now.name;
  s.spent = before.period == now.name ? before.spent : 0;
  for (const auto& [uid, total] : accrued) {
    auto it = before.counted.find(uid);
    const Micros counted = it == before.counted.end() ? 0 : it->second;
    if (total > counted) s.spent += total - counted;
    s.counted[uid] = std::max(total, counted);  // never counted twice, even if a status goes back
  }
  return s;
}

}  // namespace valley::tenancy
