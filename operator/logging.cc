#include "operator/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <stdexcept>

namespace valley {
namespace {

thread_local std::string t_task;

// %* : the task key ("[ns/name] " in text, "\"task\":\"ns/name\"," in JSON), nothing without one.
class TaskFlag : public spdlog::custom_flag_formatter {
 public:
  explicit TaskFlag(bool json) : json_(json) {}
  void format(const spdlog::details::log_msg&, const std::tm&, spdlog::memory_buf_t& dest) override {
    if (t_task.empty()) return;
    std::string s = json_ ? "\"task\":" + json_quote(t_task) + "," : "[" + t_task + "] ";
    dest.append(s.data(), s.data() + s.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<TaskFlag>(json_); }

 private:
  bool json_;
};

// %& : the message as a JSON string.
class JsonMessageFlag : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    std::string s = json_quote(std::string(msg.payload.data(), msg.payload.size()));
    dest.append(s.data(), s.data() + s.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<JsonMessageFlag>(); }
};

}  // namespace

std::string json_quote(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

LogContext::LogContext(std::string task) : previous_(std::move(t_task)) { t_task = std::move(task); }
LogContext::~LogContext() { t_task = std::move(previous_); }

void init_logging(const std::string& level, const std::string& format) {
  auto parsed = spdlog::level::from_str(level);
  if (parsed == spdlog::level::off && level != "off")
    throw std::invalid_argument("unknown log level \"" + level + "\" (trace, debug, info, warn, error)");
  if (format != "text" && format != "json") throw std::invalid_argument("unknown log format \"" + format + "\" (text, json)");
  const bool json = format == "json";
  auto logger = json ? spdlog::stderr_logger_mt("valley") : spdlog::stderr_color_mt("valley");
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<TaskFlag>('*', json);
  if (json) {
    formatter->add_flag<JsonMessageFlag>('&');
    formatter->set_pattern(R"({"time":"%Y-%m-%dT%H:%M:%S.%e%z","level":"%l",%*"msg":%&})");
  } else {
    formatter->set_pattern("%Y-%m-%dT%H:%M:%S.%e%z %^%l%$ %*%v");
  }
  logger->set_formatter(std::move(formatter));
  logger->set_level(parsed);
  spdlog::set_default_logger(logger);
}

}  // namespace valley
