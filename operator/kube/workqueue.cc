#include "operator/kube/workqueue.h"

#include <spdlog/spdlog.h>

#include "operator/kube/this_thread.h"

namespace valley::kube {

WorkQueue::WorkQueue(WorkQueueOptions options)
    : options_(options), backoff_(options.backoff_base, options.backoff_cap), bucket_(options.qps, options.burst) {}

WorkQueue::~WorkQueue() { shut_down(); }

void WorkQueue::add_locked(const std::string& key) {
  if (shutting_down_ || dirty_.count(key)) return;
  dirty_.insert(key);
  queued_at_.emplace(key, Clock::now());
  if (processing_.count(key)) return;  // re-queued by done()
  queue_.push_back(key);
  cv_.notify_one();
}

void WorkQueue::unwait_locked(const std::string& key) {
  if (auto it = waiting_.find(key); it != waiting_.end()) {
    due_order_.erase({it->second, key});
    waiting_.erase(it);
  }
}

void WorkQueue::add(const std::string& key) {
  std::lock_guard lock(mu_);
  unwait_locked(key);  // due now: any pending delay is moot
  add_locked(key);
}

void WorkQueue::add_after(const std::string& key, Clock::duration delay) {
  if (delay <= Clock::duration::zero()) return add(key);
  std::lock_guard lock(mu_);
  if (shutting_down_) return;
  auto due = Clock::now() + delay;
  auto [it, inserted] = waiting_.emplace(key, due);
  if (!inserted) {
    if (due >= it->second) return;  // the earliest request wins
    due_order_.erase({it->second, key});
    it->second = due;
  }
  // A sleeping get() waits until the earliest due time: only a new earliest may need one awake
  // sooner (the one woken sleeps again until this key is due, and takes it).
  const bool earliest = due_order_.empty() || due < due_order_.begin()->first;
  due_order_.emplace(due, key);
  if (earliest) cv_.notify_one();
}

void WorkQueue::add_rate_limited(const std::string& key) {
  auto delay = std::max(backoff_.next(key), bucket_.reserve(Clock::now()));
  add_after(key, delay);
}

void WorkQueue::forget(const std::string& key) { backoff_.forget(key); }

void WorkQueue::promote_due_locked(Clock::time_point now) {
  while (!due_order_.empty() && due_order_.begin()->first <= now) {
    std::string key = due_order_.begin()->second;
    due_order_.erase(due_order_.begin());
    waiting_.erase(key);
    add_locked(key);
  }
}

std::optional<std::string> WorkQueue::get() {
  std::unique_lock lock(mu_);
  for (;;) {
    if (shutting_down_) return std::nullopt;
    promote_due_locked(Clock::now());
    if (!queue_.empty()) break;
    if (due_order_.empty()) {
      cv_.wait(lock);
    } else {
      // By value: wait_until reads its deadline after re-locking, when another thread may have
      // erased that set entry (found by AddressSanitizer in CI).
      const Clock::time_point due = due_order_.begin()->first;
      cv_.wait_until(lock, due);
    }
  }
  std::string key = std::move(queue_.front());
  queue_.pop_front();
  processing_.insert(key);
  dirty_.erase(key);
  Clock::duration waited{};
  if (auto it = queued_at_.find(key); it != queued_at_.end()) {
    waited = Clock::now() - it->second;
    queued_at_.erase(it);
  }
  lock.unlock();
  if (options_.on_dequeue) options_.on_dequeue(waited);
  return key;
}

void WorkQueue::done(const std::string& key) {
  std::lock_guard lock(mu_);
  processing_.erase(key);
  if (dirty_.count(key) && !shutting_down_) {
    queue_.push_back(key);
    cv_.notify_one();
  }
}

void WorkQueue::shut_down() {
  {
    std::lock_guard lock(mu_);
    shutting_down_ = true;
  }
  cv_.notify_all();
}

bool WorkQueue::shutting_down() const {
  std::lock_guard lock(mu_);
  return shutting_down_;
}

size_t WorkQueue::length() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}

size_t WorkQueue::delayed() const {
  std::lock_guard lock(mu_);
  return waiting_.size();
}

std::vector<std::thread> run_workers(WorkQueue& queue, int workers, std::function<bool(const std::string&)> reconcile) {
  std::vector<std::thread> threads;
  for (int i = 0; i < workers; ++i) {
    threads.emplace_back([&queue, reconcile] {
      name_this_thread("reconcile");
      while (auto key = queue.get()) {
        bool ok = false;
        try {
          ok = reconcile(*key);
        } catch (const std::exception& e) {
          spdlog::error("reconcile {}: {}", *key, e.what());
        }
        if (ok) {
          queue.forget(*key);
        } else {
          queue.add_rate_limited(*key);
        }
        queue.done(*key);
      }
    });
  }
  return threads;
}

}  // namespace valley::kube
