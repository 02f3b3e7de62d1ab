// What a tenant has used, purely: its fair-share usage (GPU-hours decayed with a half-life, as
// Slurm's fair-share factor and Kueue's admission fair sharing do, so a team that used little
// lately goes first among equals), its budget periods (calendar days, ISO weeks or months in the
// PricingPolicy's time zone) and its spend in the current period (the sum of its tasks' accrued
// costs since the period began, each task's accrual counted once however often it is read).
#pragma once

#include <chrono>
#include <map>
#include <string>

#include "controllers/api/money.h"
#include "controllers/api/tenant.h"
#include "controllers/api/timezone.h"

namespace valley::tenancy {

using api::Micros;
using kube::SystemTime;

// Decayed usage after `elapsed` during which `gpus` GPUs were held throughout: the old usage halves
// every half-life, and what was held adds in, itself decaying since (the exact integral).
double decay_usage(double gpu_hours, double gpus, std::chrono::seconds elapsed, std::chrono::seconds half_life);
// The mean life of usage that halves every `half_life`, in hours: what GPUs held now settle at, as
// decayed usage, per GPU (half-life / ln 2).
double mean_life_hours(std::chrono::seconds half_life);

// The budget period holding `t`: [start, end) in UTC, and its name in local terms ("2026-11",
// "2026-W48", "2026-11-23").
struct Period {
  SystemTime start{}, end{};
  std::string name;
};
Period budget_period(api::BudgetPeriod kind, const api::TimeZone& zone, SystemTime t);

// The spend record kept in Tenant status: the period it is for, what was spent in it, and how much
// of each task's accrued cost (by task uid) has been counted so far.
struct Spend {
  std::string period;  // Period::name; "" before the first count
  Micros spent = 0;
  std::map<std::string, Micros> counted;
};
// Counts what each task accrued since last time (`accrued`: by uid, the tasks that exist now). A
// new period starts from 0, counting only accruals from then on; tasks gone are forgotten (their
// uids never come back).
Spend count_spend(const Spend& before, const std::map<std::string, Micros>& accrued, const Period& now);

}  // namespace valley::tenancy
