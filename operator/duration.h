// Durations as Kubernetes users write them (Go's time.ParseDuration subset): "90s", "1h30m",
// "500ms", "2.5h". Units: ms, s, m, h, and d for days. Used by flags and by TrainingTask fields.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace valley {

// At most 100 years: durations are added to points in time (nanoseconds since 1970, which end in
// 2262), and no sum of a few such durations and a time of this century may overflow.
inline constexpr std::chrono::hours kMaxDuration{36500 * 24};
// nullopt for empty, negative, unit-less ("10"), longer than kMaxDuration or otherwise malformed text.
std::optional<std::chrono::milliseconds> parse_duration(const std::string& text);
std::string format_duration(std::chrono::milliseconds d);  // "1h30m", "15s", "250ms"

}  // namespace valley
