// A fixed set of threads that send API requests on behalf of reconcilers: one reconcile's creates
// (a launcher and its workers) go out together instead of one after another, and all reconciles
// together keep at most `threads` such requests in flight (the client's QPS limit still applies to
// each). run_all() blocks its caller until its own jobs are done; jobs never wait on the pool, so
// callers cannot deadlock it.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace valley::kube {

class RequestPool {
 public:
  explicit RequestPool(int threads);
  ~RequestPool();
  RequestPool(const RequestPool&) = delete;
  RequestPool& operator=(const RequestPool&) = delete;

  // Calls fn(0) .. fn(n-1) on the pool's threads and returns when all have returned; the first
  // exception one threw is rethrown then. With one job, or a pool of one thread, it runs on the
  // caller's thread.
  void run_all(size_t n, const std::function<void(size_t)>& fn);
  int threads() const { return static_cast<int>(threads_.size()); }

 private:
  void work();
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace valley::kube
