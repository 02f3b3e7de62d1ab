// A remote server's view of time: the clock to compare with the times that server writes (the API
// server: pods' start and end, conditions, leases; an S3 store: its request window). Every answer's
// Date header (whole seconds) anchors it and this host's steady clock carries it between answers,
// so a step of this host's wall clock (an NTP correction, a VM resumed) moves nothing. Before the
// first answer it is this host's wall clock.
//
// Each Date is a lower bound of the server's time when the answer arrived (it was written earlier
// and truncated), so the estimate keeps the highest bound seen: it converges to the server's time
// less the network latency, and never goes back because of one late answer. Only when answers
// agree several times in a row that the server's clock is well behind (it was stepped back) does it
// follow them back.
#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <string_view>

#include "operator/kube/timefmt.h"

namespace valley::kube {

class RemoteClock {
 public:
  using Steady = std::chrono::steady_clock::time_point;

  SystemTime now() const;
  SystemTime at(Steady t) const;  // the server's time when this host's steady clock read `t`
  void observe(SystemTime server_date, Steady received);
  // An HTTP Date value (RFC 7231 IMF-fixdate, "Sun, 06 Nov 1994 08:49:37 GMT"); false when it
  // does not parse (and nothing changes).
  bool observe_http_date(std::string_view value, Steady received);
  bool anchored() const;

  // How far behind the estimate answers must be, and how many in a row, to move it back.
  static constexpr std::chrono::seconds kStepBack{5};
  static constexpr int kStepBackAnswers = 5;

 private:
  mutable std::mutex mu_;
  std::optional<std::chrono::milliseconds> offset_;  // server time - steady time
  std::optional<std::chrono::milliseconds> behind_;  // highest of the answers in a row that were well behind
  int behind_count_ = 0;
};

std::optional<SystemTime> parse_http_date(std::string_view value);

// The API server's clock, fed by every answer the kube client receives: what the controllers call
// "now".
RemoteClock& cluster_clock();

}  // namespace valley::kube
