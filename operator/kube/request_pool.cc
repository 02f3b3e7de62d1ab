#include "operator/kube/request_pool.h"

#include <algorithm>
#include <exception>

#include "operator/kube/this_thread.h"

namespace valley::kube {

RequestPool::RequestPool(int threads) {
  for (int i = 0; i < std::max(1, threads); ++i)
    threads_.emplace_back([this] {
      name_this_thread("requests");
      work();
    });
}

RequestPool::~RequestPool() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void RequestPool::work() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping, and nothing left to do
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
  }
}

void RequestPool::run_all(size_t n, const std::function<void(size_t)>& fn) {
  if (n == 0) return;
  if (n == 1 || threads_.size() <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::mutex done_mu;
  std::condition_variable done_cv;
  size_t left = n;
  // A job that throws must neither end its pool thread (std::terminate) nor leave the caller waiting
  // for a count that never reaches zero: the first exception is passed on to the caller once all end.
  std::exception_ptr failed;
  {
    std::lock_guard lock(mu_);
    for (size_t i = 0; i < n; ++i)
      jobs_.emplace_back([&, i] {
        std::exception_ptr error;
        try {
          fn(i);
        } catch (...) {
          error = std::current_exception();
        }
        std::lock_guard done_lock(done_mu);
        if (error && !failed) failed = error;
        if (--left == 0) done_cv.notify_one();
      });
  }
  cv_.notify_all();
  std::unique_lock lock(done_mu);
  done_cv.wait(lock, [&] { return left == 0; });
  if (failed) std::rethrow_exception(failed);
}

}  // namespace valley::kube
