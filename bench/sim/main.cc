// valley-sim: replays a slice of a GPU cluster trace under each admission policy and prints what
// it cost and how long jobs took, against a linear-programming lower bound on the cost.
//
//   valley-sim --trace FILE [--from-hour H] [--to-hour H] [--max-jobs N]
//              --cluster FILE [--spot FILE] --pricing FILE --workload FILE --profiles DIR
//              [--policy naive,backfill,valley-v1,valley] [--out DIR] [--solver glpsol]
//              [--slot-seconds 3600] [--no-bound] [--scratch DIR] [--profile-drop 8,12]
//              [--duration-error 50] [--label NAME] [--load L] [--tenancy none,borrowing,strict]
//              [--usage-half-life-hours 168] [--jobs-out] [--topology unaware,aware]
//              [--placement-speed fewest|measured|F] [--shape-learning on|off] [--pairs FILE] [--cloud FILE]
//              [--peer backfill|kueue] [--aging-step-minutes 10] [--fair-share-weights entitled|equal]
//
// --fair-share-weights equal: every tenant's fair-share weight (Tenant spec.weight) the same, its
// nominal quotas still by entitlement, to measure what the weight moves.
//
// --aging-step-minutes: Valley's --planner-aging-step (a waiting task gains a priority point per
// step; 0 turns aging off), to measure what it moves (the KPIs: starvation, inversions).
//
// --cloud: capacity bought as it is needed (bench/sim/inputs/cloud.yaml): each pool of --cluster is
// a NodePool whose limit is its nodes, none up at the start; the figures add what the platform paid
// for the nodes it bought (launch to termination), idle and provisioning node-hours, and the LP
// bound (pools at their limits, nothing idle) is then one in node-hours.
//
// --pairs: rates of applications sharing one GPU (bench/data/gavel/pairs.csv): the PricingPolicy's
// spec.sharing.pairs for the jobs that allow sharing (workload sharingPercent), and the rate each
// job of a pair runs at on a time-sliced pool's GPU (cluster timeSlicedReplicas).
//
// The trace is an ITP slice (job_id,submission_time,duration,num_gpu) or the Philly-derived job list
// of the Pollux artifact (timestamp,duration,num_gpus,gpu_time,cluster), whose virtual clusters are
// tenants: each gets quotas and a fair-share weight in proportion to its GPU-hours over the whole
// file (what it is entitled to, not what this slice happens to ask), and --tenancy replays every
// policy once per tenancy. --load keeps a stable sample of the slice's jobs (by a hash of the id)
// whose GPU demand in the slice is L times the cluster's GPUs: a trace of a bigger cluster scaled
// down to this one without choosing jobs.
//
// --placement-speed measured: a job runs at the throughput Pollux measured for its placement (the
// trace's duration holds on the fewest nodes, a wider placement is slower: Speedup::spread; a rack
// beyond the fewest counts as a node); fewest (the default, what the economics figures use): every
// placement runs as fast as the fewest nodes; a factor F in (0, 1]: a thin network between nodes,
// each node (or rack) beyond the fewest multiplies the throughput by F. --shape-learning off: the
// progress records name no nodes (as an earlier release's operator kept them), so growth is judged
// by size only. --topology replays every policy unaware (no levels) and/or aware: racks (cluster pools'
// nodesPerRack) are a topology level and each multi-worker job prefers one rack, as Kueue's TAS
// would place it for the peers and Valley's planner does.
//
// --peer kueue: `backfill` as real Kueue runs MPIJobs (bench/live's prediction of it): a job that
// runs on either vendor is submitted for one, the cheapest with room for the gang at submission
// (bench/sim/submitter.h: an MPIJob names its GPU resource at creation), and a gang preempts in one
// pool only, the cheapest where that lets it fit. backfill (the default, the sweeps' baseline):
// the vendor is picked at admission, preemption takes victims wherever they run.
//
// --profile-drop leaves the named GPU counts out of the Pollux profiles (interpolated instead):
// their 8-GPU points were measured on two 4-GPU nodes, not on one 8-GPU node.
//
// Writes DIR/sim.json (figures per policy, the bound, the inputs), DIR/sim.md (a Markdown table)
// and DIR/{policies,allocation}.dat for plots; prints the table. --jobs-out also writes
// DIR/jobs-<policy>.jsonl: one line per job (class, GPUs, submit/start/end, cost, restarts, estimate). The LP and the solver's report go
// to the scratch directory (bench/out/sim-lp).
//
// Diagnostics on stderr: VALLEY_SIM_DEBUG=<job id prefix> prints every resize and move of those
// jobs, and each new reason to wait, with the planner's words; VALLEY_SIM_CLAIMS the tenant claims that waited over 2 minutes.
#include <algorithm>
#include <filesystem>
#include <set>

#include <chrono>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "bench/sim/bound.h"
#include "bench/sim/input_files.h"
#include "bench/sim/simulator.h"
#include "controllers/api/money.h"
#include "operator/flags.h"
#include "operator/kube/config.h"
#include "operator/yaml_json.h"

using namespace valley;
using namespace valley::sim;
using json = nlohmann::json;

namespace {

std::string money(api::Micros m) { return api::format_money(m, 2); }
std::string fixed(double v, int digits) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(digits) << v;
  return o.str();
}

json result_json(const Result& r, const std::optional<Bound>& bound, const std::string& currency) {
  std::string name = to_string(r.policy);
  if (r.tenancy != Tenancy::None) name += std::string("+") + to_string(r.tenancy);
  if (r.topology_aware) name += "+topology";
  json j = {{"policy", name},
            {"currency", currency},
            {"totalCost", money(r.cost)},
            {"totalCostMicros", r.cost},
            {"gpuCostMicros", r.gpu_cost},
            {"energyCostMicros", r.energy_cost},
            {"costPerUsefulGpuHour", r.useful_gpu_hours > 0 ? fixed(static_cast<double>(r.cost) / 1e6 / r.useful_gpu_hours, 4) : "n/a"},
            {"usefulGpuHours", std::round(r.useful_gpu_hours * 10) / 10},
            {"heldGpuHours", std::round(r.held_gpu_hours * 10) / 10},
            {"meanJctHours", std::round(r.mean_jct / 36) / 100},
            {"meanJctHoursNotReduceCost", std::round(r.mean_jct_not_reduce_cost / 3.6) / 1000},
            {"p50JctHours", std::round(r.p50_jct / 36) / 100},
            {"p99JctHours", std::round(r.p99_jct / 36) / 100},
            {"meanQueueHours", std::round(r.mean_queue / 36) / 100},
            {"p99QueueHours", std::round(r.p99_queue / 36) / 100},
            {"gpuAllocationPercent", std::round(r.allocation_percent * 10) / 10},
            {"preemptions", r.preemptions},
            {"restarts", r.restarts},
            {"spotInterruptions", r.interruptions},
            {"launcherLosses", r.launcher_losses},
            {"placements", {{"multiGpu", r.multi_gpu_segments},
                            {"spreadBeyondFewestNodes", r.spread_node_segments},
                            {"spreadBeyondFewestRacks", r.spread_rack_segments},
                            {"spreadThreeOrMoreNodesWider", r.spread_far_segments},
                            {"spreadShare", r.multi_gpu_segments ? std::round(1000.0 * r.spread_node_segments / r.multi_gpu_segments) / 1000 : 0.0},
                            {"rackSpreadShare", r.multi_gpu_segments ? std::round(1000.0 * r.spread_rack_segments / r.multi_gpu_segments) / 1000 : 0.0}}},
            {"workLostGpuHours", std::round(r.work_lost_gpu_hours * 100) / 100},
            {"makespanHours", std::round(static_cast<double>(r.makespan) / 36) / 100},
            {"jobsFinished", static_cast<int>(r.jobs.size()) - r.unfinished},
            {"jobsUnfinished", r.unfinished},
            {"jobsRejected", r.rejected},
            {"planCalls", r.plan_calls},
            {"p95JctHours", std::round(r.p95_jct / 36) / 100}};
  json pools = json::object();
  for (const auto& [pool, hours] : r.pool_gpu_hours) pools[pool] = std::round(hours * 10) / 10;
  j["gpuHoursByPool"] = pools;
  if (r.bought) {
    const auto& b = *r.bought;
    auto round2 = [](double v) { return std::round(v * 100) / 100; };
    j["bought"] = {{"platformCost", money(b.cost)},
                   {"platformCostMicros", b.cost},
                   {"nodeHours", round2(b.node_hours)},
                   {"idleNodeHours", round2(b.idle_node_hours)},
                   {"idleShare", b.node_hours > 0 ? std::round(b.idle_node_hours / b.node_hours * 1000) / 1000 : 0.0},
                   {"provisioningNodeHours", round2(b.provisioning_node_hours)},
                   {"provisioningShare", b.node_hours > 0 ? std::round(b.provisioning_node_hours / b.node_hours * 1000) / 1000 : 0.0},
                   {"gpuHours", round2(b.gpu_hours)},
                   {"soldGpuHours", round2(b.sold_gpu_hours)},
                   {"nodesLaunched", b.nodes_launched},
                   {"platformCostPerUsefulGpuHour",
                    r.useful_gpu_hours > 0 ? fixed(static_cast<double>(b.cost) / 1e6 / r.useful_gpu_hours, 4) : "n/a"}};
  }
  auto fit = [](const Result::EstimateFit& f) {
    return json{{"medianError", std::round(f.median_error * 1000) / 1000}, {"insideRange", std::round(f.inside * 1000) / 1000},
                {"medianRangeWidth", std::round(f.median_width * 1000) / 1000}};
  };
  const auto& m = r.split;
  j["moneySplit"] = {{"idealMicros", std::llround(m.ideal)},       {"sizeMicros", std::llround(m.size)},
                     {"restartsMicros", std::llround(m.restarts)}, {"capacityMicros", std::llround(m.capacity)},
                     {"tariffMicros", std::llround(m.tariff)},     {"unfinishedMicros", std::llround(m.unfinished)}};
  const Kpis& k = r.kpis;
  auto round3 = [](double v) { return std::round(v * 1000) / 1000; };
  j["kpis"] = {{"starvation", {{"worstWaitOverRun", std::round(k.worst_wait_over_run * 10) / 10},
                               {"mostStarved", k.most_starved},
                               {"longestWaitHours", std::round(static_cast<double>(k.longest_wait_seconds) / 36) / 100},
                               {"starved", k.starved},
                               {"starvedNotByChoice", k.starved_not_by_choice}}},
               {"priorityInversions", {{"count", k.inversions},
                                       {"gpuHours", std::round(k.inversion_gpu_hours * 10) / 10},
                                       {"shareOfHeld", round3(k.inversion_share)}}},
               {"occupancy", {{"allocated", round3(k.allocated)}, {"useful", round3(k.useful)}}},
               {"fairness", {{"jainOverUsers", round3(k.jain_users)}, {"users", k.users}}}};
  j["estimates"] = fit(r.estimates);
  j["estimatesDurationOff"] = fit(r.estimates_off);
  if (!r.tenants.empty()) {
    json tenants = json::object();
    for (const auto& [tenant, f] : r.tenants)
      tenants[tenant] = {{"weight", std::round(f.weight * 1000) / 1000},       {"nominalGpus", std::round(f.nominal_gpus * 10) / 10},
                         {"gpuHours", std::round(f.gpu_hours * 10) / 10},      {"backloggedHours", std::round(f.backlogged_hours * 10) / 10},
                         {"shareWhenBacklogged", std::round(f.share * 1000) / 1000}, {"fairShareWhenBacklogged", std::round(f.fair_share * 1000) / 1000},
                         {"jobs", f.jobs}};
    j["tenants"] = tenants;
    j["jainIndex"] = std::round(r.jain * 1000) / 1000;
    j["jainHours"] = std::round(r.jain_hours * 10) / 10;
    j["nominalClaims"] = {{"count", r.claim_waits.size()},
                          {"waitP50Seconds", percentile(r.claim_waits, 50)},
                          {"waitP95Seconds", percentile(r.claim_waits, 95)},
                          {"waitMaxSeconds", percentile(r.claim_waits, 100)}};
    j["windowAllocationPercent"] = std::round(r.window_allocation_percent * 10) / 10;
    json hourly = json::array();
    for (const auto& h : r.hourly_tenant_gpus) {
      json row = json::object();
      for (const auto& [tenant, g] : h) row[tenant] = std::round(g * 10) / 10;
      hourly.push_back(row);
    }
    j["hourlyTenantGpus"] = hourly;
  }
  if (bound && bound->cost > 0) j["costOverBound"] = std::round(static_cast<double>(r.cost) / static_cast<double>(bound->cost) * 1000) / 1000;
  return j;
}


// --name value pairs over the defaults; --no-bound sets "no-bound".
Options parse_args(int argc, char** argv) {
  Options opt = default_options();
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--no-bound" || a == "--jobs-out") {
      opt[a.substr(2)] = "1";
      continue;
    }
    if (a.rfind("--", 0) != 0 || i + 1 >= argc) throw InputError("usage: see the comment at the top of bench/sim/main.cc; bad argument " + a);
    opt[a.substr(2)] = argv[++i];
  }
  for (const char* required : {"trace", "cluster", "pricing", "workload", "profiles"})
    if (!opt.count(required)) throw InputError(std::string("--") + required + " is required");
  return opt;
}

struct Bounds {
  std::optional<Bound> over_valley, over_all;  // over Valley's makespan; over the latest finish of any policy
  std::string error;
  int64_t horizon = 0, valley_makespan = 0, slot = 0;
};

Bounds solve_bounds(const Inputs& in, const std::vector<Result>& results, Options& opt) {
  // Two bounds: over Valley's own makespan (what Valley's cost is judged against: the same time to
  // do the work in), and over the latest finish of any policy (more time to defer work to cheap
  // capacity, so lower).
  Bounds b;
  int64_t& horizon = b.horizon;
  int64_t& valley_makespan = b.valley_makespan;
  for (const auto& r : results) {
    horizon = std::max(horizon, r.makespan);
    if (r.policy == PolicyKind::Valley && r.tenancy == Tenancy::None && !r.topology_aware) valley_makespan = r.makespan;
  }
  if (valley_makespan == 0) valley_makespan = horizon;
  b.slot = std::stoll(opt["slot-seconds"]);
  const int64_t slot = b.slot;
  if (!opt.count("no-bound")) {
    std::filesystem::create_directories(opt["scratch"]);
    // On bought capacity the bound is on what the platform pays for its nodes: no priority multipliers.
    Inputs priced = in;
    if (in.cluster.cloud) priced.pricing.priority.clear();
    b.over_valley = solve_bound(priced, valley_makespan, slot, opt["scratch"], opt["solver"], &b.error);
    if (!b.over_valley) std::cerr << "valley-sim: no lower bound: " << b.error << "\n";
    if (horizon != valley_makespan) b.over_all = solve_bound(priced, horizon, slot, opt["scratch"], opt["solver"], &b.error);
    else b.over_all = b.over_valley;
  }
  return b;
}

// sim.json and sim.md (printed too) under `out`; returns the policies' rows.
json write_figures(const Inputs& in, const std::vector<Result>& results, const Bounds& bounds, Options& opt, double kept) {
  const std::string out = opt["out"];
  const std::optional<Bound>& bound = bounds.over_valley;
  const std::optional<Bound>& bound_all = bounds.over_all;
  const std::string& bound_error = bounds.error;
  const int64_t horizon = bounds.horizon, valley_makespan = bounds.valley_makespan, slot = bounds.slot;
  const bool no_bound = opt.count("no-bound") > 0;
  json runs = json::array();
  // Figures.
  const std::string currency = in.pricing.currency;
  for (const auto& r : results) {
    runs.push_back(result_json(r, bound, currency));
    if (bound_all && bound_all->cost > 0)
      runs.back()["costOverBoundLatestFinish"] = std::round(static_cast<double>(r.cost) / static_cast<double>(bound_all->cost) * 1000) / 1000;
  }
  json doc = {{"benchmark", "trace-replay"},
              {"label", opt["label"]},
              {"trace", opt["trace"]},
              {"slice", {{"fromHour", std::stod(opt["from-hour"])}, {"toHour", std::stod(opt["to-hour"])}, {"jobs", in.jobs.size()},
                         {"load", std::stod(opt["load"])}, {"sampled", std::round(kept * 1000) / 1000}}},
              {"usageHalfLifeHours", std::stod(opt["usage-half-life-hours"])},
              {"fairShareWeights", opt["fair-share-weights"]},
              {"cluster", opt["cluster"]},
              {"spot", opt.count("spot") ? opt["spot"] : ""},
              {"cloud", opt.count("cloud") ? opt["cloud"] : ""},
              {"pricing", opt["pricing"]},
              {"workload", opt["workload"]},
              {"profileDrop", opt["profile-drop"]},
              {"restartSeconds", in.workload.restart_seconds},
              {"policies", runs}};
  auto bound_json = [&](const std::optional<Bound>& b, int64_t h) {
    return json{{"cost", money(b->cost)}, {"costMicros", b->cost}, {"status", b->status}, {"variables", b->variables},
                {"constraints", b->constraints}, {"slotSeconds", slot}, {"horizonHours", static_cast<double>(h) / 3600},
                {"solver", opt["solver"]}};
  };
  if (bound) {
    doc["lowerBound"] = bound_json(bound, valley_makespan);
    doc["lowerBound"]["over"] = "valley's makespan";
  } else if (!no_bound) {
    doc["lowerBound"] = {{"error", bound_error}};
  }
  if (bound_all) {
    doc["lowerBoundLatestFinish"] = bound_json(bound_all, horizon);
    doc["lowerBoundLatestFinish"]["over"] = "the latest finish of any policy";
  }
  std::ofstream(out + "/sim.json") << doc.dump(2) << "\n";
  std::ostringstream md;
  md << "| policy | cost (" << currency << ") | / bound | mean JCT (h) | p95 JCT (h) | GPU-h by pool | "
        "estimate error (median) | finals in range | range width (median) | same, durations +-" << in.duration_error_percent
     << "% | preemptions | restarts | unfinished |\n"
     << "| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: |\n";
  auto pct = [](double v) { return fixed(v * 100, 1) + "%"; };
  for (size_t k = 0; k < runs.size(); ++k) {
    const auto& j = runs[k];
    const auto& r = results[k];
    std::string pools;
    for (const auto& [pool, held] : r.pool_gpu_hours) pools += (pools.empty() ? "" : ", ") + pool + " " + fixed(held, 0);
    md << "| " << j["policy"].get<std::string>() << " | " << j["totalCost"].get<std::string>() << " | "
       << (j.contains("costOverBound") ? fixed(j["costOverBound"].get<double>(), 2) : "n/a") << " | " << j["meanJctHours"] << " | "
       << j["p95JctHours"] << " | " << pools << " | " << pct(r.estimates.median_error) << " | " << pct(r.estimates.inside) << " | "
       << pct(r.estimates.median_width) << " | " << pct(r.estimates_off.median_error) << " / " << pct(r.estimates_off.inside) << " / "
       << pct(r.estimates_off.median_width) << " | " << j["preemptions"] << " | " << j["restarts"] << " | " << j["jobsUnfinished"] << " |\n";
  }
  if (bound)
    md << "| LP bound over valley's makespan (" << bound->status << ") | " << money(bound->cost) << " | 1.00 | | | | | | | | | | |\n";
  if (bound_all && horizon != valley_makespan)
    md << "| LP bound over the latest finish | " << money(bound_all->cost) << " | | | | | | | | | | | |\n";
  if (std::any_of(results.begin(), results.end(), [](const Result& r) { return r.bought.has_value(); })) {
    md << "\nBought capacity (" << opt["cloud"] << "): what the platform paid for its nodes, launch to termination\n\n"
       << "| policy | platform cost (" << currency << ") | / bound | node-h bought | idle | provisioning | GPU-h sold / bought | "
          "per useful GPU-h | mean JCT not reduceCost (h) | nodes launched |\n"
       << "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
    for (size_t k = 0; k < runs.size(); ++k) {
      if (!results[k].bought) continue;
      const auto& b = runs[k]["bought"];
      const auto& r = *results[k].bought;
      md << "| " << runs[k]["policy"].get<std::string>() << " | " << b["platformCost"].get<std::string>() << " | "
         << (bound && bound->cost > 0 ? fixed(static_cast<double>(r.cost) / static_cast<double>(bound->cost), 2) : "n/a") << " | "
         << fixed(r.node_hours, 1) << " | " << pct(b["idleShare"].get<double>()) << " | " << pct(b["provisioningShare"].get<double>()) << " | "
         << pct(r.gpu_hours > 0 ? r.sold_gpu_hours / r.gpu_hours : 0) << " | " << b["platformCostPerUsefulGpuHour"].get<std::string>() << " | "
         << runs[k]["meanJctHoursNotReduceCost"] << " | " << r.nodes_launched << " |\n";
    }
  }
  std::ofstream(out + "/sim.md") << md.str();
  std::cout << md.str();
  return runs;
}

// policies.dat and allocation.dat under `out`, for bench/sim/plot.gp.
void write_plot_data(const std::vector<Result>& results, const json& runs, const std::optional<Bound>& bound, const std::string& out) {
  // Plot data: one row per policy; GPU allocation per hour, one column per policy.
  std::ofstream pol(out + "/policies.dat");
  pol << "# policy cost costPerUsefulGpuHour meanJctH p50JctH p99JctH meanQueueH bound\n";
  for (const auto& j : runs)
    pol << j["policy"].get<std::string>() << " " << static_cast<double>(j["totalCostMicros"].get<int64_t>()) / 1e6 << " "
        << j["costPerUsefulGpuHour"].get<std::string>() << " " << j["meanJctHours"] << " " << j["p50JctHours"] << " "
        << j["p99JctHours"] << " " << j["meanQueueHours"] << " " << (bound ? static_cast<double>(bound->cost) / 1e6 : 0) << "\n";
  std::ofstream alloc(out + "/allocation.dat");
  alloc << "hour";
  size_t hours_max = 0;
  for (size_t k = 0; k < results.size(); ++k) {
    const auto& r = results[k];
    alloc << " " << runs[k]["policy"].get<std::string>();
    hours_max = std::max(hours_max, r.hourly_allocation_percent.size());
  }
  alloc << "\n";
  for (size_t h = 0; h < hours_max; ++h) {
    alloc << h;
    for (const auto& r : results)
      alloc << " " << (h < r.hourly_allocation_percent.size() ? fixed(r.hourly_allocation_percent[h], 1) : "NaN");
    alloc << "\n";
  }
}

// DIR/jobs-<policy>.jsonl, one line per job, for looking into a policy's figures.
void write_jobs(const std::vector<Result>& results, const json& runs, const std::string& out) {
  for (size_t k = 0; k < results.size(); ++k) {
    std::ofstream f(out + "/jobs-" + runs[k]["policy"].get<std::string>() + ".jsonl");
    for (const auto& j : results[k].jobs)
      f << json{{"id", j.id},           {"class", j.cls},         {"app", j.app},
                {"gpus", j.gpus},       {"submit", j.submit},     {"start", j.start},
                {"end", j.end},         {"costMicros", j.cost},   {"gpuSeconds", j.gpu_seconds},
                {"restarts", j.restarts}, {"preemptions", j.preemptions}, {"launcherLosses", j.launcher_losses},
                {"finalWorkers", j.final_workers}, {"estimateMicros", j.estimate}, {"low", j.low}, {"high", j.high},
                {"estimateOffMicros", j.estimate_off}, {"lowOff", j.low_off}, {"highOff", j.high_off}}
               .dump()
        << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Options opt = parse_args(argc, argv);
    double kept = 1;
    Inputs in = read_inputs(opt, &kept);
    const std::string out = opt["out"];
    std::filesystem::create_directories(out);
    std::vector<Result> results;
    for (const auto& name : split_list(opt["policy"]))
      for (const auto& tenancy : split_list(opt["tenancy"]))
        for (const auto& topology : split_list(opt["topology"])) {
          if (topology != "aware" && topology != "unaware") throw InputError("--topology: aware or unaware, not " + topology);
        in.topology_aware = topology == "aware";
        in.tenancy = tenancy_from(tenancy);
        auto started = std::chrono::steady_clock::now();
        results.push_back(simulate(in, policy_from(name)));
        double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        std::cerr << "valley-sim: " << name << " (tenancy " << tenancy << "): " << in.jobs.size() << " jobs simulated in " << fixed(secs, 1)
                  << " s (" << results.back().plan_calls << " planner calls)\n";
      }

    const Bounds b = solve_bounds(in, results, opt);
    const json runs = write_figures(in, results, b, opt, kept);
    write_plot_data(results, runs, b.over_valley, out);
    if (opt.count("jobs-out")) write_jobs(results, runs, out);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "valley-sim: " << e.what() << "\n";
    return 2;
  }
}
