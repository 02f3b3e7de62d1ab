// The API server as Valley's loops use it: objects by Resource, read, written and watched. The
// seam between the loops and a cluster: Client (client.h) talks to a real API server; the unit
// tests' FakeApi (tests/unit/support/fake_api.h) keeps objects in memory, with resourceVersions,
// the API server's 404 and 409 answers, and watches. Errors are KubeError with the HTTP status.
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "operator/kube/error.h"
#include "operator/kube/field_mask.h"
#include "operator/kube/resource.h"
#include "operator/kube/watch_decoder.h"

namespace valley::kube {

using json = nlohmann::json;

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  int64_t page_size = 500;  // `limit` per request; pages are followed with `continue`
  // Applied to each item as its page arrives, so that a large list is held only in the form the
  // caller keeps (an informer's cache transform), never the whole list of full objects.
  std::function<void(json&)> item_transform;
};

struct ListResult {
  std::vector<json> items;
  std::string resource_version;  // of the list: where a watch should start
  int pages = 0;
};

struct WatchOptions {
  std::string resource_version;  // "" = start from now (the server sends the current state as ADDED)
  std::string label_selector;
  std::string field_selector;
  int timeout_seconds = 300;  // the server ends the watch after this; the reflector then resumes
  bool bookmarks = true;
  // The watch fails when the server sends nothing for this long (0 = never): it sends a bookmark
  // about every minute to a watcher that allows them, so silence means a dead connection.
  int idle_timeout_seconds = 0;
  // When set, each event's object is built only as far as this keeps it (field_mask.h).
  std::shared_ptr<const FieldMask> object_fields;
};

enum class PatchType { Merge, JSON, Strategic };

struct DeleteOptions {
  std::string propagation = "Background";  // Background, Foreground, Orphan, or "" for the default
  std::string precondition_uid;            // delete only this incarnation of the object
  std::string precondition_resource_version;
  std::optional<int64_t> grace_period_seconds;
};

class Api {
 public:
  virtual ~Api() = default;
  virtual json get(const Resource& r, const std::string& ns, const std::string& name, const std::string& subresource = "") = 0;
  virtual ListResult list(const Resource& r, const std::string& ns, const ListOptions& options = {}) = 0;
  // With `answer`, only what it keeps of the created object is built from the answer.
  virtual json create(const Resource& r, const std::string& ns, const json& object, const FieldMask* answer = nullptr) = 0;
  // PUT of the whole object (metadata.resourceVersion makes it conditional: 409 if stale).
  virtual json update(const Resource& r, const json& object, const std::string& subresource = "") = 0;
  json update_status(const Resource& r, const json& object) { return update(r, object, "status"); }
  virtual json patch(const Resource& r, const std::string& ns, const std::string& name, PatchType type, const json& patch,
                     const std::string& subresource = "") = 0;
  // Server-side apply of `object` (needs apiVersion, kind, metadata.name) owned by `field_manager`.
  virtual json apply(const Resource& r, const json& object, const std::string& field_manager, bool force = true,
                     const std::string& subresource = "") = 0;
  // Returns false if the object was already gone (404); preconditions failing -> KubeError 409.
  virtual bool remove(const Resource& r, const std::string& ns, const std::string& name, const DeleteOptions& options = {}) = 0;
  // Calls on_event for each event until it returns false, *cancel is set, or the stream ends; a
  // resourceVersion too old throws KubeError 410.
  virtual void watch(const Resource& r, const std::string& ns, const WatchOptions& options,
                     const std::function<bool(WatchEvent&&)>& on_event, const std::atomic<bool>* cancel = nullptr) = 0;
};

// Runs `f` (read-modify-write), again while it fails with 409 Conflict, up to `attempts` times;
// the last conflict is rethrown. The usual way to update an object that others also write.
template <typename F>
void retry_on_conflict(F&& f, int attempts = 5) {
  for (int i = 1;; ++i) {
    try {
      f();
      return;
    } catch (const KubeError& e) {
      if (e.http_status() != 409 || i >= attempts) throw;
    }
  }
}

// metadata.resourceVersion, "" if absent.
std::string resource_version_of(const json& object);

// namespace/name of an object ("name" alone for cluster-scoped ones): the cache and queue key.
std::string object_key(const json& object);

}  // namespace valley::kube
