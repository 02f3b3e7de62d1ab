// The trace replay: the clock, arrivals, running segments, spot events (sim_state.h).
#include "bench/sim/sim_state.h"
#include "bench/sim/submitter.h"

#include "bench/sim/ideal.h"
#include "controllers/gpu/resources.h"

#include <algorithm>
#include <cmath>
#include <iostream>

namespace valley::sim::detail {

Simulator::Simulator(const Inputs& in, PolicyKind policy)
    : in_(in), policy_(policy), pricing_(std::make_shared<const api::Policy>(in.pricing)) {
  // Nodes read as the operator reads them: the PricingPolicy in force names the spot labels.
  planner::NodeFacts facts;
  facts.spot_labels = in.pricing.spot_labels;
  snapshot_.set_facts(facts);
  node_facts_ = facts;
  if (in.cluster.cloud) {
    setup_cloud();  // nothing is up: every node is bought
  } else {
    for (const auto& pool : in.cluster.pools)
      for (int i = 0; i < pool.nodes; ++i) {
        SimNode n = make_node(pool, pool.name + "-" + std::to_string(i));
        if (pool.nodes_per_rack > 0) n.node.labels[kRackLabel] = pool.name + "-rack-" + std::to_string(i / pool.nodes_per_rack);
        node_index_[n.node.name] = nodes_.size();
        nodes_.push_back(std::move(n));
      }
  }
  for (auto& n : nodes_) schedule_interruption(n, 0);
  pairs_ = cost::pair_rates(in.pricing);
  for (const auto& pool : in.cluster.pools)  // a week holds every tariff window
    cheapest_by_pool_[pool.name] = cheapest_per_second(in.pricing, cost::rate_for(in.pricing, pool.vendor, pool.labels), at(0), at(7 * 24 * 3600));
  setup_tenants();
  for (const auto& t : in.history) {  // as if each ran at its traced size for its traced duration
    SimJob h;
    h.trace = t;
    h.traits = as_run(traits_of(t, in.workload));
    h.state = State::Done;
    h.result.gpu_seconds = t.duration * t.gpus;
    learn_duration(h);
  }
  for (const auto& t : in.jobs) {
    SimJob j;
    j.trace = t;
    const JobTraits asked = traits_of(t, in.workload);
    j.traits = as_run(asked);
    j.vendors = j.traits.amd ? std::vector<std::string>{"nvidia", "amd"} : std::vector<std::string>{"nvidia"};
    auto sp = in.speedups.find(j.traits.app);
    j.speedup = sp == in.speedups.end() ? nullptr : &sp->second;
    double at_request = j.speedup ? j.speedup->at(t.gpus) : t.gpus;
    j.work_total = static_cast<double>(t.duration) * at_request;
    j.result.id = t.id;
    j.result.cls = j.traits.cls;
    j.result.asked_reduce_cost = asked.reduce_cost;
    j.result.app = j.traits.app;
    j.result.gpus = t.gpus;
    j.result.priority = j.traits.priority;
    j.result.submit = t.submit;
    j.result.tenant = t.tenant;
    jobs_.push_back(std::move(j));
  }
  for (auto& j : jobs_) {
    by_key_[key_of(j)] = &j;
    if (namespace_of(j) != "sim") tenancy_.ownership.owner[namespace_of(j)] = j.trace.tenant;
  }
  window_end_ = in.window_seconds > 0 ? in.window_seconds : (jobs_.empty() ? 0 : jobs_.back().trace.submit);
}

Result Simulator::run() {
  size_t next_arrival = 0;
  int64_t horizon = (jobs_.empty() ? 0 : jobs_.back().trace.submit) + 90 * 86400;
  int64_t next_tick = 0;
  while (now_ <= horizon) {
    int64_t next = kNever;
    if (next_arrival < jobs_.size()) next = std::min(next, jobs_[next_arrival].trace.submit);
    for (const auto& n : nodes_) {
      next = std::min({next, n.notice_at, n.kill_at, n.back_at});
      if (n.launching) next = std::min(next, n.ready_at);
      if (n.alive && n.idle_since != kNever) next = std::min(next, n.idle_since + in_.cluster.cloud->consolidate_after_seconds);
    }
    for (const auto& j : jobs_) {
      if (j.state != State::Running) continue;
      next = std::min(next, completion(j));
      // Valley reads each progress record as it appears (the operator polls latest.json).
      if (runs_operator_planner(policy_)) next = std::min(next, j.progress_from + (j.segment_records + 1) * in_.workload.checkpoint_every_seconds);
    }
    bool waiting = std::any_of(jobs_.begin(), jobs_.end(), [](const SimJob& j) { return j.state == State::Pending || j.state == State::Provisioning; });
    bool running = std::any_of(jobs_.begin(), jobs_.end(), [](const SimJob& j) { return j.state == State::Running; });
    if (!waiting && !running && next_arrival >= jobs_.size()) break;
    // Without events the planner still runs now and then: waiting reduceCost tasks meet off-peak
    // hours, elastic tasks may grow once their resize interval has passed.
    if (waiting || (running && (runs_operator_planner(policy_) || policy_ == PolicyKind::ValleyV1))) next = std::min(next, std::max(next_tick, now_ + 1));
    if (next == kNever) break;
    advance(std::min(next, horizon + 1));
    if (now_ > horizon) break;
    while (next_arrival < jobs_.size() && jobs_[next_arrival].trace.submit <= now_) arrive(jobs_[next_arrival++]);
    for (auto& j : jobs_)
      if (j.state == State::Running && completion(j) <= now_) finish(j);
    spot_events();
    cloud_events();
    learn();
    replan();
    if (next_tick <= now_) next_tick = now_ + in_.workload.tick_seconds;
  }
  return summarize();
}

void Simulator::schedule_interruption(SimNode& n, int64_t from) {
  auto it = in_.cluster.spot.find(n.pool->name);
  if (!n.pool->spot || it == in_.cluster.spot.end() || it->second.interruptions_per_node_hour <= 0) return;
  n.notice_at = next_notice(n.rng, it->second, from);
  n.kill_at = n.notice_at + it->second.notice_seconds;
}

int64_t Simulator::completion(const SimJob& j) const {
  double rate = j.rate();
  if (rate <= 0) return kNever;
  double left = std::max(0.0, j.work_total - j.work_done);
  return std::max(now_, j.progress_from) + static_cast<int64_t>(std::ceil(left / rate - 1e-9));
}

// Moves the clock to t: progress, and GPU-seconds held and alive for the allocation figure.
void Simulator::advance(int64_t t) {
  if (t <= now_) return;
  int64_t held_milli = 0, alive = 0;  // held: thousandths of a GPU (a replica is its share)
  for (auto& j : jobs_) {
    if (j.state != State::Running) continue;
    int64_t from = std::max(now_, j.progress_from);
    if (t > from) j.work_done = std::min(j.work_total, j.work_done + j.rate() * static_cast<double>(t - from));
    for (const auto& w : j.workers) held_milli += gpu::share_milli(w.gpu_resource, w.count);
  }
  const double held = static_cast<double>(held_milli) / 1000.0;
  for (const auto& n : nodes_)
    if (n.alive) alive += n.pool->gpus_per_node;
  measure_tenants(now_, t);
  measure_bought(t);
  for (int64_t s = now_; s < t;) {  // spread over hour buckets
    int64_t hour = s / 3600, end = std::min(t, (hour + 1) * 3600);
    if (static_cast<int64_t>(held_hourly_.size()) <= hour) {
      held_hourly_.resize(static_cast<size_t>(hour + 1), 0);
      alive_hourly_.resize(static_cast<size_t>(hour + 1), 0);
    }
    held_hourly_[static_cast<size_t>(hour)] += held * static_cast<double>(end - s);
    alive_hourly_[static_cast<size_t>(hour)] += static_cast<double>(alive * (end - s));
    s = end;
  }
  now_ = t;
}

void Simulator::arrive(SimJob& j) {
  if (in_.peer_as_kueue && !runs_operator_planner(policy_) && j.vendors.size() > 1) j.vendors = {submitted_vendor(j)};
  // A job bigger than every node this policy may use together can never start.
  int64_t usable = 0;
  const planner::Task probe = where_it_may_run(j);
  for (const auto& n : nodes_)
    if (!cloud() && usable_by(probe, n)) usable += n.pool->gpus_per_node;
  for (const auto& [pool, n] : prototypes_)  // bought capacity: what the pool's limit lets be bought
    if (usable_by(probe, n)) usable += int64_t{n.pool->nodes} * n.pool->gpus_per_node;
  if (usable < j.traits.min_workers) {
    j.state = State::Rejected;
    return;
  }
  j.result.claim = claims_nominal(j);
  j.state = State::Pending;
  touch(j);
}

std::string Simulator::submitted_vendor(const SimJob& j) const {
  std::map<std::string, int64_t> reserved;  // pool -> GPUs its admitted jobs hold (Kueue's reservations)
  for (const auto& other : jobs_) {
    if (other.state != State::Running && other.state != State::Provisioning) continue;
    for (const auto& w : other.state == State::Running ? other.workers : other.awaiting)
      if (auto it = node_index_.find(w.node); it != node_index_.end()) reserved[nodes_[it->second].pool->name] += w.count;
  }
  const Pool* pool = cheapest_pool_with_room(in_, reserved, j.trace.gpus);
  return pool ? pool->vendor : "nvidia";
}

planner::Task Simulator::where_it_may_run(const SimJob& j) const {
  planner::Task probe;
  probe.vendors = j.vendors;
  if (policy_ == PolicyKind::Naive) probe.node_selector["karpenter.sh/capacity-type"] = "on-demand";
  return probe;
}

bool Simulator::usable_by(const planner::Task& t, const SimNode& n) const {
  if (!planner::runs_on(t, n.pool->vendor)) return false;
  return planner::selects(t, n.node);
}

// Ends the running segment: charges it (GPUs held, restart time included) and takes the GPUs back.
void Simulator::end_segment(SimJob& j) {
  std::map<std::string, int64_t> per_node;  // thousandths of a GPU held there (a replica: its share)
  int64_t milli_held = 0;
  for (const auto& w : j.workers) {
    per_node[w.node] += gpu::share_milli(w.gpu_resource, w.count);
    milli_held += gpu::share_milli(w.gpu_resource, w.count);
  }
  if (!j.workers.empty()) j.result.segments.push_back({j.segment_start, now_, milli_held});
  for (const auto& [name, milli] : per_node) {
    const SimNode& n = node(name);
    const int64_t held = now_ - j.segment_start, restarting = std::max<int64_t>(0, std::min(now_, j.progress_from) - j.segment_start);
    if (now_ > j.segment_start) j.charge.add(cost::charge_interval(in_.pricing, n.rate, milli, at(j.segment_start), at(now_)));
    j.result.gpu_seconds += milli * held / 1000;
    j.held_at_cheapest += static_cast<double>(milli * held) / 1000.0 * cheapest_by_pool_.at(n.pool->name);
    j.restart_gpu_seconds += milli * restarting / 1000;
    pool_gpu_seconds_[n.pool->name] += milli * held / 1000;
  }
  j.result.final_workers = j.gpus();
  rise(j);
  j.workers.clear();
  touch(j);
}

// Progress records: the workload writes latest.json {step, time} at each periodic checkpoint; two
// records of one segment give its rate at that size and shape (what the operator folds into status.scaling).
void Simulator::learn() {
  if (!runs_operator_planner(policy_)) return;
  const int64_t period = in_.workload.checkpoint_every_seconds;
  for (auto& j : jobs_) {
    if (j.state != State::Running || now_ < j.progress_from) continue;
    int records = static_cast<int>((now_ - j.progress_from) / period);
    for (int k = j.segment_records + 1; k <= records; ++k)
      if (k >= 2) {
        j.scaling = planner::observe(j.scaling, j.gpus(), j.rate(), in_.shape_learning ? j.nodes : 0);
        touch(j);
      }
    j.segment_records = std::max(j.segment_records, records);
  }
}

void Simulator::start_segment(SimJob& j, std::vector<planner::Task::Worker> placement, bool restart, bool new_epoch) {
  j.workers = std::move(placement);
  sit(j);
  place_segment(j);
  j.launcher_node = launcher_node_for(j);
  j.segment_start = now_;
  j.progress_from = now_ + (restart ? in_.workload.restart_seconds : 0);
  j.segment_work = j.work_done;
  j.segment_records = 0;
  if (j.result.start < 0) j.result.start = now_;
  j.state = State::Running;
  if (new_epoch) ++j.epoch;
  touch(j);
}

void Simulator::sit(SimJob& j) {
  for (const auto& w : j.workers) {
    if (!gpu::replicas_of(w.gpu_resource)) continue;
    SimNode& n = node(w.node);
    for (int64_t c = 0; c < w.count; ++c) {
      auto free = std::find(n.slots.begin(), n.slots.end(), "");
      if (free == n.slots.end())  // the plan placed more on the node than it has: a planner bug
        throw std::logic_error("no free replica on " + n.node.name + " for " + j.trace.id + " at second " + std::to_string(now_));
      *free = key_of(j);
    }
    pair_rates_on(n);
  }
}

void Simulator::rise(SimJob& j) {
  const std::string key = key_of(j);
  for (const auto& w : j.workers) {
    if (!gpu::replicas_of(w.gpu_resource)) continue;
    SimNode& n = node(w.node);
    std::replace(n.slots.begin(), n.slots.end(), key, std::string());
    pair_rates_on(n);
  }
  j.pair_factor = 1;
}

// Each job's rate beside the others on its GPU: the lowest of its measured pair rates with them
// (an unmeasured pair shares the GPU's time evenly).
void Simulator::pair_rates_on(SimNode& n) {
  const size_t per_gpu = static_cast<size_t>(n.pool->replicas);
  for (size_t g = 0; g + per_gpu <= n.slots.size(); g += per_gpu)
    for (size_t a = g; a < g + per_gpu; ++a) {
      if (n.slots[a].empty()) continue;
      SimJob& job = *by_key_.at(n.slots[a]);
      double factor = 1;
      int partners = 0;
      for (size_t b = g; b < g + per_gpu; ++b) {
        if (b == a || n.slots[b].empty()) continue;
        ++partners;
        const auto r = pairs_.beside(job.traits.app, by_key_.at(n.slots[b])->traits.app);
        factor = std::min(factor, r ? *r : 1.0 / (partners + 1));
      }
      job.pair_factor = factor;
    }
}

// The trace's durations hold on the fewest nodes; a job placed wider runs at the throughput Pollux
// measured for that many more nodes (Speedup::spread). No trace measures racks: each rack beyond
// the fewest that hold the nodes is charged as one more node.
void Simulator::place_segment(SimJob& j) {
  std::set<std::string> nodes, racks;
  int per_node = 1, per_rack = 0;
  for (const auto& w : j.workers) {
    const SimNode& n = node(w.node);
    nodes.insert(w.node);
    per_node = std::max(per_node, n.pool->gpus_per_node);
    per_rack = std::max(per_rack, n.pool->nodes_per_rack);
    if (auto r = n.node.labels.find(kRackLabel); r != n.node.labels.end()) racks.insert(r->second);
  }
  const int gpus = j.gpus();
  const int fewest_nodes = (gpus + per_node - 1) / per_node;
  const int fewest_racks = per_rack > 0 ? (fewest_nodes + per_rack - 1) / per_rack : 0;
  const int extra_nodes = std::max(0, static_cast<int>(nodes.size()) - fewest_nodes);
  const int extra_racks = racks.empty() ? 0 : std::max(0, static_cast<int>(racks.size()) - fewest_racks);
  if (gpus > 1) {
    ++multi_gpu_segments_;
    spread_node_segments_ += extra_nodes > 0;
    spread_far_segments_ += extra_nodes >= 3;
    spread_rack_segments_ += extra_racks > 0;
  }
  j.nodes = static_cast<int>(nodes.size());
  if (in_.spread_per_node > 0)
    j.placement_factor = std::pow(in_.spread_per_node, extra_nodes + extra_racks);
  else
    j.placement_factor = j.speedup && in_.placement_speed ? j.speedup->spread(extra_nodes + extra_racks) : 1;
}

// Valley puts a launcher beside its worker 0; kube-scheduler puts the peers' (and Valley's before
// that) on any live node (a pod without GPUs: spread over the nodes, spot included).
std::string Simulator::launcher_node_for(const SimJob& j) const {
  if (cloud()) return "";  // on the CPU nodes: the bought GPU nodes are tainted for GPU work
  if (policy_ == PolicyKind::Valley && !j.workers.empty()) return j.workers.front().node;
  std::vector<const SimNode*> live;
  for (const auto& n : nodes_)
    if (n.alive && n.node.schedulable) live.push_back(&n);
  if (live.empty()) return "";
  return live[std::hash<std::string>{}(j.trace.id + "/" + std::to_string(j.epoch)) % live.size()]->node.name;
}

JobTraits Simulator::as_run(JobTraits traits) const {
  if (policy_ == PolicyKind::Naive || policy_ == PolicyKind::Backfill) {  // fixed size at what the job asked for
    traits.min_workers = traits.max_workers;
    traits.reduce_cost = false;
  }
  if (policy_ == PolicyKind::Naive) traits.amd = false;  // on-demand NVIDIA only
  if (policy_ != PolicyKind::Valley) traits.shares = false;  // the peers (and Valley before) run each job on whole GPUs
  return traits;
}

void Simulator::finish(SimJob& j) {
  end_segment(j);
  j.work_done = j.work_total;
  j.state = State::Done;
  touch(j);
  j.result.end = now_;
  j.result.cost = cost::apply_multiplier(j.charge.gpu + j.charge.energy, cost::multiplier_milli(in_.pricing, j.traits.priority));
  learn_duration(j);
}

// What a kill without a checkpoint leaves: the segment's start plus its periodic checkpoints.
void Simulator::lose_work(SimJob& j) {
  int64_t progressed = std::max<int64_t>(0, now_ - j.progress_from);
  int64_t kept = progressed / in_.workload.checkpoint_every_seconds * in_.workload.checkpoint_every_seconds;
  double checkpointed = std::min(j.work_total, j.segment_work + j.rate() * static_cast<double>(kept));
  double lost_seconds = static_cast<double>(progressed - kept);
  j.result.work_lost_gpu_seconds += lost_seconds * j.gpus();
  j.work_done = std::min(j.work_done, checkpointed);
}

SimNode& Simulator::node(const std::string& name) {
  auto it = node_index_.find(name);
  if (it == node_index_.end()) throw std::logic_error("no node " + name);
  return nodes_[it->second];
}

const SimNode& Simulator::node(const std::string& name) const {
  auto it = node_index_.find(name);
  if (it == node_index_.end()) throw std::logic_error("no node " + name);
  return nodes_[it->second];
}

// The job stops (checkpointed, or losing the work since its last checkpoint) and waits for a new
// placement like any restart (counted when it starts again).
void Simulator::requeue(SimJob& j, bool lose) {
  if (lose) lose_work(j);
  end_segment(j);
  j.resumed = true;
  j.state = State::Pending;
}

bool Simulator::on_node(const SimJob& j, const std::string& node) const {
  return std::any_of(j.workers.begin(), j.workers.end(), [&](const auto& w) { return w.node == node; });
}

void Simulator::spot_events() {
  for (auto& n : nodes_) {
    if (n.notice_at <= now_) {
      n.notice_at = kNever;
      ++interruptions_;
      // Only Valley reacts to the notice (no new work there; its tasks checkpoint and move: the
      // planner moves the workers; a launcher alone there is checkpointed and restarted here).
      if (runs_operator_planner(policy_) || policy_ == PolicyKind::ValleyV1) {
        n.node.schedulable = false;
        n.node.notice = kNoticeTaint;
        for (auto& j : jobs_)
          if (j.state == State::Running && j.launcher_node == n.node.name && !on_node(j, n.node.name)) {
            ++j.result.launcher_losses;
            requeue(j, /*lose_work=*/false);
          }
      }
    }
    if (n.kill_at <= now_) {
      n.kill_at = kNever;
      n.alive = false;
      if (cloud()) {  // gone for good: what replaces it is bought again
        n.gone = true;
        n.gone_at = now_;
        for (auto& j : jobs_)
          if (j.state == State::Provisioning && std::any_of(j.awaiting.begin(), j.awaiting.end(), [&](const auto& w) { return w.node == n.node.name; }))
            give_up_buying(j);
      } else {
        n.back_at = now_ + in_.cluster.spot.at(n.pool->name).replacement_seconds;
      }
      for (auto& j : jobs_) {
        if (j.state != State::Running) continue;
        const bool workers_there = on_node(j, n.node.name);
        if (!workers_there && j.launcher_node != n.node.name) continue;
        if (!workers_there) ++j.result.launcher_losses;
        // Still on the node when it went: the work since the last checkpoint is gone.
        requeue(j, /*lose_work=*/true);
      }
    }
    if (n.back_at <= now_) {
      n.back_at = kNever;
      n.alive = true;
      n.node.schedulable = true;
      n.node.notice.clear();
      schedule_interruption(n, now_);
    }
  }
}

}  // namespace valley::sim::detail

namespace valley::sim {


Result simulate(const Inputs& in, PolicyKind policy) { return detail::Simulator(in, policy).run(); }

const char* to_string(PolicyKind p) {
  switch (p) {
    case PolicyKind::Naive: return "naive";
    case PolicyKind::Backfill: return "backfill";
    case PolicyKind::ValleyV1: return "valley-v1";
    case PolicyKind::ValleyV2: return "valley-v2";
    case PolicyKind::Valley: return "valley";
  }
  return "?";
}

bool runs_operator_planner(PolicyKind p) { return p == PolicyKind::Valley || p == PolicyKind::ValleyV2; }

const char* to_string(Tenancy t) {
  switch (t) {
    case Tenancy::None: return "none";
    case Tenancy::Borrowing: return "borrowing";
    case Tenancy::Strict: return "strict";
  }
  return "?";
}

Tenancy tenancy_from(const std::string& name) {
  if (name == "none") return Tenancy::None;
  if (name == "borrowing") return Tenancy::Borrowing;
  if (name == "strict") return Tenancy::Strict;
  throw InputError("unknown tenancy \"" + name + "\" (none, borrowing, strict)");
}

PolicyKind policy_from(const std::string& name) {
  if (name == "naive") return PolicyKind::Naive;
  if (name == "backfill") return PolicyKind::Backfill;
  if (name == "valley-v1") return PolicyKind::ValleyV1;
  if (name == "valley-v2") return PolicyKind::ValleyV2;
  if (name == "valley") return PolicyKind::Valley;
  throw InputError("unknown policy \"" + name + "\" (naive, backfill, valley-v1, valley-v2, valley)");
}

JobTraits traits_of(const TraceJob& j, const Workload& w) {
  JobTraits t;
  int p = percentile_of(j.id, "class"), acc = 0;
  const PriorityClass* chosen = &w.classes.back();
  for (const auto& c : w.classes) {
    acc += c.percent;
    if (p < acc) {
      chosen = &c;
      break;
    }
  }
  t.cls = chosen->name;
  t.priority = chosen->priority;
  t.reduce_cost = chosen->reduce_cost;
  t.amd = percentile_of(j.id, "amd") < w.amd_percent;
  t.shares = percentile_of(j.id, "sharing") < w.sharing_percent;
  if (!w.apps.empty()) t.app = w.apps[static_cast<size_t>(percentile_of(j.id, "app")) % w.apps.size()];
  t.max_workers = j.gpus;
  t.min_workers = std::max(1, (j.gpus * w.min_workers_percent + 99) / 100);
  return t;
}

std::mt19937_64 spot_rng(const Workload& w, const std::string& node) {
  std::mt19937_64 rng;
  rng.seed(w.seed * 1000003u + std::hash<std::string>{}(node));
  return rng;
}

int64_t next_notice(std::mt19937_64& rng, const SpotModel& model, int64_t from) {
  std::exponential_distribution<double> gap(model.interruptions_per_node_hour / 3600.0);
  return from + static_cast<int64_t>(std::ceil(gap(rng)));
}

}  // namespace valley::sim

