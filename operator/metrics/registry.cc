#include "operator/metrics/registry.h"

#include <cmath>
#include <cstdio>

namespace valley::metrics {
namespace {

std::string number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string label_text(const std::vector<std::string>& names, const Labels& values, const std::string& extra = "") {
  std::string out;
  for (size_t i = 0; i < names.size() && i < values.size(); ++i)
    out += (out.empty() ? "" : ",") + names[i] + "=\"" + escape(values[i]) + "\"";
  if (!extra.empty()) out += (out.empty() ? "" : ",") + extra;
  return out.empty() ? "" : "{" + out + "}";
}

}  // namespace

std::string escape(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

Family::Family(std::string name, std::string help, Type type, std::vector<std::string> label_names, std::vector<double> buckets)
    : name_(std::move(name)), help_(std::move(help)), type_(type), label_names_(std::move(label_names)), buckets_(std::move(buckets)) {}

void Family::inc(const Labels& labels, double by) {
  std::lock_guard lock(mu_);
  series_[labels].value += by;
}

void Family::set(const Labels& labels, double value) {
  std::lock_guard lock(mu_);
  series_[labels].value = value;
}

void Family::observe(const Labels& labels, double value) {
  std::lock_guard lock(mu_);
  Series& s = series_[labels];
  if (s.bucket_counts.empty()) s.bucket_counts.assign(buckets_.size(), 0);
  for (size_t i = 0; i < buckets_.size(); ++i)
    if (value <= buckets_[i]) ++s.bucket_counts[i];
  s.sum += value;
  ++s.count;
}

void Family::reset() {
  std::lock_guard lock(mu_);
  series_.clear();
}

void Family::render(std::string& out) const {
  std::lock_guard lock(mu_);
  out += "# HELP " + name_ + " " + help_ + "\n";
  out += "# TYPE " + name_ + " " + (type_ == Type::Counter ? "counter" : type_ == Type::Gauge ? "gauge" : "histogram") + "\n";
  if (series_.empty() && label_names_.empty() && type_ != Type::Histogram) out += name_ + " 0\n";
  for (const auto& [labels, s] : series_) {
    if (type_ != Type::Histogram) {
      out += name_ + label_text(label_names_, labels) + " " + number(s.value) + "\n";
      continue;
    }
    for (size_t i = 0; i < buckets_.size(); ++i)
      out += name_ + "_bucket" + label_text(label_names_, labels, "le=\"" + number(buckets_[i]) + "\"") + " " +
             std::to_string(s.bucket_counts[i]) + "\n";
    out += name_ + "_bucket" + label_text(label_names_, labels, "le=\"+Inf\"") + " " + std::to_string(s.count) + "\n";
    out += name_ + "_sum" + label_text(label_names_, labels) + " " + number(s.sum) + "\n";
    out += name_ + "_count" + label_text(label_names_, labels) + " " + std::to_string(s.count) + "\n";
  }
}

Family& Registry::add(std::unique_ptr<Family> f) {
  std::lock_guard lock(mu_);
  for (auto& existing : families_)
    if (existing->name() == f->name()) return *existing;  // registered once; later callers share it
  families_.push_back(std::move(f));
  return *families_.back();
}

Family& Registry::counter(const std::string& name, const std::string& help, std::vector<std::string> labels) {
  return add(std::make_unique<Family>(name, help, Family::Type::Counter, std::move(labels)));
}
Family& Registry::gauge(const std::string& name, const std::string& help, std::vector<std::string> labels) {
  return add(std::make_unique<Family>(name, help, Family::Type::Gauge, std::move(labels)));
}
Family& Registry::histogram(const std::string& name, const std::string& help, std::vector<std::string> labels,
                            std::vector<double> buckets) {
  return add(std::make_unique<Family>(name, help, Family::Type::Histogram, std::move(labels), std::move(buckets)));
}

void Registry::add_collector(std::function<void()> collect) {
  std::lock_guard lock(mu_);
  collectors_.push_back(std::move(collect));
}

std::string Registry::render() {
  std::vector<std::function<void()>> collectors;
  {
    std::lock_guard lock(mu_);
    collectors = collectors_;
  }
  for (auto& c : collectors) c();
  std::string out;
  std::lock_guard lock(mu_);
  for (const auto& f : families_) f->render(out);
  return out;
}

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace valley::metrics
