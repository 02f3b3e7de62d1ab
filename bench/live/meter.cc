#include "bench/live/meter.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "controllers/cost/engine.h"

namespace valley::live {

std::string pool_node_name(const std::string& node, const std::string& prefix) {
  return node.rfind(prefix, 0) == 0 ? node.substr(prefix.size()) : node;
}

void Meter::submitted(const std::string& job, double t) { submit_.emplace(job, t); }
void Meter::completed(const std::string& job, double t) { end_.emplace(job, t); }

void Meter::bound(const std::string& job, const std::string& uid, const std::string& node, int gpus, double t) {
  if (node.empty() || gpus <= 0) return;
  spans_.emplace(uid, Span{job, node, gpus, t, -1});
}

void Meter::ended(const std::string& uid, double t) {
  auto it = spans_.find(uid);
  if (it != spans_.end() && it->second.to < 0) it->second.to = t;
}

void Meter::node_gone(const std::string& node, double t) {
  for (auto& [uid, span] : spans_)
    if (span.node == node && span.to < 0) span.to = t;
}

const sim::Pool* Meter::pool_of(const std::string& node) const {
  // Node names end in "<pool>-<i>"; the longest pool name that fits wins (pools may share prefixes).
  const sim::Pool* best = nullptr;
  for (const auto& p : cluster_.pools) {
    const std::string tail = p.name + "-";
    const auto at = node.rfind(tail);
    if (at == std::string::npos || (at > 0 && node[at - 1] != '-')) continue;
    const std::string index = node.substr(at + tail.size());
    if (index.empty() || !std::all_of(index.begin(), index.end(), ::isdigit)) continue;
    if (!best || p.name.size() > best->name.size()) best = &p;
  }
  return best;
}

Meter::Figures Meter::figures(const std::vector<LiveJob>& jobs, const cost::Policy& pricing, kube::SystemTime zero, double now) const {
  Figures f;
  std::map<std::string, JobFigures> by_name;
  for (const auto& j : jobs) {
    JobFigures jf;
    jf.name = j.name;
    jf.cls = j.traits.cls;
    jf.reduce_cost = j.traits.reduce_cost;
    jf.gpus = j.trace.gpus;
    jf.priority = j.traits.priority;
    jf.submit = static_cast<double>(j.trace.submit);
    if (auto s = submit_.find(j.name); s != submit_.end()) jf.submit = s->second;
    if (auto e = end_.find(j.name); e != end_.end()) jf.end = e->second;
    by_name[j.name] = jf;
  }
  auto at = [&](double t) { return zero + std::chrono::milliseconds(std::llround(t * 1000)); };
  std::map<std::string, cost::Charge> charges;
  for (const auto& [uid, span] : spans_) {
    const sim::Pool* pool = pool_of(span.node);
    auto job = by_name.find(span.job);
    if (!pool || job == by_name.end()) continue;
    const double to = span.to < 0 ? now : span.to;
    if (to <= span.from) continue;
    charges[span.job].add(cost::charge_interval(pricing, cost::rate_for(pricing, pool->vendor, pool->labels), int64_t{span.gpus} * 1000, at(span.from), at(to)));
    job->second.gpu_seconds += span.gpus * (to - span.from);
    job->second.pool_gpu_seconds[pool->name] += span.gpus * (to - span.from);
    f.pool_gpu_hours[pool->name] += span.gpus * (to - span.from) / 3600;
  }
  std::vector<double> jct, jct_not_rc;
  for (const auto& j : jobs) {
    JobFigures& jf = by_name[j.name];
    const cost::Charge& c = charges[j.name];
    jf.cost = cost::apply_multiplier(c.gpu + c.energy, cost::multiplier_milli(pricing, jf.priority));
    f.cost += jf.cost;
    if (jf.end >= 0) {
      ++f.finished;
      jct.push_back(jf.end - jf.submit);
      if (!jf.reduce_cost) jct_not_rc.push_back(jf.end - jf.submit);
      f.makespan = std::max(f.makespan, jf.end);
    } else {
      ++f.unfinished;
    }
    f.jobs.push_back(jf);
  }
  auto mean = [](const std::vector<double>& v) { return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size()); };
  f.mean_jct = mean(jct);
  f.mean_jct_not_reduce_cost = mean(jct_not_rc);
  f.p95_jct = sim::percentile(jct, 95);
  return f;
}

}  // namespace valley::live
