#include "bench/sim/bound.h"

#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <tuple>

#include "bench/sim/ideal.h"
#include "controllers/cost/engine.h"
#include "controllers/inputs/planner_config.h"

namespace valley::sim {

using kube::SystemTime;

namespace {

struct Group {
  int64_t multiplier_milli = 1000;
  bool amd = false;
  bool shares = false;  // one-GPU jobs that may share a time-sliced GPU with a job they pair with
  std::vector<std::pair<int64_t, double>> need;  // (submit, GPU-seconds), by submit
  double total = 0;
};

}  // namespace

std::string bound_program(const Inputs& in, int64_t horizon, int64_t slot) {
  const planner::PairRates pairs = cost::pair_rates(in.pricing);
  std::map<std::tuple<int64_t, bool, bool>, Group> groups;
  for (const auto& j : in.jobs) {
    JobTraits t = traits_of(j, in.workload);
    const bool shares = t.shares && j.gpus == 1 && pairs.worst_paying(t.app).has_value();
    Group& g = groups[{cost::multiplier_milli(in.pricing, t.priority), t.amd, shares}];
    g.multiplier_milli = cost::multiplier_milli(in.pricing, t.priority);
    g.amd = t.amd;
    g.shares = shares;
    double need = ideal_gpu_seconds(in, j, t);
    g.need.emplace_back(j.submit, need);
    g.total += need;
  }
  int64_t slots = std::max<int64_t>(1, (horizon + slot - 1) / slot);
  auto at = [&](int64_t s) { return SystemTime{} + std::chrono::seconds(in.workload.start_epoch + s); };

  std::ostringstream obj, cons, bounds;
  obj.precision(12);
  cons.precision(12);
  obj << "Minimize\n obj:";
  cons << "Subject To\n";
  // A group's work on a pool: AMD only for AMD-capable jobs; a time-sliced pool only for jobs that
  // share, each replica-second doing at most a second of its work (alone on its GPU) for the
  // replica's share of the GPU's price.
  auto usable = [&](const Group& g, const Pool& pool) { return (pool.vendor != "amd" || g.amd) && (pool.replicas == 0 || g.shares); };
  int gi = 0;
  std::vector<std::vector<std::vector<std::string>>> vars(in.cluster.pools.size());  // [pool][slot] -> names
  for (auto& pv : vars) pv.resize(static_cast<size_t>(slots));
  for (const auto& [key, g] : groups) {
    for (int64_t s = 0; s < slots; ++s) {
      std::vector<std::string> here;
      for (size_t p = 0; p < in.cluster.pools.size(); ++p) {
        const Pool& pool = in.cluster.pools[p];
        if (!usable(g, pool)) continue;
        std::string name = "x_" + std::to_string(gi) + "_" + std::to_string(p) + "_" + std::to_string(s);
        cost::NodeRate rate = cost::rate_for(in.pricing, pool.vendor, pool.labels);
        double price = cheapest_per_second(in.pricing, rate, at(s * slot), at((s + 1) * slot)) / std::max(1, pool.replicas);
        obj << " + " << price * static_cast<double>(g.multiplier_milli) / 1000.0 << " " << name << "\n";
        vars[p][static_cast<size_t>(s)].push_back(name);
        here.push_back(name);
      }
      // Released work: what this group submitted before the slot ends.
      double released = 0;
      for (const auto& [submit, need] : g.need)
        if (submit < (s + 1) * slot) released += need;
      cons << " rel_" << gi << "_" << s << ":";
      for (int64_t s2 = 0; s2 <= s; ++s2)
        for (size_t p = 0; p < in.cluster.pools.size(); ++p) {
          if (!usable(g, in.cluster.pools[p])) continue;
          cons << " + x_" << gi << "_" << p << "_" << s2;
        }
      cons << " <= " << released << "\n";
    }
    cons << " done_" << gi << ":";
    for (int64_t s = 0; s < slots; ++s)
      for (size_t p = 0; p < in.cluster.pools.size(); ++p) {
        if (!usable(g, in.cluster.pools[p])) continue;
        cons << " + x_" << gi << "_" << p << "_" << s;
      }
    cons << " >= " << g.total << "\n";
    ++gi;
  }
  for (size_t p = 0; p < in.cluster.pools.size(); ++p) {
    const Pool& pool = in.cluster.pools[p];
    double cap = static_cast<double>(pool.nodes) * pool.gpus_per_node * std::max(1, pool.replicas) * static_cast<double>(slot);
    for (int64_t s = 0; s < slots; ++s) {
      if (vars[p][static_cast<size_t>(s)].empty()) continue;
      cons << " cap_" << p << "_" << s << ":";
      for (const auto& v : vars[p][static_cast<size_t>(s)]) cons << " + " << v;
      cons << " <= " << cap << "\n";
    }
  }
  return obj.str() + cons.str() + "End\n";
}

std::optional<Bound> parse_glpsol_report(const std::string& report) {
  std::smatch m;
  Bound b;
  if (std::regex_search(report, m, std::regex(R"(Status:\s+(\S+))"))) b.status = m[1];
  if (std::regex_search(report, m, std::regex(R"(Rows:\s+(\d+))"))) b.constraints = std::stoi(m[1]);
  if (std::regex_search(report, m, std::regex(R"(Columns:\s+(\d+))"))) b.variables = std::stoi(m[1]);
  if (!std::regex_search(report, m, std::regex(R"(Objective:\s+\S+\s+=\s+([-+0-9.eE]+))"))) return std::nullopt;
  b.cost = static_cast<api::Micros>(std::floor(std::stod(m[1])));
  return b;
}

std::optional<Bound> solve_bound(const Inputs& in, int64_t horizon, int64_t slot, const std::string& dir,
                                 const std::string& solver, std::string* error) {
  std::string lp = dir + "/bound.lp", report = dir + "/bound.txt";
  {
    std::ofstream f(lp);
    f << bound_program(in, horizon, slot);
    if (!f) {
      *error = "cannot write " + lp;
      return std::nullopt;
    }
  }
  std::string cmd = solver + " --lp '" + lp + "' -o '" + report + "' > '" + dir + "/bound.log' 2>&1";
  int rc = std::system(cmd.c_str());
  if (rc != 0) {
    *error = solver + " failed (exit " + std::to_string(WIFEXITED(rc) ? WEXITSTATUS(rc) : rc) + "); see " + dir + "/bound.log";
    return std::nullopt;
  }
  std::ifstream f(report);
  std::stringstream text;
  text << f.rdbuf();
  auto b = parse_glpsol_report(text.str());
  if (!b) *error = "no objective in " + report;
  return b;
}

}  // namespace valley::sim
