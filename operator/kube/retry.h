// When to retry a request to the API server, and after how long. Pure; used by HttpClient.
//
// - 429 Too Many Requests: always retried (the server did nothing), after Retry-After if given.
// - 5xx: retried for reads; for writes only when the server sent Retry-After (it says it did not
//   apply the request), since a write that timed out server-side may have been applied.
// - No answer: retried when the connection never opened (nothing was sent), or for reads.
// Delay = Retry-After (capped) if present, else exponential backoff from `base`.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace valley::kube {

struct RetryPolicy {
  int max_retries = 5;
  std::chrono::milliseconds base{200};
  std::chrono::milliseconds cap{10000};
};

enum class Transport { Answered, NotConnected, Failed };

// `attempt` counts retries already made (0 for the first failure). nullopt = give up.
std::optional<std::chrono::milliseconds> retry_delay(const RetryPolicy& policy, int attempt, const std::string& method,
                                                     Transport transport, long status,
                                                     const std::string& retry_after_header);

// Retry-After in seconds (the API server never sends the HTTP-date form); nullopt if absent or bad.
std::optional<std::chrono::seconds> parse_retry_after(const std::string& header);

}  // namespace valley::kube
