#include "operator/prom/query.h"

#include <curl/curl.h>

#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>

namespace valley::prom {

std::optional<std::vector<Sample>> parse_vector(const std::string& body, std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<std::vector<Sample>> {
    if (error) *error = why;
    return std::nullopt;
  };
  const nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return fail("not JSON");
  const std::string status = j.contains("status") && j["status"].is_string() ? j["status"].get<std::string>() : "";
  if (status != "success") {
    const std::string why = j.contains("error") && j["error"].is_string() ? j["error"].get<std::string>() : "no status";
    return fail("status " + (status.empty() ? std::string("missing") : status) + ": " + why.substr(0, 300));
  }
  if (!j.contains("data") || !j["data"].is_object()) return fail("no data");
  const nlohmann::json& data = j["data"];
  if (!data.contains("resultType") || data["resultType"] != "vector") return fail("not a vector result");
  if (!data.contains("result") || !data["result"].is_array()) return fail("no result");
  std::vector<Sample> out;
  for (const auto& r : data["result"]) {
    if (!r.is_object() || !r.contains("value") || !r["value"].is_array() || r["value"].size() != 2 || !r["value"][1].is_string())
      continue;
    Sample s;
    // Prometheus writes sample values as strings ("1", "NaN", "+Inf").
    const std::string& text = r["value"][1].get_ref<const std::string&>();
    char* end = nullptr;
    s.value = std::strtod(text.c_str(), &end);
    if (end == text.c_str() || *end != '\0' || !std::isfinite(s.value)) continue;
    if (r.contains("metric") && r["metric"].is_object())
      for (const auto& [k, v] : r["metric"].items())
        if (v.is_string()) s.labels[k] = v.get<std::string>();
    out.push_back(std::move(s));
  }
  return out;
}

namespace {

size_t collect(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

}  // namespace

Client::Client(std::string base_url, std::chrono::milliseconds timeout) : base_url_(std::move(base_url)), timeout_(timeout) {
  while (!base_url_.empty() && base_url_.back() == '/') base_url_.pop_back();
}

std::optional<std::vector<Sample>> Client::query(const std::string& promql, std::string* error) const {
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) {
    if (error) *error = "curl_easy_init failed";
    return std::nullopt;
  }
  std::unique_ptr<char, decltype(&curl_free)> escaped(curl_easy_escape(curl.get(), promql.c_str(), static_cast<int>(promql.size())),
                                                      curl_free);
  const std::string url = base_url_ + "/api/v1/query?query=" + escaped.get();
  std::string body;
  curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_.count()));
  curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
  const CURLcode rc = curl_easy_perform(curl.get());
  if (rc != CURLE_OK) {
    if (error) *error = base_url_ + ": " + curl_easy_strerror(rc);
    return std::nullopt;
  }
  long code = 0;
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &code);
  std::string why;
  auto samples = parse_vector(body, &why);
  if (!samples) {
    if (error) *error = base_url_ + " (HTTP " + std::to_string(code) + "): " + why;
    return std::nullopt;
  }
  return samples;
}

}  // namespace valley::prom
