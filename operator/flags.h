// Command-line flags with environment fallback: `--name=value` or `--name value`, else the variable
// VALLEY_<NAME> (upper-case, '-' -> '_'), else the default. Unknown flags are errors, so a typo never
// silently runs with a default.
#pragma once

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace valley {

struct FlagSpec {
  std::string name;
  std::string default_value;
  std::string help;
  bool is_bool = false;  // `--name` alone means true
};

class Flags {
 public:
  explicit Flags(std::vector<FlagSpec> specs) : specs_(std::move(specs)) {}
  // Parses argv[first..]; returns the positional arguments. Throws std::invalid_argument.
  std::vector<std::string> parse(int argc, char** argv, int first = 1);
  std::string get(const std::string& name) const;
  bool get_bool(const std::string& name) const;
  std::string usage() const;

 private:
  const FlagSpec* find(const std::string& name) const;
  std::vector<FlagSpec> specs_;
  std::map<std::string, std::string> values_;
};

// "a, b,,c" -> {"a", "b", "c"}: comma-separated list flags, blanks dropped.
std::vector<std::string> split_list(const std::string& text);

}  // namespace valley
