// The TrainingTask reconciler: one task key ("namespace/name") at a time, on its own queue and
// workers. It observes the task from the cluster cache (its pods, their nodes, its admission on the
// board, its last checkpoint record, its GPUs' utilization), brings its cost up to date
// (Accounting), calls the pure lifecycle::decide(), and carries the decision out: status first
// (conditional on resourceVersion, so a stale cache can never apply a transition or a charge twice),
// then the accounting finalizers of pods whose cost is written, Events, deletions (forced for pods on
// lost nodes), creations (deterministic names: a repeat is a harmless AlreadyExists; expectations
// keep a creation the cache has not shown yet from being sent twice), the launcher's hostfile.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "controllers/task/accounting.h"
#include "controllers/task/admission_board.h"
#include "controllers/task/checkpoint_watcher.h"
#include "controllers/task/cluster_cache.h"
#include "controllers/lifecycle/lifecycle.h"
#include "controllers/task/options.h"
#include "controllers/task/transfer_watcher.h"
#include "controllers/task/reconcile_loop.h"
#include "operator/kube/api.h"
#include "operator/kube/events.h"
#include "operator/kube/expectations.h"
#include "operator/kube/request_pool.h"

namespace valley::task {

class TaskReconciler {
 public:
  TaskReconciler(kube::Api& client, kube::EventRecorder& events, ClusterCache& cache, AdmissionBoard& board, Refusals& refusals,
                 Accounting& accounting, const ControllerOptions& options, std::function<void()> replan);
  Result reconcile(const std::string& key);
  // The informer saw the task deleted: its last object (status.cost) settles its cost.
  void task_deleted(const kube::ObjectPtr& last);
  ReconcileLoop& loop() { return loop_; }
  void enqueue(const std::string& key) { loop_.queue().add(key); }
  // An owned object (pod, Service) changed: it met the expectation of its creation, if any.
  void observed_owned(const std::string& kind, const std::string& ns, const std::string& name, const std::string& uid);
  // The checkpoint reader's thread (until *stop).
  void run_checkpoints(const std::atomic<bool>& stop) { checkpoints_.run(stop); }
  // The data-in and outputs thread (until *stop).
  void run_transfers(const std::atomic<bool>& stop) { transfers_.run(stop); }

 private:
  // The pods whose cost is settled in this reconcile and then released: done (ended, or being
  // deleted); `unreported`: being deleted with no end anyone will report (node lost, stuck), charged
  // until now.
  struct Accounted {
    std::vector<std::pair<planner::PodPtr, bool>> pods;  // pod, its end will never be reported
    std::set<std::string> ended_now;                     // the uids of the unreported ones
  };
  Result task_gone(const std::string& key);
  lifecycle::Observed observe(const std::string& key, const kube::ObjectPtr& task, const std::vector<planner::PodPtr>& owned);
  void observe_gpus(lifecycle::Observed& o);
  void observe_checkpoint(lifecycle::Observed& o, const std::string& key);
  Accounted accounted_pods(const lifecycle::Observed& o, const std::vector<planner::PodPtr>& owned) const;
  // decide() with the cost brought up to date before (the budget) and after (a final cost, pods
  // about to be deleted charged up to now); sets when to come back for the next accrual.
  lifecycle::Decision decide_and_price(lifecycle::Observed& o, const std::vector<planner::PodPtr>& owned, const Accounted& accounted);
  // Holds a progress-only status change for a later one (status coalescing: lifecycle::status_hold).
  void hold_progress(const std::string& key, const lifecycle::Observed& o, const nlohmann::json& stored_status, const Accounted& accounted, lifecycle::Decision& d);
  // nullopt when written (or nothing to write); else the reconcile's result.
  std::optional<Result> write_status(const std::string& key, const lifecycle::Observed& o, const lifecycle::Decision& d);
  void count_restarts(const lifecycle::Observed& o, const lifecycle::Decision& d);
  bool release_accounted(const lifecycle::Observed& o, const lifecycle::Decision& d, const Accounted& accounted);
  // The cost as just written kept in the task's durable record when pods are about to be released
  // or the cost became final; false to retry (nothing is released then).
  // The deleted incarnation of namespace/name (its last object as seen, if any) settled by
  // Accounting::settle_deleted, then forgotten; `live_uid`: a new task of the name, left alone.
  bool settle_deleted(const std::string& ns, const std::string& name, const std::string& live_uid);
  bool keep_cost_record(const lifecycle::Observed& o, const lifecycle::Decision& d, const Accounted& accounted,
                        const nlohmann::json& stored_status);
  bool delete_pods(const std::string& key, const lifecycle::Observed& o, const lifecycle::Decision& d);
  struct Creation {
    const kube::Resource* resource;
    nlohmann::json object;
    std::string id;  // for expectations: "<Kind> <ns>/<name>"
    bool created = false;
    std::optional<kube::KubeError> error;
  };
  std::vector<Creation> creations_of(const lifecycle::Observed& o, const lifecycle::Decision& d);
  // Seats the decision's new seat workers on the task's seats claims (render::seat_workers): the
  // claims to make (prerequisites of the pods); claims no pod sits on any more are deleted.
  std::vector<Creation> seat_workers(const lifecycle::Observed& o, lifecycle::Decision& d, const std::vector<planner::PodPtr>& owned);
  // Sends the creations through the request pool, what pods need before them (SSH keys, the
  // NetworkPolicy, GPU claim templates) and the pods only once those exist; *namespace_going when
  // the namespace is being deleted. False when something must be retried.
  bool create(const std::string& key, const lifecycle::Observed& o, std::vector<Creation>& creations, bool* namespace_going);
  void send_one(const std::string& ns, Creation& c);
  // A refusal retrying will not heal: the user's to see (Event, condition), and recorded.
  void refused(const std::string& key, const lifecycle::Observed& o, const Creation& c, const kube::KubeError& e);
  bool patch_hostfile(const std::string& key, const lifecycle::Observed& o, const lifecycle::Decision& d);
  // Valley's outputs finalizer added or removed as lifecycle::outputs_finalizer says for `status`
  // (the one just decided), on the task as cached; `spec` null: not kept. False to retry (the
  // cache was behind: decided again on the newer task).
  bool keep_outputs_finalizer(const std::string& key, const nlohmann::json& cached, const api::TaskSpec* spec, const nlohmann::json& status,
                              std::optional<std::chrono::seconds>* requeue_after);
  // Once the task has ended: its nodes' data caches (render::data_cache_claim) deleted, once per
  // incarnation and process (a claim still mounted goes when its pods have). False to retry.
  bool release_data_caches(const std::string& key, const lifecycle::Observed& o, const lifecycle::Decision& d);
  // Expects the object just created (`made`: the API server's answer), unless its informer shows it already.
  void expect(const std::string& id, const kube::Resource& r, const std::string& ns, const nlohmann::json& made);
  // How much longer the task's held status change may wait (0: write it now).
  std::chrono::milliseconds hold_left(const std::string& key);
  // Whether the task (incarnation `uid`) owns object `name` of `r`, for kinds no informer watches
  // (its SSH key Secret, its NetworkPolicy): asked once, then remembered, as is each creation.
  bool owned_object_exists(const kube::Resource& r, const std::string& ns, const std::string& name, const std::string& uid);
  enum class Owner { ThisTask, AnotherTask, Nobody, Unknown };  // of an object read by name
  Owner owner_of(const kube::Resource& r, const std::string& ns, const std::string& name, const std::string& uid);
  bool owned_object_known(const kube::Resource& r, const std::string& ns, const std::string& name, const std::string& uid);  // no request
  void owned_object_created(const kube::Resource& r, const std::string& ns, const std::string& name, const std::string& uid);
  void forget_owned_objects(const std::string& task_key);

  kube::Api& client_;
  kube::EventRecorder& events_;
  ClusterCache& cache_;
  AdmissionBoard& board_;
  Refusals& refusals_;
  Accounting& accounting_;
  const ControllerOptions& options_;
  std::function<void()> replan_;
  std::unique_ptr<kube::RequestPool> requests_;
  // Creations the informers have not shown yet. They lapse after 30 s rather than client-go's 5
  // minutes: a creation whose event a relist swallowed (created and deleted while the watch was
  // down) would otherwise keep a disrupted task from re-creating that pod, on idle GPUs, that long.
  kube::CreationExpectations expectations_{std::chrono::seconds(30)};
  kube::WrittenObjects written_;  // task statuses written, until the informer shows them
  std::mutex held_mu_;
  std::map<std::string, std::chrono::steady_clock::time_point> held_since_;  // task -> first held change
  std::mutex known_owned_mu_;
  std::set<std::string> known_owned_;  // "ns/name Kind@task uid" known to exist, forgotten with the task
  std::set<std::string> caches_released_;  // "ns/name@task uid" whose data caches are deleted
  std::mutex deleted_mu_;
  std::map<std::string, std::set<std::string>> deleted_by_valley_;  // task -> uids of its pods this process deleted
  std::map<std::string, kube::ObjectPtr> last_seen_;  // task deleted -> its last object, until it is settled
  std::mutex checkpoint_errors_mu_;
  std::map<std::string, std::string> checkpoint_errors_;  // task -> last store error reported
  CheckpointWatcher checkpoints_;
  TransferWatcher transfers_;
  ReconcileLoop loop_;
};

// How expectations name an object Valley creates.
std::string expectation_id(const std::string& kind, const std::string& ns, const std::string& name);

}  // namespace valley::task
