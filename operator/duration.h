// Durations as Kubernetes users write them (Go's time.ParseDuration subset): "90s", "1h30m",
// "500ms", "2.5h". Units: ms, s, m, h, and d for days. Used by flags and by TrainingTask fields.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace valley {

// nullopt for empty, negative, unit-less ("10") or otherwise malformed text.
std::optional<std::chrono::milliseconds> parse_duration(const std::string& text);
std::string format_duration(std::chrono::milliseconds d);  // "1h30m", "15s", "250ms"

}  // namespace valley
