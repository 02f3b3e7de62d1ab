#include "controllers/task/reconcile_loop.h"

#include "controllers/task/metrics.h"
#include "operator/kube/this_thread.h"
#include "operator/logging.h"

namespace valley::task {

namespace {
kube::WorkQueueOptions queue_options(const std::string& label) {
  kube::WorkQueueOptions o;
  o.on_dequeue = [label](kube::Clock::duration waited) {
    controller_metrics().queue_seconds.observe({label}, std::chrono::duration<double>(waited).count());
  };
  return o;
}
}  // namespace

ReconcileLoop::ReconcileLoop(std::string label, std::string log_prefix, int workers, Reconcile reconcile)
    : label_(std::move(label)),
      log_prefix_(std::move(log_prefix)),
      workers_(workers),
      reconcile_(std::move(reconcile)),
      queue_(queue_options(label_)) {}

ReconcileLoop::~ReconcileLoop() { stop(); }

bool ReconcileLoop::run_one(const std::string& key) {
  auto& m = controller_metrics();
  LogContext context(log_prefix_ + key);
  const auto start = std::chrono::steady_clock::now();
  const double cpu_start = kube::thread_cpu_seconds();
  Result r;
  try {
    r = reconcile_(key);
  } catch (...) {
    m.reconciles.inc({label_, "error"});
    throw;
  }
  if (r.requeue_after) queue_.add_after(key, *r.requeue_after);
  m.reconciles.inc({label_, r.ok ? "success" : "error"});
  m.reconcile_seconds.observe({label_}, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  m.reconcile_cpu_seconds.observe({label_}, kube::thread_cpu_seconds() - cpu_start);
  return r.ok;
}

void ReconcileLoop::start() {
  threads_ = kube::run_workers(queue_, workers_, [this](const std::string& key) { return run_one(key); });
}

void ReconcileLoop::stop() {
  queue_.shut_down();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

}  // namespace valley::task
