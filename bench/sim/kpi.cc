// The four scheduler KPIs of a replayed schedule (kpi.h).
#include "bench/sim/kpi.h"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace valley::sim {
namespace {

int64_t running_seconds(const KpiJob& j) {
  int64_t s = 0;
  for (const auto& seg : j.segments) s += seg.end - seg.start;
  return s;
}

void measure_starvation(const std::vector<KpiJob>& jobs, const KpiSettings& settings, Kpis& k) {
  for (const auto& j : jobs) {
    const int64_t until = j.end >= 0 ? j.end : std::max(settings.horizon, j.submit);
    const int64_t wait = std::max<int64_t>(0, until - j.submit - running_seconds(j));
    const double ratio = static_cast<double>(wait) / static_cast<double>(std::max<int64_t>(j.run_seconds, 60));
    if (ratio > k.worst_wait_over_run) {
      k.worst_wait_over_run = ratio;
      k.most_starved = j.id;
    }
    k.longest_wait_seconds = std::max(k.longest_wait_seconds, wait);
    if (wait > settings.starved_floor_seconds && static_cast<double>(wait) > settings.starved_factor * static_cast<double>(j.run_seconds)) {
      ++k.starved;
      if (!j.waits_by_choice) ++k.starved_not_by_choice;
    }
  }
}

// GPUs held at instant t by segments that began before it and go on after it: those that end at t
// have given theirs back, those that begin at t are what is being decided.
int64_t held_across(const std::vector<KpiJob>& jobs, int64_t t) {
  int64_t held = 0;
  for (const auto& j : jobs)
    for (const auto& s : j.segments)
      if (s.start < t && s.end > t) held += s.gpu_milli;
  return held;
}

bool waiting_at(const KpiJob& j, int64_t t) {
  if (j.submit > t || (j.end >= 0 && j.end <= t)) return false;
  for (const auto& s : j.segments)
    if (s.start <= t && s.end > t) return false;
  return true;
}

void measure_inversions(const std::vector<KpiJob>& jobs, const KpiSettings& settings, Kpis& k) {
  for (const auto& a : jobs)
    for (size_t x = 0; x < a.segments.size(); ++x) {
      const KpiSegment& s = a.segments[x];
      // What it held the instant before: a restart at a new size adds only the difference.
      const int64_t before = x > 0 && a.segments[x - 1].end == s.start ? a.segments[x - 1].gpu_milli : 0;
      const int64_t added = s.gpu_milli - before;
      if (added <= 0) continue;
      const int64_t free = settings.capacity_gpu_milli - held_across(jobs, s.start);
      const bool held_back = std::any_of(jobs.begin(), jobs.end(), [&](const KpiJob& b) {
        return &b != &a && b.priority > a.priority && !b.waits_by_choice && b.min_gpu_milli <= free && waiting_at(b, s.start);
      });
      if (!held_back) continue;
      ++k.inversions;
      k.inversion_gpu_hours += static_cast<double>(added) / 1000.0 * static_cast<double>(s.end - s.start) / 3600.0;
    }
}

void measure_occupancy(const std::vector<KpiJob>& jobs, const KpiSettings& settings, Kpis& k) {
  int64_t last_end = 0;
  double held = 0, useful = 0;
  for (const auto& j : jobs) {
    for (const auto& s : j.segments) {
      held += static_cast<double>(s.gpu_milli) / 1000.0 * static_cast<double>(s.end - s.start);
      last_end = std::max(last_end, s.end);
    }
    if (j.end >= 0) useful += j.useful_gpu_seconds;
  }
  k.held_gpu_hours = held / 3600.0;
  const double capacity = static_cast<double>(settings.capacity_gpu_milli) / 1000.0 * static_cast<double>(last_end);
  k.allocated = capacity > 0 ? held / capacity : 0;
  k.useful = capacity > 0 ? useful / capacity : 0;
  k.inversion_share = held > 0 ? k.inversion_gpu_hours * 3600.0 / held : 0;
}

void measure_fairness(const std::vector<KpiJob>& jobs, Kpis& k) {
  std::map<std::string, std::pair<double, double>> by_user;  // run seconds, seconds from submission to end
  for (const auto& j : jobs) {
    if (j.end < 0) continue;
    auto& [run, lived] = by_user[j.user.empty() ? "job " + j.id : j.user];
    run += static_cast<double>(j.run_seconds);
    lived += static_cast<double>(std::max<int64_t>(j.end - j.submit, 1));
  }
  double sum = 0, squares = 0;
  for (const auto& [user, rl] : by_user) {
    const double rate = rl.first / rl.second;
    sum += rate;
    squares += rate * rate;
  }
  k.users = static_cast<int>(by_user.size());
  k.jain_users = squares > 0 ? sum * sum / (static_cast<double>(by_user.size()) * squares) : 0;
}

}  // namespace

Kpis measure_kpis(const std::vector<KpiJob>& jobs, const KpiSettings& settings) {
  if (settings.capacity_gpu_milli <= 0) throw std::invalid_argument("KPIs need a capacity of at least one GPU");
  for (const auto& j : jobs)
    for (const auto& s : j.segments)
      if (s.end < s.start) throw std::invalid_argument("job " + j.id + " has a segment that ends before it starts");
  Kpis k;
  measure_starvation(jobs, settings, k);
  measure_inversions(jobs, settings, k);
  measure_occupancy(jobs, settings, k);
  measure_fairness(jobs, k);
  return k;
}

}  // namespace valley::sim
