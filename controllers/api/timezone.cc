#include "controllers/api/timezone.h"

#include <boost/date_time/local_time/local_time.hpp>

#include <cctype>
#include <fstream>
#include <sstream>

namespace valley::api {
namespace {

namespace pt = boost::posix_time;
namespace lt = boost::local_time;

// Boost's posix_time_zone reads offsets with the opposite sign to POSIX ("EST+5" is UTC-5 in
// POSIX, UTC+5 for Boost) and does not take <+08>-style names: rewrite the rule for it.
std::optional<std::string> boostify(const std::string& rule, std::string* error) {
  size_t i = 0;
  std::string out;
  auto name = [&](const char* replacement) {
    if (i < rule.size() && rule[i] == '<') {
      size_t close = rule.find('>', i);
      if (close == std::string::npos) return false;
      i = close + 1;
    } else {
      size_t start = i;
      while (i < rule.size() && std::isalpha(static_cast<unsigned char>(rule[i]))) ++i;
      if (i - start < 3) return false;
    }
    out += replacement;
    return true;
  };
  auto offset = [&] {
    char sign = '+';
    if (i < rule.size() && (rule[i] == '+' || rule[i] == '-')) sign = rule[i++];
    size_t start = i;
    while (i < rule.size() && (std::isdigit(static_cast<unsigned char>(rule[i])) || rule[i] == ':')) ++i;
    if (i == start) return false;
    out += (sign == '+' ? '-' : '+') + rule.substr(start, i - start);
    return true;
  };
  if (!name("STD") || !offset()) {
    if (error) *error = "\"" + rule + "\" is not a POSIX TZ rule (like CST-8 or CET-1CEST,M3.5.0,M10.5.0/3)";
    return std::nullopt;
  }
  if (i < rule.size() && rule[i] != ',') {
    if (!name("DST")) {
      if (error) *error = "\"" + rule + "\": bad daylight-saving name";
      return std::nullopt;
    }
    if (i < rule.size() && rule[i] != ',' && !offset()) {
      if (error) *error = "\"" + rule + "\": bad daylight-saving offset";
      return std::nullopt;
    }
  }
  out += rule.substr(i);
  return out;
}

}  // namespace

struct TimeZone::Impl {
  lt::posix_time_zone zone;
  explicit Impl(const std::string& r) : zone(r) {}
};

std::optional<TimeZone> TimeZone::from_posix(const std::string& rule, std::string* error) {
  auto b = boostify(rule, error);
  if (!b) return std::nullopt;
  try {
    TimeZone tz;
    tz.impl_ = std::make_shared<const Impl>(*b);
    tz.rule_ = rule;
    return tz;
  } catch (const std::exception& e) {
    if (error) *error = "\"" + rule + "\": " + e.what();
    return std::nullopt;
  }
}

std::optional<TimeZone> TimeZone::load(const std::string& name, std::string* error, const std::string& dir) {
  if (name.empty() || name.find("..") != std::string::npos || name.front() == '/') {
    if (error) *error = "time zone \"" + name + "\" is not an IANA name like Europe/Berlin";
    return std::nullopt;
  }
  std::ifstream in(dir + "/" + name, std::ios::binary);
  if (!in) {
    if (error) *error = "unknown time zone \"" + name + "\" (not in " + dir + ")";
    return std::nullopt;
  }
  std::stringstream s;
  s << in.rdbuf();
  std::string data = s.str();
  // TZif v2+: the POSIX rule is the last line, between the last two newlines.
  if (data.rfind("TZif", 0) != 0 || data.size() < 2 || data.back() != '\n') {
    if (error) *error = "time zone \"" + name + "\": not a TZif file";
    return std::nullopt;
  }
  size_t start = data.rfind('\n', data.size() - 2);
  std::string rule = data.substr(start + 1, data.size() - start - 2);
  auto tz = from_posix(rule, error);
  if (tz) tz->rule_ = rule;
  return tz;
}

TimeZone TimeZone::utc() { return *from_posix("UTC0", nullptr); }

namespace {

pt::ptime to_ptime(SystemTime t) {
  auto s = std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
  return pt::from_time_t(static_cast<std::time_t>(s));
}
SystemTime from_ptime(const pt::ptime& p) {
  static const pt::ptime epoch(boost::gregorian::date(1970, 1, 1));
  return SystemTime(std::chrono::seconds((p - epoch).total_seconds()));
}

// DST start and end of `year` as UTC instants.
std::pair<pt::ptime, pt::ptime> dst_bounds(const lt::posix_time_zone& z, int year) {
  pt::ptime start = z.dst_local_start_time(year) - z.base_utc_offset();
  pt::ptime end = z.dst_local_end_time(year) - z.base_utc_offset() - z.dst_offset();
  return {start, end};
}

}  // namespace

std::chrono::seconds TimeZone::offset(SystemTime t) const {
  const auto& z = impl_->zone;
  auto base = std::chrono::seconds(z.base_utc_offset().total_seconds());
  if (!z.has_dst()) return base;
  pt::ptime p = to_ptime(t);
  int year = (p + z.base_utc_offset()).date().year();
  auto [start, end] = dst_bounds(z, year);
  bool dst = start < end ? (p >= start && p < end) : (p >= start || p < end);
  return dst ? base + std::chrono::seconds(z.dst_offset().total_seconds()) : base;
}

std::optional<SystemTime> TimeZone::next_change(SystemTime t) const {
  const auto& z = impl_->zone;
  if (!z.has_dst()) return std::nullopt;
  pt::ptime p = to_ptime(t);
  int year = p.date().year();
  std::optional<pt::ptime> best;
  for (int y = year - 1; y <= year + 1; ++y) {
    auto [start, end] = dst_bounds(z, y);
    for (const auto& c : {start, end})
      if (c > p && (!best || c < *best)) best = c;
  }
  return best ? std::optional<SystemTime>(from_ptime(*best)) : std::nullopt;
}

}  // namespace valley::api
