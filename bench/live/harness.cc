#include "bench/live/harness.h"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

#include "operator/kube/error.h"
#include "operator/kube/informer.h"
#include "operator/kube/resource.h"
#include "operator/kube/timefmt.h"
#include "operator/storage/checkpoint_record.h"
#include "operator/storage/object_store.h"

namespace valley::live {

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

const kube::Resource kMpiJobs{"kubeflow.org", "v2beta1", "mpijobs", "MPIJob", true};
const kube::Resource kClusterQueues{"kueue.x-k8s.io", "v1beta2", "clusterqueues", "ClusterQueue", false};
constexpr const char* kNoticeTaint = "aws-node-termination-handler/spot-itn";

// Which pods are whose: the labels each system puts on a job's pods.
struct PodLabels {
  const char* job;
  const char* role;
};
PodLabels labels_of(System s) {
  return s == System::Valley ? PodLabels{"valley.dev/task", "valley.dev/role"} : PodLabels{"training.kubeflow.org/job-name", "training.kubeflow.org/job-role"};
}

int gpus_of(const json& pod) {
  int gpus = 0;
  for (const auto& c : pod["spec"].value("containers", json::array())) {
    const json limits = c.value("resources", json::object()).value("limits", json::object());
    for (const auto& [name, value] : limits.items())
      if (name.size() > 4 && name.compare(name.size() - 4, 4, "/gpu") == 0 && value.is_string()) {
        try {
          gpus += std::stoi(value.get<std::string>());
        } catch (const std::exception&) {
        }
      }
  }
  return gpus;
}

std::string label(const json& obj, const char* key) {
  const json& labels = obj["metadata"].value("labels", json::object());
  auto it = labels.find(key);
  return it != labels.end() && it->is_string() ? it->get<std::string>() : "";
}

class LiveRun {
 public:
  LiveRun(kube::Client& client, const sim::Inputs& in, const RunSettings& s)
      : client_(client), in_(in), s_(s), jobs_(live_jobs(in)), spot_(spot_schedule(in, static_cast<int64_t>(s.horizon))), meter_(in.cluster),
        labels_(labels_of(s.system)) {
    emulator_.checkpoint_every = static_cast<double>(in.workload.checkpoint_every_seconds);
    emulator_.restart_seconds = static_cast<double>(in.workload.restart_seconds);
  }

  json run();

 private:
  double now() const { return std::chrono::duration<double>(Clock::now() - start_).count() * s_.submit.compression; }
  kube::SystemTime wall_of(double trace) const {
    return start_wall_ + std::chrono::milliseconds(static_cast<int64_t>(trace / s_.submit.compression * 1000));
  }
  void make_fleet();
  void submit(const LiveJob& job);
  std::string kueue_resource(const LiveJob& job);
  void spot_event(const SpotEvent& e, int phase);
  void emulate(double t);
  void act(const LiveJob& job, const EmulatorAction& a, const std::vector<json>& pods);
  void log_change(const LiveJob& job, const JobProgress& before, const JobProgress& after, double t);
  void watch_pods();
  json finish(double t);

  kube::Client& client_;
  const sim::Inputs& in_;
  RunSettings s_;
  std::vector<LiveJob> jobs_;
  std::vector<SpotEvent> spot_;
  EmulatorSettings emulator_;
  std::map<std::string, JobProgress> progress_;
  std::map<std::string, std::unique_ptr<storage::ObjectStore>> stores_;
  std::map<std::string, double> killed_at_;  // live node name -> trace second it went
  std::map<std::string, std::string> live_names_;  // the simulator's node -> the live node in its place
  std::map<std::string, int> replacements_;        // by pool: nodes bought to replace interrupted ones
  std::mutex mu_;                            // meter_ and first_seen_ (the informers' threads)
  Meter meter_;
  std::map<std::string, double> first_seen_;  // pod uid -> trace second
  PodLabels labels_;
  std::unique_ptr<kube::Informer> pods_, nodes_;
  Clock::time_point start_;
  kube::SystemTime start_wall_;
  int submitted_ = 0, checkpoints_ = 0, ended_ = 0, failed_ = 0;
};

void LiveRun::make_fleet() {
  kube::ListOptions lo;
  lo.label_selector = std::string(kFleetLabel) + "=" + s_.submit.fleet;
  for (const auto& n : client_.list(kube::resources::kNodes, "", lo).items) client_.remove(kube::resources::kNodes, "", n["metadata"]["name"]);
  for (const auto& pool : in_.cluster.pools)
    for (int i = 0; i < pool.nodes; ++i) client_.create(kube::resources::kNodes, "", fleet_node(pool, i, s_.submit.fleet));
}

std::string LiveRun::kueue_resource(const LiveJob& job) {
  json cq = json::object();
  if (job.traits.amd) {
    try {
      cq = client_.get(kClusterQueues, "", kQueue);
    } catch (const std::exception& e) {
      std::cerr << "valley-live: reading the ClusterQueue: " << e.what() << "\n";
    }
  }
  return choose_gpu_resource(job, in_, cq);
}

void LiveRun::submit(const LiveJob& job) {
  const double t = now();
  try {
    if (s_.system == System::Valley) client_.create(kube::resources::kTrainingTasks, s_.submit.ns, training_task(job, s_.submit));
    else client_.create(kMpiJobs, s_.submit.ns, mpi_job(job, kueue_resource(job), s_.submit));
  } catch (const kube::KubeError& e) {
    if (e.http_status() != 409) throw;
  }
  std::lock_guard lock(mu_);
  meter_.submitted(job.name, t);
  ++submitted_;
}

// phase 0: the notice (a taint, as aws-node-termination-handler puts it); 1: the node gone, and
// its pods with it (the API server would keep them until the pod garbage collector's quarantine,
// 40 s of wall clock that the compression would make hours); 2: a new node of the pool in its
// place, under a new name as a cloud's replacement has.
void LiveRun::spot_event(const SpotEvent& e, int phase) {
  auto current = live_names_.find(e.node);
  if (current == live_names_.end()) current = live_names_.emplace(e.node, fleet_node_name(s_.submit.fleet, e.node)).first;
  const std::string name = current->second;
  const double t = now();
  try {
    if (phase == 0) {
      json node = client_.get(kube::resources::kNodes, "", name);
      json taints = node["spec"].value("taints", json::array());
      taints.push_back({{"key", kNoticeTaint}, {"effect", "NoSchedule"}});
      client_.patch(kube::resources::kNodes, "", name, kube::PatchType::Merge, {{"spec", {{"taints", taints}}}});
    } else if (phase == 1) {
      kube::DeleteOptions d;
      d.grace_period_seconds = 0;
      client_.remove(kube::resources::kNodes, "", name, d);
      killed_at_[name] = t;
      {
        std::lock_guard lock(mu_);
        meter_.node_gone(name, t);
      }
      kube::ListOptions on_node;
      on_node.field_selector = "spec.nodeName=" + name;
      for (const auto& pod : client_.list(kube::resources::kPods, s_.submit.ns, on_node).items)
        client_.remove(kube::resources::kPods, s_.submit.ns, pod["metadata"]["name"], d);
    } else {
      for (const auto& pool : in_.cluster.pools) {
        if (pool.name != e.pool) continue;
        const json node = fleet_node(pool, pool.nodes + replacements_[pool.name]++, s_.submit.fleet);
        client_.create(kube::resources::kNodes, "", node);
        current->second = node["metadata"]["name"];
      }
    }
  } catch (const kube::KubeError& err) {
    std::cerr << "valley-live: spot event on " << name << ": " << err.what() << "\n";
  }
  std::cerr << "valley-live: trace " << static_cast<int64_t>(t) << "s: " << name << (phase == 0 ? " noticed" : phase == 1 ? " gone" : " replaced by " + current->second) << "\n";
}

void LiveRun::act(const LiveJob& job, const EmulatorAction& a, const std::vector<json>& pods) {
  using Kind = EmulatorAction::Kind;
  if (a.kind == Kind::Checkpoint) {
    ++checkpoints_;
    if (s_.system != System::Valley) return;  // nothing reads it there; the emulator keeps its own
    int epoch = 0;
    for (const auto& p : pods)
      if (auto e = label(p, "valley.dev/epoch"); !e.empty() && label(p, labels_.role) == "worker") epoch = std::max(epoch, std::atoi(e.c_str()));
    auto& store = stores_[job.name];
    std::string error;
    if (!store) store = storage::open_store_from_environment(s_.submit.checkpoint_prefix + job.name + "/", &error);
    if (!store) throw std::runtime_error("valley-live: the checkpoint store: " + error);
    storage::CheckpointRecord r{a.step, kube::format_micro_time(wall_of(a.at)), epoch, a.world_size, "ckpt-" + std::to_string(a.step) + ".bin"};
    store->put(storage::kLatestKey, storage::to_json(r));
    return;
  }
  json annotations = {{"sim.valley.dev/run-time", "0s"}};
  if (a.kind == Kind::FailLauncher) annotations["sim.valley.dev/exit-code"] = "1";
  for (const auto& p : pods) {
    if (p["metadata"].value("uid", "") != a.pod) continue;
    try {
      client_.patch(kube::resources::kPods, s_.submit.ns, p["metadata"]["name"], kube::PatchType::Merge, {{"metadata", {{"annotations", annotations}}}});
      ++(a.kind == Kind::FailLauncher ? failed_ : ended_);
    } catch (const kube::KubeError& e) {
      if (e.http_status() != 404) throw;
    }
  }
}

// What the emulated workload did, as a line per change (the run's story in its log).
void LiveRun::log_change(const LiveJob& job, const JobProgress& before, const JobProgress& after, double t) {
  auto line = [&](const std::string& what) {
    std::cerr << "valley-live: trace " << static_cast<int64_t>(t) << "s: " << job.name << " " << what << " (work " << static_cast<int>(100 * after.work_done / job.work_total) << "%)\n";
  };
  if (after.losses > before.losses) line("lost its gang with a node, back to its last checkpoint");
  else if (!before.gang.empty() && after.gang != before.gang) line("stopped (checkpointed on SIGTERM)");
  if (after.starts > before.starts) line("running on " + std::to_string(after.gpus) + " GPUs");
  if (after.finishing && !before.finishing) line("done: its launcher exits 0");
  if (after.done) line("complete");
}

void LiveRun::emulate(double t) {
  std::map<std::string, std::vector<json>> pods;
  for (const auto& p : pods_->store().list()) pods[label(*p, labels_.job)].push_back(*p);
  std::map<std::string, double> seen;
  {
    std::lock_guard lock(mu_);
    seen = first_seen_;
  }
  for (const auto& job : jobs_) {
    auto pr = progress_.find(job.name);
    if (pr == progress_.end() || pr->second.done) continue;
    const auto& mine = pods[job.name];
    std::vector<PodView> views;
    for (const auto& p : mine) {
      PodView v;
      v.uid = p["metadata"].value("uid", "");
      v.node = p["spec"].value("nodeName", "");
      v.launcher = label(p, labels_.role) == "launcher";
      v.gpus = gpus_of(p);
      const std::string phase = p.value("status", json::object()).value("phase", "");
      v.finished = phase == "Succeeded" || phase == "Failed";
      v.succeeded = phase == "Succeeded";
      v.running = phase == "Running" && !p["metadata"].contains("deletionTimestamp");
      // A pod left on a node that went is not running, whatever its last status says.
      if (auto k = killed_at_.find(v.node); k != killed_at_.end() && seen.count(v.uid) && seen[v.uid] <= k->second) v.running = false;
      views.push_back(std::move(v));
    }
    const JobProgress before = pr->second;
    for (const auto& a : advance(pr->second, job, views, t, killed_at_, emulator_)) act(job, a, mine);
    log_change(job, before, pr->second, t);
    if (pr->second.done) {
      std::lock_guard lock(mu_);
      meter_.completed(job.name, t);
    }
  }
}

void LiveRun::watch_pods() {
  kube::InformerOptions o;
  o.ns = s_.submit.ns;
  pods_ = std::make_unique<kube::Informer>(client_, kube::resources::kPods, o);
  auto seen = [this](const kube::Informer::Ptr& p) {
    const double t = now();
    const json& pod = *p;
    const std::string uid = pod["metadata"].value("uid", ""), phase = pod.value("status", json::object()).value("phase", "");
    std::lock_guard lock(mu_);
    first_seen_.emplace(uid, t);
    if (phase == "Succeeded" || phase == "Failed") meter_.ended(uid, t);
    else meter_.bound(label(pod, labels_.job), uid, pod["spec"].value("nodeName", ""), gpus_of(pod), t);
  };
  kube::InformerHandlers h;
  h.on_add = seen;
  h.on_update = [seen](const kube::Informer::Ptr&, const kube::Informer::Ptr& p) { seen(p); };
  h.on_delete = [this](const kube::Informer::Ptr& p) {
    std::lock_guard lock(mu_);
    meter_.ended((*p)["metadata"].value("uid", ""), now());
  };
  pods_->add_handlers(h);
  kube::InformerOptions n;
  n.label_selector = std::string(kFleetLabel) + "=" + s_.submit.fleet;
  nodes_ = std::make_unique<kube::Informer>(client_, kube::resources::kNodes, n);
  kube::InformerHandlers nh;
  nh.on_delete = [this](const kube::Informer::Ptr& p) {
    std::lock_guard lock(mu_);
    meter_.node_gone((*p)["metadata"].value("name", ""), now());
  };
  nodes_->add_handlers(nh);
  pods_->start();
  nodes_->start();
  if (!pods_->wait_for_sync(std::chrono::seconds(60)) || !nodes_->wait_for_sync(std::chrono::seconds(60)))
    throw std::runtime_error("valley-live: the informers did not sync");
}

json LiveRun::run() {
  make_fleet();
  start_ = Clock::now();
  start_wall_ = std::chrono::system_clock::now();
  watch_pods();
  size_t next_job = 0;
  std::vector<std::pair<int64_t, std::pair<size_t, int>>> events;  // when, (spot event, phase)
  for (size_t i = 0; i < spot_.size(); ++i)
    for (int phase = 0; phase < 3; ++phase) events.push_back({phase == 0 ? spot_[i].notice : phase == 1 ? spot_[i].kill : spot_[i].back, {i, phase}});
  std::sort(events.begin(), events.end());
  size_t next_event = 0;
  auto last_report = Clock::now();
  double t = 0;
  for (;;) {
    t = now();
    while (next_job < jobs_.size() && static_cast<double>(jobs_[next_job].trace.submit) <= t) {
      progress_[jobs_[next_job].name];
      submit(jobs_[next_job++]);
    }
    while (next_event < events.size() && static_cast<double>(events[next_event].first) <= t) {
      const auto& [i, phase] = events[next_event++].second;
      spot_event(spot_[i], phase);
    }
    emulate(t);
    const bool all_done = next_job == jobs_.size() && std::all_of(progress_.begin(), progress_.end(), [](const auto& p) { return p.second.done; });
    if (all_done || t > s_.horizon) break;
    if (Clock::now() - last_report > std::chrono::seconds(30)) {
      last_report = Clock::now();
      const auto done = std::count_if(progress_.begin(), progress_.end(), [](const auto& p) { return p.second.done; });
      std::cerr << "valley-live: trace hour " << static_cast<int64_t>(t / 3600) << ": " << submitted_ << " submitted, " << done << " done\n";
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(s_.tick_seconds));
  }
  return finish(t);
}

json LiveRun::finish(double t) {
  Meter::Figures f;
  {
    std::lock_guard lock(mu_);
    f = meter_.figures(jobs_, in_.pricing, kube::SystemTime{} + std::chrono::seconds(in_.workload.start_epoch), t);
  }
  pods_->stop();
  nodes_->stop();
  int starts = 0, losses = 0;
  double lost = 0, gang_gpu_seconds = 0, held_gpu_seconds = 0;
  for (const auto& [name, p] : progress_) {
    starts += p.starts;
    losses += p.losses;
    lost += p.lost_work;
    gang_gpu_seconds += p.gang_gpu_seconds;
  }
  for (const auto& j : f.jobs) held_gpu_seconds += j.gpu_seconds;
  auto hours = [](double s) { return std::round(s / 36) / 100; };
  json pools = json::object();
  for (const auto& [pool, h] : f.pool_gpu_hours) pools[pool] = std::round(h * 10) / 10;
  const std::string system = s_.system == System::Valley ? "valley" : "kueue";
  json out = {{"system", system},
              {"compression", s_.submit.compression},
              {"totalCost", api::format_money(f.cost, 2)},
              {"totalCostMicros", f.cost},
              {"meanJctHours", hours(f.mean_jct)},
              {"meanJctHoursNotReduceCost", std::round(f.mean_jct_not_reduce_cost / 3.6) / 1000},
              {"p95JctHours", hours(f.p95_jct)},
              {"makespanHours", hours(f.makespan)},
              {"jobsFinished", f.finished},
              {"jobsUnfinished", f.unfinished},
              {"gangStarts", starts},
              {"gangsLostWithANode", losses},
              {"workLostGpuHours", std::round(lost / 36) / 100},
              // GPU-hours the pods held, and of those what whole gangs worked (the simulator's
              // charge): the rest is the two systems' latencies, compressed with the trace.
              {"gpuHoursHeld", std::round(held_gpu_seconds / 36) / 100},
              {"gpuHoursInGangs", std::round(gang_gpu_seconds / 36) / 100},
              {"spotInterruptions", std::count_if(spot_.begin(), spot_.end(), [&](const SpotEvent& e) { return static_cast<double>(e.notice) <= t; })},
              {"checkpointRecords", checkpoints_},
              {"launchersEnded", ended_},
              {"launchersFailed", failed_},
              {"gpuHoursByPool", pools}};
  std::filesystem::create_directories(s_.out);
  std::ofstream(s_.out + "/" + system + ".json") << out.dump(2) << "\n";
  std::ofstream jobs(s_.out + "/" + system + "-jobs.jsonl");
  for (const auto& j : f.jobs) {
    const auto pr = progress_.find(j.name);
    const JobProgress none;
    const JobProgress& p = pr == progress_.end() ? none : pr->second;
    json by_pool = json::object();
    for (const auto& [pool, seconds] : j.pool_gpu_seconds) by_pool[pool] = std::round(seconds);
    jobs << json{{"name", j.name}, {"class", j.cls}, {"gpus", j.gpus}, {"priority", j.priority}, {"submit", j.submit}, {"start", p.first_start},
                 {"end", j.end}, {"cost", api::format_money(j.cost, 4)}, {"gpuSeconds", std::round(j.gpu_seconds)},
                 {"gangGpuSeconds", std::round(p.gang_gpu_seconds)}, {"gangStarts", p.starts}, {"gpuSecondsByPool", by_pool}}.dump()
         << "\n";
  }
  return out;
}

}  // namespace

json run(kube::Client& client, const sim::Inputs& in, const RunSettings& settings) { return LiveRun(client, in, settings).run(); }

}  // namespace valley::live
