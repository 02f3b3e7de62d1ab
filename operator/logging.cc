#include "operator/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <stdexcept>

namespace valley {

void init_logging(const std::string& level) {
  auto parsed = spdlog::level::from_str(level);
  if (parsed == spdlog::level::off && level != "off")
    throw std::invalid_argument("unknown log level \"" + level + "\" (trace, debug, info, warn, error)");
  auto logger = spdlog::stderr_color_mt("valley");
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e%z %^%l%$ %v");
  logger->set_level(parsed);
  spdlog::set_default_logger(logger);
}

}  // namespace valley
