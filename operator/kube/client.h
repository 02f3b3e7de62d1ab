// JSON-level access to the API server on top of HttpClient: paths in, parsed objects out, and every
// non-2xx answer turned into a KubeError carrying the HTTP status and the Status reason. This is the
// base the typed REST helpers, informers and controllers build on.
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <functional>
#include <string>

#include "operator/kube/http.h"

namespace valley::kube {

using json = nlohmann::json;

struct WatchEvent {
  std::string type;  // ADDED, MODIFIED, DELETED, BOOKMARK, ERROR
  json object;
};

class Client {
 public:
  explicit Client(ClusterConfig config, HttpOptions options = {});

  json get(const std::string& path);
  json create(const std::string& collection_path, const json& object);
  json update(const std::string& path, const json& object);
  json patch(const std::string& path, const json& patch, const std::string& content_type = "application/merge-patch+json");
  // Deletes; a 404 is not an error (already gone). propagation: "Background", "Foreground", "Orphan" or "".
  void remove(const std::string& path, const std::string& propagation = "Background");

  // GET /version: {major, minor, gitVersion, ...}.
  json server_version();

  // Streams a watch (`path` already holding watch=1 and any selectors). Calls on_event for each event
  // until it returns false, *cancel is set, or the server closes the stream. An answer that is not
  // 2xx throws KubeError (e.g. 410 Gone when resourceVersion is too old).
  void watch(const std::string& path, const std::function<bool(const WatchEvent&)>& on_event,
             const std::atomic<bool>* cancel = nullptr);

  HttpClient& http() { return http_; }
  const ClusterConfig& config() const { return http_.config(); }

 private:
  json call(const std::string& method, const std::string& path, const std::string& body = {},
            const std::string& content_type = "application/json");

  HttpClient http_;
};

// Throws KubeError from a non-2xx response, using the Status object's message and reason if any.
[[noreturn]] void throw_status(const std::string& what, const HttpResponse& response);

// Percent-encodes a query parameter value (label selectors carry '=', ',' and '!').
std::string url_encode(const std::string& value);

}  // namespace valley::kube
