#include "tests/e2e/dcgm.h"

#include <curl/curl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace valley::e2e {
namespace {

// The fields DCGM-exporter's default counters publish that Valley reads, with their defaults.
const std::pair<const char*, double> kFields[] = {{"DCGM_FI_DEV_GPU_UTIL", 0},           {"DCGM_FI_DEV_FB_USED", 0},
                                                  {"DCGM_FI_DEV_GPU_TEMP", 45},          {"DCGM_FI_DEV_XID_ERRORS", 0},
                                                  {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", 0}, {"DCGM_FI_DEV_ROW_REMAP_FAILURE", 0}};

long http_status(const std::string& url) {
  CURL* curl = curl_easy_init();
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, 2L);
  long status = 0;
  if (curl_easy_perform(curl) == CURLE_OK) curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(curl);
  return status;
}

}  // namespace

DcgmExporter::DcgmExporter(std::map<std::string, int> gpus_per_node) : gpus_(std::move(gpus_per_node)) {
  HttpEndpoints endpoints;
  endpoints.metrics = [this] { return render(); };
  server_ = std::make_unique<HttpServer>("127.0.0.1:0", endpoints);
}

void DcgmExporter::add_node(const std::string& node, int gpus) {
  std::lock_guard lock(mu_);
  gpus_[node] = gpus;
}

void DcgmExporter::set(const std::string& node, int gpu, const std::string& field, double value) {
  std::lock_guard lock(mu_);
  values_[{node, gpu, field}] = value;
}

void DcgmExporter::assign(const std::string& node, int gpu, const std::string& ns, const std::string& pod) {
  std::lock_guard lock(mu_);
  pods_[{node, gpu}] = {ns, pod};
}

std::string DcgmExporter::render() const {
  std::lock_guard lock(mu_);
  std::ostringstream out;
  for (const auto& [field, fallback] : kFields) {
    out << "# HELP " << field << " DCGM field " << field << ".\n# TYPE " << field
        << (std::string(field).find("TOTAL") != std::string::npos ? " counter\n" : " gauge\n");
    for (const auto& [node, count] : gpus_)
      for (int g = 0; g < count; ++g) {
        auto v = values_.find({node, g, field});
        auto p = pods_.find({node, g});
        out << field << "{gpu=\"" << g << "\",UUID=\"GPU-" << node << "-" << g << "\",device=\"nvidia" << g
            << "\",modelName=\"NVIDIA A100-SXM4-80GB\",Hostname=\"" << node << "\",DCGM_FI_DRIVER_VERSION=\"535.104.05\""
            << ",container=\"" << (p == pods_.end() ? "" : "worker") << "\",namespace=\"" << (p == pods_.end() ? "" : p->second.first)
            << "\",pod=\"" << (p == pods_.end() ? "" : p->second.second) << "\"} " << (v == values_.end() ? fallback : v->second)
            << "\n";
      }
  }
  return out.str();
}

PrometheusServer::PrometheusServer(int target_port) {
  dir_ = ::testing::TempDir() + "/prometheus-" + std::to_string(::getpid()) + "-" + std::to_string(target_port);
  std::filesystem::remove_all(dir_);
  std::filesystem::create_directories(dir_ + "/data");
  {
    std::ofstream config(dir_ + "/prometheus.yml");
    config << "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
           << "scrape_configs:\n- job_name: dcgm-exporter\n  static_configs:\n  - targets: ['127.0.0.1:" << target_port << "']\n";
  }
  for (int attempt = 0; attempt < 5 && !process_; ++attempt) {
    port_ = free_loopback_port();
    auto p = std::make_unique<ChildProcess>(
        std::vector<std::string>{"/usr/bin/prometheus", "--config.file=" + dir_ + "/prometheus.yml", "--storage.tsdb.path=" + dir_ + "/data",
                                 "--web.listen-address=127.0.0.1:" + std::to_string(port_), "--log.level=warn"},
        dir_ + "/prometheus-" + std::to_string(attempt) + ".log");
    if (eventually([&] { return http_status(url() + "/-/ready") == 200 || p->wait(std::chrono::milliseconds(1)) != -1; }, 30s) &&
        http_status(url() + "/-/ready") == 200)
      process_ = std::move(p);
  }
  if (!process_) throw std::runtime_error("prometheus did not start (logs in " + dir_ + ")");
}

PrometheusServer::~PrometheusServer() {
  if (process_) {
    process_->signal(SIGTERM);
    process_->wait(10s);
  }
  std::filesystem::remove_all(dir_);
}

}  // namespace valley::e2e
