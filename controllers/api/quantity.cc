#include "controllers/api/quantity.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace valley::api {
namespace {

__extension__ typedef __int128 Wide;  // exact: quantities carry up to 2^62 before scaling
constexpr Wide kLimit = Wide{1} << 62;

// A suffix as 2^binary x 10^decimal; nullopt when it is none Kubernetes knows.
struct Factor {
  int binary = 0, decimal = 0;
};
std::optional<Factor> suffix_factor(const std::string& s) {
  if (s.empty()) return Factor{};
  if (s.size() == 2 && s[1] == 'i') {
    const auto p = std::string("KMGTPE").find(s[0]);
    if (p == std::string::npos) return std::nullopt;
    return Factor{10 * static_cast<int>(p + 1), 0};
  }
  if (s.size() == 1) {
    const auto p = std::string("num kMGTPE").find(s[0]);
    if (p == std::string::npos || s[0] == ' ') return std::nullopt;
    return Factor{0, 3 * (static_cast<int>(p) - 3)};
  }
  if (s[0] == 'e' || s[0] == 'E') {  // a decimal exponent: 1e3
    size_t i = 1;
    bool negative = false;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
    if (i == s.size() || s.size() - i > 2) return std::nullopt;
    int exponent = 0;
    for (; i < s.size(); ++i) {
      if (!std::isdigit(static_cast<unsigned char>(s[i]))) return std::nullopt;
      exponent = exponent * 10 + (s[i] - '0');
    }
    return Factor{0, negative ? -exponent : exponent};
  }
  return std::nullopt;
}

// x * 10^n, or nullopt past the limit.
std::optional<Wide> times_ten(Wide x, int n) {
  for (int k = 0; k < n; ++k) {
    x *= 10;
    if (x >= kLimit * 1000) return std::nullopt;
  }
  return x;
}

}  // namespace

std::optional<int64_t> parse_quantity(const std::string& text, int64_t scale) {
  if (text.empty() || text.size() > 64 || scale <= 0) return std::nullopt;
  size_t i = 0;
  if (text[i] == '+') ++i;
  // The number as digits / 10^fraction, exactly.
  Wide digits = 0;
  int fraction = 0;
  bool any_digit = false, point = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '.' && !point) {
      point = true;
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(c))) break;
    if (digits < kLimit) {
      digits = digits * 10 + (c - '0');
      if (point) ++fraction;
    } else if (!point) {
      return std::nullopt;  // too large
    }
    any_digit = true;
  }
  if (!any_digit) return std::nullopt;
  const auto factor = suffix_factor(text.substr(i));
  if (!factor) return std::nullopt;
  Wide numerator = digits * scale;
  if (factor->binary > 0) {
    if (numerator >= (kLimit << 3) >> factor->binary) return std::nullopt;
    numerator <<= factor->binary;
  }
  int down = fraction - factor->decimal;  // numerator / 10^down
  if (down < 0) {
    auto up = times_ten(numerator, -down);
    if (!up) return std::nullopt;
    numerator = *up;
    down = 0;
  }
  Wide denominator = 1;
  for (int k = 0; k < down && k < 40; ++k) denominator *= 10;
  const Wide value = (numerator + denominator - 1) / denominator;  // rounded up
  if (value >= kLimit) return std::nullopt;
  return static_cast<int64_t>(value);
}

std::optional<int64_t> quantity_of(const nlohmann::json& value, int64_t scale) {
  if (value.is_string()) return parse_quantity(value.get_ref<const std::string&>(), scale);
  if (value.is_number_unsigned()) return parse_quantity(std::to_string(value.get<uint64_t>()), scale);
  if (value.is_number_integer()) {
    const int64_t v = value.get<int64_t>();
    return v < 0 ? std::nullopt : parse_quantity(std::to_string(v), scale);
  }
  if (value.is_number_float()) {
    const double v = value.get<double>();
    if (!(v >= 0) || !(v < 4e18)) return std::nullopt;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9f", v);
    return parse_quantity(buf, scale);
  }
  return std::nullopt;
}

bool is_node_room_resource(const std::string& name) {
  return name == kCpu || name == kMemory || name == kEphemeralStorage || name == kPods;
}

}  // namespace valley::api
