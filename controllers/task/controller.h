// The TrainingTask controller: informers over TrainingTasks and the pods, Services, ConfigMaps and
// Secrets Valley made (label app.kubernetes.io/managed-by=valley); a workqueue of task keys fed by
// changes to any of them; workers that observe a task from the caches, call the pure lifecycle
// decide(), and carry the decision out: status first (conditional on resourceVersion, so a stale
// cache can never apply a transition twice), then deletions, then creations (deterministic names:
// a repeat is a harmless AlreadyExists), then Events.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "operator/kube/client.h"
#include "operator/kube/events.h"
#include "operator/kube/informer.h"
#include "operator/kube/workqueue.h"

namespace valley::task {

struct ControllerOptions {
  int workers = 4;
  std::string field_manager = "valley-operator";
};

class TaskController {
 public:
  TaskController(kube::Client& client, kube::EventRecorder& events, ControllerOptions options = {});
  ~TaskController();
  // Starts informers and workers, runs until *stop, then shuts everything down.
  void run(const std::atomic<bool>& stop);
  // One reconcile of one task key ("ns/name"); true when done, false to retry with backoff.
  bool reconcile(const std::string& key);

 private:
  void enqueue_owner(const kube::ObjectPtr& object);

  kube::Client& client_;
  kube::EventRecorder& events_;
  ControllerOptions options_;
  kube::WorkQueue queue_;
  std::unique_ptr<kube::Informer> tasks_, pods_, services_, configs_, secrets_;
};

}  // namespace valley::task
