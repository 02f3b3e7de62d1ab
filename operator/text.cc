#include "operator/text.h"

namespace valley {
namespace {
bool continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }
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

}  // namespace valley
