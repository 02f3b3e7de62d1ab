// REST access to the API server on top of HttpClient: typed by Resource (group/version/plural),
// parsed JSON in and out, every non-2xx answer turned into a KubeError carrying the HTTP status and
// the Status reason (so callers branch on 404 NotFound, 409 Conflict/AlreadyExists, 410 Expired).
// Lists paginate; patches come in merge, JSON, strategic and server-side-apply flavours; deletes
// take a propagation policy and preconditions; watches stream decoded events.
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "operator/kube/error.h"
#include "operator/kube/http.h"
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

class Client {
 public:
  explicit Client(ClusterConfig config, HttpOptions options = {});

  // --- by Resource ---
  json get(const Resource& r, const std::string& ns, const std::string& name, const std::string& subresource = "");
  ListResult list(const Resource& r, const std::string& ns, const ListOptions& options = {});
  // With `answer`, only what it keeps of the created object is built from the server's answer.
  json create(const Resource& r, const std::string& ns, const json& object, const FieldMask* answer = nullptr);
  // PUT of the whole object (metadata.resourceVersion makes it conditional: 409 if stale).
  json update(const Resource& r, const json& object, const std::string& subresource = "");
  json update_status(const Resource& r, const json& object) { return update(r, object, "status"); }
  json patch(const Resource& r, const std::string& ns, const std::string& name, PatchType type, const json& patch,
             const std::string& subresource = "");
  // Server-side apply of `object` (needs apiVersion, kind, metadata.name) owned by `field_manager`.
  json apply(const Resource& r, const json& object, const std::string& field_manager, bool force = true,
             const std::string& subresource = "");
  // Returns false if the object was already gone (404); preconditions failing -> KubeError 409.
  bool remove(const Resource& r, const std::string& ns, const std::string& name, const DeleteOptions& options = {});
  void watch(const Resource& r, const std::string& ns, const WatchOptions& options,
             const std::function<bool(WatchEvent&&)>& on_event, const std::atomic<bool>* cancel = nullptr);

  // --- by path, for anything else ---
  json get(const std::string& path);
  json create(const std::string& collection_path, const json& object);
  json update(const std::string& path, const json& object);
  json patch(const std::string& path, const json& patch, const std::string& content_type = "application/merge-patch+json");
  bool remove(const std::string& path, const DeleteOptions& options = {});
  // Streams a watch (`path` already holding watch=1 and any selectors). Calls on_event for each
  // event until it returns false, *cancel is set, or the server closes the stream. A non-2xx answer
  // throws KubeError (e.g. 410 Gone when resourceVersion is too old); ERROR events are passed on.
  // An exception thrown by on_event stops the stream and is rethrown to the caller. A stream with
  // no byte for `idle_timeout` (0 = never) throws KubeError.
  void watch(const std::string& path, const std::function<bool(WatchEvent&&)>& on_event,
             const std::atomic<bool>* cancel = nullptr, std::shared_ptr<const FieldMask> object_fields = nullptr,
             std::chrono::seconds idle_timeout = std::chrono::seconds(0));

  // GET /version: {major, minor, gitVersion, ...}.
  json server_version();

  HttpClient& http() { return http_; }
  const ClusterConfig& config() const { return http_.config(); }

 private:
  json call(const std::string& method, const std::string& path, const std::string& body = {},
            const std::string& content_type = "application/json", const FieldMask* answer = nullptr);

  HttpClient http_;
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

// Throws KubeError from a non-2xx response, using the Status object's message and reason if any.
[[noreturn]] void throw_status(const std::string& what, const HttpResponse& response);

// Percent-encodes a query parameter value (label selectors carry '=', ',' and '!').
std::string url_encode(const std::string& value);

// metadata.resourceVersion, "" if absent.
std::string resource_version_of(const json& object);

// namespace/name of an object ("name" alone for cluster-scoped ones): the cache and queue key.
std::string object_key(const json& object);

}  // namespace valley::kube
