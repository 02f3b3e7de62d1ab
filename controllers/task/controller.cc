#include "controllers/task/controller.h"

#include <spdlog/spdlog.h>

#include <thread>

#include "controllers/planner/snapshot.h"
#include "controllers/task/checkpoint_watcher.h"
#include "controllers/render/render.h"
#include "controllers/render/ssh_keys.h"
#include "controllers/task/lifecycle.h"
#include "operator/kube/error.h"

namespace valley::task {

namespace res = kube::resources;

TaskController::TaskController(kube::Client& client, kube::EventRecorder& events, ControllerOptions options)
    : client_(client),
      events_(events),
      options_(std::move(options)),
      checkpoints_(client_, options_.checkpoint_poll, [this](const std::string& key, const std::string& error) {
        {
          std::lock_guard lock(plan_mu_);
          checkpoint_errors_[key] = error;
        }
        queue_.add(key);
      }) {
  tasks_ = std::make_unique<kube::Informer>(client_, res::kTrainingTasks);
  kube::InformerOptions owned;
  owned.label_selector = std::string(render::label::kManagedBy) + "=valley";
  // All pods, not only Valley's: the planner must know what everything else holds on each node.
  pods_ = std::make_unique<kube::Informer>(client_, res::kPods);
  nodes_ = std::make_unique<kube::Informer>(client_, res::kNodes);
  services_ = std::make_unique<kube::Informer>(client_, res::kServices, owned);
  configs_ = std::make_unique<kube::Informer>(client_, res::kConfigMaps, owned);
  secrets_ = std::make_unique<kube::Informer>(client_, res::kSecrets, owned);

  auto enqueue_task = [this](const kube::ObjectPtr& o) {
    queue_.add(kube::object_key(*o));
    mark_dirty();
  };
  tasks_->add_handlers({enqueue_task, [enqueue_task](const kube::ObjectPtr&, const kube::ObjectPtr& o) { enqueue_task(o); },
                        enqueue_task});
  auto owner = [this](const kube::ObjectPtr& o) { enqueue_owner(o); };
  kube::InformerHandlers owned_handlers{owner, [owner](const kube::ObjectPtr&, const kube::ObjectPtr& o) { owner(o); }, owner};
  for (auto* inf : {pods_.get(), services_.get(), configs_.get(), secrets_.get()}) inf->add_handlers(owned_handlers);
  auto dirty = [this](const kube::ObjectPtr&) { mark_dirty(); };
  kube::InformerHandlers capacity{dirty, [this](const kube::ObjectPtr&, const kube::ObjectPtr&) { mark_dirty(); }, dirty};
  pods_->add_handlers(capacity);
  nodes_->add_handlers(capacity);
}

void TaskController::mark_dirty() {
  {
    std::lock_guard lock(plan_mu_);
    dirty_ = true;
  }
  plan_cv_.notify_one();
}

void TaskController::planning_loop(const std::atomic<bool>& stop) {
  while (!stop.load()) {
    {
      std::unique_lock lock(plan_mu_);
      // Also every couple of seconds without changes: time alone matters (aging, resize intervals,
      // unschedulable timeouts).
      plan_cv_.wait_for(lock, std::chrono::seconds(2), [this, &stop] { return dirty_ || stop.load(); });
      dirty_ = false;
    }
    // Let a burst of changes (a gang of pods appearing) settle into one plan.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    try {
      plan_once();
    } catch (const std::exception& e) {
      spdlog::error("planner: {}", e.what());
    }
  }
}

void TaskController::plan_once() {
  std::map<std::string, Admission> published;
  {
    std::lock_guard lock(plan_mu_);
    published = admissions_;
  }
  std::vector<planner::Node> nodes;
  std::map<std::string, size_t> node_index;
  for (const auto& n : nodes_->store().list()) {
    node_index[(*n)["metadata"].value("name", "")] = nodes.size();
    nodes.push_back(planner::node_from(*n, options_.node_facts));
  }
  std::vector<planner::Task> tasks;
  std::map<std::string, int> planned_epoch;  // task key -> epoch whose workers the plan accounts for
  for (const auto& obj : tasks_->store().list()) {
    if ((*obj)["metadata"].contains("deletionTimestamp")) continue;  // going away: holds nothing
    ParsedTask parsed = parse_task(*obj);
    if (!parsed.spec) continue;
    const auto status = obj->value("status", nlohmann::json::object());
    std::string phase = status.value("phase", "");
    if (phase == "Succeeded" || phase == "Failed" || parsed.spec->run_policy.suspend) continue;
    std::string uid = (*obj)["metadata"].value("uid", "");
    std::vector<nlohmann::json> owned;
    for (const auto& p : pods_->store().by_index(kube::index::kOwnerUid, uid)) owned.push_back(*p);
    planner::Task t = planner::task_from(*parsed.spec, *obj, owned);
    const auto now = std::chrono::system_clock::now();
    auto& avoid = avoid_[t.key];
    for (const auto& pod : owned) {
      // Pinned, unbound and refused by kube-scheduler for longer than the timeout.
      std::string pinned = render::pinned_node(pod);
      if (pinned.empty() || !pod["spec"].value("nodeName", "").empty()) continue;
      for (const auto& c : pod.value("status", nlohmann::json::object()).value("conditions", nlohmann::json::array())) {
        if (c.value("type", "") != "PodScheduled" || c.value("status", "") != "False") continue;
        auto since = kube::parse_time(c.value("lastTransitionTime", ""));
        if (since && now - *since >= options_.unschedulable_timeout && !avoid.count(pinned)) {
          avoid[pinned] = now + options_.avoid_for;
          spdlog::info("{}: node {} did not take its worker for {}s ({}); planning around it", t.key, pinned,
                       options_.unschedulable_timeout.count(), c.value("message", ""));
          mark_dirty();
        }
      }
    }
    for (auto it = avoid.begin(); it != avoid.end();) it = it->second <= now ? avoid.erase(it) : std::next(it);
    for (const auto& [node, until] : avoid) t.avoid_nodes.push_back(node);
    // What we published counts as taken until the pods show it.
    if (auto it = published.find(t.key); it != published.end() && it->second.admitted) {
      t.admitted = true;
      t.workers.clear();
      for (const auto& w : it->second.placement) t.workers.push_back({w.node, w.gpu_resource, w.gpu_count});
    }
    planned_epoch[t.key] = status.value("epoch", 0);
    tasks.push_back(std::move(t));
  }
  // Everything that is not a current worker of a planned task holds what it holds.
  for (const auto& p : pods_->store().list()) {
    std::string node = (*p)["spec"].value("nodeName", "");
    if (node.empty()) node = render::pinned_node(*p);
    auto ni = node_index.find(node);
    if (ni == node_index.end()) continue;
    const auto labels = (*p)["metadata"].value("labels", nlohmann::json::object());
    std::string key = (*p)["metadata"].value("namespace", "") + "/" + labels.value(render::label::kTask, "");
    if (labels.value(render::label::kManagedBy, "") == "valley" && labels.value(render::label::kRole, "") == "worker") {
      auto pe = planned_epoch.find(key);
      if (pe != planned_epoch.end() && labels.value(render::label::kEpoch, "") == std::to_string(pe->second)) continue;
    }
    planner::subtract(nodes[ni->second], *p);
  }

  auto decisions = planner::plan(nodes, tasks, std::chrono::system_clock::now(), options_.planner);
  std::map<std::string, Admission> next;
  std::map<std::string, std::string> vendor_of;
  for (const auto& n : nodes) vendor_of[n.name] = n.vendor;
  for (size_t i = 0; i < decisions.size(); ++i) {
    const auto& d = decisions[i];
    Admission a;
    a.admitted = d.workers > 0;
    a.workers = d.workers;
    a.reason = d.reason;
    a.queue_position = d.queue_position;
    for (const auto& w : d.placement) a.placement.push_back({vendor_of[w.node], w.gpu_resource, static_cast<int>(w.count), w.node});
    next[d.key] = std::move(a);
  }
  std::vector<std::string> changed;
  for (const auto& [key, a] : next) {
    auto old = published.find(key);
    bool same = old != published.end() && old->second.admitted == a.admitted && old->second.workers == a.workers &&
                old->second.reason == a.reason && old->second.queue_position == a.queue_position;
    if (same) {
      if (same) same = old->second.placement.size() == a.placement.size();
      for (size_t k = 0; k < a.placement.size() && same; ++k) same = old->second.placement[k].node == a.placement[k].node;
    }
    if (!same) changed.push_back(key);
  }
  {
    std::lock_guard lock(plan_mu_);
    admissions_ = std::move(next);
  }
  for (const auto& key : changed) queue_.add(key);
}

TaskController::~TaskController() { queue_.shut_down(); }

void TaskController::enqueue_owner(const kube::ObjectPtr& object) {
  const auto& meta = (*object)["metadata"];
  auto labels = meta.value("labels", nlohmann::json::object());
  std::string task = labels.value(render::label::kTask, "");
  if (!task.empty()) queue_.add(meta.value("namespace", "") + "/" + task);
}

void TaskController::run(const std::atomic<bool>& stop) {
  kube::Informer* informers[] = {tasks_.get(), pods_.get(), nodes_.get(), services_.get(), configs_.get(), secrets_.get()};
  for (auto* inf : informers) inf->start();
  for (auto* inf : informers) {
    while (!stop.load() && !inf->wait_for_sync(std::chrono::seconds(1))) {
    }
  }
  if (!stop.load()) spdlog::info("trainingtask controller: caches synced, {} workers", options_.workers);
  std::thread planner([this, &stop] { planning_loop(stop); });
  std::thread checkpoint_reader([this, &stop] { checkpoints_.run(stop); });
  auto threads = kube::run_workers(queue_, options_.workers, [this](const std::string& key) { return reconcile(key); });
  while (!stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  queue_.shut_down();
  for (auto& t : threads) t.join();
  plan_cv_.notify_all();
  planner.join();
  checkpoint_reader.join();
  for (auto* inf : informers) inf->stop();
}

bool TaskController::reconcile(const std::string& key) {
  kube::ObjectPtr task = tasks_->store().get(key);
  if (!task) {
    checkpoints_.forget(key);
    return true;  // deleted: owner references let the garbage collector remove the rest
  }
  Observed o;
  o.task = *task;
  o.parsed = parse_task(o.task);
  o.now = std::chrono::system_clock::now();
  const std::string ns = o.task["metadata"].value("namespace", "");
  const std::string name = o.task["metadata"].value("name", "");
  const std::string uid = o.task["metadata"].value("uid", "");
  for (const auto& pod : pods_->store().by_index(kube::index::kOwnerUid, uid)) o.pods.push_back(view_pod(*pod));
  o.nodes_known = true;
  o.disruption = options_.disruption;
  for (const auto& p : o.pods) {
    if (p.node.empty() || o.nodes.count(p.node)) continue;
    if (auto n = nodes_->store().get(p.node)) {
      planner::Node facts = planner::node_from(*n, options_.node_facts);
      o.nodes[p.node] = NodeView{facts.ready, facts.not_ready_since, facts.notice};
    }
  }
  std::string checkpoint_error;
  if (o.parsed.spec) {
    checkpoints_.watch(*o.parsed.spec);
    o.checkpoint = checkpoints_.latest(key);
    std::lock_guard lock(plan_mu_);
    if (auto it = checkpoint_errors_.find(key); it != checkpoint_errors_.end()) {
      checkpoint_error = it->second;
      checkpoint_errors_.erase(it);
    }
  }
  if (!checkpoint_error.empty()) events_.warning(o.task, "CheckpointUnreadable", "ReadCheckpoint", checkpoint_error);
  o.service_exists = services_->store().get(ns + "/" + render::service_name(name)) != nullptr;
  if (auto cm = configs_->store().get(ns + "/" + render::config_name(name))) {
    o.config_exists = true;
    if ((*cm).contains("data")) o.config_hostfile = (*cm)["data"].value("hostfile", "");
  }
  o.secret_exists = secrets_->store().get(ns + "/" + render::ssh_secret_name(name)) != nullptr;
  {
    std::lock_guard lock(plan_mu_);
    if (auto it = admissions_.find(key); it != admissions_.end()) o.admission = it->second;
  }

  Decision d = decide(o);

  if (d.status_changed) {
    nlohmann::json updated = o.task;
    updated["status"] = d.status;
    try {
      client_.update_status(res::kTrainingTasks, updated);
    } catch (const kube::KubeError& e) {
      if (e.http_status() == 404) return true;
      // 409: our cache was behind; the informer brings the fresh object and we decide again.
      spdlog::debug("{}: status update: {}", key, e.what());
      return false;
    }
  }
  for (const auto& ev : d.events) events_.record(o.task, ev.type, ev.reason, ev.action, ev.note);
  if (d.delete_task) {
    kube::DeleteOptions opts;
    opts.precondition_uid = uid;
    client_.remove(res::kTrainingTasks, ns, name, opts);
    spdlog::info("{}: deleted {}s after finishing (ttlSecondsAfterFinished)", key,
                 o.parsed.spec ? o.parsed.spec->run_policy.ttl_seconds_after_finished.value_or(0) : 0);
    return true;
  }

  bool ok = true;
  for (const auto& del : d.delete_pods) {
    kube::DeleteOptions opts;
    opts.precondition_uid = del.uid;  // never delete a newer pod that took the name meanwhile
    if (del.force) opts.grace_period_seconds = 0;
    try {
      client_.remove(res::kPods, ns, del.name, opts);
      if (del.force) spdlog::info("{}: force-deleted pod {} (its node is lost or it outlived its grace period)", key, del.name);
    } catch (const kube::KubeError& e) {
      if (e.http_status() != 409 && e.http_status() != 404) {
        spdlog::warn("{}: delete pod {}: {}", key, del.name, e.what());
        ok = false;
      }
    }
  }
  if (d.status.value("phase", "") == "Restarting" && o.task.value("status", nlohmann::json::object()).value("phase", "") != "Restarting")
    checkpoints_.poke(key);
  auto create = [&](const kube::Resource& r, const nlohmann::json& object) {
    try {
      client_.create(r, ns, object);
    } catch (const kube::KubeError& e) {
      if (e.http_status() == 409) return;  // made already (by us, before a restart or a stale cache)
      spdlog::warn("{}: create {} {}: {}", key, r.kind, object["metadata"].value("name", ""), e.what());
      // Refusals that will not heal by retrying are the user's to see (bad resources in the spec,
      // a quota, an admission policy).
      if (e.http_status() == 400 || e.http_status() == 403 || e.http_status() == 422) {
        events_.warning(o.task, "CreateFailed", "Create", r.kind + " " + object["metadata"].value("name", "") + ": " + e.what());
      }
      ok = false;
    }
  };
  if (d.create_ssh_secret && o.parsed.spec) create(res::kSecrets, render::ssh_secret(*o.parsed.spec, render::generate_ssh_key_pair(name)));
  for (const auto& object : d.create) {
    const std::string kind = object.value("kind", "");
    create(kind == "Pod" ? res::kPods : kind == "Service" ? res::kServices : res::kConfigMaps, object);
  }
  if (d.replace_config) {
    try {
      client_.patch(res::kConfigMaps, ns, render::config_name(name), kube::PatchType::Merge,
                    {{"data", (*d.replace_config)["data"]}, {"metadata", {{"annotations", (*d.replace_config)["metadata"]["annotations"]}}}});
    } catch (const kube::KubeError& e) {
      spdlog::warn("{}: update hostfile: {}", key, e.what());
      ok = false;
    }
  }
  if (d.requeue_after) queue_.add_after(key, *d.requeue_after);
  return ok;
}

}  // namespace valley::task
