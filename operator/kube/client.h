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

#include "operator/kube/api.h"
#include "operator/kube/error.h"
#include "operator/kube/http.h"
#include "operator/kube/resource.h"
#include "operator/kube/watch_decoder.h"

namespace valley::kube {

using json = nlohmann::json;

class Client : public Api {
 public:
  explicit Client(ClusterConfig config, HttpOptions options = {});

  // --- by Resource ---
  json get(const Resource& r, const std::string& ns, const std::string& name, const std::string& subresource = "") override;
  ListResult list(const Resource& r, const std::string& ns, const ListOptions& options = {}) override;
  json create(const Resource& r, const std::string& ns, const json& object, const FieldMask* answer = nullptr) override;
  json update(const Resource& r, const json& object, const std::string& subresource = "") override;
  json patch(const Resource& r, const std::string& ns, const std::string& name, PatchType type, const json& patch,
             const std::string& subresource = "") override;
  json apply(const Resource& r, const json& object, const std::string& field_manager, bool force = true,
             const std::string& subresource = "") override;
  bool remove(const Resource& r, const std::string& ns, const std::string& name, const DeleteOptions& options = {}) override;
  void watch(const Resource& r, const std::string& ns, const WatchOptions& options,
             const std::function<bool(WatchEvent&&)>& on_event, const std::atomic<bool>* cancel = nullptr) override;

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

// Throws KubeError from a non-2xx response, using the Status object's message and reason if any.
[[noreturn]] void throw_status(const std::string& what, const HttpResponse& response);

// Percent-encodes a query parameter value (label selectors carry '=', ',' and '!').
std::string url_encode(const std::string& value);

}  // namespace valley::kube
