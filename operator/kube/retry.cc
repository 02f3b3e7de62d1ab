#include "operator/kube/retry.h"

#include <algorithm>
#include <cctype>

namespace valley::kube {

std::optional<std::chrono::seconds> parse_retry_after(const std::string& header) {
  if (header.empty() || header.size() > 9) return std::nullopt;
  for (char c : header)
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
  return std::chrono::seconds(std::stol(header));
}

std::optional<std::chrono::milliseconds> retry_delay(const RetryPolicy& policy, int attempt, const std::string& method,
                                                     Transport transport, long status,
                                                     const std::string& retry_after_header) {
  if (attempt >= policy.max_retries) return std::nullopt;
  const bool read = method == "GET" || method == "HEAD";
  auto retry_after = parse_retry_after(retry_after_header);
  bool retry = false;
  switch (transport) {
    case Transport::NotConnected: retry = true; break;
    case Transport::Failed: retry = read; break;
    case Transport::Answered:
      retry = status == 429 || (status >= 500 && status <= 599 && (read || retry_after.has_value()));
      break;
  }
  if (!retry) return std::nullopt;
  if (retry_after) return std::min<std::chrono::milliseconds>(*retry_after, policy.cap);
  auto backoff = policy.base * (int64_t{1} << std::min(attempt, 20));
  return std::min<std::chrono::milliseconds>(backoff, policy.cap);
}

}  // namespace valley::kube
