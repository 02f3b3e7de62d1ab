// Process-wide logging setup (spdlog to stderr). Levels: trace, debug, info, warn, error.
#pragma once

#include <string>

namespace valley {

// Throws std::invalid_argument for an unknown level name.
void init_logging(const std::string& level);

}  // namespace valley
