// Prometheus metrics: counters, gauges and histograms with labels, and the text exposition format
// (version 0.0.4). Thread-safe; a metric is registered once and looked up by its label values on
// each update. Collectors add values computed at scrape time (tasks by phase, from the caches).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace valley::metrics {

using Labels = std::vector<std::string>;  // values, in the order of the family's label names

class Family {
 public:
  enum class Type { Counter, Gauge, Histogram };
  Family(std::string name, std::string help, Type type, std::vector<std::string> label_names, std::vector<double> buckets = {});

  void inc(const Labels& labels = {}, double by = 1);  // counters and gauges
  void set(const Labels& labels, double value);        // gauges
  void observe(const Labels& labels, double value);    // histograms
  void reset();                                        // gauges rebuilt at each scrape
  void render(std::string& out) const;
  const std::string& name() const { return name_; }

 private:
  struct Series {
    double value = 0;
    std::vector<uint64_t> bucket_counts;
    double sum = 0;
    uint64_t count = 0;
  };
  std::string name_, help_;
  Type type_;
  std::vector<std::string> label_names_;
  std::vector<double> buckets_;
  mutable std::mutex mu_;
  std::map<Labels, Series> series_;
};

class Registry {
 public:
  Family& counter(const std::string& name, const std::string& help, std::vector<std::string> labels = {});
  Family& gauge(const std::string& name, const std::string& help, std::vector<std::string> labels = {});
  Family& histogram(const std::string& name, const std::string& help, std::vector<std::string> labels,
                    std::vector<double> buckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10});
  // Called before every render (e.g. to set gauges from a cache).
  void add_collector(std::function<void()> collect);
  std::string render();

 private:
  Family& add(std::unique_ptr<Family> f);
  std::mutex mu_;
  std::vector<std::unique_ptr<Family>> families_;
  std::vector<std::function<void()>> collectors_;
};

// The process-wide registry the operator exposes at /metrics.
Registry& registry();

// Label values escaped for the exposition format (\\, \", \n).
std::string escape(const std::string& value);

}  // namespace valley::metrics
