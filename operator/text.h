// Text for a status, an Event, a log line or any JSON the operator writes, made from strings a user,
// a pod, a node or a store supplied: valid UTF-8 (nlohmann's dump() refuses anything else, and a
// throw on a write path would wedge or stop the operator) and cut to a length without breaking a
// character. Lengths are in bytes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace valley {

// The first at most `max_bytes` bytes, ending on a character boundary.
std::string utf8_head(const std::string& s, size_t max_bytes);
// The last at most `max_bytes` bytes, starting on a character boundary.
std::string utf8_tail(const std::string& s, size_t max_bytes);
// How many characters (not bytes) the text holds: the columns it takes in a table.
size_t utf8_length(const std::string& s);

// Whether `s` is well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF).
bool utf8_valid(std::string_view s);
// `s` with each byte that does not start a well-formed character replaced by U+FFFD.
std::string utf8_repaired(std::string_view s);
// utf8_repaired(s), cut to at most `max_bytes` on a character boundary; a cut text ends in "...".
std::string bounded_text(std::string_view s, size_t max_bytes);

}  // namespace valley
