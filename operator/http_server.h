// The operator's HTTP endpoints (Boost.Beast): /metrics (Prometheus text), /healthz (the process
// answers), /readyz (caches synced and, when leading, controllers running; `ready` decides).
// Without a `metrics` function /metrics is not served (404): metrics then have their own server.
// Each connection on its own thread, at most 8 at once (more are closed at once), each done within
// 5 s however its client sends or reads: a slow or hostile client of one port never holds the
// probes. Requests carry no body and at most 8 KiB of headers. Unknown paths: 404.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

namespace valley {

struct HttpEndpoints {
  std::function<std::string()> metrics;
  std::function<bool(std::string* why)> ready;
};

class HttpServer {
 public:
  // address: "host:port" or ":port" (all interfaces); port 0 picks a free one (see port()).
  HttpServer(const std::string& address, HttpEndpoints endpoints);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;
  int port() const { return port_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

}  // namespace valley
