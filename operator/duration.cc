#include "operator/duration.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

namespace valley {

std::optional<std::chrono::milliseconds> parse_duration(const std::string& text) {
  if (text.empty()) return std::nullopt;
  double total_ms = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
    if (i == start) return std::nullopt;
    std::string number = text.substr(start, i - start);
    if (number == "." || number.find('.') != number.rfind('.')) return std::nullopt;
    double value = std::strtod(number.c_str(), nullptr);  // never throws; HUGE_VAL is refused below
    size_t ustart = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    std::string unit = text.substr(ustart, i - ustart);
    double scale;
    if (unit == "ms") scale = 1;
    else if (unit == "s") scale = 1000;
    else if (unit == "m") scale = 60'000;
    else if (unit == "h") scale = 3'600'000;
    else if (unit == "d") scale = 86'400'000;
    else return std::nullopt;
    total_ms += value * scale;
  }
  if (!std::isfinite(total_ms) || total_ms > static_cast<double>(std::chrono::milliseconds(kMaxDuration).count())) return std::nullopt;
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(total_ms)));
}

std::string format_duration(std::chrono::milliseconds d) {
  int64_t ms = d.count();
  if (ms == 0) return "0s";
  std::string out;
  if (ms < 0) {
    out = "-";
    ms = -ms;
  }
  if (ms < 1000) return out + std::to_string(ms) + "ms";
  int64_t h = ms / 3'600'000, m = ms / 60'000 % 60, s = ms / 1000 % 60, rest = ms % 1000;
  if (h) out += std::to_string(h) + "h";
  if (m) out += std::to_string(m) + "m";
  if (s || rest) {
    out += std::to_string(s);
    if (rest) {
      char buf[8];
      std::snprintf(buf, sizeof buf, ".%03lld", static_cast<long long>(rest));
      std::string frac = buf;
      while (frac.back() == '0') frac.pop_back();
      out += frac;
    }
    out += "s";
  }
  return out;
}

}  // namespace valley
