#include "bench/live/live_jobs.h"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace valley::live {

double LiveJob::rate(int gpus) const {
  if (gpus <= 0) return 0;
  return speedup ? speedup->at(gpus) : static_cast<double>(gpus);
}

std::vector<LiveJob> live_jobs(const sim::Inputs& in) {
  std::vector<LiveJob> out;
  for (const auto& t : in.jobs) {
    LiveJob j;
    j.trace = t;
    j.name = "j-" + t.id;
    std::transform(j.name.begin(), j.name.end(), j.name.begin(), [](unsigned char c) {
      return std::isalnum(c) ? static_cast<char>(std::tolower(c)) : '-';
    });
    j.traits = sim::traits_of(t, in.workload);
    if (auto sp = in.speedups.find(j.traits.app); sp != in.speedups.end()) j.speedup = &sp->second;
    j.work_total = static_cast<double>(t.duration) * j.rate(t.gpus);
    out.push_back(std::move(j));
  }
  return out;
}

std::vector<SpotEvent> spot_schedule(const sim::Inputs& in, int64_t horizon) {
  std::vector<SpotEvent> out;
  for (const auto& pool : in.cluster.pools) {
    auto model = in.cluster.spot.find(pool.name);
    if (!pool.spot || model == in.cluster.spot.end() || model->second.interruptions_per_node_hour <= 0) continue;
    for (int i = 0; i < pool.nodes; ++i) {
      const std::string node = pool.name + "-" + std::to_string(i);
      auto rng = sim::spot_rng(in.workload, node);
      for (int64_t from = 0;;) {
        SpotEvent e{node, pool.name, sim::next_notice(rng, model->second, from), 0, 0};
        if (e.notice >= horizon) break;
        e.kill = e.notice + model->second.notice_seconds;
        e.back = e.kill + model->second.replacement_seconds;
        from = e.back;
        out.push_back(e);
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const SpotEvent& a, const SpotEvent& b) { return std::tie(a.notice, a.node) < std::tie(b.notice, b.node); });
  return out;
}

std::string slice_csv(const std::vector<sim::TraceJob>& jobs, int64_t max_duration) {
  std::ostringstream o;
  o << "job_id,submission_time,duration,num_gpu\n";
  for (const auto& j : jobs)
    o << j.id << "," << j.submit << "," << (max_duration > 0 ? std::min(j.duration, max_duration) : j.duration) << "," << j.gpus << "\n";
  return o.str();
}

}  // namespace valley::live
