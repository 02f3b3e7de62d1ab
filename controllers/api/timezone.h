// A time zone's UTC offset at any instant, with daylight saving, from the POSIX TZ rule that ends
// every TZif file in the system's tz database (e.g. Europe/Berlin: "CET-1CEST,M3.5.0,M10.5.0/3").
// The rule describes today's practice: right for live pricing and recent traces, not for dates
// before a zone last changed its rules. Evaluated with Boost.DateTime.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "operator/kube/timefmt.h"

namespace valley::api {

using kube::SystemTime;

class TimeZone {
 public:
  // From a POSIX TZ rule ("UTC0", "CST-8", "EST5EDT,M3.2.0,M11.1.0"); nullopt + error if malformed.
  static std::optional<TimeZone> from_posix(const std::string& rule, std::string* error);
  // From an IANA name ("Asia/Shanghai"), reading <zoneinfo_dir>/<name>.
  static std::optional<TimeZone> load(const std::string& name, std::string* error,
                                      const std::string& zoneinfo_dir = "/usr/share/zoneinfo");
  static TimeZone utc();

  std::chrono::seconds offset(SystemTime t) const;  // local = UTC + offset
  // The next instant after t at which the offset changes (a DST switch); nullopt without DST.
  std::optional<SystemTime> next_change(SystemTime t) const;
  const std::string& rule() const { return rule_; }

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
  std::string rule_;
};

}  // namespace valley::api
