#include "controllers/cost/task_report.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "controllers/cost/report.h"
#include "operator/kube/json_fields.h"
#include "operator/kube/timefmt.h"
#include "operator/json_text.h"

namespace valley::cost {
namespace {

using json = nlohmann::json;

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string text_of(const json& o, const char* key) { return o.is_object() && o.contains(key) ? (o[key].is_string() ? o[key].get<std::string>() : json_text(o[key])) : ""; }

// Workers over time as an SVG step line (time on x, workers on y), from the history's entries.
std::string workers_chart(const json& history) {
  std::vector<std::pair<double, int>> points;
  for (const auto& h : history)
    if (auto t = kube::parse_time(text_of(h, "time")))
      points.emplace_back(std::chrono::duration<double>(t->time_since_epoch()).count(), h.value("workers", 0));
  if (points.size() < 2) return "<p>Too few changes to draw.</p>";
  const double t0 = points.front().first, span = std::max(1.0, points.back().first - t0);
  int top = 1;
  for (const auto& [t, w] : points) top = std::max(top, w);
  const double width = 640, height = 160;
  std::ostringstream path;
  double last_y = height;
  for (size_t i = 0; i < points.size(); ++i) {
    const double x = (points[i].first - t0) / span * width, y = height - points[i].second * (height - 10) / top;
    path << (i == 0 ? "M" : "L") << fixed(x, 1) << "," << fixed(i == 0 ? y : last_y, 1) << " L" << fixed(x, 1) << "," << fixed(y, 1) << " ";
    last_y = y;
  }
  return "<svg viewBox=\"0 0 660 190\" width=\"660\" height=\"190\" role=\"img\" aria-label=\"workers over time\">"
         "<path d=\"" + path.str() + "\" transform=\"translate(10,10)\" fill=\"none\" stroke=\"#2a6\" stroke-width=\"2\"/>"
         "<text x=\"10\" y=\"185\" font-size=\"11\">" + escape(text_of(history.front(), "time")) + "</text>"
         "<text x=\"650\" y=\"185\" font-size=\"11\" text-anchor=\"end\">" + escape(text_of(history.back(), "time")) + "</text>"
         "<text x=\"12\" y=\"22\" font-size=\"11\">" + std::to_string(top) + " workers</text></svg>";
}

// Horizontal bars, one per (label, value), scaled to the largest.
std::string bars(const std::vector<std::pair<std::string, double>>& rows, const std::string& unit) {
  double top = 0;
  for (const auto& [l, v] : rows) top = std::max(top, v);
  if (rows.empty() || top <= 0) return "<p>Nothing to draw.</p>";
  std::ostringstream s;
  s << "<svg viewBox=\"0 0 660 " << rows.size() * 26 + 6 << "\" width=\"660\" height=\"" << rows.size() * 26 + 6 << "\" role=\"img\">";
  int y = 4;
  for (const auto& [label, v] : rows) {
    s << "<text x=\"0\" y=\"" << y + 15 << "\" font-size=\"12\">" << escape(label) << "</text><rect x=\"200\" y=\"" << y << "\" width=\""
      << fixed(v / top * 380, 1) << "\" height=\"20\" fill=\"#48c\"/><text x=\"" << fixed(205 + v / top * 380, 1) << "\" y=\"" << y + 15
      << "\" font-size=\"12\">" << fixed(v, 2) << " " << escape(unit) << "</text>";
    y += 26;
  }
  return s.str() + "</svg>";
}

}  // namespace

json task_report(const json& task, const json& kept, const std::string& now) {
  const json& meta = kube::object_at(task, "metadata");
  const json& status = kube::object_at(task, "status");
  const cost::CostReport c = cost::report_of(kube::object_at(status, "cost"));
  json r = {{"apiVersion", "valley.dev/report-v1"},
            {"task", kube::string_at(meta, "name")},
            {"namespace", kube::string_at(meta, "namespace")},
            {"uid", kube::string_at(meta, "uid")},
            {"written", now},
            {"phase", kube::string_at(status, "phase")},
            {"reason", kube::string_at(status, "reason")},
            {"message", kube::string_at(status, "message")},
            {"created", kube::string_at(meta, "creationTimestamp")},
            {"started", kube::string_at(status, "startTime")},
            {"completed", kube::string_at(status, "completionTime")},
            {"epochs", kube::int_at(status, "epoch").value_or(0)},
            {"restarts", kube::object_at(status, "restarts")},
            {"history", kube::array_at(status, "history")},
            {"outputs", kept}};
  if (auto s = kube::time_at(status, "startTime"), e = kube::time_at(status, "completionTime"); s && e)
    r["runSeconds"] = std::chrono::duration_cast<std::chrono::seconds>(*e - *s).count();
  if (status.contains("lastDisruption")) r["lastDisruption"] = status["lastDisruption"];
  if (status.contains("checkpoint")) r["checkpoint"] = status["checkpoint"];
  if (const json& lost = kube::array_at(status, "outputsNotKept"); !lost.empty()) r["outputsNotKept"] = lost;
  json cost = {{"currency", c.currency}, {"summary", cost::versus_estimate(c)}};
  if (c.estimate) cost["estimate"] = api::format_money(*c.estimate);
  if (c.low && c.high) cost["range"] = {api::format_money(*c.low), api::format_money(*c.high)};
  if (c.final) cost["final"] = api::format_money(*c.final);
  if (c.error_percent) cost["errorPercent"] = *c.error_percent;
  json hours = json::object();
  for (const auto& [pool, h] : c.gpu_hours) hours[pool] = h;
  cost["gpuHoursByPool"] = hours;
  cost["breakdown"] = kube::object_at(kube::object_at(status, "cost"), "breakdown");
  r["cost"] = cost;
  const json& u = kube::object_at(status, "utilization");
  if (u.contains("meanGpuPercent")) r["utilization"] = {{"meanGpuPercent", u["meanGpuPercent"]}, {"idleGpuHours", text_of(u, "idleGpuHours")}};
  return r;
}

std::string report_html(const json& r) {
  std::ostringstream h;
  const std::string title = text_of(r, "namespace") + "/" + text_of(r, "task");
  h << "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Valley report: " << escape(title)
    << "</title><style>body{font-family:sans-serif;max-width:720px;margin:2em auto;color:#222}td{padding:2px 12px 2px 0}"
       "th{text-align:left;padding-right:12px}h2{margin-top:1.6em}</style></head><body>";
  h << "<h1>" << escape(title) << "</h1><p><b>" << escape(text_of(r, "phase")) << "</b>";
  if (!text_of(r, "reason").empty()) h << " (" << escape(text_of(r, "reason")) << ")";
  h << ": " << escape(text_of(r, "message")) << "</p><table>";
  auto row = [&](const std::string& k, const std::string& v) {
    if (!v.empty()) h << "<tr><th>" << escape(k) << "</th><td>" << escape(v) << "</td></tr>";
  };
  row("submitted", text_of(r, "created"));
  row("started", text_of(r, "started"));
  row("ended", text_of(r, "completed"));
  if (r.contains("runSeconds")) row("ran", fixed(r["runSeconds"].get<double>() / 3600.0, 2) + " h");
  row("epochs", text_of(r, "epochs"));
  const json& restarts = kube::object_at(r, "restarts");
  std::string rs;
  for (const auto& [k, v] : restarts.items())
    if (k != "total") rs += (rs.empty() ? "" : ", ") + k + " " + json_text(v);
  row("restarts", rs);
  if (r.contains("lastDisruption")) row("last disruption", text_of(r["lastDisruption"], "cause") + ": " + text_of(r["lastDisruption"], "message"));
  const json& cost = kube::object_at(r, "cost");
  row("cost", text_of(cost, "summary"));
  if (r.contains("utilization")) row("GPU utilization", text_of(r["utilization"], "meanGpuPercent") + "% mean, " + text_of(r["utilization"], "idleGpuHours") + " idle GPU-hours");
  const json& out = kube::object_at(r, "outputs");
  row("outputs", text_of(out, "files") + " files, " + text_of(out, "bytes") + " bytes in " + text_of(out, "uri"));
  for (const auto& e : kube::array_at(r, "outputsNotKept"))
    row("outputs not kept", text_of(e, "pod") + " (exit " + text_of(e, "exitCode") + "): " + text_of(e, "message"));
  h << "</table><h2>Workers over time</h2>" << workers_chart(kube::array_at(r, "history"));
  std::vector<std::pair<std::string, double>> money;
  auto amount = [&](const char* k) { return api::parse_money(text_of(cost, k)); };
  if (auto e = amount("estimate")) money.emplace_back("estimate", static_cast<double>(*e) / 1e6);
  if (auto f = amount("final")) money.emplace_back("final", static_cast<double>(*f) / 1e6);
  h << "<h2>Cost against the estimate</h2>" << bars(money, text_of(cost, "currency"));
  std::vector<std::pair<std::string, double>> pools;
  for (const auto& [pool, v] : kube::object_at(cost, "gpuHoursByPool").items())
    if (v.is_string()) pools.emplace_back(pool, std::atof(v.get<std::string>().c_str()));
  h << "<h2>GPU-hours by pool</h2>" << bars(pools, "GPU-h");
  h << "<h2>Timeline</h2><table><tr><th>time</th><th>phase</th><th>workers</th><th>why</th></tr>";
  for (const auto& e : kube::array_at(r, "history"))
    h << "<tr><td>" << escape(text_of(e, "time")) << "</td><td>" << escape(text_of(e, "phase")) << "</td><td>" << escape(text_of(e, "workers"))
      << "</td><td>" << escape(text_of(e, "reason")) << "</td></tr>";
  h << "</table><p><small>Written by Valley at " << escape(text_of(r, "written")) << "; the same figures are in valley-report.json.</small></p></body></html>\n";
  return h.str();
}

}  // namespace valley::cost
