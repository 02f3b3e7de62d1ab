// One reconciler's loop: its own work queue and workers over the shared cluster cache, in the manner
// of controller-runtime. reconcile(key) returns a Result: done (the key's backoff is reset), retry
// (re-queued with per-key backoff), and in either case an optional requeue_after (the key comes back
// then, e.g. for the next accrual). Each reconcile is counted and timed under the loop's controller
// label (valley_reconcile_*), and its log lines carry the key.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "operator/kube/workqueue.h"

namespace valley::task {

struct Result {
  bool ok = true;  // false: retry with backoff
  std::optional<std::chrono::milliseconds> requeue_after;
  static Result done() { return {}; }
  static Result retry() { return {false, std::nullopt}; }
  static Result after(std::chrono::milliseconds d) { return {true, d}; }
};

class ReconcileLoop {
 public:
  using Reconcile = std::function<Result(const std::string& key)>;
  // label: the controller's metrics label ("trainingtask", "tenant", ...); log_prefix goes before
  // the key in log lines ("" for task keys, which are namespace/name already).
  ReconcileLoop(std::string label, std::string log_prefix, int workers, Reconcile reconcile);
  ~ReconcileLoop();
  kube::WorkQueue& queue() { return queue_; }
  const kube::WorkQueue& queue() const { return queue_; }
  const std::string& label() const { return label_; }
  void start();
  void stop();  // shuts the queue down and joins the workers

 private:
  bool run_one(const std::string& key);
  std::string label_, log_prefix_;
  int workers_;
  Reconcile reconcile_;
  kube::WorkQueue queue_;
  std::vector<std::thread> threads_;
};

}  // namespace valley::task
