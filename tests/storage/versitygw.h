// A real S3-compatible server for tests: versitygw (built by tests/cluster/build-binaries.sh) on a
// free port of `host` (loopback unless pods on the real node must reach it) with its POSIX backend
// in a temporary directory, one bucket made.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "operator/storage/object_store.h"
#include "tests/e2e/support.h"

namespace valley::testing {

class VersityGw {
 public:
  static constexpr const char* kAccess = "valleytest";
  static constexpr const char* kSecret = "valley-test-secret-key/+=";
  static constexpr const char* kBucket = "checkpoints";

  // Starts it and waits until it answers; throws if it does not. `metadata`: objects keep their
  // metadata (ETags, which multipart uploads check) in a sidecar directory; without it the store
  // lists no ETags (the setting the pods' tests run with).
  explicit VersityGw(std::string host = "127.0.0.1", bool metadata = false);
  ~VersityGw();
  std::string endpoint() const { return "http://" + host_ + ":" + std::to_string(port_); }
  const std::string& host() const { return host_; }
  const std::filesystem::path& root() const { return root_; }
  // AWS_* values a client (or a workload's environment) uses to reach it.
  std::map<std::string, std::string> env(const std::string& secret = kSecret) const;
  storage::S3Settings settings(const std::string& secret = kSecret) const;
  std::unique_ptr<storage::ObjectStore> store(const std::string& prefix, const std::string& secret = kSecret) const;

 private:
  std::filesystem::path root_, meta_;
  std::string host_;
  int port_ = 0;
  std::unique_ptr<e2e::ChildProcess> process_;
};

}  // namespace valley::testing
