// HTTPS transport to the API server over libcurl: TLS verified against the configured CA, client
// certificate or bearer-token authentication (token files re-read when they change), HTTP/2 when the
// server offers it, and connections kept alive in a pool of handles shared by threads.
// Request/response for ordinary calls; line-by-line streaming for watches.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "operator/kube/config.h"

namespace valley::kube {

struct HttpRequest {
  std::string method = "GET";
  std::string path;  // begins with "/", may carry a query string
  std::string body;
  std::string content_type = "application/json";
  // Whole-request limit; 0 = none (watch streams, which the server ends by its own timeoutSeconds).
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};
};

struct HttpResponse {
  long status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // names lower-cased
};

struct HttpOptions {
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(10)};
  std::string user_agent = "valley";
};

class HttpClient {
 public:
  explicit HttpClient(ClusterConfig config, HttpOptions options = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Throws KubeError (status 0) when no HTTP answer was had: connection refused, TLS, timeout.
  HttpResponse send(const HttpRequest& request);

  // Streams the response body, calling on_line for each complete line. Stops when on_line returns
  // false, when *cancel becomes true (checked about once a second, even while no data arrives), or
  // when the server ends the response. Non-2xx answers are not streamed: their body is returned.
  HttpResponse stream(const HttpRequest& request, const std::function<bool(std::string_view)>& on_line,
                      const std::atomic<bool>* cancel = nullptr);

  const ClusterConfig& config() const { return config_; }

 private:
  struct Handle;
  std::unique_ptr<Handle> acquire();
  void release(std::unique_ptr<Handle> handle);
  void prepare(Handle& handle, const HttpRequest& request, std::string& body_sink, HttpResponse& response);
  std::string bearer_token();

  ClusterConfig config_;
  HttpOptions options_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Handle>> idle_;  // keep-alive connections ready for reuse
  std::string token_cache_;
  std::chrono::file_clock::time_point token_mtime_{};
};

}  // namespace valley::kube
