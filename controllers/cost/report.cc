#include "controllers/cost/report.h"

#include <cmath>
#include <cstdio>

namespace valley::cost {
namespace {

std::optional<api::Micros> money_at(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_string()) return std::nullopt;
  return api::parse_money(j[key].get<std::string>());
}

std::string percent(double p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", std::fabs(p));
  return buf;
}

}  // namespace

CostReport report_of(const nlohmann::json& c) {
  CostReport r;
  if (!c.is_object()) return r;
  if (c.contains("currency") && c["currency"].is_string()) r.currency = c["currency"].get<std::string>();
  const nlohmann::json e = c.value("estimate", nlohmann::json::object());
  r.estimate = money_at(e, "expected");
  r.low = money_at(e, "low");
  r.high = money_at(e, "high");
  if (!r.estimate) r.estimate = money_at(c, "estimated");
  r.accrued = money_at(c, "accrued");
  r.final = money_at(c, "final");
  const nlohmann::json b = c.value("breakdown", nlohmann::json::object());
  const nlohmann::json hours = b.is_object() ? b.value("gpuHours", nlohmann::json::object()) : nlohmann::json::object();
  if (hours.is_object())
    for (const auto& [pool, v] : hours.items())
      if (v.is_string()) r.gpu_hours.emplace_back(pool, v.get<std::string>());
  if (r.final && r.estimate && *r.estimate > 0)
    r.error_percent = 100.0 * static_cast<double>(*r.final - *r.estimate) / static_cast<double>(*r.estimate);
  if (!r.final && r.accrued && r.estimate && *r.estimate > 0)
    r.spent_percent = 100.0 * static_cast<double>(*r.accrued) / static_cast<double>(*r.estimate);
  if (r.final && r.low && r.high) r.within_range = *r.final >= *r.low && *r.final <= *r.high;
  return r;
}

std::string versus_estimate(const CostReport& r) {
  const std::string cur = r.currency.empty() ? "" : " " + r.currency;
  const std::string range = r.low && r.high ? " (range " + api::format_money(*r.low) + "-" + api::format_money(*r.high) : "";
  if (r.final) {
    std::string out = "final " + api::format_money(*r.final) + cur;
    if (!r.estimate) return out + " (no estimate was made)";
    const double p = r.error_percent.value_or(0);
    out += ", " + (std::fabs(p) < 0.05 ? std::string("as") : percent(p) + (p < 0 ? " below" : " above")) + " the estimate " +
           api::format_money(*r.estimate);
    if (!range.empty()) out += range + (r.within_range.value_or(false) ? ": inside)" : ": outside)");
    return out;
  }
  if (r.accrued) {
    std::string out = "accrued " + api::format_money(*r.accrued) + cur + " so far";
    if (!r.spent_percent) return out;
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f%%", *r.spent_percent);
    return out + ", " + buf + " of the estimate " + api::format_money(*r.estimate) + (range.empty() ? "" : range + ")");
  }
  if (r.estimate) return "estimated " + api::format_money(*r.estimate) + cur + (range.empty() ? "" : range + ")") + ", nothing spent yet";
  return "";
}

std::string gpu_hours_text(const CostReport& r) {
  std::string out;
  for (const auto& [pool, hours] : r.gpu_hours) out += (out.empty() ? "" : ", ") + hours + " " + pool;
  return out.empty() ? "-" : out;
}

}  // namespace valley::cost
