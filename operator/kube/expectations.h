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
#include <set>
#include <string>

#include <memory>

#include <nlohmann/json.hpp>

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

// Updates a controller wrote that its informer may not show yet. Objects and their status come
// through separate watches from the pods a reconcile creates, so a reconcile can see the pods of
// an epoch it wrote a moment ago beside the task as it was before that write, and act on the old
// state (delete those pods as stale). A reconcile reads the task through `latest`: while the cache
// still holds a version older than the last one this process wrote, that written version is used.
//
// Versions are told apart by identity only (resourceVersions are opaque): the cache is behind
// while it holds one of the versions a write of ours replaced. Any other version (someone else's
// write, or ours arriving) ends the entry. Objects are shared, never copied. Thread-safe.
class WrittenObjects {
 public:
  using json = nlohmann::json;
  using Ptr = std::shared_ptr<const json>;
  // This process replaced `based_on` (the object it read) with `written` (the API server's answer).
  void wrote(const std::string& key, const json& based_on, json written);
  // `cached`, or the version this process wrote after it while the cache has not caught up.
  Ptr latest(const std::string& key, const Ptr& cached);
  void forget(const std::string& key);
  size_t size() const;

 private:
  struct Written {
    std::set<std::string> replaced;  // resourceVersions older than `object`
    Ptr object;
  };
  mutable std::mutex mu_;
  std::map<std::string, Written> written_;
};

}  // namespace valley::kube
