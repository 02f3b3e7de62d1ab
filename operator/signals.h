// Turns SIGTERM/SIGINT into an orderly shutdown request. Construct it in main() before starting any
// thread (it blocks the signals process-wide and receives them on its own thread); then wait() or
// poll requested(). A second signal while shutting down exits at once.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace valley {

class ShutdownSignal {
 public:
  ShutdownSignal();
  ~ShutdownSignal();
  ShutdownSignal(const ShutdownSignal&) = delete;
  ShutdownSignal& operator=(const ShutdownSignal&) = delete;

  bool requested() const { return requested_.load(); }
  const std::atomic<bool>* flag() const { return &requested_; }
  void wait();
  // True if shutdown was requested within `d`.
  bool wait_for(std::chrono::milliseconds d);
  // Lets code (and tests) ask for shutdown without a signal.
  void request();
  int signal_number() const { return signal_.load(); }

 private:
  std::atomic<bool> requested_{false};
  std::atomic<int> signal_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  std::thread waiter_;
};

}  // namespace valley
