// GPU metrics for end-to-end tests, with no GPU here: a small exporter that serves DCGM-exporter's
// metric names and labels (DCGM_FI_DEV_XID_ERRORS, DCGM_FI_DEV_GPU_UTIL, ...) for the kwok nodes'
// GPUs, with values a test sets, and a real Prometheus server (Debian's package) that scrapes it
// every second. Valley reads that Prometheus over its HTTP API, as it would in a cluster.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include "operator/http_server.h"
#include "tests/e2e/support.h"

namespace valley::e2e {

class DcgmExporter {
 public:
  // Every GPU of `gpus_per_node` is served, healthy and idle, until a test says otherwise.
  explicit DcgmExporter(std::map<std::string, int> gpus_per_node);
  int port() const { return server_->port(); }
  void add_node(const std::string& node, int gpus);
  // Sets one field of one GPU, e.g. set("a100-od-0", 3, "DCGM_FI_DEV_XID_ERRORS", 79).
  void set(const std::string& node, int gpu, const std::string& field, double value);
  // The pod using a GPU (DCGM-exporter's Kubernetes mode labels a GPU's series with it).
  void assign(const std::string& node, int gpu, const std::string& ns, const std::string& pod);
  std::string render() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, int> gpus_;
  std::map<std::tuple<std::string, int, std::string>, double> values_;
  std::map<std::pair<std::string, int>, std::pair<std::string, std::string>> pods_;
  std::unique_ptr<HttpServer> server_;
};

class PrometheusServer {
 public:
  // Scrapes 127.0.0.1:<target_port>/metrics every second; ready when the constructor returns.
  explicit PrometheusServer(int target_port);
  ~PrometheusServer();
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string log() const { return process_ ? process_->output() : ""; }

 private:
  std::string dir_;
  int port_ = 0;
  std::unique_ptr<ChildProcess> process_;
};

}  // namespace valley::e2e
