// Creations a controller made that its informers have not shown yet (client-go's
// ControllerExpectations, kept per object rather than as a count: Valley's names are deterministic,
// so a reconcile can tell exactly which of the objects it wants are already on their way). A
// reconcile that runs before the watch delivers what the last one created skips those objects
// instead of creating them again (each a wasted request answered 409).
//
// An expectation is met when an informer shows the created object's UID (added, updated or
// deleted), and lapses after `ttl` in any case, so a lost event delays a re-create, never wedges it.
// Thread-safe.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <string>

namespace valley::kube {

class CreationExpectations {
 public:
  using Clock = std::chrono::steady_clock;
  explicit CreationExpectations(Clock::duration ttl = std::chrono::minutes(5)) : ttl_(ttl) {}

  // `id` names the object ("Pod ns/name"); `uid` is the UID the API server gave it on creation.
  void expect(const std::string& id, const std::string& uid, Clock::time_point now = Clock::now());
  // An informer showed object `id` with this UID: an expectation for that incarnation is met.
  void observed(const std::string& id, const std::string& uid);
  // True while a creation of `id` is expected and not yet seen (nor lapsed).
  bool pending(const std::string& id, Clock::time_point now = Clock::now());
  size_t size() const;

 private:
  struct Expected {
    std::string uid;
    Clock::time_point at;
  };
  Clock::duration ttl_;
  mutable std::mutex mu_;
  std::map<std::string, Expected> expected_;
};

}  // namespace valley::kube
