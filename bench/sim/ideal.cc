// What a job's work costs at best (ideal.h).
#include "bench/sim/ideal.h"

#include <algorithm>

#include "controllers/cost/engine.h"

namespace valley::sim {

double ideal_gpu_seconds(const Inputs& in, const TraceJob& j, const JobTraits& t) {
  auto sp = in.speedups.find(t.app);
  auto speed = [&](int n) { return sp == in.speedups.end() ? static_cast<double>(n) : sp->second.at(n); };
  const double work = static_cast<double>(j.duration) * speed(j.gpus);
  double best_efficiency = 0;
  for (int n = t.min_workers; n <= t.max_workers; ++n) best_efficiency = std::max(best_efficiency, speed(n) / n);
  return best_efficiency > 0 ? work / best_efficiency : 0;
}

double cheapest_per_second(const cost::Policy& p, const cost::NodeRate& rate, kube::SystemTime from, kube::SystemTime to) {
  double best = -1;
  for (kube::SystemTime t = from; t < to;) {
    kube::SystemTime next = std::min(to, cost::next_tariff_boundary(p, t));
    if (next <= t) next = to;
    auto secs = std::chrono::duration_cast<std::chrono::seconds>(next - t).count();
    cost::Charge part = cost::charge_interval(p, rate, 1000, t, next);
    double v = static_cast<double>(part.gpu + part.energy) / static_cast<double>(std::max<int64_t>(1, secs));
    best = best < 0 ? v : std::min(best, v);
    t = next;
  }
  return std::max(0.0, best);
}

}  // namespace valley::sim
