#include "operator/kube/remote_clock.h"

#include <array>
#include <charconv>
#include <string>

namespace valley::kube {

namespace {

std::optional<int> number(std::string_view s) {
  int v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

std::optional<SystemTime> parse_http_date(std::string_view v) {
  // "Sun, 06 Nov 1994 08:49:37 GMT": fixed positions.
  if (v.size() != 29 || v[3] != ',' || v.substr(25) != " GMT" || v[19] != ':' || v[22] != ':') return std::nullopt;
  static constexpr std::array<std::string_view, 12> kMonths = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                              "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  unsigned month = 0;
  while (month < 12 && kMonths[month] != v.substr(8, 3)) ++month;
  auto day = number(v.substr(5, 2)), year = number(v.substr(12, 4)), h = number(v.substr(17, 2)), m = number(v.substr(20, 2)),
       s = number(v.substr(23, 2));
  if (month == 12 || !day || !year || !h || !m || !s || *day < 1 || *day > 31 || *h > 23 || *m > 59 || *s > 60) return std::nullopt;
  const int64_t days = days_from_civil(*year, month + 1, static_cast<unsigned>(*day));
  return SystemTime(std::chrono::seconds(days * 86400 + int64_t{*h} * 3600 + int64_t{*m} * 60 + *s));
}

SystemTime RemoteClock::now() const { return at(std::chrono::steady_clock::now()); }

SystemTime RemoteClock::at(Steady t) const {
  std::lock_guard lock(mu_);
  if (!offset_) {
    // Unanchored: this host's wall clock, mapped to `t`.
    const auto wall = std::chrono::system_clock::now();
    return wall + std::chrono::duration_cast<SystemTime::duration>(t - std::chrono::steady_clock::now());
  }
  return SystemTime(std::chrono::duration_cast<SystemTime::duration>(t.time_since_epoch() + *offset_));
}

void RemoteClock::observe(SystemTime server_date, Steady received) {
  const auto bound = std::chrono::duration_cast<std::chrono::milliseconds>(server_date.time_since_epoch()) -
                     std::chrono::duration_cast<std::chrono::milliseconds>(received.time_since_epoch());
  std::lock_guard lock(mu_);
  if (!offset_ || bound >= *offset_) {
    offset_ = offset_ ? std::max(*offset_, bound) : bound;
    behind_count_ = 0;
    return;
  }
  if (*offset_ - bound < kStepBack) {
    behind_count_ = 0;
    return;
  }
  behind_ = behind_count_ == 0 ? bound : std::max(*behind_, bound);
  if (++behind_count_ >= kStepBackAnswers) {
    offset_ = behind_;
    behind_count_ = 0;
  }
}

bool RemoteClock::observe_http_date(std::string_view value, Steady received) {
  auto t = parse_http_date(value);
  if (!t) return false;
  observe(*t, received);
  return true;
}

bool RemoteClock::anchored() const {
  std::lock_guard lock(mu_);
  return offset_.has_value();
}

RemoteClock& cluster_clock() {
  static RemoteClock clock;
  return clock;
}

}  // namespace valley::kube
