// The trace simulator (bench/sim): input parsing, the speedup model, policies on small cases whose
// outcome can be worked out by hand, and the LP bound's program and report parsing.
#include <gtest/gtest.h>

#include "bench/sim/bound.h"
#include "bench/sim/model.h"
#include "bench/sim/simulator.h"

namespace valley::sim {
namespace {

constexpr api::Micros kPerHour = 3'600'000;  // 3.60 a GPU-hour: 1,000 micros a GPU-second

cost::Policy flat_policy() {
  cost::Policy p;
  p.gpu = {{"nvidia", "", kPerHour, kPerHour / 2}, {"amd", "", kPerHour / 2, kPerHour / 4}};
  p.flat_per_kwh = 0;  // GPU-hours only: the arithmetic stays exact
  return p;
}

Inputs small(const std::string& cluster_yaml, std::vector<TraceJob> jobs, const std::string& spot_yaml = "") {
  Inputs in;
  in.cluster = parse_cluster(cluster_yaml, spot_yaml);
  in.workload = parse_workload("classes: [{name: normal, priority: 50, percent: 100}]\nrestartSeconds: 60\n");
  in.pricing = flat_policy();
  in.jobs = std::move(jobs);
  return in;
}

const JobResult& job(const Result& r, const std::string& id) {
  for (const auto& j : r.jobs)
    if (j.id == id) return j;
  throw std::out_of_range(id);
}

TEST(SimInputs, TraceSliceIsRelativeAndOrdered) {
  std::string csv = "job_id,submission_time,duration,num_gpu\nb,7300,60,2\na,7200,30,1\nc,100,5,1\nd,9000,5,1\n";
  auto jobs = parse_trace(csv, 7200, 9000);
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].id, "a");
  EXPECT_EQ(jobs[0].submit, 0);
  EXPECT_EQ(jobs[1].submit, 100);
  EXPECT_EQ(jobs[1].gpus, 2);
  try {
    parse_trace("job_id,submission_time,duration,num_gpu\nx,1,two,1\n", 0, 10);
    FAIL() << "accepted a bad row";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
}

TEST(SimInputs, ClusterPoolsSpotModelAndErrors) {
  auto c = parse_cluster(
      "pools:\n- {name: od, product: A100, nodes: 2}\n- {name: sp, capacityType: spot, nodes: 1, gpusPerNode: 4}\n",
      "pools:\n  sp: {interruptionsPerNodeHour: 0.5, noticeSeconds: 30}\n");
  ASSERT_EQ(c.pools.size(), 2u);
  EXPECT_EQ(c.pools[0].labels.at("nvidia.com/gpu.product"), "A100");
  EXPECT_EQ(c.pools[1].labels.at("karpenter.sh/capacity-type"), "spot");
  EXPECT_TRUE(c.pools[1].spot);
  EXPECT_DOUBLE_EQ(c.spot.at("sp").interruptions_per_node_hour, 0.5);
  EXPECT_EQ(c.spot.at("sp").notice_seconds, 30);
  EXPECT_THROW(parse_cluster("pools:\n- {name: od}\n", "pools:\n  nope: {}\n"), InputError);
  EXPECT_THROW(parse_cluster("pools:\n- {name: od, vendor: intel}\n", ""), InputError);
  EXPECT_THROW(parse_workload("classes: [{name: a, percent: 60}]\n"), InputError);
}

TEST(SimInputs, SpeedupFromPlacementsInterpolatesAndExtrapolates) {
  // 1 GPU: 1.0 s a step; 2 GPUs on one node: 1.25 s (1.6x); 4 GPUs on two nodes: 1.6 s (2.5x).
  std::string csv =
      "placement,local_bsz,step_time,sync_time\n1,32,1.0,0\n2,32,1.25,0\n11,32,1.5,0\n22,32,1.6,0\n1,64,1.9,0\n";
  auto s = Speedup::from_placements(csv);
  EXPECT_EQ(s.local_batch(), 64);  // the median of {32, 64}: the upper one
  auto at32 = Speedup::from_placements(
      "placement,local_bsz,step_time,sync_time\n1,32,1.0,0\n2,32,1.25,0\n11,32,1.5,0\n22,32,1.6,0\n");
  EXPECT_DOUBLE_EQ(at32.at(1), 1.0);
  EXPECT_DOUBLE_EQ(at32.at(2), 1.6);   // the single-node placement wins over "11"
  EXPECT_DOUBLE_EQ(at32.at(4), 2.5);
  EXPECT_DOUBLE_EQ(at32.at(3), 2.05);  // halfway
  EXPECT_DOUBLE_EQ(at32.at(8), 5.0);   // past the last size: its efficiency kept
}

TEST(SimInputs, SpreadIsTheMeasuredSlowdownOfWiderPlacements) {
  // 2 GPUs: "2" 1.0 s, "11" 1.25 s (0.8); 4 GPUs: "4" 1.0 s, "22" 1.0 s, "13" 2.0 s (two nodes, the
  // faster counts: 1.0), "1111" 2.0 s (0.5 at three more nodes).
  auto s = Speedup::from_placements(
      "placement,local_bsz,step_time,sync_time\n1,8,1.0,0\n2,8,1.0,0\n11,8,1.25,0\n4,8,1.0,0\n22,8,1.0,0\n13,8,2.0,0\n1111,8,2.0,0\n");
  EXPECT_DOUBLE_EQ(s.spread(0), 1.0);
  EXPECT_DOUBLE_EQ(s.spread(1), 0.9);   // mean of 0.8 (2 GPUs) and 1.0 (4 GPUs)
  EXPECT_DOUBLE_EQ(s.spread(2), 0.5);   // not measured: the next wider measurement
  EXPECT_DOUBLE_EQ(s.spread(3), 0.5);
  EXPECT_DOUBLE_EQ(s.spread(7), 0.5);   // past the widest: the widest's
  // Wider is never faster, whatever a testbed measured.
  auto faster = Speedup::from_placements("placement,local_bsz,step_time,sync_time\n1,8,1.0,0\n2,8,1.0,0\n11,8,0.8,0\n");
  EXPECT_DOUBLE_EQ(faster.spread(1), 1.0);
}

TEST(SimPolicies, FifoRunsInArrivalOrderAndPricesGpuSeconds) {
  auto in = small("pools:\n- {name: od, nodes: 2}\n",
                  {{"a", 0, 3600, 8, ""}, {"b", 0, 3600, 8, ""}, {"c", 10, 3600, 16, ""}, {"d", 20, 1800, 1, ""}});
  Result r = simulate(in, PolicyKind::Naive);
  EXPECT_EQ(job(r, "a").start, 0);
  EXPECT_EQ(job(r, "b").start, 0);
  EXPECT_EQ(job(r, "c").start, 3600);  // waits for the whole cluster
  EXPECT_EQ(job(r, "d").start, 7200);  // strictly behind c, though it would fit nowhere sooner anyway
  EXPECT_EQ(job(r, "c").end, 7200);
  // GPU-seconds x 1,000 micros: (8 + 8 + 16) x 3600 + 1 x 1800.
  EXPECT_EQ(r.cost, (32 * 3600 + 1800) * 1000);
  EXPECT_EQ(r.unfinished, 0);
  EXPECT_EQ(r.restarts, 0);
}

// --placement-speed F: each node beyond the fewest multiplies a job's throughput by F, whatever
// its profile measured (a thin network between nodes).
TEST(SimPolicies, OnAThinNetworkAGangOneNodeWiderRunsAtTheFactor) {
  // a and b leave two GPUs on each node: c's four land two and two, one node wider than the fewest.
  auto in = small("pools:\n- {name: od, nodes: 2}\n", {{"a", 0, 36000, 6, ""}, {"b", 0, 36000, 6, ""}, {"c", 10, 3600, 4, ""}});
  const Result fewest = simulate(in, PolicyKind::Naive);
  in.spread_per_node = 0.5;
  const Result thin = simulate(in, PolicyKind::Naive);
  EXPECT_EQ(job(fewest, "c").end - job(fewest, "c").start, 3600);
  EXPECT_EQ(job(thin, "c").end - job(thin, "c").start, 7200);
  EXPECT_EQ(job(thin, "a").end - job(thin, "a").start, 36000);  // on one node: as the trace says
}

TEST(SimPolicies, BackfillLetsASmallJobOvertakeAWaitingGang) {
  auto in = small("pools:\n- {name: od, nodes: 2}\n", {{"a", 0, 3600, 12, ""}, {"c", 10, 3600, 16, ""}, {"d", 20, 1800, 4, ""}});
  Result fifo = simulate(in, PolicyKind::Naive);
  Result backfill = simulate(in, PolicyKind::Backfill);
  EXPECT_EQ(job(fifo, "d").start, 7200);
  EXPECT_EQ(job(backfill, "d").start, 20);  // the 4 GPUs next to a run at once
  EXPECT_EQ(job(backfill, "c").start, 3600);
}

// An MPIJob names its GPU resource when it is created: a peer's job that runs on either vendor is
// submitted for the cheapest with room then (NVIDIA when none has), and waits for that one, where
// backfill deciding at admission takes whichever frees first. Valley decides at admission either way.
TEST(SimPolicies, APeersJobSubmittedForOneVendorWaitsForItWhereBackfillTakesWhicheverFreesFirst) {
  auto in = small("pools:\n- {name: nv, nodes: 1}\n- {name: am, vendor: amd, nodes: 1}\n",
                  {{"a", 0, 3600, 8, ""}, {"b", 10, 7200, 8, ""}, {"c", 20, 1800, 8, ""}});
  in.workload.amd_percent = 100;
  const Result at_admission = simulate(in, PolicyKind::Backfill);
  EXPECT_EQ(job(at_admission, "a").start, 0);
  EXPECT_EQ(job(at_admission, "b").start, 10);
  EXPECT_EQ(job(at_admission, "c").start, 3600);  // on AMD, freed first
  EXPECT_EQ(job(at_admission, "c").cost, 8 * 1800 * 500);
  const Result valley = simulate(in, PolicyKind::Valley);
  in.peer_as_kueue = true;
  const Result at_submission = simulate(in, PolicyKind::Backfill);
  EXPECT_EQ(job(at_submission, "a").cost, 8 * 3600 * 500);   // AMD, the cheapest with room
  EXPECT_EQ(job(at_submission, "b").cost, 8 * 7200 * 1000);  // NVIDIA: AMD held by a
  EXPECT_EQ(job(at_submission, "c").start, 7210);            // neither had room: NVIDIA, behind b
  EXPECT_EQ(job(at_submission, "c").cost, 8 * 1800 * 1000);
  const Result valley_too = simulate(in, PolicyKind::Valley);
  EXPECT_EQ(valley_too.cost, valley.cost);
  EXPECT_EQ(job(valley_too, "c").start, job(valley, "c").start);
}

TEST(SimInputs, PhillyRowsBecomeTenantJobsAndSampleToALoad) {
  std::string csv =
      "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:00:00,3600.0,2,7200.0,vc1\n"
      "2017-10-09 06:00:00,1800.0,1,1800.0,vc2\n2017-10-09 08:00:00,60.0,4,240.0,vc1\n";
  auto all = parse_philly(csv);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].tenant, "vc2");  // the earliest is second 0
  EXPECT_EQ(all[0].submit, 0);
  EXPECT_EQ(all[1].submit, 3600);
  EXPECT_EQ(all[1].id, "philly-2");
  EXPECT_EQ(all[2].gpus, 4);
  EXPECT_DOUBLE_EQ(gpu_hours_by_tenant(all)["vc1"], 2.0 + 4 * 60 / 3600.0);
  auto slice = slice_jobs(all, 3600, 7200 + 1);
  ASSERT_EQ(slice.size(), 2u);
  EXPECT_EQ(slice[1].submit, 3600);
  EXPECT_THROW(parse_philly("timestamp,duration,num_gpus,gpu_time,cluster\nyesterday,1,1,1,vc\n"), InputError);
  // Demand inside a window of 1000 s: each job asks 1 GPU for 1000 s; 100 jobs on 10 GPUs is load
  // 10, so load 1 keeps about a tenth (by hash: the same tenth every time).
  std::vector<TraceJob> many;
  for (int i = 0; i < 100; ++i) many.push_back({"j" + std::to_string(i), 0, 5000, 1, "t"});
  double kept = 0;
  auto sampled = sample_to_load(many, 1000, 10, 1.0, &kept);
  EXPECT_DOUBLE_EQ(kept, 0.1);
  EXPECT_GE(sampled.size(), 4u);
  EXPECT_LE(sampled.size(), 20u);
  EXPECT_EQ(sample_to_load(many, 1000, 10, 1.0).size(), sampled.size());
}

TEST(SimTenants, AnOwnerGetsItsQuotaBackFromAnElasticBorrowerAtOnceButWaitsWithoutTenants) {
  // Two tenants of equal weight on 16 GPUs (nominal 8 each). a's elastic job (8..16) borrows b's
  // idle 8 (it grows once its progress records show growth pays); b's 8-GPU job arrives at 3 h,
  // within b's nominal, while a holds everything.
  const int64_t arrival = 3 * 3600;
  auto in = small("pools:\n- {name: od, nodes: 2}\n", {{"a1", 0, 8 * 3600, 16, "a"}, {"b1", arrival, 3600, 8, "b"}});
  in.tenant_weights = {{"a", 1}, {"b", 1}};
  in.window_seconds = 5 * 3600;
  in.tenancy = Tenancy::Borrowing;
  Result borrowing = simulate(in, PolicyKind::Valley);
  in.tenancy = Tenancy::None;
  Result none = simulate(in, PolicyKind::Valley);
  in.tenancy = Tenancy::Strict;
  Result strict = simulate(in, PolicyKind::Valley);
  for (const Result* r : {&borrowing, &none, &strict}) {
    EXPECT_DOUBLE_EQ(r->tenants.at("a").nominal_gpus, 8);
    EXPECT_DOUBLE_EQ(r->tenants.at("b").weight, 0.5);
  }
  // Borrowing: a ran on 16 until b came, then shrank (no preemption); b started on arrival.
  EXPECT_EQ(job(borrowing, "a1").start, 0);
  EXPECT_EQ(job(borrowing, "b1").start, arrival);
  EXPECT_EQ(job(borrowing, "a1").preemptions, 0);
  ASSERT_EQ(borrowing.claim_waits.size(), 1u) << "a1 held " << borrowing.tenants.at("a").gpu_hours << " GPU-hours; a1 restarts "
                                               << job(borrowing, "a1").restarts << ", end " << job(borrowing, "a1").end;
  EXPECT_EQ(borrowing.claim_waits[0], 0);
  EXPECT_GT(borrowing.tenants.at("a").gpu_hours, 8 * 5.0);  // more than its nominal over the window
  // Without tenants nothing gives b its share back: it waits (a claim, by the same quotas).
  ASSERT_EQ(none.claim_waits.size(), 1u);
  EXPECT_GT(none.claim_waits[0], 0);
  EXPECT_GT(job(none, "b1").start, arrival);
  // Strict: a never ran on more than its 8, so b's 8 were free: no claim, and a took longer.
  EXPECT_EQ(job(strict, "b1").start, arrival);
  EXPECT_TRUE(strict.claim_waits.empty());
  EXPECT_GT(job(strict, "a1").end, job(borrowing, "a1").end);
  // While b waited, it was backlogged: Jain's index was taken over the two tenants then.
  EXPECT_GT(none.jain_hours, 0);
  EXPECT_LT(none.jain, 1.0);
}

TEST(SimTenants, EqualFairShareWeightsLeaveTheQuotasByEntitlement) {
  auto in = small("pools:\n- {name: od, nodes: 2}\n", {{"a1", 0, 3600, 8, "a"}, {"b1", 0, 3600, 8, "b"}});
  in.tenant_weights = {{"a", 3}, {"b", 1}};
  in.tenancy = Tenancy::Borrowing;
  const Result entitled = simulate(in, PolicyKind::Valley);
  in.equal_fair_share_weights = true;
  const Result equal = simulate(in, PolicyKind::Valley);
  EXPECT_DOUBLE_EQ(entitled.tenants.at("a").weight, 0.75);
  EXPECT_DOUBLE_EQ(equal.tenants.at("a").weight, 0.5);
  for (const Result* r : {&entitled, &equal}) {
    EXPECT_DOUBLE_EQ(r->tenants.at("a").nominal_gpus, 12);
    EXPECT_DOUBLE_EQ(r->tenants.at("b").nominal_gpus, 4);
  }
}

TEST(SimPolicies, ValleyRunsElasticallyOnWhatIsFree) {
  // One 8-GPU node: b (8 GPUs, elastic 4..8) shares with a (4 GPUs) by starting at 4, then grows.
  auto in = small("pools:\n- {name: od, nodes: 1}\n", {{"a", 0, 3600, 4, ""}, {"b", 0, 3600, 8, ""}});
  Result backfill = simulate(in, PolicyKind::Backfill);
  Result valley = simulate(in, PolicyKind::Valley);
  EXPECT_GT(job(backfill, "b").start, 0);  // fixed at 8: waits for a
  EXPECT_EQ(job(valley, "b").start, 0);    // its minimum fits now
  EXPECT_LT(job(valley, "b").end - job(valley, "b").submit, job(backfill, "b").end - job(backfill, "b").submit);
  EXPECT_GE(job(valley, "b").restarts, 1);  // grew once a finished: one checkpoint-restart
}

TEST(SimPolicies, SpotNoticeCheckpointsInValleyButLosesWorkWithoutIt) {
  // Spot capacity only, interrupted often; a notice long enough to checkpoint.
  auto in = small("pools:\n- {name: sp, capacityType: spot, nodes: 2}\n", {{"a", 0, 20 * 3600, 8, ""}},
                  "pools:\n  sp: {interruptionsPerNodeHour: 0.5, noticeSeconds: 120, replacementSeconds: 300}\n");
  Result backfill = simulate(in, PolicyKind::Backfill);
  Result valley = simulate(in, PolicyKind::Valley);
  Result fifo = simulate(in, PolicyKind::Naive);
  EXPECT_EQ(fifo.rejected, 1);  // on-demand only: nowhere to run
  EXPECT_GT(valley.interruptions, 0);
  EXPECT_EQ(valley.work_lost_gpu_hours, 0);
  EXPECT_GT(backfill.work_lost_gpu_hours, 0);
  EXPECT_EQ(valley.unfinished, 0);
  EXPECT_EQ(backfill.unfinished, 0);
  EXPECT_LE(job(valley, "a").end, job(backfill, "a").end);
}

TEST(SimPolicies, ALauncherOnALostSpotNodeRestartsItsJobUnlessItSitsBesideWorkerZero) {
  // Naive runs workers on demand only, but kube-scheduler puts launchers anywhere, spot included:
  // every piece of work it loses is a launcher's. Valley's launchers sit beside worker 0.
  std::vector<TraceJob> jobs;
  for (int k = 0; k < 8; ++k) jobs.push_back({"j" + std::to_string(k), 0, 10 * 3600, 1, ""});
  auto in = small("pools:\n- {name: od, nodes: 2}\n- {name: sp, capacityType: spot, nodes: 2}\n", jobs,
                  "pools:\n  sp: {interruptionsPerNodeHour: 0.5, noticeSeconds: 120, replacementSeconds: 300}\n");
  Result fifo = simulate(in, PolicyKind::Naive);
  Result valley = simulate(in, PolicyKind::Valley);
  ASSERT_GT(fifo.interruptions, 0);
  EXPECT_GT(fifo.launcher_losses, 0);
  EXPECT_GT(fifo.work_lost_gpu_hours, 0);
  EXPECT_EQ(valley.launcher_losses, 0);
  EXPECT_EQ(fifo.unfinished + valley.unfinished, 0);
}

TEST(SimPolicies, SameInputsSameResult) {
  auto in = small("pools:\n- {name: od, nodes: 2}\n- {name: sp, capacityType: spot, nodes: 2}\n",
                  {{"a", 0, 7200, 8, ""}, {"b", 60, 3600, 16, ""}, {"c", 120, 600, 2, ""}, {"d", 4000, 3600, 4, ""}},
                  "pools:\n  sp: {interruptionsPerNodeHour: 0.2}\n");
  for (auto p : {PolicyKind::Naive, PolicyKind::Backfill, PolicyKind::Valley}) {
    Result x = simulate(in, p), y = simulate(in, p);
    EXPECT_EQ(x.cost, y.cost) << to_string(p);
    EXPECT_EQ(x.makespan, y.makespan) << to_string(p);
  }
}

TEST(SimSummary, TheMoneySplitSumsToTheCostAndSaysWhereItWent) {
  // On-demand only (naive) where spot at half the price was free: half of it is the capacity class.
  auto in = small("pools:\n- {name: od, nodes: 1}\n- {name: sp, capacityType: spot, nodes: 1}\n", {{"a", 0, 3600, 8, ""}});
  Result fifo = simulate(in, PolicyKind::Naive);
  EXPECT_EQ(fifo.cost, 8 * 3600 * 1000);
  EXPECT_DOUBLE_EQ(fifo.split.ideal, 8 * 3600 * 500.0);  // 8 GPU-hours of work at the spot price
  EXPECT_DOUBLE_EQ(fifo.split.capacity, 8 * 3600 * 500.0);
  EXPECT_DOUBLE_EQ(fifo.split.size + fifo.split.restarts + fifo.split.tariff + fifo.split.unfinished, 0);
  // Valley grows b once a finishes (a checkpoint-restart): the restart's GPU-seconds are their own part.
  in = small("pools:\n- {name: od, nodes: 1}\n", {{"a", 0, 3600, 4, ""}, {"b", 0, 3600, 8, ""}});
  Result valley = simulate(in, PolicyKind::Valley);
  const auto& m = valley.split;
  EXPECT_NEAR(m.ideal + m.size + m.restarts + m.capacity + m.tariff + m.unfinished, static_cast<double>(valley.cost), 2.0);
  EXPECT_GE(m.restarts, 4 * 60 * 1000.0);  // at least b's 4 GPUs through one restart of 60 s
  EXPECT_DOUBLE_EQ(m.capacity, 0);         // one pool: nothing cheaper to have used
}

// Two one-GPU jobs that allow sharing, of an app whose pair with itself runs each at 0.8 of its
// speed alone, beside one whole GPU: under Valley they share the time-sliced GPU (half of it costs
// less per unit of their work than a whole one), each charged half of it for 3600 / 0.8 s; the
// peers run them one after the other on the whole GPU. The bound lets the shared GPU's replicas do
// their work at half price.
TEST(SimPolicies, JobsThatAllowSharingPairOnATimeSlicedGpuAndEachPaysHalf) {
  auto in = small("pools:\n- {name: od, nodes: 1, gpusPerNode: 1}\n- {name: ts, nodes: 1, gpusPerNode: 1, timeSlicedReplicas: 2}\n",
                  {{"a", 0, 3600, 1, ""}, {"b", 0, 3600, 1, ""}});
  in.workload = parse_workload("classes: [{name: rc, priority: 10, reduceCost: true, percent: 100}]\napps: [x]\nsharingPercent: 100\n");
  in.pricing.sharing_pairs = parse_pair_rates("profile,other,rate,other_rate\nx,x,0.8,0.8\n");
  Result valley = simulate(in, PolicyKind::Valley);
  for (const char* id : {"a", "b"}) {
    EXPECT_EQ(job(valley, id).start, 0) << id;
    EXPECT_EQ(job(valley, id).end, 4500) << id << ": 3600 s of work at 0.8";
    EXPECT_EQ(job(valley, id).cost, 2'250'000) << id << ": half of 1,000 a GPU-second for 4500 s";
  }
  Result backfill = simulate(in, PolicyKind::Backfill);
  EXPECT_EQ(job(backfill, "a").cost + job(backfill, "b").cost, 7'200'000) << "whole GPUs only, one after the other";
  EXPECT_EQ(std::max(job(backfill, "a").end, job(backfill, "b").end), 7200);
  // No pair that pays (0.5 each): they run whole, one after the other.
  in.pricing.sharing_pairs = parse_pair_rates("profile,other,rate,other_rate\nx,x,0.5,0.5\n");
  Result unpaired = simulate(in, PolicyKind::Valley);
  EXPECT_EQ(job(unpaired, "a").cost + job(unpaired, "b").cost, 7'200'000);
  // The bound: the replicas' capacity at half price, for the sharing jobs only.
  in.pricing.sharing_pairs = parse_pair_rates("profile,other,rate,other_rate\nx,x,0.8,0.8\n");
  const std::string lp = bound_program(in, 7200, 3600);
  EXPECT_NE(lp.find("<= 7200\n"), std::string::npos) << "2 replicas x 3600 s on ts:\n" << lp;
  EXPECT_THROW(parse_pair_rates("x,y,0.5\n"), InputError);
  EXPECT_THROW(parse_pair_rates("x,y,0.5,2.5\n"), InputError);
  EXPECT_THROW(parse_cluster("pools:\n- {name: ts, vendor: amd, timeSlicedReplicas: 2}\n", ""), InputError);
}

// --- capacity bought (Cluster::cloud) -------------------------------------------------------------

TEST(SimCloud, NodesAreBoughtForAGangBilledFromLaunchToTerminationAndGivenBackOnceEmpty) {
  auto in = small("pools:\n- {name: od, nodes: 2, gpusPerNode: 4}\n", {{"a", 0, 3600, 4, ""}, {"b", 7200, 3600, 4, ""}, {"huge", 100, 60, 20, ""}});
  in.cluster.cloud = parse_cloud("consolidateAfterSeconds: 60\nprovisioningSeconds: 300\n", in.cluster);
  for (PolicyKind policy : {PolicyKind::Backfill, PolicyKind::Valley}) {
    SCOPED_TRACE(to_string(policy));
    Result r = simulate(in, policy);
    ASSERT_TRUE(r.bought.has_value());
    // Nothing is up at the start: a waits for its node to be bought; b for another, since a's was
    // given back 60 s after a ended; a gang above what the pool's limit lets be bought never runs.
    EXPECT_EQ(job(r, "a").start, 300);
    EXPECT_EQ(job(r, "b").start, 7200 + 300);
    EXPECT_EQ(r.rejected, 1);
    EXPECT_EQ(r.bought->nodes_launched, 2);
    EXPECT_NEAR(r.bought->idle_node_hours, 2 * 60 / 3600.0, 1e-9);
    EXPECT_NEAR(r.bought->provisioning_node_hours, 2 * 300 / 3600.0, 1e-9);
    // Every node-second bought is paid, used or not: 4 GPUs x 1,000 micros.
    EXPECT_NEAR(static_cast<double>(r.bought->cost), r.bought->node_hours * 3600 * 4 * 1000, 1.0);
    if (policy == PolicyKind::Backfill) {
      // Each node: 300 s provisioning + 3600 s holding its job + 60 s empty.
      EXPECT_EQ(r.bought->cost, 2 * (300 + 3600 + 60) * 4 * 1000);
      EXPECT_NEAR(r.bought->sold_gpu_hours, 2 * 4.0, 1e-9);
    }
  }
}

TEST(SimCloud, ASpotNodeInterruptedIsGoneAndItsGangRunsOnANodeBoughtAgain) {
  auto in = small("pools:\n- {name: sp, capacityType: spot, nodes: 2, gpusPerNode: 4}\n", {{"a", 0, 36000, 4, ""}},
                  "pools:\n  sp: {interruptionsPerNodeHour: 0.5, noticeSeconds: 120}\n");
  in.cluster.cloud = parse_cloud("provisioningSeconds: 120\n", in.cluster);
  Result r = simulate(in, PolicyKind::Valley);
  ASSERT_TRUE(r.bought.has_value());
  ASSERT_GT(r.interruptions, 0);
  EXPECT_EQ(r.unfinished, 0);
  EXPECT_GT(r.bought->nodes_launched, 1);  // what was interrupted does not come back: it is bought again
  EXPECT_GT(job(r, "a").restarts, 0);
}

TEST(SimCloud, TheCloudModelNamesOnlyPoolsOfWholeGpus) {
  auto c = parse_cluster("pools:\n- {name: od, nodes: 2}\n- {name: ts, nodes: 1, gpusPerNode: 1, timeSlicedReplicas: 2}\n", "");
  EXPECT_THROW(parse_cloud("pools: {nope: 10}\n", c), InputError);
  EXPECT_THROW(parse_cloud("provisioningSeconds: 10\n", c), InputError);  // ts: time-sliced
  c.pools.pop_back();
  auto m = parse_cloud("provisioningSeconds: 10\npools: {od: 40}\n", c);
  EXPECT_EQ(m.provisioning("od"), 40);
  EXPECT_EQ(m.provisioning("other"), 10);
  EXPECT_THROW(parse_cloud("provisioningSeconds: -1\n", c), InputError);
}

TEST(SimBound, ProgramAndReport) {
  auto in = small("pools:\n- {name: od, nodes: 1}\n- {name: sp, capacityType: spot, nodes: 1}\n", {{"a", 0, 3600, 8, ""}});
  std::string lp = bound_program(in, 7200, 3600);
  EXPECT_NE(lp.find("Minimize"), std::string::npos);
  EXPECT_NE(lp.find("cap_1_1:"), std::string::npos);
  EXPECT_NE(lp.find("done_0:"), std::string::npos);
  EXPECT_NE(lp.find(">= 28800"), std::string::npos);  // 8 GPUs x 3600 s of work, linear speedup
  auto b = parse_glpsol_report("Problem:    \nRows:       7\nColumns:    4\nNon-zeros:  12\nStatus:     OPTIMAL\n"
                               "Objective:  obj = 14400000 (MINimum)\n");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->status, "OPTIMAL");
  EXPECT_EQ(b->cost, 14400000);
  EXPECT_EQ(b->variables, 4);
  EXPECT_FALSE(parse_glpsol_report("glpsol: no such file"));
}

}  // namespace
}  // namespace valley::sim
