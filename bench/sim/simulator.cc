#include "bench/sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <random>
#include <set>

#include "controllers/cost/candidates.h"
#include "controllers/cost/engine.h"
#include "controllers/cost/planner_config.h"
#include "controllers/planner/planner.h"
#include "controllers/planner/scaling.h"
#include "controllers/tenancy/usage.h"

namespace valley::sim {

using kube::SystemTime;

namespace {

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
constexpr const char* kNoticeTaint = "aws-node-termination-handler/spot-itn";

struct SimNode {
  planner::Node node;
  const Pool* pool = nullptr;
  cost::NodeRate rate;
  bool alive = true;
  int64_t notice_at = kNever, kill_at = kNever, back_at = kNever;
  std::mt19937_64 rng;
};

enum class State { Future, Pending, Running, Done, Rejected };

struct SimJob {
  TraceJob trace;
  JobTraits traits;
  const Speedup* speedup = nullptr;
  State state = State::Future;
  double work_total = 0, work_done = 0;
  // The running segment: placement, since when (cost), from when it progresses (after the
  // restart), and the work it started from (what a kill without notice falls back to, with the
  // periodic checkpoints taken since).
  std::vector<planner::Task::Worker> workers;
  int64_t segment_start = 0, progress_from = 0;
  double segment_work = 0;
  std::optional<int64_t> last_resize;
  bool resumed = false;  // has run before: a start restores a checkpoint
  planner::Scaling scaling;  // what Valley learned from its progress records
  int segment_records = 0;   // progress records (latest.json) written in the running segment
  bool needs_estimate = true;
  std::string last_wait_reason;  // the planner's, while it waits
  cost::Charge charge;
  JobResult result;

  int gpus() const {
    int n = 0;
    for (const auto& w : workers) n += static_cast<int>(w.count);
    return n;
  }
  double rate() const { return speedup ? speedup->at(gpus()) : gpus(); }
};

bool same_placement(std::vector<planner::Task::Worker> a, std::vector<planner::Task::Worker> b) {
  auto key = [](const planner::Task::Worker& w) { return std::tie(w.node, w.gpu_resource, w.count); };
  auto less = [&](const auto& x, const auto& y) { return key(x) < key(y); };
  std::sort(a.begin(), a.end(), less);
  std::sort(b.begin(), b.end(), less);
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [&](const auto& x, const auto& y) { return key(x) == key(y); });
}

class Simulator {
 public:
  Simulator(const Inputs& in, PolicyKind policy) : in_(in), policy_(policy) {
    for (const auto& pool : in.cluster.pools) {
      for (int i = 0; i < pool.nodes; ++i) {
        SimNode n;
        n.pool = &pool;
        n.node.name = pool.name + "-" + std::to_string(i);
        n.node.vendor = pool.vendor;
        n.node.capacity_class = pool.spot ? "spot" : "on-demand";
        std::string resource = pool.vendor + ".com/gpu";
        n.node.capacity[resource] = pool.gpus_per_node;
        n.node.free[resource] = pool.gpus_per_node;
        n.node.labels = pool.labels;
        n.rate = cost::rate_for(in.pricing, pool.vendor, pool.labels);
        n.rng.seed(in.workload.seed * 1000003u + std::hash<std::string>{}(n.node.name));
        nodes_.push_back(std::move(n));
      }
    }
    for (auto& n : nodes_) schedule_interruption(n, 0);
    setup_tenants();
    for (const auto& t : in.jobs) {
      SimJob j;
      j.trace = t;
      j.traits = traits_of(t, in.workload);
      if (policy_ == PolicyKind::Naive || policy_ == PolicyKind::Backfill) {  // fixed size at what the job asked for
        j.traits.min_workers = j.traits.max_workers;
        j.traits.reduce_cost = false;
      }
      if (policy_ == PolicyKind::Naive) j.traits.amd = false;  // on-demand NVIDIA only
      auto sp = in.speedups.find(j.traits.app);
      j.speedup = sp == in.speedups.end() ? nullptr : &sp->second;
      double at_request = j.speedup ? j.speedup->at(t.gpus) : t.gpus;
      j.work_total = static_cast<double>(t.duration) * at_request;
      j.result.id = t.id;
      j.result.cls = j.traits.cls;
      j.result.app = j.traits.app;
      j.result.gpus = t.gpus;
      j.result.priority = j.traits.priority;
      j.result.submit = t.submit;
      j.result.tenant = t.tenant;
      jobs_.push_back(std::move(j));
    }
    window_end_ = in.window_seconds > 0 ? in.window_seconds : (jobs_.empty() ? 0 : jobs_.back().trace.submit);
  }

  Result run() {
    size_t next_arrival = 0;
    int64_t horizon = (jobs_.empty() ? 0 : jobs_.back().trace.submit) + 90 * 86400;
    int64_t next_tick = 0;
    while (now_ <= horizon) {
      int64_t next = kNever;
      if (next_arrival < jobs_.size()) next = std::min(next, jobs_[next_arrival].trace.submit);
      for (const auto& n : nodes_) next = std::min({next, n.notice_at, n.kill_at, n.back_at});
      for (const auto& j : jobs_) {
        if (j.state != State::Running) continue;
        next = std::min(next, completion(j));
        // Valley reads each progress record as it appears (the operator polls latest.json).
        if (policy_ == PolicyKind::Valley) next = std::min(next, j.progress_from + (j.segment_records + 1) * in_.workload.checkpoint_every_seconds);
      }
      bool waiting = std::any_of(jobs_.begin(), jobs_.end(), [](const SimJob& j) { return j.state == State::Pending; });
      bool running = std::any_of(jobs_.begin(), jobs_.end(), [](const SimJob& j) { return j.state == State::Running; });
      if (!waiting && !running && next_arrival >= jobs_.size()) break;
      // Without events the planner still runs now and then: waiting reduceCost tasks meet off-peak
      // hours, elastic tasks may grow once their resize interval has passed.
      if (waiting || (running && (policy_ == PolicyKind::Valley || policy_ == PolicyKind::ValleyV1))) next = std::min(next, std::max(next_tick, now_ + 1));
      if (next == kNever) break;
      advance(std::min(next, horizon + 1));
      if (now_ > horizon) break;
      while (next_arrival < jobs_.size() && jobs_[next_arrival].trace.submit <= now_) arrive(jobs_[next_arrival++]);
      for (auto& j : jobs_)
        if (j.state == State::Running && completion(j) <= now_) finish(j);
      spot_events();
      learn();
      replan();
      if (next_tick <= now_) next_tick = now_ + in_.workload.tick_seconds;
    }
    return summarize();
  }

 private:
  SystemTime at(int64_t t) const { return SystemTime{} + std::chrono::seconds(in_.workload.start_epoch + t); }

  // Each tenant's nominal quota in every pool, and its fair-share weight: its normalized weight.
  // Strict: nothing may be borrowed (what rounding leaves over stays idle).
  void setup_tenants() {
    double total = 0;
    for (const auto& [name, w] : in_.tenant_weights) total += std::max(0.0, w);
    if (total <= 0) return;
    std::map<std::string, int64_t> capacity;  // planner pool -> thousandths of a GPU
    for (const auto& n : nodes_) capacity[planner::pool_of(n.node)] += int64_t{n.pool->gpus_per_node} * 1000;
    for (const auto& [name, w] : in_.tenant_weights) {
      planner::Tenant t;
      t.weight = std::max(0.0, w) / total;
      for (const auto& [pool, milli] : capacity) {
        planner::PoolQuota q;
        q.nominal_milli = static_cast<int64_t>(std::floor(static_cast<double>(milli) * t.weight));
        if (in_.tenancy == Tenancy::Strict) q.borrowing_limit_milli = 0;
        t.quota[pool] = q;
      }
      tenants_[name] = t;
    }
  }
  bool tenants_planned() const { return in_.tenancy != Tenancy::None && !tenants_.empty(); }

  // GPUs of running jobs on each node.
  std::map<std::string, int64_t> used_by_node() const {
    std::map<std::string, int64_t> used;
    for (const auto& j : jobs_)
      if (j.state == State::Running)
        for (const auto& w : j.workers) used[w.node] += w.count;
    return used;
  }

  // A job arriving when its gang fits in its tenant's unused nominal quota of a pool it may use
  // (quotas are per pool, as the planner keeps them), while that pool has not enough GPUs free: the
  // tenant's quota there is held by others, and must come back.
  bool claims_nominal(const SimJob& j) const {
    auto tenant = tenants_.find(j.trace.tenant);
    if (tenant == tenants_.end() || j.traits.reduce_cost || j.trace.submit >= window_end_) return false;
    planner::Task probe = task_of(j);
    auto used = used_by_node();
    std::map<std::string, int64_t> free, usage;  // by pool
    for (const auto& n : nodes_)
      if (n.alive && usable_by(probe, n)) free[planner::pool_of(n.node)] += n.node.schedulable ? n.pool->gpus_per_node - used[n.node.name] : 0;
    for (const auto& other : jobs_)
      if (other.state == State::Running && other.trace.tenant == j.trace.tenant)
        for (const auto& w : other.workers) usage[planner::pool_of(node(w.node).node)] += w.count * 1000;
    bool held_by_others = false;
    for (const auto& [pool, gpus] : free) {
      if (gpus >= j.traits.min_workers) return false;  // it starts at once anyway
      auto q = tenant->second.quota.find(pool);
      const int64_t nominal = q == tenant->second.quota.end() ? 0 : q->second.nominal_milli;
      held_by_others = held_by_others || usage[pool] + int64_t{j.traits.min_workers} * 1000 <= nominal;
    }
    return held_by_others;
  }

  // Over [from, to) nothing changes: decays each tenant's usage and, inside the window, takes the
  // fairness figures (weighted max-min fair shares of the live GPUs by demand: what runs plus what
  // waits at its full size).
  void measure_tenants(int64_t from, int64_t to) {
    if (tenants_.empty() || to <= from) return;
    std::map<std::string, double> held, demand;
    std::set<std::string> backlogged;
    for (const auto& j : jobs_) {
      if (!tenants_.count(j.trace.tenant)) continue;
      if (j.state == State::Running) {
        held[j.trace.tenant] += j.gpus();
        demand[j.trace.tenant] += j.gpus();
      } else if (j.state == State::Pending && !j.traits.reduce_cost) {
        demand[j.trace.tenant] += j.traits.max_workers;
        backlogged.insert(j.trace.tenant);
      }
    }
    for (auto& [name, t] : tenants_)
      t.decayed_gpu_hours = tenancy::decay_usage(t.decayed_gpu_hours, held[name], std::chrono::seconds(to - from), in_.usage_half_life);
    const int64_t end = std::min(to, window_end_);
    if (end <= from) return;
    const double dt = static_cast<double>(end - from);
    for (int64_t s = from; s < end;) {  // GPUs held per tenant, by hour
      int64_t hour = s / 3600, stop = std::min(end, (hour + 1) * 3600);
      if (static_cast<int64_t>(tenant_hourly_.size()) <= hour) tenant_hourly_.resize(static_cast<size_t>(hour + 1));
      for (const auto& [name, g] : held) tenant_hourly_[static_cast<size_t>(hour)][name] += g * static_cast<double>(stop - s) / 3600.0;
      s = stop;
    }
    double capacity = 0;
    for (const auto& n : nodes_)
      if (n.alive) capacity += n.pool->gpus_per_node;
    if (capacity <= 0) return;
    // Water-filling: each round gives what is left by weight; tenants that want less keep their demand.
    std::map<std::string, double> fair;
    std::set<std::string> open;
    for (const auto& [name, d] : demand)
      if (d > 0) open.insert(name);
    double left = capacity;
    while (!open.empty() && left > 1e-9) {
      double weights = 0;
      for (const auto& name : open) weights += tenants_.at(name).weight;
      std::vector<std::string> satisfied;
      for (const auto& name : open)
        if (demand[name] - fair[name] <= left * tenants_.at(name).weight / weights) satisfied.push_back(name);
      if (satisfied.empty()) {
        for (const auto& name : open) fair[name] += left * tenants_.at(name).weight / weights;
        break;
      }
      for (const auto& name : satisfied) {
        left -= demand[name] - fair[name];
        fair[name] = demand[name];
        open.erase(name);
      }
    }
    for (const auto& name : backlogged) {
      auto& f = figures_[name];
      f.backlogged_hours += dt / 3600;
      f.share += held[name] / capacity * dt;
      f.fair_share += fair[name] / capacity * dt;
    }
    for (const auto& [name, g] : held) figures_[name].gpu_hours += g * dt / 3600;
    // Jain's index of held / fair over the tenants with demand, while some tenant is backlogged
    // (with none, everyone has what it asks and the index is 1 by construction).
    double sum = 0, squares = 0;
    int n = 0;
    for (const auto& [name, f] : fair) {
      if (f <= 0) continue;
      const double x = held[name] / f;
      sum += x;
      squares += x * x;
      ++n;
    }
    if (!backlogged.empty() && n >= 2 && squares > 0) {
      jain_weighted_ += sum * sum / (n * squares) * dt;
      jain_seconds_ += dt;
    }
  }

  void schedule_interruption(SimNode& n, int64_t from) {
    auto it = in_.cluster.spot.find(n.pool->name);
    if (!n.pool->spot || it == in_.cluster.spot.end() || it->second.interruptions_per_node_hour <= 0) return;
    std::exponential_distribution<double> gap(it->second.interruptions_per_node_hour / 3600.0);
    n.notice_at = from + static_cast<int64_t>(std::ceil(gap(n.rng)));
    n.kill_at = n.notice_at + it->second.notice_seconds;
  }

  int64_t completion(const SimJob& j) const {
    double rate = j.rate();
    if (rate <= 0) return kNever;
    double left = std::max(0.0, j.work_total - j.work_done);
    return std::max(now_, j.progress_from) + static_cast<int64_t>(std::ceil(left / rate - 1e-9));
  }

  // Moves the clock to t: progress, and GPU-seconds held and alive for the allocation figure.
  void advance(int64_t t) {
    if (t <= now_) return;
    int64_t held = 0, alive = 0;
    for (auto& j : jobs_) {
      if (j.state != State::Running) continue;
      int64_t from = std::max(now_, j.progress_from);
      if (t > from) j.work_done = std::min(j.work_total, j.work_done + j.rate() * static_cast<double>(t - from));
      held += j.gpus();
    }
    for (const auto& n : nodes_)
      if (n.alive) alive += n.pool->gpus_per_node;
    measure_tenants(now_, t);
    for (int64_t s = now_; s < t;) {  // spread over hour buckets
      int64_t hour = s / 3600, end = std::min(t, (hour + 1) * 3600);
      if (static_cast<int64_t>(held_hourly_.size()) <= hour) {
        held_hourly_.resize(static_cast<size_t>(hour + 1), 0);
        alive_hourly_.resize(static_cast<size_t>(hour + 1), 0);
      }
      held_hourly_[static_cast<size_t>(hour)] += static_cast<double>(held * (end - s));
      alive_hourly_[static_cast<size_t>(hour)] += static_cast<double>(alive * (end - s));
      s = end;
    }
    now_ = t;
  }

  void arrive(SimJob& j) {
    // A job bigger than every node this policy may use together can never start.
    int64_t usable = 0;
    planner::Task probe = task_of(j);
    for (const auto& n : nodes_)
      if (usable_by(probe, n)) usable += n.pool->gpus_per_node;
    if (usable < j.traits.min_workers) {
      j.state = State::Rejected;
      return;
    }
    j.result.claim = claims_nominal(j);
    j.state = State::Pending;
  }

  bool usable_by(const planner::Task& t, const SimNode& n) const {
    if (n.pool->vendor == "amd" && !t.amd_support) return false;
    return planner::selects(t, n.node);
  }

  // Ends the running segment: charges it (GPUs held, restart time included) and takes the GPUs back.
  void end_segment(SimJob& j) {
    std::map<std::string, int64_t> per_node;
    for (const auto& w : j.workers) per_node[w.node] += w.count;
    for (const auto& [name, count] : per_node) {
      const SimNode& n = node(name);
      if (now_ > j.segment_start) j.charge.add(cost::charge_interval(in_.pricing, n.rate, count * 1000, at(j.segment_start), at(now_)));
      j.result.gpu_seconds += count * (now_ - j.segment_start);
      pool_gpu_seconds_[n.pool->name] += count * (now_ - j.segment_start);
    }
    j.result.final_workers = j.gpus();
    j.workers.clear();
  }

  // Progress records: the workload writes latest.json {step, time} at each periodic checkpoint; two
  // records of one segment give its rate at that size (what the operator folds into status.scaling).
  void learn() {
    if (policy_ != PolicyKind::Valley) return;
    const int64_t period = in_.workload.checkpoint_every_seconds;
    for (auto& j : jobs_) {
      if (j.state != State::Running || now_ < j.progress_from) continue;
      int records = static_cast<int>((now_ - j.progress_from) / period);
      for (int k = j.segment_records + 1; k <= records; ++k)
        if (k >= 2) j.scaling = planner::observe(j.scaling, j.gpus(), j.rate());
      j.segment_records = std::max(j.segment_records, records);
    }
  }

  void start_segment(SimJob& j, std::vector<planner::Task::Worker> placement, bool restart) {
    j.workers = std::move(placement);
    j.segment_start = now_;
    j.progress_from = now_ + (restart ? in_.workload.restart_seconds : 0);
    j.segment_work = j.work_done;
    j.segment_records = 0;
    if (j.result.start < 0) j.result.start = now_;
    j.state = State::Running;
  }

  void finish(SimJob& j) {
    end_segment(j);
    j.work_done = j.work_total;
    j.state = State::Done;
    j.result.end = now_;
    j.result.cost = cost::apply_multiplier(j.charge.gpu + j.charge.energy, cost::multiplier_milli(in_.pricing, j.traits.priority));
  }

  // What a kill without a checkpoint leaves: the segment's start plus its periodic checkpoints.
  void lose_work(SimJob& j) {
    int64_t progressed = std::max<int64_t>(0, now_ - j.progress_from);
    int64_t kept = progressed / in_.workload.checkpoint_every_seconds * in_.workload.checkpoint_every_seconds;
    double checkpointed = std::min(j.work_total, j.segment_work + j.rate() * static_cast<double>(kept));
    double lost_seconds = static_cast<double>(progressed - kept);
    j.result.work_lost_gpu_seconds += lost_seconds * j.gpus();
    j.work_done = std::min(j.work_done, checkpointed);
  }

  SimNode& node(const std::string& name) {
    for (auto& n : nodes_)
      if (n.node.name == name) return n;
    throw std::logic_error("no node " + name);
  }
  const SimNode& node(const std::string& name) const {
    for (const auto& n : nodes_)
      if (n.node.name == name) return n;
    throw std::logic_error("no node " + name);
  }

  void spot_events() {
    for (auto& n : nodes_) {
      if (n.notice_at <= now_) {
        n.notice_at = kNever;
        ++interruptions_;
        // Only Valley reacts to the notice (no new work there; its tasks checkpoint and move).
        if (policy_ == PolicyKind::Valley || policy_ == PolicyKind::ValleyV1) {
          n.node.schedulable = false;
          n.node.notice = kNoticeTaint;
        }
      }
      if (n.kill_at <= now_) {
        n.kill_at = kNever;
        n.alive = false;
        n.back_at = now_ + in_.cluster.spot.at(n.pool->name).replacement_seconds;
        for (auto& j : jobs_) {
          if (j.state != State::Running) continue;
          bool there = std::any_of(j.workers.begin(), j.workers.end(), [&](const auto& w) { return w.node == n.node.name; });
          if (!there) continue;
          // Still on the node when it went: the work since the last checkpoint is gone, and the
          // job waits for a new placement like any restart.
          lose_work(j);
          end_segment(j);
          j.resumed = true;  // counted as a restart when it starts again
          j.state = State::Pending;
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

  planner::Task task_of(const SimJob& j) const {
    planner::Task t;
    t.key = j.trace.id;
    if (tenants_planned() && tenants_.count(j.trace.tenant)) t.tenant = j.trace.tenant;
    t.priority = policy_ == PolicyKind::Naive ? 0 : j.traits.priority;
    t.reduce_cost = j.traits.reduce_cost;
    t.amd_support = j.traits.amd;
    t.checkpointed = true;  // every replayed job checkpoints (periodically, and on SIGTERM)
    t.min_workers = j.traits.min_workers;
    t.max_workers = j.traits.max_workers;
    t.gpu_milli = 1000;
    t.created = at(j.trace.submit);
    if (policy_ == PolicyKind::Naive) t.node_selector["karpenter.sh/capacity-type"] = "on-demand";
    t.admitted = j.state == State::Running;
    t.workers = j.workers;
    t.last_resize = j.last_resize ? std::optional<SystemTime>(at(*j.last_resize)) : std::nullopt;
    if (policy_ == PolicyKind::Valley) {
      // What the operator knows: the progress it saw, its patience, and estimatedDuration.
      t.scaling = j.scaling;
      t.cheap_until = t.created + in_.pricing.reduce_cost_patience;
      if (j.state == State::Running && j.result.start >= 0)
        t.expected_end = planner::expected_end(at(j.result.start), std::chrono::seconds(j.trace.duration), j.scaling, j.gpus(),
                                               t.max_workers, growth_prior());
    }
    return t;
  }

  double growth_prior() const {
    return in_.pricing.growth_min_marginal_milli > 0 ? static_cast<double>(in_.pricing.growth_min_marginal_milli) / 1000.0 : 1.0;
  }

  planner::Config config_now(std::vector<planner::Node>& nodes) const {
    planner::Config config;
    switch (policy_) {
      case PolicyKind::Naive:
        config.placement = planner::Placement::Pack;  // packing, strictly in arrival order
        config.aging_step = std::chrono::seconds(0);
        config.min_marginal_efficiency = 0;
        break;
      case PolicyKind::Backfill:
        config = cost::planner_config(in_.pricing, nodes, at(now_), config);
        config.aging_step = std::chrono::seconds(0);  // priority, then arrival
        config.min_marginal_efficiency = 0;           // fixed sizes anyway
        break;
      case PolicyKind::ValleyV1:
        config = cost::planner_config(in_.pricing, nodes, at(now_), config);
        config.placement = planner::Placement::PackThenClass;
        config.reduce_cost = planner::ReduceCostRule::OffPeakOrIdle;
        config.min_marginal_efficiency = 0;
        config.fastest_priority = 101;
        break;
      case PolicyKind::Valley:
        config = cost::planner_config(in_.pricing, nodes, at(now_), config);
        break;
    }
    if (tenants_planned()) {
      config.tenants = tenants_;
      config.usage_mean_life_hours = static_cast<double>(in_.usage_half_life.count()) / 3600.0 / std::log(2.0);
    }
    return config;
  }

  void replan() {
    std::vector<planner::Node> nodes;
    for (const auto& n : nodes_)
      if (n.alive) nodes.push_back(n.node);
    planner::Config config = config_now(nodes);
    if (policy_ == PolicyKind::Naive) {
      // Strictly in arrival order: the head starts when its gang fits, nothing overtakes it.
      for (auto& j : jobs_)
        if (j.state == State::Pending && j.needs_estimate) estimate_naive(j);
      for (;;) {
        std::vector<SimJob*> involved;
        SimJob* head = nullptr;
        for (auto& j : jobs_) {
          if (j.state == State::Running) involved.push_back(&j);
          if (j.state == State::Pending && !head) head = &j;
        }
        if (!head) return;
        involved.push_back(head);
        if (!apply(plan(nodes, involved, config), involved, config)) return;
      }
    }
    std::vector<SimJob*> involved;
    for (auto& j : jobs_)
      if (j.state == State::Running || j.state == State::Pending) involved.push_back(&j);
    if (!involved.empty()) apply(plan(nodes, involved, config), involved, config);
  }

  std::vector<planner::Decision> plan(const std::vector<planner::Node>& nodes, const std::vector<SimJob*>& jobs,
                                      const planner::Config& config) {
    std::vector<planner::Task> tasks;
    tasks.reserve(jobs.size());
    for (const auto* j : jobs) tasks.push_back(task_of(*j));
    ++plan_calls_;
    return planner::plan(nodes, tasks, at(now_), config);
  }

  // --- estimates at submission, as the operator makes them ------------------------------------
  api::TaskSpec spec_of(const SimJob& j, int64_t duration_seconds) const {
    api::TaskSpec spec;
    spec.name = j.trace.id;
    spec.priority = j.traits.priority;
    spec.min_workers = j.traits.min_workers;
    spec.max_workers = j.traits.max_workers;
    spec.reduce_cost = j.traits.reduce_cost;
    spec.amd_support = j.traits.amd;
    spec.checkpoint_uri = "s3://sim/" + j.trace.id;
    spec.estimated_duration = std::chrono::seconds(std::max<int64_t>(1, duration_seconds));
    return spec;
  }

  // The user's estimatedDuration off by up to +-duration_error_percent (a stable hash of the id).
  int64_t off_duration(const SimJob& j) const {
    double e = (percentile_of(j.trace.id, "duration-error") - 50) / 50.0 * in_.duration_error_percent / 100.0;
    return static_cast<int64_t>(std::llround(static_cast<double>(j.trace.duration) * (1 + e)));
  }

  std::vector<cost::NodeRate> candidates_of(const SimJob& j) const {
    std::vector<cost::NodeRate> out;
    for (const auto& n : nodes_)
      if (n.pool->vendor == "nvidia" || (n.pool->vendor == "amd" && j.traits.amd)) out.push_back(n.rate);
    return out;
  }

  void record_estimate(SimJob& j, const cost::EstimateBasis& basis) {
    j.needs_estimate = false;
    auto exact = cost::estimate(in_.pricing, spec_of(j, j.trace.duration), basis);
    auto off = cost::estimate(in_.pricing, spec_of(j, off_duration(j)), basis);
    if (!exact || !off) return;
    j.result.estimated = true;
    j.result.estimate = exact->expected;
    j.result.low = exact->low;
    j.result.high = exact->high;
    j.result.estimate_off = off->expected;
    j.result.low_off = off->low;
    j.result.high_off = off->high;
  }

  // The peers' jobs (and Valley before this change) at their full size on the pool they got, or
  // the cheapest on-demand pool they may use.
  cost::EstimateBasis fixed_basis(const SimJob& j, const planner::Decision* d) const {
    cost::EstimateBasis b;
    b.start = at(now_);
    b.workers = j.traits.max_workers;
    std::optional<cost::NodeRate> placed;
    if (d && !d->placement.empty()) placed = node(d->placement.front().node).rate;
    if (auto r = cost::likely_rate(spec_of(j, j.trace.duration), candidates_of(j), placed)) b.rate = *r;
    return b;
  }

  void estimate_naive(SimJob& j) { record_estimate(j, fixed_basis(j, nullptr)); }

  void estimate(SimJob& j, const planner::Decision& d, const planner::Config& config) {
    if (policy_ != PolicyKind::Valley) return record_estimate(j, fixed_basis(j, &d));
    std::map<std::string, cost::NodeRate> rates;
    for (const auto& n : nodes_) rates[n.node.name] = n.rate;
    planner::Task t = task_of(j);
    record_estimate(j, cost::estimate_basis(spec_of(j, j.trace.duration), t, d, config, rates, candidates_of(j), at(now_)));
  }

  // Carries out decisions; true if some waiting job started.
  bool apply(const std::vector<planner::Decision>& decisions, const std::vector<SimJob*>& jobs, const planner::Config& config) {
    bool admitted = false;
    for (size_t i = 0; i < decisions.size(); ++i) {
      const auto& d = decisions[i];
      SimJob& j = *jobs[i];
      if (j.needs_estimate) estimate(j, d, config);
      switch (d.action) {
        case planner::Action::Wait:
          j.last_wait_reason = d.reason;
          break;
        case planner::Action::Keep:
          break;
        case planner::Action::Admit:
          if (j.state != State::Pending) break;
          start_segment(j, d.placement, j.resumed);
          if (j.result.claim && j.result.claim_wait < 0) {
            j.result.claim_wait = now_ - j.trace.submit;
            if (std::getenv("VALLEY_SIM_CLAIMS") && j.result.claim_wait > 120)
              std::cerr << "claim " << j.trace.id << " tenant " << j.trace.tenant << " min " << j.traits.min_workers << " prio " << j.traits.priority
                        << " waited " << j.result.claim_wait << " s; last reason: " << j.last_wait_reason << "\n";
          }
          if (j.resumed) ++j.result.restarts;
          j.resumed = true;
          admitted = true;
          break;
        case planner::Action::Grow:
        case planner::Action::Shrink:
          if (j.state != State::Running || same_placement(j.workers, d.placement)) break;
          // A new world size or new nodes: checkpoint, stop, start again from the checkpoint.
          end_segment(j);
          start_segment(j, d.placement, true);
          j.last_resize = now_;
          ++j.result.restarts;
          break;
        case planner::Action::Preempt:
          if (j.state != State::Running) break;
          end_segment(j);  // stopped with SIGTERM: it checkpoints in its grace period
          j.state = State::Pending;
          ++j.result.preemptions;
          break;
      }
    }
    return admitted;
  }

  Result summarize() {
    Result r;
    r.policy = policy_;
    r.tenancy = in_.tenancy;
    std::vector<double> jct, jct_not_reduce_cost, queue;
    for (auto& j : jobs_) {
      if (j.state == State::Rejected) {
        ++r.rejected;
        continue;
      }
      if (j.state != State::Done) {
        if (j.state == State::Running) {
          end_segment(j);
          j.result.cost = cost::apply_multiplier(j.charge.gpu + j.charge.energy, cost::multiplier_milli(in_.pricing, j.traits.priority));
        }
        ++r.unfinished;
      } else {
        jct.push_back(static_cast<double>(j.result.end - j.result.submit));
        if (!j.traits.reduce_cost) jct_not_reduce_cost.push_back(static_cast<double>(j.result.end - j.result.submit));
        queue.push_back(static_cast<double>(j.result.start - j.result.submit));
        r.useful_gpu_hours += static_cast<double>(j.trace.duration) * j.trace.gpus / 3600.0;
        r.makespan = std::max(r.makespan, j.result.end);
      }
      r.cost += j.result.cost;
      r.gpu_cost += j.charge.gpu;
      r.energy_cost += j.charge.energy;
      r.held_gpu_hours += static_cast<double>(j.result.gpu_seconds) / 3600.0;
      r.preemptions += j.result.preemptions;
      r.restarts += j.result.restarts;
      r.work_lost_gpu_hours += j.result.work_lost_gpu_seconds / 3600.0;
      r.jobs.push_back(j.result);
    }
    auto mean = [](const std::vector<double>& v) {
      double s = 0;
      for (double x : v) s += x;
      return v.empty() ? 0.0 : s / static_cast<double>(v.size());
    };
    const auto& pct = percentile;
    r.mean_jct = mean(jct);
    r.mean_jct_not_reduce_cost = mean(jct_not_reduce_cost);
    r.p50_jct = pct(jct, 50);
    r.p95_jct = pct(jct, 95);
    for (const auto& [pool, secs] : pool_gpu_seconds_) r.pool_gpu_hours[pool] = static_cast<double>(secs) / 3600.0;
    auto fit = [&](bool off) {
      std::vector<double> errors, widths;
      int inside = 0;
      for (const auto& j : r.jobs) {
        if (!j.estimated || j.end < 0 || j.cost <= 0) continue;
        const double est = static_cast<double>(off ? j.estimate_off : j.estimate);
        const double lo = static_cast<double>(off ? j.low_off : j.low), hi = static_cast<double>(off ? j.high_off : j.high);
        const double fin = static_cast<double>(j.cost);
        errors.push_back(std::abs(fin - est) / fin);
        widths.push_back(est > 0 ? (hi - lo) / est : 0);
        inside += fin >= lo && fin <= hi;
      }
      Result::EstimateFit f;
      f.median_error = pct(errors, 50);
      f.median_width = pct(widths, 50);
      f.inside = errors.empty() ? 0 : static_cast<double>(inside) / static_cast<double>(errors.size());
      return f;
    };
    r.estimates = fit(false);
    r.estimates_off = fit(true);
    r.p99_jct = pct(jct, 99);
    r.mean_queue = mean(queue);
    r.p99_queue = pct(queue, 99);
    double held = 0, alive = 0;
    for (size_t h = 0; h < held_hourly_.size(); ++h) {
      if (static_cast<int64_t>(h) * 3600 >= r.makespan) break;
      held += held_hourly_[h];
      alive += alive_hourly_[h];
      r.hourly_allocation_percent.push_back(alive_hourly_[h] > 0 ? 100.0 * held_hourly_[h] / alive_hourly_[h] : 0.0);
    }
    r.allocation_percent = alive > 0 ? 100.0 * held / alive : 0;
    double window_held = 0, window_alive = 0;
    for (size_t h = 0; h < held_hourly_.size() && static_cast<int64_t>(h) * 3600 < window_end_; ++h) {
      window_held += held_hourly_[h];
      window_alive += alive_hourly_[h];
    }
    r.window_allocation_percent = window_alive > 0 ? 100.0 * window_held / window_alive : 0;
    for (const auto& [name, t] : tenants_) {
      auto f = figures_[name];
      f.weight = t.weight;
      for (const auto& [pool, q] : t.quota) f.nominal_gpus += static_cast<double>(q.nominal_milli) / 1000.0;
      if (f.backlogged_hours > 0) {  // time sums to means
        f.share /= f.backlogged_hours * 3600;
        f.fair_share /= f.backlogged_hours * 3600;
      }
      r.tenants[name] = f;
    }
    for (const auto& j : r.jobs) {
      if (auto it = r.tenants.find(j.tenant); it != r.tenants.end()) ++it->second.jobs;
      if (j.claim) r.claim_waits.push_back(static_cast<double>(j.claim_wait >= 0 ? j.claim_wait : now_ - j.submit));
    }
    r.jain = jain_seconds_ > 0 ? jain_weighted_ / jain_seconds_ : 0;
    r.jain_hours = jain_seconds_ / 3600;
    r.hourly_tenant_gpus = tenant_hourly_;
    r.interruptions = interruptions_;
    r.plan_calls = plan_calls_;
    return r;
  }

  const Inputs& in_;
  PolicyKind policy_;
  std::vector<SimNode> nodes_;
  std::vector<SimJob> jobs_;
  int64_t now_ = 0;
  int interruptions_ = 0, plan_calls_ = 0;
  std::map<std::string, int64_t> pool_gpu_seconds_;
  std::vector<double> held_hourly_, alive_hourly_;
  // Tenants (with weights): the planner's view, the window the figures cover, and the figures.
  std::map<std::string, planner::Tenant> tenants_;
  int64_t window_end_ = 0;
  std::map<std::string, Result::TenantFigures> figures_;
  double jain_weighted_ = 0, jain_seconds_ = 0;
  std::vector<std::map<std::string, double>> tenant_hourly_;
};

}  // namespace

Result simulate(const Inputs& in, PolicyKind policy) { return Simulator(in, policy).run(); }

const char* to_string(PolicyKind p) {
  switch (p) {
    case PolicyKind::Naive: return "naive";
    case PolicyKind::Backfill: return "backfill";
    case PolicyKind::ValleyV1: return "valley-v1";
    case PolicyKind::Valley: return "valley";
  }
  return "?";
}

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
  if (name == "valley") return PolicyKind::Valley;
  throw InputError("unknown policy \"" + name + "\" (naive, backfill, valley-v1, valley)");
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
  if (!w.apps.empty()) t.app = w.apps[static_cast<size_t>(percentile_of(j.id, "app")) % w.apps.size()];
  t.max_workers = j.gpus;
  t.min_workers = std::max(1, (j.gpus * w.min_workers_percent + 99) / 100);
  return t;
}

}  // namespace valley::sim
