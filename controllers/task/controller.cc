#include "controllers/task/controller.h"

#include <spdlog/spdlog.h>

#include <thread>

#include "controllers/render/render.h"
#include "controllers/render/ssh_keys.h"
#include "controllers/task/lifecycle.h"
#include "operator/kube/error.h"

namespace valley::task {

namespace res = kube::resources;

TaskController::TaskController(kube::Client& client, kube::EventRecorder& events, ControllerOptions options)
    : client_(client), events_(events), options_(std::move(options)) {
  tasks_ = std::make_unique<kube::Informer>(client_, res::kTrainingTasks);
  kube::InformerOptions owned;
  owned.label_selector = std::string(render::label::kManagedBy) + "=valley";
  pods_ = std::make_unique<kube::Informer>(client_, res::kPods, owned);
  services_ = std::make_unique<kube::Informer>(client_, res::kServices, owned);
  configs_ = std::make_unique<kube::Informer>(client_, res::kConfigMaps, owned);
  secrets_ = std::make_unique<kube::Informer>(client_, res::kSecrets, owned);

  auto enqueue_task = [this](const kube::ObjectPtr& o) { queue_.add(kube::object_key(*o)); };
  tasks_->add_handlers({enqueue_task, [enqueue_task](const kube::ObjectPtr&, const kube::ObjectPtr& o) { enqueue_task(o); },
                        enqueue_task});
  auto owner = [this](const kube::ObjectPtr& o) { enqueue_owner(o); };
  kube::InformerHandlers owned_handlers{owner, [owner](const kube::ObjectPtr&, const kube::ObjectPtr& o) { owner(o); }, owner};
  for (auto* inf : {pods_.get(), services_.get(), configs_.get(), secrets_.get()}) inf->add_handlers(owned_handlers);
}

TaskController::~TaskController() { queue_.shut_down(); }

void TaskController::enqueue_owner(const kube::ObjectPtr& object) {
  const auto& meta = (*object)["metadata"];
  auto labels = meta.value("labels", nlohmann::json::object());
  std::string task = labels.value(render::label::kTask, "");
  if (!task.empty()) queue_.add(meta.value("namespace", "") + "/" + task);
}

void TaskController::run(const std::atomic<bool>& stop) {
  kube::Informer* informers[] = {tasks_.get(), pods_.get(), services_.get(), configs_.get(), secrets_.get()};
  for (auto* inf : informers) inf->start();
  for (auto* inf : informers) {
    while (!stop.load() && !inf->wait_for_sync(std::chrono::seconds(1))) {
    }
  }
  if (!stop.load()) spdlog::info("trainingtask controller: caches synced, {} workers", options_.workers);
  auto threads = kube::run_workers(queue_, options_.workers, [this](const std::string& key) { return reconcile(key); });
  while (!stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  queue_.shut_down();
  for (auto& t : threads) t.join();
  for (auto* inf : informers) inf->stop();
}

bool TaskController::reconcile(const std::string& key) {
  kube::ObjectPtr task = tasks_->store().get(key);
  if (!task) return true;  // deleted: owner references let the garbage collector remove the rest
  Observed o;
  o.task = *task;
  o.parsed = parse_task(o.task);
  o.now = std::chrono::system_clock::now();
  const std::string ns = o.task["metadata"].value("namespace", "");
  const std::string name = o.task["metadata"].value("name", "");
  const std::string uid = o.task["metadata"].value("uid", "");
  for (const auto& pod : pods_->store().by_index(kube::index::kOwnerUid, uid)) o.pods.push_back(view_pod(*pod));
  o.service_exists = services_->store().get(ns + "/" + render::service_name(name)) != nullptr;
  if (auto cm = configs_->store().get(ns + "/" + render::config_name(name))) {
    o.config_exists = true;
    if ((*cm).contains("data")) o.config_hostfile = (*cm)["data"].value("hostfile", "");
  }
  o.secret_exists = secrets_->store().get(ns + "/" + render::ssh_secret_name(name)) != nullptr;

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
  for (const auto& [pod, pod_uid] : d.delete_pods) {
    kube::DeleteOptions opts;
    opts.precondition_uid = pod_uid;  // never delete a newer pod that took the name meanwhile
    try {
      client_.remove(res::kPods, ns, pod, opts);
    } catch (const kube::KubeError& e) {
      if (e.http_status() != 409) {
        spdlog::warn("{}: delete pod {}: {}", key, pod, e.what());
        ok = false;
      }
    }
  }
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
