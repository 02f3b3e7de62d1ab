#include "bench/sim/input_files.h"

#include <cstdlib>
#include <set>

#include "operator/flags.h"
#include "operator/kube/config.h"
#include "operator/yaml_json.h"
#include "controllers/api/pricing_policy.h"

namespace valley::sim {

Options default_options() {
  return {{"policy", "naive,backfill,valley-v1,valley"},
          {"profile-drop", ""},
          {"duration-error", "50"},
          {"label", ""},
          {"out", "bench/out/sim"},
          {"scratch", "bench/out/sim-lp"},
          {"solver", "glpsol"},
          {"slot-seconds", "3600"},
          {"from-hour", "0"},
          {"to-hour", "1000000"},
          {"max-jobs", "0"},
          {"tenancy", "none"},
          {"topology", "unaware"},
          {"placement-speed", "fewest"},
          {"shape-learning", "on"},
          {"peer", "backfill"},
          {"load", "0"},
          {"usage-half-life-hours", "168"},
          {"fair-share-weights", "entitled"},
          {"aging-step-minutes", std::to_string(Inputs{}.aging_step.count() / 60)}};
}

cost::Policy read_policy(const std::string& path) {
  std::string error;
  auto docs = parse_yaml(kube::read_file(path, "PricingPolicy"), &error);
  if (!docs) throw InputError(path + ": " + error);
  for (const auto& d : *docs) {
    if (d.value.value("kind", "") != "PricingPolicy") continue;
    std::vector<std::string> errors;
    auto p = api::parse_policy(d.value, &errors);
    if (!p) {
      std::string all;
      for (const auto& e : errors) all += "\n  " + e;
      throw InputError(path + ": not a valid PricingPolicy:" + all);
    }
    return *p;
  }
  throw InputError(path + ": no PricingPolicy in it");
}

Inputs read_inputs(Options& opt, double* kept_share) {
  Inputs in;
  auto hours = [&](const std::string& k) { return static_cast<int64_t>(std::stod(opt[k]) * 3600); };
  const std::string trace = kube::read_file(opt["trace"], "trace");
  in.cluster = parse_cluster(kube::read_file(opt["cluster"], "cluster spec"), opt.count("spot") ? kube::read_file(opt["spot"], "spot model") : "");
  if (opt.count("cloud")) in.cluster.cloud = parse_cloud(kube::read_file(opt["cloud"], "cloud model"), in.cluster);
  double& kept = *kept_share;
  kept = 1;
  // A week before the slice: jobs that ended by its start (their windows' start at hour from - 168).
  const int64_t week = 168 * 3600, from = hours("from-hour");
  auto ended_before = [&](std::vector<TraceJob> before) {
    std::erase_if(before, [&](const TraceJob& j) { return j.submit + j.duration > week; });
    return before;
  };
  if (is_philly(trace)) {
    auto all = parse_philly(trace);
    in.jobs = slice_jobs(all, hours("from-hour"), hours("to-hour"), std::stoi(opt["max-jobs"]));
    in.history = ended_before(slice_jobs(all, from - week, from, 0));
    auto entitled = gpu_hours_by_tenant(all);
    for (const auto& j : in.jobs) in.tenant_weights[j.tenant] = entitled[j.tenant];
  } else {
    in.jobs = parse_trace(trace, hours("from-hour"), hours("to-hour"), std::stoi(opt["max-jobs"]));
    in.history = ended_before(parse_trace(trace, from - week, from));
  }
  if (opt["to-hour"] != "1000000") in.window_seconds = hours("to-hour") - hours("from-hour");
  if (double load = std::stod(opt["load"]); load > 0) {
    int gpus = 0;
    for (const auto& p : in.cluster.pools) gpus += p.nodes * p.gpus_per_node;
    in.jobs = sample_to_load(in.jobs, in.window_seconds > 0 ? in.window_seconds : (in.jobs.empty() ? 0 : in.jobs.back().submit + 1), gpus, load, &kept);
    std::map<std::string, double> present;  // tenants left in the sample
    for (const auto& j : in.jobs) present[j.tenant] = in.tenant_weights[j.tenant];
    if (!in.tenant_weights.empty()) in.tenant_weights = present;
  }
  in.usage_half_life = std::chrono::seconds(static_cast<int64_t>(std::stod(opt["usage-half-life-hours"]) * 3600));
  if (opt["fair-share-weights"] != "entitled" && opt["fair-share-weights"] != "equal")
    throw InputError("--fair-share-weights: entitled or equal, not " + opt["fair-share-weights"]);
  in.equal_fair_share_weights = opt["fair-share-weights"] == "equal";
  in.workload = parse_workload(kube::read_file(opt["workload"], "workload"));
  in.pricing = read_policy(opt["pricing"]);
  // Measured pair rates: what the platform's PricingPolicy lists, and how fast pairs really run.
  if (opt.count("pairs")) in.pricing.sharing_pairs = parse_pair_rates(kube::read_file(opt["pairs"], "pair rates"));
  std::set<int> drop;
  for (const auto& n : split_list(opt["profile-drop"])) drop.insert(std::stoi(n));
  for (const auto& app : in.workload.apps)
    in.speedups.emplace(app, Speedup::from_placements(kube::read_file(opt["profiles"] + "/" + app + "/placements.csv", "speedup profile"), drop));
  in.duration_error_percent = std::stoi(opt["duration-error"]);
  const std::string& speed = opt["placement-speed"];
  in.placement_speed = speed == "measured";
  if (speed != "fewest" && speed != "measured") {
    char* end = nullptr;
    const double per_node = std::strtod(speed.c_str(), &end);
    if (speed.empty() || *end != '\0' || !(per_node > 0 && per_node <= 1))
      throw InputError("--placement-speed: fewest, measured, or a factor in (0, 1] per node added, not " + speed);
    in.spread_per_node = per_node;
  }
  if (opt["shape-learning"] != "on" && opt["shape-learning"] != "off") throw InputError("--shape-learning: on or off, not " + opt["shape-learning"]);
  in.shape_learning = opt["shape-learning"] == "on";
  if (opt["peer"] != "backfill" && opt["peer"] != "kueue") throw InputError("--peer: backfill or kueue, not " + opt["peer"]);
  in.peer_as_kueue = opt["peer"] == "kueue";
  const double aging = std::stod(opt["aging-step-minutes"]);
  if (!(aging >= 0 && aging <= 1e6)) throw InputError("--aging-step-minutes: minutes from 0 (off) up, not " + opt["aging-step-minutes"]);
  in.aging_step = std::chrono::seconds(static_cast<int64_t>(aging * 60));
  return in;
}

}  // namespace valley::sim
