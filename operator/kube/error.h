// Errors raised by the Kubernetes client. One type, with the HTTP status when the API server
// answered (0 when it never did: configuration, connection, TLS), so callers can branch on 404/409/410.
#pragma once

#include <stdexcept>
#include <string>

namespace valley::kube {

class KubeError : public std::runtime_error {
 public:
  explicit KubeError(const std::string& message, long http_status = 0, std::string reason = {})
      : std::runtime_error(message), http_status_(http_status), reason_(std::move(reason)) {}

  // HTTP status of the API server's answer, or 0 if there was none.
  long http_status() const { return http_status_; }
  // The Status object's `reason` (e.g. "NotFound", "AlreadyExists", "Expired"), when there was one.
  const std::string& reason() const { return reason_; }

 private:
  long http_status_;
  std::string reason_;
};

// The API server refused a create because the namespace is being deleted (NamespaceLifecycle
// admission): nothing created there would live, and retrying cannot help.
inline bool namespace_terminating(const KubeError& e) {
  return e.http_status() == 403 && std::string(e.what()).find("because it is being terminated") != std::string::npos;
}

}  // namespace valley::kube
