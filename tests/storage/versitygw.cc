#include "tests/storage/versitygw.h"

#include <unistd.h>

#include <stdexcept>
#include <utility>

namespace valley::testing {

namespace fs = std::filesystem;

VersityGw::VersityGw(std::string host, bool metadata) : host_(std::move(host)) {
  const std::string id = std::to_string(::getpid()) + "-" + std::to_string(e2e::free_loopback_port());
  root_ = fs::temp_directory_path() / ("valley-s3-" + id);
  // Not a name that starts with the root's: versitygw refuses a sidecar it takes to be inside it.
  meta_ = fs::temp_directory_path() / ("valley-s3meta-" + id);
  fs::create_directories(root_ / kBucket);  // a bucket is a directory
  if (metadata) fs::create_directories(meta_);
  port_ = e2e::free_loopback_port();
  std::string gw = std::string(VALLEY_SOURCE_DIR) + "/.valley/bin/versitygw";
  if (!fs::exists(gw)) throw std::runtime_error(gw + " missing: run make cluster-binaries");
  std::vector<std::string> argv{gw, "--access", kAccess, "--secret", kSecret, "--port", host_ + ":" + std::to_string(port_), "posix"};
  if (metadata) {
    argv.insert(argv.end(), {"--sidecar", meta_.string()});
  } else {
    argv.push_back("--nometa");
  }
  argv.push_back(root_.string());
  process_ = std::make_unique<e2e::ChildProcess>(argv, root_.string() + ".log");
  // Ready when it answers at all (a missing object is an answer).
  bool up = e2e::eventually(
      [&] {
        try {
          store("probe")->get("x");
          return true;
        } catch (const storage::StoreError& e) {
          return std::string(e.what()).find("HTTP") != std::string::npos;
        }
      },
      std::chrono::seconds(20));
  if (!up) throw std::runtime_error("versitygw did not answer: " + process_->output());
}

VersityGw::~VersityGw() {
  process_.reset();
  std::error_code ec;
  fs::remove_all(root_, ec);
  fs::remove_all(meta_, ec);
  fs::remove(root_.string() + ".log", ec);
}

std::map<std::string, std::string> VersityGw::env(const std::string& secret) const {
  return {{"AWS_ACCESS_KEY_ID", kAccess}, {"AWS_SECRET_ACCESS_KEY", secret}, {"AWS_ENDPOINT_URL", endpoint()},
          {"AWS_REGION", "us-east-1"}};
}

storage::S3Settings VersityGw::settings(const std::string& secret) const {
  std::string err;
  auto s = storage::s3_settings_from(env(secret), &err);
  if (!s) throw std::runtime_error(err);
  return *s;
}

std::unique_ptr<storage::ObjectStore> VersityGw::store(const std::string& prefix, const std::string& secret) const {
  std::string err;
  auto l = storage::parse_location(std::string("s3://") + kBucket + "/" + prefix, &err);
  if (!l) throw std::runtime_error(err);
  return storage::make_s3_store(*l, settings(secret));
}

}  // namespace valley::testing
