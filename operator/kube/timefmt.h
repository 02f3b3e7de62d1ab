// Kubernetes timestamps: metav1.Time ("2026-11-22T03:04:05Z", second precision) and
// metav1.MicroTime ("2026-11-22T03:04:05.123456Z"), always UTC on output; parsing accepts any
// fraction and a Z or +hh:mm offset, as the API server may emit either.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace valley::kube {

using SystemTime = std::chrono::system_clock::time_point;

std::string format_time(SystemTime t);        // seconds
std::string format_micro_time(SystemTime t);  // microseconds
std::optional<SystemTime> parse_time(const std::string& text);

// Calendar days since 1970-01-01 <-> a civil (proleptic Gregorian) date.
struct CivilDate {
  int64_t year;
  unsigned month, day;
};
int64_t days_from_civil(int64_t year, unsigned month, unsigned day);
CivilDate civil_from_days(int64_t days);

}  // namespace valley::kube
