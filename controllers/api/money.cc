#include "controllers/api/money.h"

#include <cctype>
#include <cstdlib>

namespace valley::api {
namespace {

// Digits[.digits] with at most `max_frac` decimals, scaled by 10^max_frac.
std::optional<int64_t> parse_scaled(const std::string& text, int max_frac) {
  if (text.empty() || text.size() > 18) return std::nullopt;
  int64_t units = 0, frac_value = 0;
  size_t i = 0, digits = 0;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i, ++digits) units = units * 10 + (text[i] - '0');
  if (digits == 0 || digits > 11) return std::nullopt;
  int frac = 0;
  if (i < text.size()) {
    if (text[i] != '.') return std::nullopt;
    ++i;
    for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i, ++frac) {
      if (frac >= max_frac) return std::nullopt;
      frac_value = frac_value * 10 + (text[i] - '0');
    }
    if (frac == 0 || i != text.size()) return std::nullopt;
  }
  int64_t scale = 1;
  for (int k = 0; k < max_frac; ++k) scale *= 10;
  for (int k = frac; k < max_frac; ++k) frac_value *= 10;
  return units * scale + frac_value;
}

}  // namespace

std::optional<Micros> parse_money(const std::string& text) { return parse_scaled(text, 6); }
std::optional<int64_t> parse_milli(const std::string& text) { return parse_scaled(text, 3); }

std::string format_money(Micros amount, int decimals) {
  if (decimals < 0) decimals = 0;
  if (decimals > 6) decimals = 6;
  int64_t unit = 1;
  for (int k = decimals; k < 6; ++k) unit *= 10;
  const bool negative = amount < 0;
  int64_t a = negative ? -amount : amount;
  a = (a + unit / 2) / unit;  // half-up, in units of 10^-decimals
  int64_t scale = 1;
  for (int k = 0; k < decimals; ++k) scale *= 10;
  std::string out = std::to_string(a / scale);
  if (decimals > 0) {
    std::string frac = std::to_string(a % scale);
    out += "." + std::string(decimals - frac.size(), '0') + frac;
  }
  return negative && a != 0 ? "-" + out : out;
}

std::string format_milli(int64_t milli) {
  std::string out = std::to_string(milli / 1000);
  int64_t frac = std::llabs(milli % 1000);
  if (frac != 0) {
    std::string f = std::to_string(frac);
    f = std::string(3 - f.size(), '0') + f;
    while (f.back() == '0') f.pop_back();
    out += "." + f;
  }
  return out;
}

}  // namespace valley::api
