#include "controllers/planner/scaling.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "operator/kube/timefmt.h"

namespace valley::planner {
namespace {

// The rate at n workers the observations imply; `prior` is the marginal efficiency assumed per
// added worker where nothing above was measured (relative to the smallest measured size).
double rate_at(const Scaling& s, int n, double prior) {
  if (n <= 0) return 0;
  if (s.empty()) return 1.0 + (n - 1) * prior;
  const double ref = s.front().rate / s.front().workers;
  if (n <= s.front().workers) return ref * n;  // below every measurement: linear
  for (size_t k = 1; k < s.size(); ++k) {
    if (n > s[k].workers) continue;
    const auto& lo = s[k - 1];
    const auto& hi = s[k];
    double f = static_cast<double>(n - lo.workers) / (hi.workers - lo.workers);
    return lo.rate + f * (hi.rate - lo.rate);
  }
  // Above the largest size measured: the last measured step's marginal efficiency carries on.
  double e = prior;
  if (s.size() >= 2) {
    const auto& a = s[s.size() - 2];
    const auto& b = s.back();
    e = std::clamp((b.rate - a.rate) / ((b.workers - a.workers) * ref), 0.0, 1.0);
  }
  return s.back().rate + (n - s.back().workers) * ref * e;
}

}  // namespace

namespace {
// Where the entry of (workers, nodes) is or would go in sorted observations.
Scaling::iterator slot(Scaling& s, int workers, int nodes) {
  return std::lower_bound(s.begin(), s.end(), std::pair{workers, nodes}, [](const ScalingSample& x, const std::pair<int, int>& k) {
    return x.workers < k.first || (x.workers == k.first && x.nodes < k.second);
  });
}
}  // namespace

Scaling observe(Scaling s, int workers, double rate, int nodes) {
  if (workers <= 0 || !(rate > 0) || !std::isfinite(rate)) return s;
  nodes = std::max(0, nodes);
  auto it = slot(s, workers, nodes);
  if (it != s.end() && it->workers == workers && it->nodes == nodes) {
    it->rate = (it->rate * it->samples + rate) / (it->samples + 1);
    ++it->samples;
  } else {
    s.insert(it, ScalingSample{workers, rate, 1, nodes});
  }
  return s;
}

Scaling by_size(const Scaling& shapes) {
  Scaling out;
  for (const auto& x : shapes) {
    if (out.empty() || out.back().workers != x.workers) {
      out.push_back(x);
      out.back().nodes = 0;
      continue;
    }
    auto& size = out.back();
    size.rate = (size.rate * size.samples + x.rate * x.samples) / (size.samples + x.samples);
    size.samples += x.samples;
  }
  return out;
}

std::optional<double> progress_rate(int64_t step0, const std::string& time0, int64_t step1, const std::string& time1) {
  auto t0 = kube::parse_time(time0);
  auto t1 = kube::parse_time(time1);
  if (!t0 || !t1 || *t1 <= *t0 || step1 <= step0) return std::nullopt;
  double seconds = std::chrono::duration<double>(*t1 - *t0).count();
  return static_cast<double>(step1 - step0) / seconds;
}

Scaling scaling_from(const nlohmann::json& j) {
  Scaling s;
  if (!j.is_array()) return s;
  for (const auto& e : j) {
    if (!e.is_object()) continue;
    auto w = e.find("workers");
    auto r = e.find("stepsPerSecond");
    if (w == e.end() || r == e.end() || !w->is_number_integer() || !r->is_number()) continue;
    int workers = w->get<int>();
    double rate = r->get<double>();
    if (workers <= 0 || !(rate > 0) || !std::isfinite(rate)) continue;
    int samples = 1, nodes = 0;
    if (auto n = e.find("samples"); n != e.end() && n->is_number_integer()) samples = std::max(1, n->get<int>());
    if (auto n = e.find("nodes"); n != e.end() && n->is_number_integer()) nodes = std::max(0, n->get<int>());
    auto it = slot(s, workers, nodes);
    if (it != s.end() && it->workers == workers && it->nodes == nodes) continue;  // a duplicate: the first stands
    s.insert(it, ScalingSample{workers, rate, samples, nodes});
  }
  return s;
}

nlohmann::json scaling_json(const Scaling& s) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& x : s) {
    nlohmann::json e = {{"workers", x.workers}, {"stepsPerSecond", std::round(x.rate * 1e4) / 1e4}, {"samples", x.samples}};
    if (x.nodes > 0) e["nodes"] = x.nodes;
    out.push_back(std::move(e));
  }
  return out;
}

int growth_step(int n, int min_gain_workers, double min_gain_fraction) {
  return std::max({1, min_gain_workers, static_cast<int>(std::ceil(min_gain_fraction * n))});
}

double linear_rate(const Scaling& s, int min) {
  const int n = std::max(1, min);
  return rate_at(s, n, 1.0) / n;
}

double step_marginal(const Scaling& s, int from, int to, int min) {
  if (to <= from) return 1.0;
  if (s.empty() || to > s.back().workers) return 1.0;  // not measured that far: its own measurement decides
  const double linear = linear_rate(s, min);
  if (!(linear > 0)) return 1.0;
  return (rate_at(s, to, 1.0) - rate_at(s, from, 1.0)) / ((to - from) * linear);
}

namespace {
// The largest size whose step from the size reached so far pays (sizes ascending, each judged on
// its own step, so a dip where the gang first spans two nodes does not hide a larger size that pays;
// a size above `hi` speaks for `hi`), and whether a size above it was measured and fell short.
struct Reached {
  int size;
  bool measured_above;
};
Reached reached(const Scaling& s, int lo, int hi, double min_marginal) {
  Reached r{lo, false};
  for (const auto& x : s) {
    const int n = std::min(x.workers, hi);
    if (n <= r.size) continue;
    if (step_marginal(s, r.size, n, lo) + 1e-9 >= min_marginal) r = {n, false};
    else r.measured_above = true;
  }
  return r;
}
}  // namespace

int paying_size(const Scaling& s, int current, int min, int max, int step_workers, double min_gain_fraction,
                double min_marginal) {
  const int lo = std::max(1, min);
  const int hi = std::max(lo, max);
  auto clamp = [&](int n) { return std::clamp(n, lo, hi); };
  if (s.empty()) return current > 0 ? clamp(current) : lo;
  if (!(linear_rate(s, lo) > 0)) return current > 0 ? clamp(current) : lo;
  const auto [best, measured_above] = reached(s, lo, hi, min_marginal);
  if (current <= best) {
    // Explore one step up only where nothing above was measured yet.
    if (current == best && !measured_above && best < hi) return clamp(best + growth_step(best, step_workers, min_gain_fraction));
    return best;
  }
  // Above the paying size: give it back once measured there (or at a size between), else wait for it.
  const bool measured_here = std::any_of(s.begin(), s.end(), [&](const ScalingSample& x) { return x.workers > best && x.workers <= current; });
  return measured_here ? best : clamp(current);
}

int timely_size(const Scaling& s, int current, int min, int max, double min_marginal) {
  const int lo = std::max(1, min);
  const int hi = std::max(lo, max);
  int size = hi;
  if (!s.empty() && linear_rate(s, lo) > 0) {
    const Reached r = reached(s, lo, hi, min_marginal);
    if (r.measured_above) size = r.size;
  }
  return std::clamp(std::max(size, current), lo, hi);
}

namespace {
// The widening factor for `added` nodes: one size's rate on more nodes over its rate on its fewest
// recorded, averaged by nodes added, interpolated from (0, 1); the widest's beyond it. nullopt
// without one size measured on two node counts.
std::optional<double> widening(const Scaling& shapes, int added) {
  std::map<int, std::pair<double, int>> by_added;  // nodes added -> (sum of ratios, count)
  for (size_t a = 0; a < shapes.size();) {
    size_t b = a;
    while (b < shapes.size() && shapes[b].workers == shapes[a].workers) ++b;
    const ScalingSample* fewest = nullptr;
    for (size_t k = a; k < b; ++k)
      if (shapes[k].nodes > 0) {
        if (!fewest) fewest = &shapes[k];
        else if (fewest->rate > 0) {
          auto& [sum, n] = by_added[shapes[k].nodes - fewest->nodes];
          sum += shapes[k].rate / fewest->rate;
          ++n;
        }
      }
    a = b;
  }
  if (by_added.empty()) return std::nullopt;
  double lo_added = 0, lo_factor = 1;
  for (const auto& [n, e] : by_added) {
    const double factor = e.first / e.second;
    if (added <= n) return lo_factor + (factor - lo_factor) * (added - lo_added) / (n - lo_added);
    lo_added = n;
    lo_factor = factor;
  }
  return lo_factor;
}
}  // namespace

std::optional<bool> shape_step_pays(const Scaling& shapes, int from, int from_nodes, int to, int to_nodes, int min, double min_marginal) {
  if (to <= from || to_nodes <= 0) return std::nullopt;
  std::optional<double> to_rate;
  const ScalingSample* below = nullptr;  // `to` on the most nodes measured below to_nodes
  bool wider = false;
  for (const auto& x : shapes) {
    if (x.workers != to || x.nodes <= 0) continue;
    if (x.nodes == to_nodes) to_rate = x.rate;
    else if (x.nodes < to_nodes) below = &x;
    else wider = true;
  }
  const Scaling sizes = by_size(shapes);
  if (!to_rate && !below && wider) {
    // Narrower than measured: untried, unless the widening the task measured says what it runs at
    // there (its rate on the fewest nodes measured, narrowed back by the nodes taken away).
    const ScalingSample* fewest = nullptr;
    for (const auto& x : shapes)
      if (x.workers == to && x.nodes > to_nodes && !fewest) fewest = &x;
    auto factor = widening(shapes, fewest->nodes - to_nodes);
    if (!factor || !(*factor > 0)) return true;
    to_rate = fewest->rate / *factor;
  }
  if (!to_rate) {
    // Widened from `to` on the most nodes measured below to_nodes, else (a size not measured) from
    // the size curve on from_nodes.
    const int base_nodes = below ? below->nodes : from_nodes;
    if (base_nodes <= 0 || base_nodes >= to_nodes) return std::nullopt;
    auto factor = widening(shapes, to_nodes - base_nodes);
    if (!factor) return std::nullopt;
    to_rate = (below ? below->rate : rate_at(sizes, to, 1.0)) * *factor;
  }
  double from_rate = rate_at(sizes, from, 1.0);
  for (const auto& x : shapes)
    if (x.workers == from && x.nodes == from_nodes && from_nodes > 0) from_rate = x.rate;
  const double linear = linear_rate(sizes, min);
  if (!(linear > 0)) return std::nullopt;
  return (*to_rate - from_rate) / ((to - from) * linear) + 1e-9 >= min_marginal;
}

void ScalingPriors::record(const std::string& kind, const std::string& task, const Scaling& s) {
  if (s.size() < 2 || kind.empty()) return;
  Kind& k = kinds_[kind];
  auto known = k.by_task.find(task);
  if (known != k.by_task.end() && known->second == s) return;
  if (known == k.by_task.end()) k.order.push_back(task);
  k.by_task[task] = s;
  while (k.order.size() > kMaxPriorTasks) {
    k.by_task.erase(k.order.front());
    k.order.erase(k.order.begin());
  }
  k.pooled = pool(k.by_task);
}

std::shared_ptr<const Scaling> ScalingPriors::pooled(const std::string& kind) const {
  auto k = kinds_.find(kind);
  return k == kinds_.end() ? nullptr : k->second.pooled;
}

std::shared_ptr<const Scaling> ScalingPriors::pool(const std::map<std::string, Scaling>& by_task) {
  std::vector<const Scaling*> tasks;
  for (const auto& [key, s] : by_task) tasks.push_back(&s);
  std::stable_sort(tasks.begin(), tasks.end(), [](const Scaling* a, const Scaling* b) { return a->front().workers < b->front().workers; });
  std::map<int, std::pair<double, int>> sum;  // workers -> (sum of per-worker efficiency, tasks)
  auto curve = [&sum] {
    Scaling out;
    for (const auto& [workers, e] : sum) out.push_back({workers, e.first / e.second * workers, e.second});
    return out;
  };
  for (const Scaling* s : tasks) {
    const double base = s->front().rate / s->front().workers;
    if (!(base > 0)) continue;
    // Each task's curve joins the pool so far at the pool's rate at its smallest size (interpolated,
    // or extrapolated at the pool's last marginal), so per-worker rates stay relative to one worker
    // at the pool's smallest size.
    const int first = s->front().workers;
    const double scale = sum.empty() ? 1.0 : rate_at(curve(), first, 1.0) / first;
    for (const auto& x : *s) {
      auto& [total, n] = sum[x.workers];
      total += scale * (x.rate / x.workers) / base;
      ++n;
    }
  }
  return std::make_shared<Scaling>(curve());
}

double speedup_ratio(const Scaling& s, int from, int to, double prior_efficiency) {
  double a = rate_at(s, from, prior_efficiency);
  double b = rate_at(s, to, prior_efficiency);
  return a > 0 ? b / a : 1.0;
}

std::chrono::system_clock::time_point expected_end(std::chrono::system_clock::time_point start,
                                                   std::chrono::milliseconds duration_at_max, const Scaling& s,
                                                   int workers, int max, double prior_efficiency) {
  double factor = workers > 0 && workers < max ? speedup_ratio(s, workers, max, prior_efficiency) : 1.0;
  return start + std::chrono::milliseconds(static_cast<int64_t>(static_cast<double>(duration_at_max.count()) * std::max(1.0, factor)));
}

std::chrono::system_clock::time_point cheap_until(std::chrono::system_clock::time_point created,
                                                  std::chrono::seconds patience,
                                                  std::optional<std::chrono::system_clock::time_point> deadline,
                                                  std::optional<std::chrono::milliseconds> duration_at_max, double done_fraction,
                                                  const Scaling& s, int min, int max, double prior_efficiency) {
  const auto by_patience = created + patience;
  if (!deadline) return by_patience;
  if (!duration_at_max) return std::min(by_patience, *deadline);
  const double left = std::clamp(1.0 - done_fraction, 0.0, 1.0);
  const double stretch = min < max ? std::max(1.0, speedup_ratio(s, min, max, prior_efficiency)) : 1.0;
  const auto needed = std::chrono::milliseconds(static_cast<int64_t>(static_cast<double>(duration_at_max->count()) * left * stretch));
  constexpr auto kRestartAllowance = std::chrono::minutes(5);
  return *deadline - needed - kRestartAllowance;
}

}  // namespace valley::planner
