// Prometheus's HTTP query API (GET /api/v1/query), as Valley reads GPU metrics that DCGM-exporter
// publishes: an instant query whose result is a vector of labelled samples. parse_vector is pure
// (unit-tested and fuzzed); Client does the HTTP (libcurl) with a timeout, no retries (callers poll).
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace valley::prom {

struct Sample {
  std::map<std::string, std::string> labels;
  double value = 0;
};

// The samples of a successful vector result; nullopt and *error ("status error: ...", "not a vector
// result", ...) for anything else. NaN and infinite values are dropped.
std::optional<std::vector<Sample>> parse_vector(const std::string& body, std::string* error);

class Client {
 public:
  // base_url: http(s)://host:port[/prefix]
  explicit Client(std::string base_url, std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // nullopt and *error when Prometheus cannot be reached or answers with an error.
  std::optional<std::vector<Sample>> query(const std::string& promql, std::string* error) const;
  const std::string& base_url() const { return base_url_; }

 private:
  std::string base_url_;
  std::chrono::milliseconds timeout_;
};

}  // namespace valley::prom
