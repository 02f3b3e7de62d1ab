// HTTPS transport to the API server over libcurl: TLS verified against the configured CA, client
// certificate or bearer-token authentication (token files re-read when they change), HTTP/2 when the
// server offers it, connections kept alive in a pool of handles shared by threads, a client-side
// rate limit (QPS/burst), the API server's clock from each answer's Date (remote_clock.h), and retries with backoff on 429/5xx honouring Retry-After (see retry.h).
// Request/response for ordinary calls; raw chunk streaming for watches.
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
#include "operator/kube/rate_limit.h"
#include "operator/kube/remote_clock.h"
#include "operator/kube/retry.h"

namespace valley::kube {

struct HttpRequest {
  std::string method = "GET";
  std::string path;  // begins with "/", may carry a query string
  std::string body;
  std::string content_type = "application/json";
  // Whole-request limit; 0 = none (watch streams, which the server ends by its own timeoutSeconds).
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};
  // Streams only: the stream fails when no byte arrives for this long (0 = never). A connection
  // that died without a FIN (a NAT entry dropped, a proxy wedged) is otherwise noticed only when
  // the whole request's limit ends it.
  std::chrono::seconds idle_timeout{0};
};

struct HttpResponse {
  long status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::chrono::steady_clock::time_point date_received{};  // when the Date header arrived
};

// Called after every request with the verb, the HTTP status (0: no answer) and the latency.
using RequestObserver = std::function<void(const std::string& verb, long status, std::chrono::nanoseconds latency)>;

struct HttpOptions {
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(10)};
  std::string user_agent = "valley";
  double qps = 50;  // client-side limit; <= 0 disables it
  int burst = 100;
  RetryPolicy retry;
  RequestObserver observer;
  RemoteClock* clock = &cluster_clock();  // fed every answer's Date; null: none
  std::chrono::milliseconds request_timeout{std::chrono::seconds(30)};  // the Client's requests (watches: none)
};

class HttpClient {
 public:
  explicit HttpClient(ClusterConfig config, HttpOptions options = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends with rate limiting and retries. Returns the final answer, whatever its status; throws
  // KubeError (status 0) when no HTTP answer was had after retries: connection refused, TLS, timeout.
  HttpResponse send(const HttpRequest& request);
  const HttpOptions& options() const { return options_; }
  // Writes (any verb but GET and HEAD) are sent only while `may_write` says so; otherwise they throw
  // KubeError (0, "NotLeader") unsent: a replica whose lease lapsed must not act beside the next
  // leader. Set once, before the threads that write start.
  void set_write_fence(std::function<bool()> may_write) { may_write_ = std::move(may_write); }

  // Streams a 2xx response body to on_chunk as it arrives. Stops when on_chunk returns false, when
  // *cancel becomes true (checked about once a second, even while no data arrives), or when the
  // server ends the response. Non-2xx answers are not streamed: their body is returned whole. No
  // retries: the caller (a reflector) decides how to resume. Throws KubeError when there was no answer
  // or the stream broke.
  HttpResponse stream(const HttpRequest& request, const std::function<bool(std::string_view)>& on_chunk,
                      const std::atomic<bool>* cancel = nullptr);

  const ClusterConfig& config() const { return config_; }

 private:
  struct Handle;
  std::unique_ptr<Handle> acquire();
  void release(std::unique_ptr<Handle> handle);
  void note_date(const HttpResponse& response) const;
  void prepare(Handle& handle, const HttpRequest& request, std::string& body_sink, HttpResponse& response);
  std::string bearer_token();
  void wait_for_rate_limit();
  void observe(const std::string& verb, long status, Clock::time_point start);

  ClusterConfig config_;
  HttpOptions options_;
  std::function<bool()> may_write_;
  TokenBucket limiter_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Handle>> idle_;  // keep-alive connections ready for reuse
  std::string token_cache_;
  std::chrono::file_clock::time_point token_mtime_{};
};

}  // namespace valley::kube
