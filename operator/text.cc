#include "operator/text.h"

namespace valley {
namespace {
bool continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// The length of the well-formed character at s[i], 0 if none starts there (RFC 3629's table).
size_t char_length(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const size_t left = s.size() - i;
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  auto in = [](unsigned char x, unsigned lo, unsigned hi) { return x >= lo && x <= hi; };
  if (in(c, 0xC2, 0xDF)) return left >= 2 && in(b(1), 0x80, 0xBF) ? 2 : 0;
  if (in(c, 0xE0, 0xEF)) {
    if (left < 3) return 0;
    const unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;  // no overlongs, no surrogates
    return in(b(1), lo, hi) && in(b(2), 0x80, 0xBF) ? 3 : 0;
  }
  if (in(c, 0xF0, 0xF4)) {
    if (left < 4) return 0;
    const unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;  // no overlongs, <= U+10FFFF
    return in(b(1), lo, hi) && in(b(2), 0x80, 0xBF) && in(b(3), 0x80, 0xBF) ? 4 : 0;
  }
  return 0;
}
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
}  // namespace

std::string utf8_head(const std::string& s, size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  size_t end = max_bytes;
  while (end > 0 && continuation(s[end])) --end;  // s[end] is the first byte left out
  return s.substr(0, end);
}

std::string utf8_tail(const std::string& s, size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  size_t begin = s.size() - max_bytes;
  while (begin < s.size() && continuation(s[begin])) ++begin;
  return s.substr(begin);
}

size_t utf8_length(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += continuation(c) ? 0 : 1;
  return n;
}

bool utf8_valid(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = char_length(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string utf8_repaired(std::string_view s) {
  if (utf8_valid(s)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 8);
  for (size_t i = 0; i < s.size();) {
    const size_t n = char_length(s, i);
    if (n == 0) {
      out += kReplacement;
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string bounded_text(std::string_view s, size_t max_bytes) {
  std::string valid = utf8_repaired(s);
  if (valid.size() <= max_bytes) return valid;
  if (max_bytes < 3) return utf8_head(valid, max_bytes);
  return utf8_head(valid, max_bytes - 3) + "...";
}

}  // namespace valley
