// An in-memory API server for the unit tests of Valley's loops (kube::Api): objects by resource,
// each write a new resourceVersion; the API server's answers where the loops branch on them (404
// NotFound, 409 AlreadyExists and Conflict on a stale resourceVersion or failed precondition, 410
// Expired for a watch from a compacted resourceVersion, 422 for a failed JSON-patch test); status
// subresources (a write of the object leaves its status, a status write leaves the rest);
// metadata.generation bumped when spec changes; deletion held by finalizers (deletionTimestamp)
// and completed when the last is removed; dependents collected by owner UID as the garbage
// collector does; watches that deliver every change after a resourceVersion, filtered by
// namespace and label selector, and can be ended (an API-server restart).
// Simplified: server-side apply merges the applied object (fields it drops are kept); strategic
// merge patches merge as JSON merge patches; field selectors know "=", "==" and "!=" on dotted
// paths; field masks are not applied. Not proof of anything about a real API server.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "operator/kube/api.h"

namespace valley::testing {

using json = nlohmann::json;

class FakeApi : public kube::Api {
 public:
  json get(const kube::Resource& r, const std::string& ns, const std::string& name, const std::string& subresource = "") override;
  kube::ListResult list(const kube::Resource& r, const std::string& ns, const kube::ListOptions& options = {}) override;
  json create(const kube::Resource& r, const std::string& ns, const json& object, const kube::FieldMask* answer = nullptr) override;
  json update(const kube::Resource& r, const json& object, const std::string& subresource = "") override;
  json patch(const kube::Resource& r, const std::string& ns, const std::string& name, kube::PatchType type, const json& patch,
             const std::string& subresource = "") override;
  json apply(const kube::Resource& r, const json& object, const std::string& field_manager, bool force = true,
             const std::string& subresource = "") override;
  bool remove(const kube::Resource& r, const std::string& ns, const std::string& name, const kube::DeleteOptions& options = {}) override;
  void watch(const kube::Resource& r, const std::string& ns, const kube::WatchOptions& options,
             const std::function<bool(kube::WatchEvent&&)>& on_event, const std::atomic<bool>* cancel = nullptr) override;

  // The writes so far that changed something, "verb plural ns/name" each (verb: create, update,
  // status, patch, apply, delete), in order; count() of one verb on one plural.
  std::vector<std::string> writes() const;
  int count(const std::string& verb, const std::string& plural) const;
  // The next call of `verb` (get, list, create, update, patch, apply, delete) on `plural` fails
  // with this HTTP status, once.
  void fail_next(const std::string& verb, const std::string& plural, int status);
  // Ends every watch now open (as an API-server restart does): watchers list and watch again.
  void end_watches();
  // History before now is forgotten: a watch from an older resourceVersion gets 410 Expired.
  void compact();
  // The objects of a plural as stored (all namespaces when ns is empty).
  std::vector<json> objects(const std::string& plural, const std::string& ns = "") const;

 private:
  struct Change {
    int64_t rv;
    std::string plural, ns, type;
    json object, before;  // before: the object as it was (MODIFIED), for selector transitions
  };
  using Store = std::map<std::string, json>;  // by namespace/name (name when cluster-scoped)

  void maybe_fail(const std::string& verb, const std::string& plural);
  json create_locked(const kube::Resource& r, const std::string& ns, const json& object);
  json patch_locked(const kube::Resource& r, const std::string& ns, const std::string& name, kube::PatchType type, const json& patch,
                    const std::string& subresource);
  json& existing(const kube::Resource& r, const std::string& ns, const std::string& name);
  // Stores `next` as the new state of an existing object written by `verb`, or deletes it when its
  // deletion waited only for the finalizers it no longer has.
  json commit(const kube::Resource& r, const std::string& verb, json next);
  void erase(const std::string& plural, const std::string& key);
  void record(const std::string& verb, const std::string& plural, const json& object);
  void stamp(json& object);

  mutable std::mutex mu_;
  std::condition_variable changed_;
  int64_t rv_ = 100, compacted_ = 0, watch_generation_ = 0, uids_ = 0;
  std::map<std::string, Store> stores_;  // by plural
  std::vector<Change> changes_;
  std::vector<std::string> writes_;
  std::map<std::pair<std::string, std::string>, int> failures_;
};

}  // namespace valley::testing
