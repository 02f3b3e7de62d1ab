// YAML documents as JSON values (what the API server takes), with line numbers for errors. Plain
// scalars become numbers, booleans or null where YAML 1.2 would read them so; quoted ones stay
// strings. Used by valleyctl for task files and by tests for the samples.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace valley {

struct YamlDocument {
  nlohmann::json value;
  // The 1-based line of each top-level key of a mapping document (for "line 7: unknown field").
  std::vector<std::pair<std::string, int>> key_lines;
};

// Every document in `text`; nullopt + error ("line 3, column 5: ...") when it is not valid YAML.
std::optional<std::vector<YamlDocument>> parse_yaml(const std::string& text, std::string* error);

// A JSON value as a YAML document (block style), for `-o yaml`.
std::string to_yaml(const nlohmann::json& value);

}  // namespace valley
