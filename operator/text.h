// Text cut to a length for a status, an Event or a log line without breaking a UTF-8 character:
// a byte cut inside one makes the string invalid JSON text, which nlohmann's dump() refuses (the
// status write would then fail on every reconcile). Lengths are in bytes.
#pragma once

#include <cstddef>
#include <string>

namespace valley {

// The first at most `max_bytes` bytes, ending on a character boundary.
std::string utf8_head(const std::string& s, size_t max_bytes);
// The last at most `max_bytes` bytes, starting on a character boundary.
std::string utf8_tail(const std::string& s, size_t max_bytes);
// How many characters (not bytes) the text holds: the columns it takes in a table.
size_t utf8_length(const std::string& s);

}  // namespace valley
