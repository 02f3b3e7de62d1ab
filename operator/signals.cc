#include "operator/signals.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

namespace valley {

ShutdownSignal::ShutdownSignal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGUSR1);  // internal: wakes the waiter thread for destruction
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  waiter_ = std::thread([this, set] {
    for (;;) {
      int sig = 0;
      if (sigwait(&set, &sig) != 0) continue;
      if (sig == SIGUSR1) return;
      if (requested_.load()) _exit(128 + sig);  // second signal: the user insists
      signal_ = sig;
      request();
    }
  });
}

ShutdownSignal::~ShutdownSignal() {
  pthread_kill(waiter_.native_handle(), SIGUSR1);
  waiter_.join();
}

void ShutdownSignal::request() {
  {
    std::lock_guard lock(mu_);
    requested_ = true;
  }
  cv_.notify_all();
}

void ShutdownSignal::wait() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return requested_.load(); });
}

bool ShutdownSignal::wait_for(std::chrono::milliseconds d) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, d, [this] { return requested_.load(); });
}

}  // namespace valley
