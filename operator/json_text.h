// JSON as text that never throws on its strings: nlohmann's dump() throws type_error 316 on a string
// that is not UTF-8, and a string that reached an object from a user, a pod or a store may not be.
// Such bytes are written as U+FFFD. Every JSON the operator sends, stores or prints goes through it.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace valley {

inline std::string json_text(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace valley
