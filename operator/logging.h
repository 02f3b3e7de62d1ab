// Process-wide logging setup (spdlog to stderr). Levels: trace, debug, info, warn, error.
// Formats: "text" (time level [task] message) or "json" (one object a line: time, level, task when
// known, msg). The task key comes from the LogContext of the thread that logs.
#pragma once

#include <string>

namespace valley {

// Throws std::invalid_argument for an unknown level or format name.
void init_logging(const std::string& level, const std::string& format = "text");

// While alive, this thread's log lines carry `task` (e.g. "team-a/resnet50").
class LogContext {
 public:
  explicit LogContext(std::string task);
  ~LogContext();
  LogContext(const LogContext&) = delete;
  LogContext& operator=(const LogContext&) = delete;

 private:
  std::string previous_;
};

// JSON string escaping (quotes included) for log fields.
std::string json_quote(const std::string& text);

}  // namespace valley
