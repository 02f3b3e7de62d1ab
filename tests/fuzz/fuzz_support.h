// Shared by the libFuzzer targets: input bytes as text or JSON, and a property check that reports
// which property failed before aborting (libFuzzer then saves the input as a reproducer).
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

namespace valley::fuzz {

inline std::string text_of(const uint8_t* data, size_t size) { return {reinterpret_cast<const char*>(data), size}; }

// The input as a JSON value; nullopt when it is not JSON (most mutations are not, and are skipped).
inline std::optional<nlohmann::json> json_of(const std::string& text) {
  auto value = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return std::nullopt;
  return value;
}

[[noreturn]] inline void violated(const char* property, const std::string& detail) {
  std::fprintf(stderr, "fuzz property violated: %s\n  %s\n", property, detail.c_str());
  std::abort();
}

}  // namespace valley::fuzz

#define FUZZ_REQUIRE(cond, detail)                              \
  do {                                                          \
    if (!(cond)) ::valley::fuzz::violated(#cond, (detail));    \
  } while (0)
